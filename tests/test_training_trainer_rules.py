"""The trainer's rules, one by one, on a tiny hand-checked case: the step counter counts steps (so each step reads
the streams at its own index, never a repeat), an update comes after every ``update_every``-th step and is the
gradient of the window's summed loss, and ``fit`` evaluates at exactly the documented steps.

The oracle is written here: the data read straight from ``task.episode`` at ``fold_in(fold_in(key, b), e)``
(not through ``stream_chunk``), a hand-written Elman step and readout, and plain SGD (``p - lr g``).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from noise_task import Noise
from rtrl.cells import Elman
from rtrl.training.trainer import Trainer, fit

LR = 0.3
B = 2


TASK = Noise()
CELL = Elman(1, 2)


@functools.cache  # one trainer per k: its compiled chunks are reused across the tests
def sgd_trainer(update_every):
    return Trainer(TASK, CELL, "bptt", batch=B, update_every=update_every, optimizer=optax.sgd(LR), eval_size=2)


@jax.jit
def data_at(key, step):
    """Step ``step`` of both streams (no stagger): episode ``step // 3`` of stream b, at ``step % 3``."""
    episodes = [TASK.episode(jax.random.fold_in(jax.random.fold_in(key, b), step // 3)) for b in range(B)]
    x, y, w = (jnp.stack([e[i][step % 3] for e in episodes]) for i in range(3))
    return x, y, w, step % 3 == 0


@jax.jit
@functools.partial(jax.grad, has_aux=True)
def window_grad(params, carry, window):
    """The gradient of the window's objective sum_t (1/B) sum_b w loss, from ``carry`` (a constant), zeroed at
    episode starts; also the final carry and each step's weighted loss sum."""
    c, r = params["cell"], params["readout"]
    losses = []
    for x, y, w, starts in window:
        carry = jnp.where(starts, 0.0, carry)
        carry = jnp.tanh(x @ c["W"] + c["B"] + carry @ c["R"])
        losses.append(jnp.sum(w * jnp.sum((carry @ r["W"] + r["b"] - y) ** 2, axis=-1)))
    return sum(losses) / B, (carry, jnp.stack(losses))


@pytest.mark.parametrize("k", [2, 3])
def test_updates_every_k_steps_read_each_step_once_and_count_steps(k):
    """Four updates of k steps, one ``train(state, k)`` call each: ``state.step`` is the number of steps taken
    (the mutant counting updates instead makes the second call read steps 1 .. k again), the parameters after
    each call are one SGD step on the summed gradient of the k steps just read (not k steps of their own, nor a
    gradient of steps read twice), and the per-step losses are those of the right steps."""
    tr = sgd_trainer(k)
    state = tr.init()
    params, carry = state.params, jnp.zeros((B, 2))
    for update in range(4):
        window = [data_at(state.key, update * k + i) for i in range(k)]
        grads, (carry, losses) = window_grad(params, carry, window)
        params = jax.tree.map(lambda p, g: p - LR * g, params, grads)
        state, got = tr.train(state, k)
        assert int(state.step) == (update + 1) * k
        np.testing.assert_allclose(np.asarray(got), np.asarray(losses), rtol=1e-12, atol=0)
        for a, b in zip(jax.tree.leaves(state.params), jax.tree.leaves(params), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(np.asarray(state.memory), np.asarray(carry), rtol=1e-12, atol=1e-14)
    assert not np.allclose(state.params["readout"]["W"], tr.init().params["readout"]["W"])  # it did move


def test_the_stream_does_not_repeat_across_calls():
    """The data of step t does not depend on how the steps were split into calls: two calls of 2 steps give the
    per-step losses of one call of 4 at the same parameters (here, with k = 2, two updates each way)."""
    tr = sgd_trainer(2)
    one, losses_one = tr.train(tr.init(), 4)
    state, first = tr.train(tr.init(), 2)
    two, second = tr.train(state, 2)
    assert int(one.step) == int(two.step) == 4
    np.testing.assert_allclose(np.asarray(losses_one), np.concatenate([first, second]), rtol=1e-12, atol=0)
    assert len({round(float(v), 9) for v in losses_one}) == 4  # four different steps, none read twice


def test_fit_evaluates_at_every_multiple_of_eval_every_and_at_the_end():
    """update_every = 2, eval_every = 4, 10 steps: records at 0, 4, 8, 10 with the state at that step, chunks of
    4 steps then 2; resumed from step 4 (as from a checkpoint) it records at 8 and 10 only (no step 0 again)."""
    tr = sgd_trainer(2)
    seen, chunks = [], []
    end = fit(tr, tr.init(), 10, eval_every=4, on_eval=lambda s, r: seen.append((int(s.step), r["step"])),
              on_chunk=lambda s, n: chunks.append((int(s.step), n)))
    assert seen == [(0, 0), (4, 4), (8, 8), (10, 10)]
    assert chunks == [(4, 4), (8, 4), (10, 2)]
    assert int(end.step) == 10

    resumed, _ = tr.train(tr.init(), 4)
    seen.clear()
    fit(tr, resumed, 10, eval_every=4, on_eval=lambda s, r: seen.append((int(s.step), r["step"])))
    assert seen == [(8, 8), (10, 10)]
