"""An online learner on an adapted cell, reset mid-sequence, against the framework's own call (not the adapter).

tests/test_cells_adapters.py checks resets only against BPTT through the adapter itself, which would share an adapter
bug (a wrong zero carry, say). Here the oracle is ``jax.grad`` through ``lax.scan`` of linen's ``module.apply`` /
Equinox's ``eqx.combine(params, static)(x, state)``, with the framework's own zero carry put in place of the
reset example's carry. Mutations tried by hand, each caught in both cases: the adapter's ``initial_carry`` made
ones; the learner's reset zeroing the carry but not the traces, or setting the carry to ones (src/rtrl/online.py).
(``example_carry``'s values made ones is not caught, and cannot matter: only its shapes are read.)
"""

import equinox as eqx
import flax.linen as nn
import jax
import jax.numpy as jnp
import pytest

import rtrl
from oracle import EXACT_TOL, squared_error
from rtrl.cells import from_equinox, from_flax
from rtrl.compare import relative_error

D, N, B, T, RESET_AT = 3, 4, 2, 6, 3  # example 0 is reset before step 3; example 1 runs on


def linen_lstm():
    module = nn.LSTMCell(features=N)  # a tuple carry (c, h): every leaf must be zeroed, in its traces too
    params = module.init(jax.random.PRNGKey(0), module.initialize_carry(jax.random.PRNGKey(0), (D,)),
                         jnp.zeros(D))["params"]

    def framework_step(params, carry, x):  # linen batches natively and returns h itself
        return module.apply({"params": params}, carry, x)

    def framework_zero(batch):
        return module.initialize_carry(jax.random.PRNGKey(0), (batch, D))

    return from_flax(module, input_size=D), params, framework_step, framework_zero


def equinox_gru():
    module = eqx.nn.GRUCell(D, N, key=jax.random.PRNGKey(0))
    params, static = eqx.partition(module, eqx.is_inexact_array)

    def framework_step(params, carry, x):  # one example at a time; h is the state itself
        state = jax.vmap(lambda x, s: eqx.combine(params, static)(x, s))(x, carry)
        return state, state

    def framework_zero(batch):
        return jnp.zeros((batch, N))  # the state Equinox's cell is called with

    return from_equinox(module), params, framework_step, framework_zero


def moved(params, seed):
    """Every parameter moved off the module's own value, so an adapter reading the module's would be seen."""
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    return jax.tree.unflatten(tree, [(a + 0.2 * jax.random.normal(k, a.shape)).astype(jnp.float64)
                                     for k, a in zip(keys, leaves, strict=True)])


@pytest.mark.parametrize("make", [linen_lstm, equinox_gru], ids=["linen.LSTMCell", "equinox.GRUCell"])
def test_online_reset_equals_the_frameworks_own_gradient(make):
    cell, params, framework_step, framework_zero = make()
    params = moved(params, 1)
    k_x, k_y = jax.random.split(jax.random.PRNGKey(2))
    xs = jax.random.normal(k_x, (T, B, D), jnp.float64)
    ys = jax.random.normal(k_y, (T, B, N), jnp.float64)
    done = jnp.zeros((T, B), bool).at[RESET_AT, 0].set(True)
    learner = rtrl.online(cell, "auto")

    def online_grads(params):
        def body(acc, data):
            state, total = acc
            x, y, d = data
            state = learner.reset(state, d)
            g, state = jax.grad(lambda p: (lambda h, s: (squared_error(h, y), s))(*learner.step(p, state, x)),
                                has_aux=True)(params)
            return (state, jax.tree.map(jnp.add, total, g)), None

        zero = jax.tree.map(jnp.zeros_like, params)
        return jax.lax.scan(body, (learner.init(params, (B,)), zero), (xs, ys, done))[0][1]

    def framework_loss(params, done):
        zero = jax.tree.map(lambda a: a.astype(jnp.float64), framework_zero(B))

        def body(carry, data):
            x, y, d = data
            carry = jax.tree.map(lambda c, z: jnp.where(d[:, None], z, c), carry, zero)
            carry, h = framework_step(params, carry, x)
            return carry, squared_error(h, y)

        return jax.lax.scan(body, zero, (xs, ys, done))[1].sum()

    @jax.jit
    def run(params):
        return (online_grads(params), jax.grad(framework_loss)(params, done),
                jax.grad(framework_loss)(params, jnp.zeros_like(done)))

    ours, oracle, unreset = run(params)
    assert relative_error(ours, oracle) <= EXACT_TOL
    assert relative_error(unreset, oracle) > 1e-3  # the reset changes the gradient: a missed reset would show
    assert relative_error(oracle, jax.tree.map(jnp.zeros_like, oracle)) > 0.1  # a gradient that is there
