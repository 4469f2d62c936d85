"""Shared test helpers: random problems and the comparison against BPTT."""

import jax
import jax.numpy as jnp

import rtrl
from rtrl.compare import relative_error  # noqa: F401 (re-exported for tests)

EXACT_TOL = 1e-9


def squared_error(h, y):
    return jnp.sum((h - y) ** 2)


def random_problem(cell, T, batch_shape, seed, dtype=jnp.float64):
    """Parameters, inputs and targets for ``cell``, all drawn from ``seed``."""
    k_p, k_x, k_y = jax.random.split(jax.random.PRNGKey(seed), 3)
    params = cell.init(k_p, dtype)
    xs = jax.random.normal(k_x, (T, *batch_shape, cell.input_size), dtype)
    ys = jax.random.normal(k_y, (T, *batch_shape, cell.hidden_size), dtype)
    return params, xs, ys


def random_carry(cell, batch_shape, seed, dtype=jnp.float64):
    """A non-zero carry of the cell's structure."""
    zero = cell.initial_carry(batch_shape, dtype)
    leaves, tree = jax.tree.flatten(zero)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    noise = [0.5 * jax.random.normal(k, a.shape, dtype) for k, a in zip(keys, leaves, strict=True)]
    return jax.tree.unflatten(tree, noise)


def gradient_error(cell, method, params, xs, ys, carry=None, loss_fn=squared_error):
    """Relative error of ``method``'s loss and gradient against BPTT on the same problem."""
    loss_ref, g_ref = rtrl.sequence_grad(cell, params, xs, ys, loss_fn, method="bptt", carry=carry)
    loss, g = rtrl.sequence_grad(cell, params, xs, ys, loss_fn, method=method, carry=carry)
    loss_err = abs(float(loss - loss_ref)) / max(abs(float(loss_ref)), 1e-300)
    return max(loss_err, relative_error(g, g_ref))
