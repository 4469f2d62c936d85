"""Chunked truncated BPTT, rule by rule: the chunks are k steps from the start, the last one holds whatever is left
(down to a single step), and each chunk starts from the carry the previous one ended in, taken as a constant.

The oracle is written here, apart from ``rtrl``: a hand-written Elman step (``tanh(x W + B + h R)``) under
``jax.grad`` through one ``lax.scan`` over the whole sequence, the carry stop-gradiented at every chunk start
(``t % k == 0``), so it shares neither the chunking nor the cell with the code under test.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import rtrl
from rtrl.cells import Elman
from rtrl.compare import relative_error
from rtrl.methods import TBPTT

D, N, B = 2, 3, 2
CELL = Elman(D, N)


def squared_error(h, y):
    return jnp.sum((h - y) ** 2)


@jax.jit
def chunked_oracle(params, xs, ys, k):
    """Loss and gradient of sum_t |h_t - y_t|^2 with the carry a constant at steps 0, k, 2k, ...
    (``k`` traced: one compilation per sequence length)."""

    def total(p):
        def body(h, txy):
            t, x, y = txy
            h = jnp.where(t % k == 0, lax.stop_gradient(h), h)
            h = jnp.tanh(x @ p["W"] + p["B"] + h @ p["R"])
            return h, jnp.sum((h - y) ** 2)

        _, losses = lax.scan(body, jnp.zeros((B, N), xs.dtype), (jnp.arange(xs.shape[0]), xs, ys))
        return losses.sum()

    return jax.value_and_grad(total)(params)


def problem(T, seed=0):
    k_p, k_x, k_y = jax.random.split(jax.random.PRNGKey(seed), 3)
    params = CELL.init(k_p, jnp.float64)
    xs = jax.random.normal(k_x, (T, B, D), jnp.float64)
    ys = 0.5 * jax.random.normal(k_y, (T, B, N), jnp.float64)
    return params, xs, ys


# (k, T) for T = m k, m k + 1 and m k + (k - 1) with m = 2: a whole number of chunks, a last chunk of one step
# (the mutant `if tail > 1:` drops it: T = 5 with k = 2, T = 7 with k = 3), and a last chunk of k - 1 steps.
CASES = sorted({(k, T) for k in (1, 2, 3) for T in (2 * k, 2 * k + 1, 2 * k + k - 1)})


@pytest.mark.parametrize(("k", "T"), CASES)
def test_tbptt_is_the_hand_chunked_bptt_including_a_short_last_chunk(k, T):
    params, xs, ys = problem(T)
    loss, grads = rtrl.sequence_grad(CELL, params, xs, ys, squared_error, method=TBPTT(k))
    loss_ref, grads_ref = chunked_oracle(params, xs, ys, k)
    assert abs(float(loss - loss_ref)) <= 1e-12 * abs(float(loss_ref))
    assert relative_error(grads, grads_ref) <= 1e-12
    if T % k == 1:  # the last step alone matters: the oracle without it differs by far more than the tolerance
        _, without_last = chunked_oracle(params, xs[:-1], ys[:-1], k)
        assert relative_error(grads_ref, without_last) > 1e-3


def test_the_oracle_does_cut_at_chunk_starts():
    """The oracle itself, checked on two steps by hand: with k = 1 the gradient of the second step's loss does
    not reach back through the first step, so dL/dR only sees h_0 @ R with h_0 the first step's output."""
    params, xs, ys = problem(2)
    _, g = chunked_oracle(params, xs, ys, 1)
    W, b, R = (np.asarray(params[n]) for n in ("W", "B", "R"))
    x, y = np.asarray(xs), np.asarray(ys)
    h1 = np.tanh(x[0] @ W + b)  # from a zero carry
    h2 = np.tanh(x[1] @ W + b + h1 @ R)
    delta2 = 2 * (h2 - y[1]) * (1 - h2**2)  # credit on step 2's pre-activation
    np.testing.assert_allclose(np.asarray(g["R"]), h1.T @ delta2, rtol=1e-12, atol=1e-15)  # step 1 adds h=0 @ R
    delta1 = 2 * (h1 - y[0]) * (1 - h1**2)
    np.testing.assert_allclose(np.asarray(g["W"]), x[0].T @ delta1 + x[1].T @ delta2, rtol=1e-12, atol=1e-15)
