"""Random problems drawn with NumPy: no PRNG kernels to compile for every new shape, so tests stay fast.

Parameters have the structure of ``cell.init`` (matrices scaled by 1/sqrt(fan-in), vectors 0.3), inputs and
targets are standard normal; everything is a function of ``seed``.
"""

import jax
import jax.numpy as jnp
import numpy as np


def draw_params(cell, seed, dtype=jnp.float64):
    rng = np.random.default_rng(seed)
    shapes = jax.eval_shape(lambda: cell.init(jax.random.PRNGKey(0), dtype))

    def leaf(s):
        scale = 1.0 / np.sqrt(s.shape[0]) if len(s.shape) == 2 else 0.3
        return jnp.asarray(scale * rng.standard_normal(s.shape), dtype)

    return jax.tree.map(leaf, shapes)


def draw_problem(cell, T, batch_shape, seed, dtype=jnp.float64):
    """``params, xs (T, *batch, D), ys (T, *batch, N)``."""
    rng = np.random.default_rng(seed + 1000)
    xs = jnp.asarray(rng.standard_normal((T, *batch_shape, cell.input_size)), dtype)
    ys = jnp.asarray(rng.standard_normal((T, *batch_shape, cell.hidden_size)), dtype)
    return draw_params(cell, seed, dtype), xs, ys


def draw_carry(cell, batch_shape, seed, dtype=jnp.float64):
    """A non-zero carry with the cell's structure."""
    rng = np.random.default_rng(seed + 2000)
    zero = cell.initial_carry(batch_shape, dtype)
    return jax.tree.map(lambda a: jnp.asarray(0.5 * rng.standard_normal(a.shape), dtype), zero)
