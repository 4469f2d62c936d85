"""The stability triangle of the IIR2 filters: the report, the stable parameterisation, and its limit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rtrl.cells import IIR2, AdaptiveIIR2, stability, stability_margin
from rtrl.cells.iir2 import RHO

coefficient = st.floats(-2.5, 2.5)


@settings(max_examples=100, deadline=None)
@given(a0=coefficient, a1=coefficient)
def test_the_triangle_is_where_both_poles_are_inside_the_unit_circle(a0, a1):
    cell = IIR2(1, 1)
    params = {"W": jnp.zeros((1, 1)), "b": jnp.zeros(1), "a0": jnp.array([a0]), "a1": jnp.array([a1]),
              "b0": jnp.zeros(1), "b1": jnp.zeros(1)}
    poles = np.abs(np.roots([1.0, a0, a1])).max()  # y + a0 y[-1] + a1 y[-2]: z^2 + a0 z + a1
    assume(abs(poles - 1) > 1e-6)
    assert bool(stability(cell, params)[0]) == (poles < 1)
    assert (float(stability_margin(cell, params)[0]) > 0) == (poles < 1)


def test_the_seed_parameterisation_can_leave_the_triangle():
    cell = AdaptiveIIR2(1, 2)
    params = cell.init(jax.random.PRNGKey(0))
    params = {**params, "c_a0": jnp.array([0.0, 1.0]), "c_a1": jnp.array([0.0, -3.0])}  # a1 ~ -0.995, a0 ~ 0.76
    assert stability(cell, params, jnp.zeros((5, 1))).tolist() == [[True, False]] * 5


@pytest.mark.parametrize("cls", [IIR2, AdaptiveIIR2])
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), scale=st.sampled_from([0.1, 1.0, 30.0]))
def test_the_stable_parameterisation_keeps_every_step_inside(cls, seed, scale):
    """Any parameters and inputs, also where tanh rounds to +-1 (large scales reach pre-activations > 19)."""
    cell = cls(3, 16, parameterisation="stable")
    rng = np.random.default_rng(seed)
    params = {name: scale * rng.normal(size=shape) for name, shape in cell.param_shapes().items()}
    xs = rng.normal(size=(50, 4, 3))
    margins = jax.vmap(lambda x: stability_margin(cell, params, x))(xs)
    assert margins.shape == (50, 4, 16)
    assert bool(jnp.all(margins > 0))


def test_stable_steps_can_still_diverge_when_the_coefficients_switch():
    """docs/stability.md: (a0, a1) = (+1, 0.5) and (-1, 0.5) are each stable (poles of modulus 0.71), but taking
    them in turn multiplies the state by about 1.37 per step."""
    cell = AdaptiveIIR2(1, 1, parameterisation="stable", activation="identity")
    params = {name: jnp.zeros(shape) for name, shape in cell.param_shapes().items()}
    params.update({"w_k1": jnp.full((1, 1), jnp.arctanh(2 / 3 / RHO)), "c_k2": jnp.full((1,), jnp.arctanh(0.5 / RHO))})
    xs = jnp.tile(jnp.array([[1.0], [-1.0]]), (50, 1))  # r1 = +-2/3, r2 = 1/2: a0 = +-1, a1 = 1/2
    a0, a1, _, _ = cell.coefficients(params, xs)
    np.testing.assert_allclose(np.abs(a0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(a1, 0.5, rtol=1e-12)
    assert bool(jnp.all(stability(cell, params, xs)))
    carry = {**cell.initial_carry(), "y1": jnp.ones(1)}
    carry, hs = jax.lax.scan(lambda c, x: cell.step(params, c, x), carry, xs)
    growth = float(jnp.abs(hs[-1, 0]) / jnp.abs(hs[-3, 0])) ** 0.5
    assert abs(growth - (1 + 3**0.5) / 2) < 1e-6  # the spectral radius of the two-step map, per step
    assert float(jnp.abs(hs[-1, 0])) > 1e6


def test_the_adaptive_cell_needs_the_input():
    cell = AdaptiveIIR2(2, 3)
    with pytest.raises(ValueError, match="x is required"):
        stability(cell, cell.init(jax.random.PRNGKey(0)))


def test_the_stability_of_a_spiking_iir2_is_its_synapses():
    """``stability(SpikingIIR2(...), params)`` reads the synaptic filter's triangle, as docs/spiking.md says
    (an AttributeError before): coefficients set by hand, one neuron inside the triangle (a0 0.5, a1 0.2), one
    outside (|a1| >= 1), one outside (|a0| >= 1 + a1); the seed parameterisation holds them as they are."""
    from rtrl.cells import SpikingIIR2

    cell = SpikingIIR2(2, 3)
    params = dict(cell.init(jax.random.PRNGKey(0)))
    params["a0"], params["a1"] = jnp.array([0.5, 0.1, 0.9]), jnp.array([0.2, -1.0, -0.2])
    assert stability(cell, params).tolist() == [True, False, False]
    expected = [min(0.8, 1.2 - 0.5), min(0.0, -0.1), min(0.8, 0.8 - 0.9)]
    np.testing.assert_allclose(stability_margin(cell, params), expected, atol=1e-12)
