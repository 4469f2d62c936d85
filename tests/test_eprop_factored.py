"""e-prop factorised (``rtrl.capabilities.FactoredEProp``): with one leak for all neurons (not learnt) and no reset to
a value, ``LIF`` and ``ALIF`` keep e-prop's eligibility as ``zbar`` (per presynaptic entry), ``psi`` (per neuron)
and, for ALIF, ``eps_a`` on the adapting neurons' columns only. The ``eprop`` method and the trainer's ``Filtered``
readout bind to that layout (the contraction summed over the batch at once); the gradient must be today's
per-synapse e-prop (``eprop_init / update / contract``) to 1e-9 relative in float64: from a zero carry, across
resets, over long sequences, LIF and ALIF, recurrent and not, with per-neuron thresholds and adaptation, refractory
periods, the paper's triangle surrogate. Cells whose leak is per neuron or learnt, or that reset to a value, keep
the per-synapse traces.

Mutations tried by hand (each made a test below fail, then restored): ALIF's ``eps_a`` update reading the new ``psi``
instead of the previous step's; the adapting columns taken as all neurons' but for the first (an off-by-one in
``adapting``); ``zbar``'s filter without the leak.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rtrl
from rtrl.capabilities import FactoredEProp
from rtrl.cells import ALIF, LIF
from rtrl.methods import EProp
from rtrl.methods.base import TraceRule, bound
from rtrl.online import accumulate, online
from rtrl.training.model import Filtered

jax.config.update("jax_enable_x64", True)

TRIANGLE = {"surrogate": "triangle", "surrogate_scale": 1 / 0.6, "surrogate_height": 0.5, "threshold": 0.6}
CASES = {
    "lif": LIF(4, 6, leak=0.9),
    "lif_recurrent": LIF(4, 6, leak=0.9, recurrent=True, threshold=(1.0, 0.7, 1.3, 0.9, 1.1, 0.8)),
    "lif_none_refractory": LIF(4, 6, leak=0.85, reset="none", recurrent=True, refractory=3, **TRIANGLE),
    "alif": ALIF(4, 6, leak=0.9, adaptation=0.3),
    "alif_paper": ALIF(4, 6, leak=0.95, recurrent=True, lif_neurons=3, adaptation=0.5, adaptation_decay=0.99,
                       refractory=2, **TRIANGLE),
    "alif_per_neuron": ALIF(4, 6, leak=0.9, recurrent=True, adaptation=(0.2, 0.0, 0.5, 0.0, 0.3, 0.1),
                            adaptation_decay=(0.9, 0.95, 0.5, 0.99, 0.8, 0.7),
                            threshold=(1.0, 0.7, 1.3, 0.9, 1.1, 0.8)),
    "alif_none_adapting": ALIF(4, 6, leak=0.9, recurrent=True, lif_neurons=6),
}
PER_SYNAPSE = {
    "per_neuron_leak": LIF(4, 6, leak=(0.9, 0.8, 0.95, 0.9, 0.7, 0.85), recurrent=True),
    "learn_tau": ALIF(4, 6, leak=0.9, learn_tau=True),
    "reset_value": LIF(4, 6, leak=0.9, reset="value", recurrent=True),
}


class SynapticEProp(EProp):
    """Today's per-synapse e-prop (the cell's ``eprop_*`` hooks), the reference of the factorised layout."""

    def bind(self, cell, params=None, carry=None) -> TraceRule:
        return TraceRule(self, cell.eprop_init, cell.eprop_update, cell.eprop_contract, new_traces=True)


def per_synapse(cell):
    """``cell`` without its factorised hooks (an instance attribute each), so ``Filtered`` and ``eprop`` use the
    per-synapse ones."""
    cell = dataclasses.replace(cell)  # a new instance
    for name in ("init", "update", "contract", "output"):
        object.__delattr__(cell, "eprop_factored_" + name)
    assert not isinstance(cell, FactoredEProp)
    return cell


def problem(cell, T, B, seed=0):
    params = cell.init(jax.random.PRNGKey(seed), jnp.float64)
    params = {**params, "W": params["W"] * 3.0}  # enough spikes
    xs = jnp.where(jax.random.uniform(jax.random.PRNGKey(seed + 1), (T, B, cell.input_size)) < 0.3, 1.0, 0.0)
    xs = xs + 0.3 * jax.random.normal(jax.random.PRNGKey(seed + 2), xs.shape)
    done = jax.random.uniform(jax.random.PRNGKey(seed + 3), (T, B)) < 0.02  # resets at random steps
    return params, xs, done


def online_grads(learner, params, xs, done, loss):
    """The per-step gradients of ``loss(h, t)`` summed over the stream, the learner reset where ``done``."""
    B = xs.shape[1]

    def step_loss(p, state, d):
        x, done_t, t = d
        state = learner.reset(state, done_t)
        h, state = learner.step(p, state, x)
        return loss(h, t), (state, h)

    _, grads, hs = accumulate(step_loss, params, learner.init(params, (B,)), (xs, done, jnp.arange(len(xs))))
    return grads, hs


def relative(a, b):
    return max(float(jnp.abs(a[k] - b[k]).max() / (jnp.abs(b[k]).max() + 1e-300)) for k in b)


def check_same(cell, learned, T=300, B=3):
    params, xs, done = problem(cell, T, B)
    N = cell.hidden_size
    weights = jax.random.normal(jax.random.PRNGKey(9), (learned.hidden_size, 2), jnp.float64)

    def loss(h, t):  # a readout on everything the learned cell outputs, changing over time
        return jnp.sum(jnp.sin(0.05 * t + h @ weights))

    rtrl.methods.base.bound.cache_clear()
    fast = online(learned, "eprop")
    reference = online(learned if learned is cell else Filtered.of(per_synapse(cell), learned.decay), SynapticEProp())
    g_fast, hs = online_grads(fast, params, xs, done, loss)
    g_ref, hs_ref = online_grads(reference, params, xs, done, loss)
    np.testing.assert_array_equal(hs, hs_ref)
    spikes = hs[..., N:2 * N] if learned is not cell else hs
    assert 0.02 < float(spikes.mean()) < 0.8, float(spikes.mean())
    assert relative(g_fast, g_ref) <= 1e-9, relative(g_fast, g_ref)
    assert all(float(jnp.abs(g_ref[k]).max()) > 0 for k in g_ref)
    return g_fast


@pytest.mark.parametrize("name", sorted(CASES))
def test_factorised_eprop_is_todays_eprop(name):
    """The ``eprop`` method on the bare cell: bound to the factorised hooks, the same gradient as the per-synapse
    ones, over 300 steps with resets, from a zero carry."""
    cell = CASES[name]
    assert isinstance(cell, FactoredEProp)
    rule = bound(EProp(), cell)
    assert rule.init == cell.eprop_factored_init and rule.sums_batch  # one contraction for the whole batch
    check_same(cell, cell)


@pytest.mark.parametrize("name", ["lif_recurrent", "alif_paper", "alif_per_neuron"])
def test_factorised_eprop_through_the_filtered_readout_is_todays(name):
    """The trainer's readout with a state (``Filtered``: the paper's filtered eligibility trace and the spike count)
    over the factorised inner traces: the same gradient as over the per-synapse ones."""
    cell = CASES[name]
    learned = Filtered.of(cell, 0.9)
    assert isinstance(learned, FactoredEProp) and bound(EProp(), learned).sums_batch
    check_same(cell, learned)


def test_factorised_traces_are_smaller():
    """ALIF at the paper's shape (40 inputs, 100 neurons, 50 adapting, recurrent): eps_a on 50 columns, zbar shared."""
    cell = ALIF(40, 100, leak=0.95, recurrent=True, lif_neurons=50, adaptation=0.5)
    floats = sum(a.size for a in jax.tree.leaves(jax.eval_shape(
        lambda: cell.eprop_factored_init(cell.init(jax.random.PRNGKey(0)), cell.initial_carry(())))))
    assert floats == (40 + 1 + 100) * 50 + (40 + 1 + 100) + 100
    assert rtrl.inspect(cell).method  # still inspectable


@pytest.mark.parametrize("name", sorted(PER_SYNAPSE))
def test_per_neuron_or_learnt_leaks_and_resets_to_a_value_keep_per_synapse_traces(name):
    """Where ``eps`` differs between postsynaptic neurons (a leak per neuron or learnt, a reset to a value gating the
    membrane) the cell has no factorised hooks and ``eprop`` binds to ``eprop_*``."""
    cell = PER_SYNAPSE[name]
    assert not cell.eprop_factorises and not isinstance(cell, FactoredEProp)
    assert bound(EProp(), cell).init == cell.eprop_init


def test_a_credit_on_the_adaptation_is_refused_by_name():
    cell = CASES["alif_paper"]
    params = cell.init(jax.random.PRNGKey(0), jnp.float64)
    traces = cell.eprop_factored_init(params, cell.initial_carry((), jnp.float64))
    with pytest.raises(ValueError, match="credit on the adaptation needs eprop_contract"):
        cell.eprop_factored_contract(params, traces, {"v": None, "a": jnp.ones(6), "s": None})
