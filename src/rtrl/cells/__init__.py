"""Recurrent cells: hyper-parameters plus pure ``init / initial_carry / step`` functions."""

from rtrl.cells.base import Cell
from rtrl.cells.elman import Elman

CELLS: dict[str, type[Cell]] = {"elman": Elman}

__all__ = ["CELLS", "Cell", "Elman"]
