"""The trainer's trace path with ``update_every > 1`` against a hand-written online RTRL loop.

With traces the parameters change between updates while the sensitivities run on, so an update is not the BPTT
gradient of any fixed-parameter sequence: the oracle here carries, per stream, the hidden state ``h`` and the
dense sensitivity ``S = dh/dtheta`` forward explicitly (``S' = df/dtheta + df/dh S`` from ``jax.jacrev`` of a
hand-written Elman step, both zeroed where an episode starts), scores each step with the parameters current at
that step, sums the k per-step gradients and takes a plain SGD step. The data is read straight from
``task.episode`` at ``fold_in(fold_in(key, b), e)`` with the stagger offsets ``b * T // B`` (not through
``stream_chunk``). Nothing is shared with ``rtrl.online`` or ``rtrl.methods``.

Mutations tried by hand (each fails this test): the traces reset at every update (``TraceWindow.__call__``
starting from ``learner.init``), only the last step's gradient kept in a window (no accumulation).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from noise_task import LENGTH, Noise
from rtrl.cells import Elman
from rtrl.training.trainer import Trainer

LR = 0.3
B = 2
T = LENGTH
N = 2


TASK = Noise()


def data_at(key, step, b):
    """Stream ``b`` at ``step``, staggered by ``b * T // B``: (x, y, w, starts an episode)."""
    position = step + b * T // B
    episode = TASK.episode(jax.random.fold_in(jax.random.fold_in(key, b), position // T))
    i = position % T
    return episode.xs[i], episode.targets[i], episode.weights[i], i == 0


def elman(cell, h, x):
    return jnp.tanh(x @ cell["W"] + cell["B"] + h @ cell["R"])


@jax.jit
def oracle_step(params, h, S, x, y, w, starts):
    """One stream's step: next h, next S (N, P) and the gradient of its weighted loss (over B) w.r.t. params."""
    flat, unravel = ravel_pytree(params["cell"])
    h, S = jnp.where(starts, 0.0, h), jnp.where(starts, 0.0, S)
    f = lambda theta, h: elman(unravel(theta), h, x)  # noqa: E731
    d_theta, d_h = jax.jacrev(f, argnums=(0, 1))(flat, h)
    h, S = f(flat, h), d_theta + d_h @ S

    def loss(h, r):
        return w * jnp.sum((h @ r["W"] + r["b"] - y) ** 2) / B

    g_h, g_readout = jax.grad(loss, argnums=(0, 1))(h, params["readout"])
    return h, S, {"cell": unravel(g_h @ S), "readout": g_readout}


@functools.cache  # compiled once per (method, k)
def trainer(method, update_every):
    return Trainer(TASK, Elman(1, N), method, batch=B, update_every=update_every, optimizer=optax.sgd(LR),
                   eval_size=2, stagger=True)


@pytest.mark.parametrize("method", ["rtrl", "closed_form"])
@pytest.mark.parametrize("k", [2, 3])
def test_trace_updates_are_sgd_on_the_online_rtrl_gradients_summed_over_the_window(method, k):
    """Three ``train(state, k)`` calls: after each, the parameters are ``p - lr * sum of the k per-step online
    gradients``, with the sensitivities carried across updates (accumulated under the older parameters) and
    reset only at episode starts. T = 3 with k = 2 or 3 and the stagger puts resets inside windows and windows
    that begin mid-episode, so traces reset at updates, or a gradient not summed over the window, show."""
    tr = trainer(method, k)
    state = tr.init()
    params = state.params
    P = ravel_pytree(params["cell"])[0].size
    hs, Ss = [jnp.zeros(N)] * B, [jnp.zeros((N, P))] * B
    for update in range(3):
        grads = jax.tree.map(jnp.zeros_like, params)
        for i in range(k):
            for b in range(B):
                hs[b], Ss[b], g = oracle_step(params, hs[b], Ss[b], *data_at(state.key, update * k + i, b))
                grads = jax.tree.map(jnp.add, grads, g)
        params = jax.tree.map(lambda p, g: p - LR * g, params, grads)
        state, _ = tr.train(state, k)
        for a, e in zip(jax.tree.leaves(state.params), jax.tree.leaves(params), strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-9, atol=1e-12)
    assert not np.allclose(state.params["cell"]["R"], tr.init().params["cell"]["R"])  # it did move
