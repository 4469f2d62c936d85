"""Recurrent cells: hyper-parameters plus pure ``init / initial_carry / step`` functions."""

from rtrl.cells.base import Cell
from rtrl.cells.elman import Elman
from rtrl.cells.gru import GRU
from rtrl.cells.stack import Stack

CELLS: dict[str, type[Cell]] = {"elman": Elman, "gru": GRU}

__all__ = ["CELLS", "GRU", "Cell", "Elman", "Stack"]
