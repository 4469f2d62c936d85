"""The trainer's two ways of turning one window of k steps into a gradient: traces, or a whole-window method.

Both are called as ``window(params, memory, episodes, done) -> (memory, grads, losses, weights)``, where
``memory`` is what runs on from one window to the next, ``losses`` and ``weights`` are the per-step weighted
loss sums and weight sums (``(k,)``) and ``grads`` is the gradient of the window's objective
``sum_t (1/B) sum_b w[t, b] loss(y[t, b], target[t, b])`` (plus the firing-rate regulariser's terms, where the
readout has one: ``rtrl.training.model.Readout``). ``score(outputs, targets, weights)`` is, per stream, that
objective's term and the task's loss times its weight (what the losses report).

* ``TraceWindow`` (trace methods): ``jax.grad`` of each step's loss through ``learner.step`` is the method's
  gradient; they are summed over the window by ``rtrl.online.accumulate``, as ``stream_grad`` sums them.
  ``memory`` is the learner's ``OnlineState``: carry and traces run on across updates (k = 1 is fully online
  RTRL).
* ``SequenceWindow`` (``bptt``, ``tbptt``): ``method.sequence_grad`` of the ``ReadoutModel`` over the window from
  the carried carry, so the gradient is cut at window boundaries. ``memory`` is the carry.

``window_for`` picks one. A trace method may name a sequence method that computes its gradient over a window
(``TraceMethod.over_windows``); online ``eprop`` names ``EPropWindow``, which computes it (tested to 1e-9 in float64)
from the window's carries without per-step traces, at under BPTT's cost where the per-step traces cost several
BPTTs (docs/performance.md, "e-prop over a window"). Where every window starts with an episode its traces start at
zero and the window is a ``SequenceWindow``; elsewhere a ``CarriedWindow`` takes in the traces the steps before it
left and hands on those after it (``EPropWindow.carried_grad``), the per-step rule's ``OnlineState`` as memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.methods import Method, SequenceMethod
from rtrl.online import Learner, accumulate, online, steps_per_body
from rtrl.training.model import ReadoutModel, with_reset_flag


class TraceWindow(NamedTuple):
    learner: Learner
    read: Callable  # (readout params, h) -> outputs: the model's readout
    score: Callable
    batch: int

    def init(self, params) -> Any:
        return self.learner.init(params["cell"], batch_shape=(self.batch,))

    def __call__(self, params, memory, episodes, done):
        learner, B = self.learner, self.batch

        def step_loss(p, memory, data):
            ep, done_t = data
            memory = learner.reset(memory, done_t)
            h, next_memory = learner.step(p["cell"], memory, ep.xs)
            objective, weighted = self.score(self.read(p["readout"], h), ep.targets, ep.weights)
            return jnp.sum(objective) / B, (next_memory, (jnp.sum(weighted), jnp.sum(ep.weights)))

        unroll = steps_per_body(learner, params["cell"], memory.carry, episodes.xs[0])
        memory, grads, (losses, weights) = accumulate(step_loss, params, memory, (episodes, done), unroll=unroll)
        return memory, grads, losses, weights


class SequenceWindow(NamedTuple):
    method: SequenceMethod
    model: ReadoutModel
    score: Callable
    batch: int

    def init(self, params) -> Any:
        return self.model.initial_carry((self.batch,), jnp.result_type(*jax.tree.leaves(params)))

    def __call__(self, params, carry, episodes, done):
        xs = with_reset_flag(episodes.xs, done)

        def loss_fn(y, target_weight):
            return jnp.sum(self.score(y, *target_weight)[0]) / self.batch

        _, grads = self.method.sequence_grad(
            self.model, params, xs, (episodes.targets, episodes.weights), loss_fn, carry
        )
        # sequence_grad returns no carry: one more forward pass gives the next window's carry and the losses
        carry, outputs = lax.scan(lambda c, x: self.model.step(params, c, x), carry, xs)
        losses = self.score(outputs, episodes.targets, episodes.weights)[1]
        return carry, grads, losses.sum(axis=1), episodes.weights.sum(axis=1)


class CarriedWindow(NamedTuple):
    """A trace method's gradient over each window by its ``over_windows`` method (``EPropWindow``), from the traces
    the steps before the window left: ``memory`` is the ``OnlineState`` of ``learner`` (``TraceWindow``'s), whose
    traces the window's ``carried_grad`` takes in and hands on."""

    method: SequenceMethod
    learner: Learner
    model: ReadoutModel
    score: Callable
    batch: int

    def init(self, params) -> Any:
        return self.learner.init(params["cell"], batch_shape=(self.batch,))

    def __call__(self, params, memory, episodes, done):
        xs = with_reset_flag(episodes.xs, done)

        def loss_fn(y, target_weight):
            return jnp.sum(self.score(y, *target_weight)[0]) / self.batch

        def report(y, target_weight):  # the step's weighted losses, summed over the streams
            return jnp.sum(self.score(y, *target_weight)[1])

        _, grads, traces, carry, losses = self.method.carried_grad(
            self.model, params, xs, (episodes.targets, episodes.weights), loss_fn, memory.carry, memory.traces, report
        )
        return memory._replace(carry=carry, traces=traces), grads, losses, episodes.weights.sum(axis=1)


def window_for(method: Method, model: ReadoutModel, score: Callable, batch: int, starts_episodes: bool,
               steps: int = 2):
    """The trainer's window of ``steps`` steps for ``method`` on ``model`` (its readout's ``learned`` cell is what
    the traces follow): a ``SequenceWindow`` for a sequence method, or for a trace method's ``over_windows`` where
    ``starts_episodes`` (every window starts with an episode, so the traces start each at zero: module docstring);
    a ``CarriedWindow`` for its ``over_windows`` elsewhere (the traces carried from window to window), but for a
    window of one step, the per-step rule's own step; else a ``TraceWindow``."""
    if not method.online:
        return SequenceWindow(method, model, score, batch)
    same = method.over_windows(model)
    if same is not None and starts_episodes:
        return SequenceWindow(same, model, score, batch)
    if same is not None and steps > 1:
        return CarriedWindow(same, online(model.cell, method), model, score, batch)
    return TraceWindow(online(model.cell, method), model.readout, score, batch)
