"""Stacks of cells: construction, nested params and tuple carries, exact RTRL, layer-local RTRL."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rtrl
from oracle import EXACT_TOL, draw_carry, draw_params, draw_problem, gradient_error, squared_error
from rtrl.cells import GRU, Elman, Stack
from rtrl.compare import relative_error
from rtrl.methods import LayerLocal


def test_sizes_params_and_carry():
    stack = Stack((Elman(3, 4), GRU(4, 2)))
    assert (stack.input_size, stack.hidden_size) == (3, 2)
    params = stack.init(jax.random.PRNGKey(0), jnp.float32)
    assert set(params) == {"layer0", "layer1"} and set(params["layer1"]) == set(GRU(4, 2).param_shapes())
    assert all(a.dtype == jnp.float32 for a in jax.tree.leaves(params))
    carry = stack.initial_carry((5,))
    assert isinstance(carry, tuple) and [c.shape for c in carry] == [(5, 4), (5, 2)]


def test_step_is_the_layers_in_sequence():
    stack = Stack([Elman(3, 4), GRU(4, 2)])
    params, xs, _ = draw_problem(stack, 1, (2, 3), seed=0)
    carry = draw_carry(stack, (2, 3), seed=1)
    (c0, c1), h = stack.step(params, carry, xs[0])
    e0, h0 = Elman(3, 4).step(params["layer0"], carry[0], xs[0])
    e1, h1 = GRU(4, 2).step(params["layer1"], carry[1], h0)
    np.testing.assert_array_equal(c0, e0)
    np.testing.assert_array_equal(c1, e1)
    np.testing.assert_array_equal(h, h1)


def test_bad_construction_and_input():
    with pytest.raises(ValueError, match="non-empty sequence of cells"):
        Stack(())
    with pytest.raises(ValueError, match="non-empty sequence of cells"):
        Stack(("elman",))
    with pytest.raises(ValueError, match=r"layers\[1\].input_size must equal layers\[0\].hidden_size = 4"):
        Stack((Elman(3, 4), Elman(5, 2)))
    stack = Stack((Elman(3, 4), Elman(4, 2)))
    params = draw_params(stack, seed=0)
    with pytest.raises(ValueError, match=r"keys \['layer0', 'layer1'\]"):
        stack.step({"layer0": params["layer0"]}, stack.initial_carry(), jnp.ones(3))
    with pytest.raises(ValueError, match="tuple of the layers' carries"):
        stack.step(params, jnp.zeros(6), jnp.ones(3))


@pytest.mark.parametrize("given_carry", [False, True])
def test_exact_rtrl_of_a_stack_equals_bptt(given_carry):
    stack = Stack((Elman(3, 4), GRU(4, 3)))
    params, xs, ys = draw_problem(stack, 9, (2,), seed=4)
    carry = draw_carry(stack, (2,), seed=5) if given_carry else None
    assert gradient_error(stack, "rtrl", params, xs, ys, carry=carry) <= EXACT_TOL


@pytest.mark.parametrize("inner", ["rtrl", "closed_form"])
def test_layer_local_equals_exact_on_one_layer(inner):
    stack = Stack((Elman(3, 5),))
    params, xs, ys = draw_problem(stack, 15, (2,), seed=6)
    assert gradient_error(stack, LayerLocal(inner=inner), params, xs, ys) <= EXACT_TOL


def test_layer_local_is_exact_for_the_top_layer_only():
    """The top layer's parameters reach no other layer, so only the lower layer's gradient is approximate."""
    stack = Stack((Elman(3, 5), Elman(5, 4)))
    params, xs, ys = draw_problem(stack, 15, (2,), seed=7)
    _, exact = rtrl.sequence_grad(stack, params, xs, ys, squared_error, method="bptt")
    _, local = rtrl.sequence_grad(stack, params, xs, ys, squared_error, method="layer_local")
    assert relative_error(local["layer1"], exact["layer1"]) <= EXACT_TOL
    assert relative_error(local["layer0"], exact["layer0"]) > 1e-2


def test_reset_zeroes_the_layers_carries_and_traces():
    stack = Stack((Elman(2, 3), Elman(3, 2)))
    params = draw_params(stack, seed=0)
    learner = rtrl.online(stack, "layer_local")
    state = learner.init(params, batch_shape=(2,))
    noisy = jax.tree.map(lambda a: a + 1.0, state)
    reset = learner.reset(noisy, jnp.array([True, False]))
    for leaf, before in zip(jax.tree.leaves(reset), jax.tree.leaves(noisy), strict=True):
        assert (leaf[0] == 0).all() and (leaf[1] == before[1]).all()


def test_layer_local_needs_a_stack_and_a_trace_method():
    elman = Elman(3, 4)
    params, xs, ys = draw_problem(elman, 3, (), seed=0)
    with pytest.raises(ValueError, match="applies to a rtrl.cells.Stack"):
        rtrl.sequence_grad(elman, params, xs, ys, squared_error, method="layer_local")
    stack = Stack((Elman(3, 4), GRU(4, 2)))
    with pytest.raises(ValueError, match="inner must be the name of a trace method"):  # refused when made
        LayerLocal(inner="bptt")
    with pytest.raises(ValueError, match="GRU provides none"):
        rtrl.online(stack, LayerLocal(inner="closed_form"))
    with pytest.raises(ValueError, match="got 'nope'"):
        LayerLocal(inner="nope")
