"""rtrl: real-time recurrent learning in JAX.

Exact online gradients for recurrent cells (dense RTRL for any cell, closed-form traces where a cell provides
them), the online step whose ``jax.grad`` is the method's gradient, and ``sequence_grad`` for whole sequences.
"""

from rtrl import startup

startup.check()  # before JAX reads its environment variables: a bad one is one clear message

from rtrl import cells, compare, methods  # noqa: E402
from rtrl.inspection import Inspection, inspect  # noqa: E402
from rtrl.methods import METHODS  # noqa: E402
from rtrl.online import Learner, OnlineState, online, stream_grad  # noqa: E402
from rtrl.sequence import sequence_grad  # noqa: E402

__version__ = "0.1.0"

__all__ = ["METHODS", "Inspection", "Learner", "OnlineState", "cells", "compare", "inspect", "load", "methods",
           "online", "sequence_grad", "stream_grad"]

# Names of the layers above this one (docs/design.md), imported on first use, never by ``import rtrl``: a function
# ("module:name") or a whole package (``rtrl.rl.make(...)`` after ``import rtrl``, as DESIGN.md writes it).
LAZY = {"load": "rtrl.run.trained:load", "rl": "rtrl.rl", "training": "rtrl.training"}


def __getattr__(name: str):
    if name in LAZY:
        import importlib

        module, _, attribute = LAZY[name].partition(":")
        imported = importlib.import_module(module)
        return getattr(imported, attribute) if attribute else imported
    raise AttributeError(f"module 'rtrl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(LAZY))
