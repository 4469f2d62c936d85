"""Recurrent cells: hyper-parameters plus pure ``init / initial_carry / step`` functions."""

from rtrl.cells.adapters import (
                                 AdaptedCell,
                                 FunctionCell,
                                 FunctionCellWithOutput,
                                 from_equinox,
                                 from_flax,
                                 from_function,
                                 from_nnx,
)
from rtrl.cells.adaptive_iir2 import AdaptiveIIR2
from rtrl.cells.alif import ALIF
from rtrl.cells.base import Cell
from rtrl.cells.elementwise import ElementwiseCell
from rtrl.cells.elman import Elman
from rtrl.cells.elstm import ELSTM
from rtrl.cells.encoder import Encoded
from rtrl.cells.feedforward import FeedForward
from rtrl.cells.gru import GRU
from rtrl.cells.iir2 import IIR2, stability, stability_margin
from rtrl.cells.lif import LIF
from rtrl.cells.lru import LRU
from rtrl.cells.mingru import MinGRU
from rtrl.cells.network import Network
from rtrl.cells.parallel import Parallel
from rtrl.cells.rtu import RTU
from rtrl.cells.spiking_iir2 import SpikingIIR2
from rtrl.cells.stack import Stack

CELLS: dict[str, type[Cell]] = {"elman": Elman, "gru": GRU, "iir2": IIR2, "adaptive_iir2": AdaptiveIIR2, "elstm": ELSTM,
                                 "lru": LRU, "rtu": RTU, "mingru": MinGRU, "lif": LIF, "alif": ALIF,
                                 "spiking_iir2": SpikingIIR2, "feedforward": FeedForward}

__all__ = ["ALIF", "CELLS", "ELSTM", "GRU", "IIR2", "LIF", "LRU", "RTU", "AdaptedCell", "AdaptiveIIR2", "Cell",
           "ElementwiseCell", "Elman", "Encoded", "FeedForward", "FunctionCell", "FunctionCellWithOutput", "MinGRU",
           "Network", "Parallel", "SpikingIIR2", "Stack", "from_equinox", "from_flax", "from_function", "from_nnx",
           "stability", "stability_margin"]
