"""GRU: its equations (against a NumPy transcription), exact RTRL equals BPTT, shapes, dtypes, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rtrl
from oracle import EXACT_TOL, draw_carry, draw_params, draw_problem, gradient_error


def numpy_gru(p, h, x):
    """The docstring's equations, written again in NumPy."""
    p = {k: np.asarray(v) for k, v in p.items()}

    def sigmoid(a):
        return 1.0 / (1.0 + np.exp(-a))

    z = sigmoid(x @ p["W_z"] + h @ p["U_z"] + p["b_z"])
    r = sigmoid(x @ p["W_r"] + h @ p["U_r"] + p["b_r"])
    n = np.tanh(x @ p["W_n"] + (r * h) @ p["U_n"] + p["b_n"])
    return (1 - z) * n + z * h


def test_step_follows_the_equations():
    cell = rtrl.cells.GRU(3, 4)
    params, xs, _ = draw_problem(cell, 1, (5,), seed=0)
    params = {k: v + 0.3 for k, v in params.items()}  # non-zero biases
    h = np.asarray(draw_carry(cell, (5,), seed=1))
    carry, out = cell.step(params, jnp.asarray(h), xs[0])
    np.testing.assert_allclose(carry, numpy_gru(params, h, np.asarray(xs[0])), rtol=1e-12)
    np.testing.assert_array_equal(carry, out)


@pytest.mark.parametrize("given_carry", [False, True])
def test_rtrl_equals_bptt(given_carry):
    cell = rtrl.cells.GRU(3, 5)
    params, xs, ys = draw_problem(cell, 12, (2,), seed=2)
    carry = draw_carry(cell, (2,), seed=3) if given_carry else None
    assert gradient_error(cell, "rtrl", params, xs, ys, carry=carry) <= EXACT_TOL


def test_batch_agnostic_and_dtype_polymorphic():
    cell = rtrl.cells.GRU(2, 3)
    params = cell.init(jax.random.PRNGKey(0), jnp.float32)
    assert all(a.dtype == jnp.float32 for a in params.values())
    xs = draw_problem(cell, 2, (4,), seed=1, dtype=jnp.float32)[1]
    carry, h = cell.step(params, cell.initial_carry((2, 4), jnp.float32), xs)
    assert h.shape == (2, 4, 3) and h.dtype == jnp.float32
    single = cell.step(params, cell.initial_carry((), jnp.float32), xs[1, 2])[1]
    np.testing.assert_allclose(h[1, 2], single, rtol=1e-6)


def test_bad_input():
    cell = rtrl.cells.GRU(2, 3)
    params = draw_params(cell, seed=0)
    with pytest.raises(ValueError, match="input_size=2"):
        cell.step(params, cell.initial_carry(), jnp.ones(3))
    with pytest.raises(ValueError, match="lack"):
        cell.step({k: v for k, v in params.items() if k != "U_r"}, cell.initial_carry(), jnp.ones(2))
    with pytest.raises(ValueError, match=r"params\['U_n'\] of GRU must have shape \(3, 3\)"):
        cell.step({**params, "U_n": jnp.ones((2, 3))}, cell.initial_carry(), jnp.ones(2))
    with pytest.raises(ValueError, match="hidden_size"):
        rtrl.cells.GRU(2, 0)
