"""Exact methods on Elman equal BPTT in float64: from a zero carry, from a given carry, batched or not."""

import jax.numpy as jnp
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import rtrl
from oracle import EXACT_TOL, gradient_error, random_carry, random_problem

EXACT = ["rtrl", "closed_form"]
batch_shapes = st.sampled_from([(), (1,), (3,), (2, 2)])


@pytest.mark.parametrize("T", [1, 2, 3, 50])
@settings(max_examples=2, deadline=None)  # plus the fixed @example
@given(D=st.integers(1, 4), N=st.integers(1, 6), batch_shape=batch_shapes, seed=st.integers(0, 2**16))
@example(D=3, N=7, batch_shape=(3,), seed=5)  # besides the random draws, fixed sizes every run (N not a power of 2)
def test_equals_bptt_from_zero_carry(T, D, N, batch_shape, seed):
    cell = rtrl.cells.Elman(D, N)
    params, xs, ys = random_problem(cell, T, batch_shape, seed)
    for method in EXACT:
        assert gradient_error(cell, method, params, xs, ys) <= EXACT_TOL


@settings(max_examples=3, deadline=None)  # plus the fixed @example
@given(T=st.sampled_from([1, 2, 3, 50]), batch_shape=batch_shapes, seed=st.integers(0, 2**16))
@example(T=50, batch_shape=(2, 2), seed=6)
def test_equals_bptt_from_given_carry(T, batch_shape, seed):
    cell = rtrl.cells.Elman(3, 5)
    params, xs, ys = random_problem(cell, T, batch_shape, seed)
    carry = random_carry(cell, batch_shape, seed + 1)
    for method in EXACT:
        assert gradient_error(cell, method, params, xs, ys, carry=carry) <= EXACT_TOL


@pytest.mark.parametrize("method", EXACT)
@pytest.mark.parametrize("act", ["sigmoid", "relu", "identity"])
def test_equals_bptt_for_every_activation(method, act):
    cell = rtrl.cells.Elman(2, 4, activation=act)
    params, xs, ys = random_problem(cell, 20, (3,), seed=7)
    params["R"] = 0.5 * params["R"]  # keep the identity activation's trajectory bounded
    assert gradient_error(cell, method, params, xs, ys) <= EXACT_TOL


@pytest.mark.parametrize("method", EXACT)
def test_long_sequence(method):
    cell = rtrl.cells.Elman(3, 8)
    params, xs, ys = random_problem(cell, 1000, (2,), seed=3)
    assert gradient_error(cell, method, params, xs, ys) <= EXACT_TOL


def test_the_loss_differs_when_the_gradient_would():
    """The oracle comparison can fail: a perturbed gradient is far from BPTT's."""
    cell = rtrl.cells.Elman(3, 4)
    params, xs, ys = random_problem(cell, 5, (2,), seed=1)

    def loss_fn(h, y):
        return jnp.sum((h - y) ** 2)

    _, g_ref = rtrl.sequence_grad(cell, params, xs, ys, loss_fn, method="bptt")
    _, g_short = rtrl.sequence_grad(cell, params, xs[:4], ys[:4], loss_fn, method="closed_form")
    assert rtrl.compare.relative_error(g_short, g_ref) > 1e-3


@pytest.mark.parametrize("method", EXACT)
def test_float32_agrees_to_float32_precision(method):
    cell = rtrl.cells.Elman(3, 6)
    params, xs, ys = random_problem(cell, 30, (4,), seed=5, dtype=jnp.float32)
    loss, g = rtrl.sequence_grad(cell, params, xs, ys, lambda h, y: jnp.sum((h - y) ** 2), method=method)
    assert loss.dtype == jnp.float32 and all(a.dtype == jnp.float32 for a in g.values())
    assert gradient_error(cell, method, params, xs, ys) <= 1e-4
