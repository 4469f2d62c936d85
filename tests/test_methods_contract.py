"""Every exact method's contraction of a credit on EVERY carry leaf equals dense RTRL's ``g^T M``.

The online step gives exact methods a credit only on the leaves that ``output`` reads, but a credit on the
others (the IIR filters' ``z1, z2, y2``) reaches ``contract`` through the previous-traces form (approximations,
cells without ``output``) and through ``layer_local``; a wrong term there would pass every test that only ever
sends zeros to those leaves.
"""

import jax
import jax.numpy as jnp
import pytest

import rtrl
from oracle import EXACT_TOL, perturbed, random_carry
from rtrl.cells import ELSTM, IIR2, AdaptiveIIR2
from rtrl.compare import relative_error

CELLS = {"iir2": IIR2(3, 4), "adaptive_iir2": AdaptiveIIR2(3, 4), "elstm": ELSTM(3, 4),
         "adaptive_iir2_stable": AdaptiveIIR2(2, 5, parameterisation="stable")}


def traces_after(cell, method, params, xs):
    """One example's traces after the steps ``xs`` from a zero carry (the method's own update), and
    ``contract(credit)`` laid out like ``params``."""
    rule = rtrl.methods.resolve(method, cell).bind(cell)
    carry = cell.initial_carry((), xs.dtype)
    traces = rule.init(params, carry)
    for x in xs:
        traces = rule.update(params, carry, traces, x)
        carry = cell.step(params, carry, x)[0]
    return lambda credit: rule.to_params(params, rule.contract(params, traces, credit))


@pytest.mark.parametrize("method", ["closed_form", "diagonal"])
@pytest.mark.parametrize("name", sorted(CELLS))
def test_contraction_of_a_credit_on_every_leaf_equals_dense_rtrl(name, method):
    cell = CELLS[name]
    params = perturbed(cell.init(jax.random.PRNGKey(0), jnp.float64), 1)
    xs = jax.random.normal(jax.random.PRNGKey(2), (5, cell.input_size), jnp.float64)
    credit = random_carry(cell, (), 3)  # non-zero on every leaf
    dense = traces_after(cell, "rtrl", params, xs)
    exact = traces_after(cell, method, params, xs)
    assert relative_error(exact(credit), dense(credit)) <= EXACT_TOL
    # Each leaf on its own, so that a term wrong on one leaf cannot hide behind the others.
    for leaf in jax.tree.leaves(jax.tree_util.tree_map_with_path(lambda path, a: path, credit)):
        alone = jax.tree_util.tree_map_with_path(lambda p, a, leaf=leaf: a if p == leaf else jnp.zeros_like(a),
                                                 credit)
        assert relative_error(exact(alone), dense(alone)) <= EXACT_TOL, jax.tree_util.keystr(leaf)
