"""The online trainer: B independent streams through a cell and a linear readout, an optax update every k steps.

Every step, each stream's learner resets where an episode starts (``done``), steps the cell, and scores the
readout with the task's per-step loss times its weight (zero outside the answer phase). The objective of one
update is the loss summed over the ``k = update_every`` steps since the last update and averaged over the
streams::

    J = sum_{t in window} (1/B) sum_b w[t, b] * loss(readout(h[t, b]), target[t, b])

How a window of k steps becomes a gradient is one of two small objects (``rtrl.training.windows``): traces
(``TraceWindow``: carry and traces run on across updates, k = 1 is fully online RTRL) or a whole-window method
(``SequenceWindow``: ``bptt``, ``tbptt`` over each window from the carried carry, so the gradient is truncated at
window boundaries; ``bptt`` with ``k`` = the episode length is full BPTT; ``eprop`` where every window starts with an
episode, ``EPropWindow``'s, the same gradient), or, for ``eprop`` elsewhere (``k > 1``), ``EPropWindow``'s from the
traces carried in (``CarriedWindow``: ``rtrl.training.windows.window_for``).

With ``k > 1`` the two differ by design: traces keep the credit of steps before the window (as RTRL does), BPTT
windows drop it; where every window starts with an episode they agree exactly (tested).

The inner loop is one jitted ``lax.scan`` per chunk of updates; data comes from ``rtrl.training.tasks.stream_chunk``, a
pure function of the data key and the step, so the whole run is a pure function of its ``TrainState``.
``fit`` drives chunks, evaluates every ``eval_every`` steps and stops with ``Diverged`` at the first non-finite
training loss or held-out metric.

``devices=N`` splits the B streams over N devices (``rtrl.devices``): the state's carries and traces and each
chunk's data are split over the batch axis, the parameters and the optimiser state replicated, and XLA reduces
the gradient's mean over the streams across the devices. The arithmetic is the one-device run's, summed in
another order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

from rtrl.capabilities import Spiking
from rtrl.checks import check_positive_int
from rtrl.config import checked, flag, random_seed, step_count
from rtrl.devices import batch_axes, mesh, shardings, split, tracing
from rtrl.driver import Diverged, drive, finite_or_diverged
from rtrl.methods import Method, resolve
from rtrl.online import steps_per_body
from rtrl.optim import make_optimizer
from rtrl.training.model import Readout, ReadoutModel, with_reset_flag
from rtrl.training.tasks import Task, stream_chunk
from rtrl.training.windows import CarriedWindow, SequenceWindow, TraceWindow, window_for
from rtrl.validate import check_cell, describe, same_tree, what


class TrainState(NamedTuple):
    """Everything a run needs to continue: a checkpoint saves exactly this."""

    params: Any  # {"cell": ..., "readout": {"W", "b"}}
    opt_state: Any
    memory: Any  # OnlineState(carry, traces) for trace methods, the carry for sequence methods
    step: jax.Array  # steps taken so far = position in every stream
    key: jax.Array  # the data key: episode e of stream b is drawn from fold_in(fold_in(key, b), e)
    loss_sum: jax.Array  # weighted training loss since the last evaluation ...
    weight_sum: jax.Array  # ... and its total weight


class Trainer:
    """``Trainer(task, cell, method, batch=16, update_every=1, optimizer=make_optimizer(), ...)``.

    ``init()`` gives the first ``TrainState``; ``train(state, n_steps)`` advances it (``n_steps`` a multiple of
    ``update_every``) and returns the per-step weighted loss sums; ``evaluate(params)`` scores the task's
    held-out episodes from a zero carry. ``stagger=True`` starts stream ``b`` ``b * T // B`` steps into its
    episodes (needs a trace method, as sequence windows should align with episodes, and the per-trial rate
    regulariser, ``rate_form="trial"``: ``rtrl.training.model.Readout``). ``devices=N`` splits the
    streams over the first N of ``jax.devices()`` (``batch`` a multiple of N; see ``rtrl.devices``)."""

    def __init__(
        self,
        task: Task,
        cell,
        method: str | Method = "rtrl",
        *,
        batch: int = 16,
        update_every: int = 1,
        optimizer: optax.GradientTransformation | None = None,
        eval_size: int = 256,
        stagger: bool = False,
        seed: int = 0,
        devices: int = 1,
        readout_decay: float = 0.0,
        rate_weight: float = 0.0,
        rate_target: float = 0.01,
        rate_form: str = "trial",
    ):
        if not isinstance(task, Task):
            raise TypeError(f"task must be a task object such as rtrl.training.tasks.Copy(), got {what(task)}")
        check_cell(cell)
        check_positive_int("batch", batch)
        check_positive_int("update_every", update_every)
        check_positive_int("eval_size", eval_size)
        checked("seed", random_seed, seed)
        checked("stagger", flag, stagger)
        if optimizer is not None and not all(callable(getattr(optimizer, f, None)) for f in ("init", "update")):
            raise TypeError(f"optimizer must be an optax optimizer such as make_optimizer('adam', lr=1e-3) (or None "
                            f"for that default), got {what(optimizer)}")
        if cell.input_size != task.input_size:
            raise ValueError(
                f"cell input_size must be the task's input size {task.input_size} ({task.name}), "
                f"got {cell.input_size}"
            )
        self.readout = Readout(readout_decay, rate_weight, rate_target, task.length, rate_form)
        self.readout.check_streams(stagger)
        self.learned = self.readout.learned(cell)  # the cell, with the readout's state where it has one
        self.task, self.cell, self.method = task, cell, resolve(method, self.learned)
        if stagger and not self.method.online:
            raise ValueError(f"stagger needs a trace method; {self.method.name!r} updates on aligned windows")
        self.batch, self.update_every, self.seed = batch, update_every, seed
        self.optimizer = optimizer if optimizer is not None else make_optimizer()
        self.model = ReadoutModel.of(self.learned, task.output_size, self.readout)
        # with stagger an episode starts at another step in each stream; without it, at every multiple of its length
        self.window = window_for(self.method, self.model, self.scored, batch,
                                 starts_episodes=not stagger and update_every % task.length == 0, steps=update_every)
        self.offsets = (jnp.arange(batch) * task.length) // batch if stagger else jnp.zeros((batch,), jnp.int32)
        self.eval_size = eval_size
        self.mesh = mesh(devices, batch)
        self._train = jax.jit(self._train_chunk, static_argnums=1)
        self._evaluate = jax.jit(self._evaluate_impl)

    @property
    def computed_by(self) -> Method:
        """The method that computes each window's gradient: ``method``, or ``EPropWindow`` where ``window_for`` gave
        online ``eprop`` a window (the same gradient)."""
        return self.window.method if isinstance(self.window, SequenceWindow | CarriedWindow) else self.method

    @functools.cached_property
    def eval_set(self):
        """The held-out episodes, drawn once from the seed (made on first use: it costs a compilation)."""
        key = jax.random.fold_in(jax.random.PRNGKey(self.seed), 2)
        episodes = jax.jit(self.task.eval_episodes, static_argnums=1)(key, self.eval_size)
        if self.mesh is None:
            return episodes
        if self.eval_size % self.mesh.size:  # a whole copy on each device
            return jax.device_put(episodes, split(self.mesh, None))
        axes = batch_axes(lambda n: self.task.eval_episodes(key, n), self.eval_size)  # split like the streams
        return jax.device_put(episodes, shardings(self.mesh, axes))

    @functools.cached_property
    def expected_params(self) -> dict:
        """The shapes of the model's parameters, ``{path: shape}``."""
        return describe(jax.eval_shape(self.model.init, jax.random.PRNGKey(0)))

    # -- state ------------------------------------------------------------------------------------------
    def init(self) -> TrainState:
        return self.place(self.fresh(self.batch))

    def fresh(self, batch: int) -> TrainState:
        """The first state of ``batch`` streams, on the default device."""
        root = jax.random.PRNGKey(self.seed)
        params = self.model.init(jax.random.fold_in(root, 0))
        dtype = jnp.result_type(*jax.tree.leaves(params))
        memory = self.window._replace(batch=batch).init(params)
        zero = jnp.zeros((), dtype)
        step, key = jnp.zeros((), jnp.int32), jax.random.fold_in(root, 1)
        return TrainState(params, self.optimizer.init(params), memory, step, key, zero, zero)

    @functools.cached_property
    def sharding(self):
        """The ``TrainState``'s shardings on the mesh: split where a leaf has a batch axis, else replicated."""
        return shardings(self.mesh, batch_axes(self.fresh, self.batch))

    def place(self, state: TrainState) -> TrainState:
        """``state`` on this trainer's devices (one from a checkpoint, or from a run on another device count);
        unchanged on one device."""
        return state if self.mesh is None else jax.device_put(state, self.sharding)

    def reset_interval(self, state: TrainState) -> TrainState:
        """Start a new evaluation interval: zero the running training loss."""
        return state._replace(loss_sum=jnp.zeros_like(state.loss_sum), weight_sum=jnp.zeros_like(state.weight_sum))

    def scored(self, outputs, targets, weights):
        """Per stream, the objective's term of a step and the task's loss times its weight (zero where nothing is
        asked); they differ by the firing-rate regulariser's term, the model's last output where it has one."""
        weighted = self.task.loss(self.answers(outputs), targets) * weights
        return (weighted + outputs[..., -1] if self.readout.extra else weighted), weighted

    def answers(self, outputs):
        """The task's outputs among the model's (all but the regulariser's term)."""
        return outputs[..., : self.task.output_size]

    def forward(self, params, carry, xs):
        """The model over ``xs`` (T, B, D + 1): final carry and outputs (T, B, O)."""
        return lax.scan(lambda c, x: self.model.step(params, c, x), carry, xs)

    def spikes(self, cell_params, xs, n: int, dtype):
        """The cell's ``h`` over ``xs`` (T, n, D) from a zero carry (its spikes, for a ``Spiking`` cell)."""

        def step(carry, x):
            return self.cell.step(cell_params, carry, x)

        return lax.scan(step, self.cell.initial_carry((n,), dtype), xs)[1]

    # -- jitted chunks -----------------------------------------------------------------------------------
    def _train_chunk(self, state: TrainState, n_updates: int):
        k = self.update_every
        episodes, done = stream_chunk(self.task, state.key, state.step, n_updates * k, self.offsets)
        if self.mesh is not None:  # each device draws its own streams' data: (steps, B, ...) split over B
            episodes, done = lax.with_sharding_constraint((episodes, done), split(self.mesh, 1))
        windows = jax.tree.map(lambda a: a.reshape((n_updates, k) + a.shape[1:]), (episodes, done))

        def update(carry, data):
            params, opt_state, memory = carry
            memory, grads, losses, weights = self.window(params, memory, *data)
            updates, opt_state = self.optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state, memory), (losses, weights)

        # As many online steps per compiled body as the cell wants (rtrl.online.steps_per_body), also when each
        # update takes fewer.
        per_body = (steps_per_body(self.window.learner, state.params["cell"], state.memory.carry, episodes.xs[0])
                    if isinstance(self.window, TraceWindow) else 1)
        (params, opt_state, memory), (losses, weights) = lax.scan(
            update, (state.params, state.opt_state, state.memory), windows, unroll=per_body if k % per_body else 1
        )
        losses, weights = losses.reshape(-1), weights.reshape(-1)
        state = TrainState(
            params,
            opt_state,
            memory,
            state.step + n_updates * k,
            state.key,
            state.loss_sum + losses.sum(),
            state.weight_sum + weights.sum(),
        )
        if self.mesh is not None:  # the state as it came, the losses whole on every device (and process)
            state, losses = lax.with_sharding_constraint((state, losses), (self.sharding, split(self.mesh, None)))
        return state, losses

    def train(self, state: TrainState, n_steps: int) -> tuple[TrainState, jax.Array]:
        """Advance ``n_steps`` (a multiple of ``update_every``); also the per-step weighted loss sums."""
        checked("n_steps", step_count, n_steps)
        if n_steps % self.update_every:
            raise ValueError(f"n_steps must be a multiple of update_every={self.update_every}, got {n_steps}")
        with tracing(self.mesh):
            return self._train(self.place(state), n_steps // self.update_every)

    def _evaluate_impl(self, params, episodes):
        n = episodes.weights.shape[1]
        dtype = jnp.result_type(*jax.tree.leaves(params))
        xs = with_reset_flag(episodes.xs, jnp.zeros(episodes.weights.shape, bool))
        _, outputs = self.forward(params, self.model.initial_carry((n,), dtype), xs)
        metrics = self.task.metrics(self.answers(outputs), episodes)
        if isinstance(self.cell, Spiking):  # h is spikes: how often the neurons fire, over every held-out step
            metrics = {**metrics, "firing_rate": self.spikes(params["cell"], episodes.xs, n, dtype).mean()}
        return metrics if self.mesh is None else lax.with_sharding_constraint(metrics, split(self.mesh, None))

    def evaluate(self, params) -> dict[str, float]:
        """The task's metrics on its held-out episodes (``"metric"`` is the headline one)."""
        same_tree("params", describe(params), self.expected_params, f"this trainer's {self.cell.name} and readout")
        if self.mesh is not None:  # parameters from anywhere (one device, a checkpoint): a copy on each device
            params = jax.device_put(params, split(self.mesh, None))
        return {name: float(v) for name, v in self._evaluate(params, self.eval_set).items()}


def chunk_size(eval_every: int, update_every: int, limit: int = 500) -> int:
    """The longest run of whole updates that divides ``eval_every`` and has at most ``limit`` steps (at least
    one update): the unit of work of one jitted call, and of one progress-bar tick."""
    updates = eval_every // update_every
    best = 1
    for d in range(1, updates + 1):
        if updates % d == 0 and d * update_every <= limit:
            best = d
    return best * update_every


def evaluation(trainer: Trainer, state: TrainState) -> dict[str, float]:
    """``trainer.evaluate`` with the held-out loss named ``eval_loss`` (``loss`` is the training loss)."""
    return {("eval_loss" if name == "loss" else name): v for name, v in trainer.evaluate(state.params).items()}


def checked_record(step: int, record: dict) -> dict:
    """``record``, unless one of its numbers is not finite: then ``Diverged`` naming the first such quantity."""
    for name, value in record.items():
        if isinstance(value, float) and not np.isfinite(value):
            raise Diverged(step, value, "the held-out " + name if name != "loss" else "the training loss")
    return record


def fit(
    trainer: Trainer,
    state: TrainState,
    steps: int,
    eval_every: int,
    on_eval: Callable[[TrainState, dict], None] | None = None,
    on_chunk: Callable[[TrainState, int], None] | None = None,
    wall_s: float = 0.0,
    stop_at: float | None = None,
) -> TrainState:
    """Train until ``steps``, evaluating at every multiple of ``eval_every`` and at the end.

    ``on_eval(state, record)`` gets ``record = {"step", "loss", "metric", ..., "wall_s"}`` where ``loss`` is the
    training loss (weighted mean) since the previous evaluation and the rest are ``trainer.evaluate``'s; the
    state it gets is the one to checkpoint. ``on_chunk(state, n)`` is told of every ``n`` steps done.
    ``wall_s`` is the time already spent (for a resumed run). Raises ``Diverged`` naming the first step whose
    loss, held-out metric or parameter is not finite; ``on_eval`` has then not seen anything past the previous
    evaluation, so every record it saw is finite. ``stop_at``: stop after the first record whose held-out metric
    reaches it (``reached``; step 0's too), before ``steps``."""
    k = trainer.update_every
    for name, value in (("steps", steps), ("eval_every", eval_every)):
        check_positive_int(name, value)
        if value % k:
            raise ValueError(f"{name} must be a multiple of update_every={k}, got {value}")

    def advance(state, step, n):
        state, losses = trainer.train(state, n)
        losses = np.asarray(losses)
        bad = np.flatnonzero(~np.isfinite(losses))
        if bad.size:
            raise Diverged(step + int(bad[0]) + 1, float(losses[bad[0]]))
        return state

    def record(state, step):
        finite_or_diverged(step, state.params)
        weight = float(state.weight_sum)
        rec = {"step": step, "loss": float(state.loss_sum) / weight if weight > 0 else None}
        rec.update(evaluation(trainer, state))
        return checked_record(step, rec), trainer.reset_interval(state)

    def first(state):
        return checked_record(0, {"step": 0, "loss": None, **evaluation(trainer, state)})

    higher = trainer.task.higher_is_better
    until = None if stop_at is None else (lambda rec: reached(rec, stop_at, higher))
    return drive(state, steps, eval_every, chunk_size(eval_every, k), advance, record, first, on_eval, on_chunk,
                 wall_s, until)


def reached(record: dict, stop_at: float, higher_is_better: bool = True) -> bool:
    """Whether ``record``'s held-out ``metric`` reaches ``stop_at``: at or above it where higher is better, at or
    below where lower is."""
    metric = record.get("metric")
    if metric is None:
        return False
    return metric >= stop_at if higher_is_better else metric <= stop_at
