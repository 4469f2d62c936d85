"""The one loop that drives a run of either kind: chunks of compiled steps up to each record, a record at every
multiple of ``every`` and at the end, and a stop with ``Diverged`` at the first quantity that is not finite.

A kind (``rtrl.training.trainer.fit``: a model on a task; ``rtrl.rl.train``: an actor-critic in environments) says
how it advances (``advance(state, step, n) -> state``, raising ``Diverged``), what its record of an interval is
(``record(state, step) -> (record, state)``: the state after the interval's sums are cleared) and, for a training
run, its record of step 0 (``first``). The loop adds ``wall_s`` (seconds so far, across resumptions) to every
record and calls ``on_record(state, record)`` after it (a checkpoint there resumes the run exactly) and
``on_chunk(state, n)`` after every chunk of ``n`` steps (a progress bar's tick).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax

from rtrl.checks import first_non_finite


class Stopped(RuntimeError):
    """The run cannot go on at ``step``; the message says why (a quantity that diverged: ``Diverged``; an environment
    stepped on the host that failed). The last checkpoint, all of whose records are good, stays."""

    def __init__(self, message: str, step: int):
        super().__init__(message)
        self.step = step

    def __reduce__(self):  # its arguments, not the message alone: it crosses a process pool's pipe whole
        return type(self), (str(self), self.step)


class Diverged(Stopped):
    """A quantity (the training loss, a held-out metric, the parameters) became NaN or infinite; ``step`` is the
    first step where it did."""

    def __init__(self, step: int, value: float, quantity: str = "the training loss"):
        super().__init__(f"{quantity} became {value} at step {step}", step)
        self.value, self.quantity = value, quantity

    def __reduce__(self):
        return type(self), (self.step, self.value, self.quantity)


def finite_or_diverged(step: int, params) -> None:
    """``Diverged`` at ``step`` naming the first non-finite value among the parameters, if there is one."""
    bad = first_non_finite(("a parameter", a) for a in jax.tree.leaves(params))
    if bad:
        raise Diverged(step, bad[1], bad[0])


def drive(state: Any, steps: int, every: int, chunk: int, advance: Callable, record: Callable,
          first: Callable | None = None, on_record: Callable | None = None, on_chunk: Callable | None = None,
          wall_s: float = 0.0, until: Callable | None = None) -> Any:
    """Advance ``state`` (its ``step`` leaf counts the steps done) to ``steps``, in calls of at most ``chunk`` steps
    that never cross a multiple of ``every``; see the module's docstring. ``until(record)``: true stops the run
    after that record (and ``on_record``'s checkpoint of it), before ``steps``."""
    step = int(state.step)
    start = time.perf_counter() - wall_s
    if step == 0 and first is not None and on_record is not None:  # where learning starts from
        rec = {**first(state), "wall_s": 0.0}
        on_record(state, rec)
        if until is not None and until(rec):
            return state
    while step < steps:
        boundary = min((step // every + 1) * every, steps)
        while step < boundary:
            n = min(chunk, boundary - step)
            state = advance(state, step, n)
            step += n
            if on_chunk is not None:
                on_chunk(state, n)
        rec, state = record(state, step)
        rec = {**rec, "wall_s": round(time.perf_counter() - start, 3)}
        if on_record is not None:
            on_record(state, rec)
        if until is not None and until(rec):
            break
    return state
