"""What the tests/test_interop_<framework>.py files share: rtrl's spikes, the inputs, a network that spikes, and
the check that every cell of the matrix (tests/interop_matrix.py) has its test."""

import jax
import jax.numpy as jnp
import numpy as np

STEPS, BATCH = 200, 4


def rtrl_spikes(cell, params, xs) -> np.ndarray:
    """(STEPS, BATCH, N) spikes (an integrator's output) of the cell in float64."""
    return np.asarray(jax.lax.scan(lambda c, x: cell.step(params, c, x), cell.initial_carry((BATCH,)), xs)[1])


def inputs(size: int, seed: int):
    """Spike trains in (Poisson-like, rate 0.3), as a neuromorphic network gets them."""
    return (jax.random.uniform(jax.random.PRNGKey(seed), (STEPS, BATCH, size)) < 0.3).astype(jnp.float64)


def network(cell, seed: int = 1, decay=None):
    """Parameters that make the cell spike at a moderate rate; ``decay`` (a number or one per neuron): a
    first-order filter with that decay (NIR's CubaLIF, or an LI)."""
    params = cell.init(jax.random.PRNGKey(seed))
    params = {**params, "W": 2.0 * params["W"], "b": 0.05 * jnp.ones(cell.hidden_size)}
    if decay is not None:
        zeros = jnp.zeros(cell.hidden_size)
        params = {**params, "a0": -jnp.asarray(decay) + zeros, "a1": zeros, "b0": zeros, "b1": zeros}
    return params


def spiking(spikes) -> None:
    """The spikes are neither silent nor saturated (a comparison of them means something)."""
    assert 0.02 < np.mean(spikes) < 0.6, np.mean(spikes)
