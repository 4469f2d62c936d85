"""The actor-critic's shared tanh layer before its heads (``head_hidden``): the heads' arithmetic on a hand-checked
case, the agent's drive equal to the gradient of the same objective written out here, its parameters, the run
exact against BPTT, and the agents and values that refuse it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.cells import MinGRU
from rtrl.rl.agent import ActorCritic, heads
from rtrl.rl.algorithms import QAgent
from rtrl.rl.config import RLConfig
from rtrl.rl.loop import record, runner


def test_heads_read_the_torso_through_the_tanh_layer():
    """h = (1, -1), W = [[1, 0], [0, 2]], b = (0, 1): u = tanh(1, -1) = (0.7616, -0.7616); logits = u @ [[1], [1]]
    + 0.5 = 0.5; value = u @ [[2], [0]] = 1.5232."""
    params = {"head": {"W": jnp.array([[1.0, 0.0], [0.0, 2.0]]), "b": jnp.array([0.0, 1.0])},
              "policy": {"W": jnp.array([[1.0], [1.0]]), "b": jnp.array([0.5])},
              "value": {"W": jnp.array([[2.0], [0.0]]), "b": jnp.array([0.0])}}
    logits, value = heads(params, jnp.array([1.0, -1.0]))
    t = np.tanh(1.0)
    np.testing.assert_allclose(logits, [0.5], atol=1e-6)
    np.testing.assert_allclose(value, 2 * t, atol=1e-6)
    # without the layer, the heads read h itself
    linear = {k: params[k] for k in ("policy", "value")}
    np.testing.assert_allclose(heads(linear, jnp.array([1.0, -1.0]))[1], 2.0, atol=1e-6)


def test_parameters_have_the_layer_and_the_others_are_unchanged():
    cell = MinGRU(3, 5)
    plain, wide = ActorCritic(cell, 4), ActorCritic(cell, 4, head_hidden=7)
    p, q = (a.init(jax.random.PRNGKey(0)) for a in (plain, wide))
    assert set(p) == {"torso", "policy", "value"} and set(q) == {"torso", "policy", "value", "head"}
    assert q["head"]["W"].shape == (5, 7) and q["policy"]["W"].shape == (7, 4) and q["value"]["W"].shape == (7, 1)
    np.testing.assert_array_equal(p["torso"]["W_z"], q["torso"]["W_z"])  # the layer takes a key of its own


def test_the_drive_is_the_gradient_of_value_and_log_policy_through_the_layer():
    """One step from a zero carry: the drive of each environment is the gradient of ``c v + log pi(a)``, here
    written out from the cell's step and the layer's formula (not the agent's ``heads``)."""
    cell = MinGRU(3, 4)
    agent = ActorCritic(cell, 2, method="rtrl", head_hidden=3)
    params = agent.init(jax.random.PRNGKey(1), jnp.float64)
    memory = agent.memory(params, 2)
    x = jnp.array([[0.3, -1.0, 0.5], [1.0, 0.2, -0.4]], jnp.float64)
    keys = jax.random.split(jax.random.PRNGKey(2), 2)
    action, value, drive, bonus, _, _ = agent.step(params, memory, x, keys, 0.7, entropy=False)
    assert bonus is None

    def objective(p, xe, a):
        _, h = cell.step(p["torso"], cell.initial_carry((), jnp.float64), xe)
        u = jnp.tanh(h @ p["head"]["W"] + p["head"]["b"])
        logits = u @ p["policy"]["W"] + p["policy"]["b"]
        v = (u @ p["value"]["W"] + p["value"]["b"])[0]
        return 0.7 * v + jax.nn.log_softmax(logits)[a]

    for e in range(2):
        expected = jax.grad(objective)(params, x[e], action[e])
        for got, want in zip(jax.tree.leaves(jax.tree.map(lambda a, e=e: a[e], drive)), jax.tree.leaves(expected),
                             strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_a_run_with_the_layer_is_exact_against_bptt():
    """The fidelity check (the torso's online gradients of v and log pi, reaching it through the layer, against
    BPTT's over the episode so far) at every step, with a vanishing step so the parameters hold still."""
    config = RLConfig(env="tmaze", cell="mingru", hidden=6, head_hidden=5, envs=2, steps=40, record_every=40,
                      fidelity_every=1, lr=1e-12, dtype="float64", method="rtrl")
    run = runner(config)
    rec = record(run.advance(run.init(0), 40))
    assert rec["cos_value"] > 1 - 1e-9 and rec["cos_policy"] > 1 - 1e-9


def test_agents_without_the_layer_and_bad_widths_are_refused():
    with pytest.raises(ValueError, match="head_hidden must be 0 for QAgent"):
        QAgent(MinGRU(3, 4), 2, head_hidden=3)
    with pytest.raises(ValueError, match="head_hidden"):
        RLConfig(head_hidden=-1)
    with pytest.raises(ValueError, match="head_hidden does nothing here: algorithm 'q'"):
        runner(RLConfig(env="tmaze", algorithm="q", head_hidden=4))
