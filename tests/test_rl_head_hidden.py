"""The tanh layer before the heads (``head_hidden``) of the actor-critic and of the Q agents: the heads' arithmetic on
a hand-checked case, the agents' drive equal to the gradient of the same objective written out here, their
parameters, runs exact against BPTT, QRC's secondary weights on the layer, and the values that are refused."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.cells import MinGRU
from rtrl.rl.agent import heads
from rtrl.rl.algorithms import ActorCritic, QAgent, QRCAgent
from rtrl.rl.algorithms.action_values import epsilon_greedy
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
    memory = agent.torso.memory(params, 2)
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


def test_q_values_read_the_torso_through_the_layer():
    """The Q agent on a torso whose output is its input (a one-step ``Elman`` with identity input weights and no
    recurrence): h = tanh(x) for x = (1, -1); the layer W = [[1, 0], [0, 2]], b = (0, 1) gives u = tanh(tanh(1),
    -2 tanh(1) + 1) = (0.6420, -0.4802); Q = u @ [[1, 2], [1, 0]] + (0.5, 0) = (0.6618, 1.2840)."""
    from rtrl.cells import Elman

    agent = QAgent(Elman(2, 2), 2, method="rtrl", head_hidden=2)
    params = agent.init(jax.random.PRNGKey(0), jnp.float64)
    params = {**params, "torso": {"W": jnp.eye(2), "R": jnp.zeros((2, 2)), "B": jnp.zeros(2)},
              "head": {"W": jnp.array([[1.0, 0.0], [0.0, 2.0]]), "b": jnp.array([0.0, 1.0])},
              "q": {"W": jnp.array([[1.0, 2.0], [1.0, 0.0]]), "b": jnp.array([0.5, 0.0])}}
    assert set(params["torso"]) == set(agent.init(jax.random.PRNGKey(0))["torso"])
    q, (_, phi) = agent.forward(params, agent.torso.learner.init(params["torso"]), jnp.array([1.0, -1.0]))
    t = np.tanh(1.0)
    u = np.tanh([t, -2 * t + 1])
    np.testing.assert_allclose(phi, u, rtol=1e-12)
    np.testing.assert_allclose(q, [u.sum() + 0.5, 2 * u[0]], rtol=1e-12)
    np.testing.assert_allclose(q, [0.6618, 1.2840], atol=1e-4)


@pytest.mark.parametrize("kind", [QAgent, QRCAgent])
def test_the_q_drive_is_the_gradient_of_the_action_value_through_the_layer(kind):
    """One step from a zero carry: each environment's drive is the gradient of ``Q(s, a)`` for the action taken,
    written out here from the cell's step and the layer's formula; QRC's features are the layer's outputs."""
    cell = MinGRU(3, 4)
    agent = kind(cell, 2, method="rtrl", head_hidden=3, epsilon=0.5, explore_steps=1)
    params = agent.init(jax.random.PRNGKey(1), jnp.float64)
    assert params["head"]["W"].shape == (4, 3) and params["q"]["W"].shape == (3, 2) and agent.features == 3
    x = jnp.array([[0.3, -1.0, 0.5], [1.0, 0.2, -0.4]], jnp.float64)
    stepped = epsilon_greedy(agent, params, agent.torso.memory(params, 2), x, jax.random.PRNGKey(2), jnp.array(5),
                             targets=True)

    def layer(p, xe):
        _, h = cell.step(p["torso"], cell.initial_carry((), jnp.float64), xe)
        return jnp.tanh(h @ p["head"]["W"] + p["head"]["b"])

    def q_of(p, xe):
        return layer(p, xe) @ p["q"]["W"] + p["q"]["b"]

    for e in range(2):
        expected = jax.grad(lambda p, e=e: q_of(p, x[e])[stepped.action[e]])(params)
        got = jax.tree.map(lambda a, e=e: a[e], stepped.drive)
        for g, want in zip(jax.tree.leaves(got), jax.tree.leaves(expected), strict=True):
            np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(stepped.extra["features"][e], layer(params, x[e]), rtol=1e-12)
    if kind is QRCAgent:  # QRC's h reads the layer's 3 outputs
        assert agent.correction(0.99, 0.99 * 0.8, 2).init(params).h["W"].shape == (3, 2)


@pytest.mark.parametrize("algorithm", ["q", "qrc"])
def test_a_q_run_with_the_layer_is_exact_against_bptt(algorithm):
    """The fidelity check (the online gradient of Q(s_t, a_t), reaching the torso through the layer, against BPTT's
    over the episode so far) at every step, with a vanishing step so the parameters hold still."""
    config = RLConfig(env="tmaze", algorithm=algorithm, cell="mingru", hidden=6, head_hidden=5, envs=2, steps=40,
                      record_every=40, fidelity_every=1, lr=1e-12, dtype="float64", method="rtrl")
    run = runner(config)
    rec = record(run.advance(run.init(0), 40))
    assert rec["cos_value"] > 1 - 1e-9


def test_bad_widths_are_refused():
    with pytest.raises(ValueError, match="head_hidden must be a non-negative integer"):
        QAgent(MinGRU(3, 4), 2, head_hidden=-3)
    with pytest.raises(ValueError, match="head_hidden"):
        RLConfig(head_hidden=-1)


def test_split_heads_read_halves_of_the_torso_on_a_hand_checked_case():
    """``split_torso``: h = (1, -1, 2, 0.5); the policy reads (1, -1) through "head" (identity W, b 0: tanh(1),
    tanh(-1)), the value reads (2, 0.5) through "value_head" (W = [[1, 0], [0, 0]], b = (0, 1): tanh(2), tanh(1));
    logits = tanh(1) - tanh(-1) = 2 tanh(1), value = 3 tanh(2) + tanh(1)."""
    params = {"head": {"W": jnp.eye(2), "b": jnp.zeros(2)},
              "value_head": {"W": jnp.array([[1.0, 0.0], [0.0, 0.0]]), "b": jnp.array([0.0, 1.0])},
              "policy": {"W": jnp.array([[1.0], [-1.0]]), "b": jnp.array([0.0])},
              "value": {"W": jnp.array([[3.0], [1.0]]), "b": jnp.array([0.0])}}
    logits, value = heads(params, jnp.array([1.0, -1.0, 2.0, 0.5]), split=True)
    np.testing.assert_allclose(logits, [2 * np.tanh(1.0)], rtol=1e-6)
    np.testing.assert_allclose(value, 3 * np.tanh(2.0) + np.tanh(1.0), rtol=1e-6)
    linear = {k: params[k] for k in ("policy", "value")}  # no layers: the halves themselves
    logits, value = heads(linear, jnp.array([1.0, -1.0, 2.0, 0.5]), split=True)
    np.testing.assert_allclose([logits[0], value], [2.0, 6.5], rtol=1e-6)


@pytest.mark.parametrize("head_hidden", [0, 3])
def test_split_torso_makes_actor_and_critic_separate_networks(head_hidden):
    """A minGRU torso of 6 units under ``split_torso``, after 5 steps of exact RTRL: the value's gradient is zero
    on the policy's units (columns 0..2 of every torso parameter) and on the policy's head, the policy's gradient
    zero on the value's units and head, each non-zero on its own; and both equal BPTT's to 1e-9 relative."""
    cell = MinGRU(3, 6)
    agent = ActorCritic(cell, 2, method="rtrl", head_hidden=head_hidden, split_torso=True)
    params = agent.init(jax.random.PRNGKey(3), jnp.float64)
    assert params["policy"]["W"].shape == (head_hidden or 3, 2)
    xs = jax.random.normal(jax.random.PRNGKey(4), (5, 3), jnp.float64)
    memory = agent.torso.learner.init(params["torso"])
    for t in range(5):
        _, grads, memory, _ = agent.objective_grads(params, memory, xs[t], jnp.asarray(t % 2))
    g_value, g_policy = (jax.tree.map(lambda a, i=i: a[i], grads) for i in range(2))
    for name in ("W_z", "W_h", "b_z", "b_h"):
        value_units, policy_units = g_value["torso"][name][..., 3:], g_policy["torso"][name][..., :3]
        assert float(jnp.abs(g_value["torso"][name][..., :3]).max()) == 0 < float(jnp.abs(value_units).max())
        assert float(jnp.abs(g_policy["torso"][name][..., 3:]).max()) == 0 < float(jnp.abs(policy_units).max())
    assert float(jnp.abs(g_value["policy"]["W"]).max()) == 0 and float(jnp.abs(g_policy["value"]["W"]).max()) == 0
    if head_hidden:
        assert float(jnp.abs(g_value["head"]["W"]).max()) == 0 < float(jnp.abs(g_policy["head"]["W"]).max())
        assert float(jnp.abs(g_policy["value_head"]["W"]).max()) == 0 < float(jnp.abs(g_value["value_head"]["W"]).max())
    bptt = agent.bptt_grads(params, xs, jnp.asarray(0), jnp.asarray(4 % 2))
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(bptt), strict=True):
        assert float(jnp.abs(a - b).max()) <= 1e-9 * max(float(jnp.abs(b).max()), 1e-300)


def test_split_torso_is_refused_where_it_cannot_apply():
    from rtrl.rl.assemble import assemble

    with pytest.raises(ValueError, match="split_torso needs an even number of torso units.*got hidden 5"):
        assemble(RLConfig(env="tmaze", cell="mingru", hidden=5, split_torso=True))
    with pytest.raises(ValueError, match="split_torso does nothing here: algorithm 'q' does not read it"):
        RLConfig(algorithm="q", split_torso=True)
