"""The trainer: the same trajectory as a hand-written loop, trace methods equal BPTT window by window, resets
really zero carry and traces, and a diverging loss stops the run naming its step."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import rtrl
from poison import poisoned_adam
from rtrl.cells import Elman
from rtrl.compare import relative_error
from rtrl.driver import Diverged
from rtrl.optim import make_optimizer
from rtrl.training.model import readout
from rtrl.training.tasks import Copy, stream_chunk
from rtrl.training.trainer import Trainer, chunk_size, fit

TASK = Copy(max_length=2)  # episodes of 5 steps
CELL = Elman(TASK.input_size, 3)
TOL = 1e-10
data = jax.jit(stream_chunk, static_argnums=(0, 3))


def trainer(method, update_every=1, optimizer=None, stagger=False):
    return Trainer(
        TASK, CELL, method, batch=2, update_every=update_every, stagger=stagger, eval_size=8,
        optimizer=optimizer or make_optimizer("adam", 0.05, clip=1.0),
    )


@pytest.fixture(scope="module")
def online_trainer():
    """k = 1, exact traces, streams staggered so that they reset at different steps."""
    return trainer("closed_form", stagger=True)


def reference_trajectory(tr: Trainer, steps: int, losses: list | None = None):
    """Parameters after each step of a plain loop: reset, learner.step, jax.grad, optax, by hand; each step's
    weighted loss sum and weight sum are appended to ``losses``."""
    learner = rtrl.online(CELL, "closed_form")
    state0 = tr.init()
    params, opt_state = state0.params, tr.optimizer.init(state0.params)
    memory = learner.init(params["cell"], batch_shape=(2,))

    @jax.jit
    def one_step(params, opt_state, memory, start):
        (ep, done) = jax.tree.map(lambda a: a[0], data(TASK, state0.key, start, 1, tr.offsets))
        memory = learner.reset(memory, done)

        def loss(p):
            h, next_memory = learner.step(p["cell"], memory, ep.xs)
            y = readout(p["readout"], h)
            total = jnp.sum(jnp.logaddexp(0.0, y[:, 0]) * ep.weights - y[:, 0] * ep.targets[:, 0] * ep.weights)
            return total / 2, (next_memory, total, jnp.sum(ep.weights))

        grads, (memory, total, weight) = jax.grad(loss, has_aux=True)(params)
        updates, opt_state = tr.optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, memory, total, weight

    trajectory = []
    for t in range(steps):
        params, opt_state, memory, total, weight = one_step(params, opt_state, memory, t)
        trajectory.append(params)
        if losses is not None:
            losses.append((float(total), float(weight)))
    return trajectory


def test_online_trainer_follows_the_hand_written_loop(online_trainer):
    steps = 8  # crosses episode boundaries of both staggered streams
    expected = reference_trajectory(online_trainer, steps)
    state = online_trainer.init()
    for t in range(steps):
        state, _ = online_trainer.train(state, 1)
        assert relative_error(state.params, expected[t]) < TOL, t
    assert int(state.step) == steps
    assert relative_error(state.params, online_trainer.init().params) > 1e-3  # it did learn something


def test_the_reported_training_loss_is_the_weighted_mean_over_each_interval(online_trainer):
    """``fit``'s ``loss`` (metrics.jsonl) against the hand-written loop's own per-step losses: the sum of the
    weighted losses since the previous evaluation over the sum of their weights, the interval starting afresh."""
    losses = []
    reference_trajectory(online_trainer, 12, losses)
    records = []
    fit(online_trainer, online_trainer.init(), 12, eval_every=4, on_eval=lambda state, r: records.append(r))
    assert [r["step"] for r in records] == [0, 4, 8, 12] and records[0]["loss"] is None
    for record in records[1:]:
        interval = losses[record["step"] - 4 : record["step"]]
        expected = sum(total for total, _ in interval) / sum(weight for _, weight in interval)
        assert abs(record["loss"] - expected) <= 1e-12 * abs(expected), record["step"]
    assert len({round(r["loss"], 6) for r in records[1:]}) == 3  # three different intervals, not one running mean


def test_reset_zeroes_carry_and_traces_of_the_streams_that_start_an_episode(online_trainer):
    tr = online_trainer
    learner = rtrl.online(CELL, "closed_form")
    state = tr.init()
    for _ in range(8):  # stream 1 (offset 2) sees all of its second episode (a pattern shown at step 3 or 4)
        state, _ = tr.train(state, 1)
    ep, done = jax.tree.map(lambda a: a[0], data(TASK, state.key, 8, 1, tr.offsets))
    assert np.asarray(done).tolist() == [False, True]  # ... and starts its third at step 8
    assert all(np.abs(np.asarray(leaf[1])).max() > 0 for leaf in jax.tree.leaves(state.memory))
    after, _ = tr.train(state, 1)
    step = jax.jit(lambda p, m, x: learner.step(p, m, x)[1])
    cell_params = state.params["cell"]
    from_zero = step(cell_params, learner.init(cell_params, batch_shape=(2,)), ep.xs)
    carried_on = step(cell_params, state.memory, ep.xs)
    for got, zero_start, continued in zip(
        jax.tree.leaves(after.memory), jax.tree.leaves(from_zero), jax.tree.leaves(carried_on), strict=True
    ):
        np.testing.assert_allclose(got[1], zero_start[1], rtol=0, atol=1e-12)  # reset stream: as from zero
        np.testing.assert_allclose(got[0], continued[0], rtol=0, atol=1e-12)  # the other stream runs on
        assert not np.allclose(zero_start[1], continued[1])  # the reset made a difference


@pytest.mark.parametrize(
    "method, update_every, steps",
    [
        ("rtrl", 5, 15),  # windows aligned with episodes (full BPTT), three updates
        ("closed_form", 7, 7),  # one window holding an episode boundary (a reset inside the window)
    ],
)
def test_trace_methods_equal_bptt_where_bptt_sees_whole_episodes(method, update_every, steps):
    """Traces run on across updates, BPTT windows are cut at their start: the two agree when every window
    starts with an episode (or the run), and resets inside a window must cut both the same way."""
    online, bptt = trainer(method, update_every), trainer("bptt", update_every)
    a, losses_a = online.train(online.init(), steps)
    b, losses_b = bptt.train(bptt.init(), steps)
    assert relative_error(a.params, b.params) < TOL
    assert relative_error(a.memory.carry, b.memory) < TOL
    np.testing.assert_allclose(losses_a, losses_b, rtol=1e-10)
    assert relative_error(a.params, online.init().params) > 1e-3


def test_update_every_must_divide_the_steps():
    tr = trainer("bptt", update_every=3)
    with pytest.raises(ValueError, match="multiple of update_every=3"):
        tr.train(tr.init(), 4)
    with pytest.raises(ValueError, match="eval_every must be a multiple"):
        fit(tr, tr.init(), 9, eval_every=4)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="batch"):
        Trainer(TASK, CELL, "rtrl", batch=0)
    with pytest.raises(ValueError, match="input_size"):
        Trainer(TASK, Elman(5, 3), "rtrl")
    with pytest.raises(ValueError, match="stagger"):
        Trainer(TASK, CELL, "bptt", stagger=True)
    with pytest.raises(ValueError, match="lr"):
        make_optimizer("adam", -1.0)
    with pytest.raises(ValueError, match="optimizer"):
        make_optimizer("adagrad-ish", 1.0)


def test_chunk_size_divides_the_evaluation_interval():
    assert chunk_size(1000, 1) == 500
    assert chunk_size(60, 4) == 60
    assert chunk_size(1260, 21) == 420  # whole updates only: 20 of the 60 updates fit in 500 steps
    for every, k in [(1000, 1), (600, 3), (1234, 2)]:
        c = chunk_size(every, k)
        assert every % c == 0 and c % k == 0


def test_fit_stops_at_the_first_non_finite_loss_and_reports_evaluations_before_it():
    tr = trainer("closed_form", optimizer=poisoned_adam(at_update=7))
    records = []
    with pytest.raises(Diverged, match="at step 8") as info:
        fit(tr, tr.init(), 20, eval_every=5, on_eval=lambda state, record: records.append(record))
    assert info.value.step == 8  # update 7 (after step 7) poisons the parameters; step 8's loss is NaN
    assert [r["step"] for r in records] == [0, 5]
    assert records[0]["loss"] is None and np.isfinite(records[1]["loss"])
    assert {"metric", "eval_loss", "sequence_accuracy", "wall_s"} <= set(records[1])
