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

__all__ = ["METHODS", "Inspection", "Learner", "OnlineState", "cells", "compare", "inspect", "methods", "online",
           "sequence_grad", "stream_grad"]
