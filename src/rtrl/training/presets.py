"""Named run configurations: ``rtrl train --preset NAME`` (options given beside it override the preset's).

Each preset is a set of ``RunConfig`` options and a line saying what it is for; ``rtrl list`` shows them. Deep
networks are named by an import path to a factory here (``lru_network``), since a ``Network``'s layers are not
one registered cell.
"""

from __future__ import annotations

from typing import NamedTuple

from rtrl.cells import LRU, RTU, Network
from rtrl.methods import LayerLocal  # noqa: F401 (documents what method_args name)


class Preset(NamedTuple):
    summary: str
    options: dict


def lru_network(input_size: int, hidden_size: int, depth: int = 2, cell: str = "lru", r_min: float = 0.9,
                r_max: float = 0.999, norm: str = "layer") -> Network:
    """``depth`` residual blocks of LRU (or RTU) cells of width ``hidden_size``, with poles on the ring
    ``r_min .. r_max`` (long memory from the start), reading inputs of ``input_size``."""
    cls = {"lru": LRU, "rtu": RTU}[cell]
    return Network(layers=tuple(cls(hidden_size, hidden_size, r_min=r_min, r_max=r_max) for _ in range(depth)),
                   input_size=input_size, norm=norm)


PRESETS: dict[str, Preset] = {
    "copy20": Preset(
        "copy patterns of up to 20 bits fully online (an update at every step): a 2-block LRU network, "
        "layer-local closed-form traces",
        {"task": "copy", "task_args": {"max_length": 20}, "cell": "rtrl.training.presets:lru_network",
         "cell_args": {"depth": 2}, "hidden": 64, "method": "layer_local", "method_args": {"inner": "closed_form"},
         "batch": 16, "update_every": 1, "lr": 3e-3, "steps": 60000, "eval_every": 2000}),
    "copy5": Preset(
        "copy patterns of up to 5 bits fully online with Elman's closed-form traces (seed 000)",
        {"task": "copy", "task_args": {"max_length": 5}, "cell": "elman", "method": "closed_form", "lr": 3e-3,
         "steps": 6000, "update_every": 1}),
}
