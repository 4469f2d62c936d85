"""Recurrent cells: hyper-parameters plus pure ``init / initial_carry / step`` functions."""

from rtrl.cells.adaptive_iir2 import AdaptiveIIR2
from rtrl.cells.base import Cell
from rtrl.cells.elementwise import ElementwiseCell
from rtrl.cells.elman import Elman
from rtrl.cells.elstm import ELSTM
from rtrl.cells.gru import GRU
from rtrl.cells.iir2 import IIR2, stability, stability_margin
from rtrl.cells.lru import LRU
from rtrl.cells.network import Network
from rtrl.cells.rtu import RTU
from rtrl.cells.stack import Stack

CELLS: dict[str, type[Cell]] = {"elman": Elman, "gru": GRU, "iir2": IIR2, "adaptive_iir2": AdaptiveIIR2, "elstm": ELSTM}
CELLS.update({"lru": LRU, "rtu": RTU})

__all__ = ["CELLS", "ELSTM", "GRU", "IIR2", "AdaptiveIIR2", "Cell", "ElementwiseCell", "Elman", "Stack", "stability",
           "stability_margin"]
__all__ += ["LRU", "RTU", "Network"]
