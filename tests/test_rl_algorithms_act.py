"""Every algorithm's ``act(params, memory, x, key, greedy=False) -> (action, memory')``: one environment, no
gradient, what an evaluation calls; and the TD error each owns (``learn``, of the pending step's ``Transition``).
Checked against a NumPy oracle written here (an Elman torso ``h' = tanh(x W + B + h R)``, linear heads): the greedy
action is the best one of the oracle's logits or action values at every step of a stream, the torso's carry follows
the oracle's; sampled actions follow the policy (the actor-critic's softmax, Q's epsilon-greedy with the configured
final rate).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.cells import Elman
from rtrl.rl.algorithm import Pending, Stepped, Transition
from rtrl.rl.algorithms import ALGORITHMS, ActorCritic, QAgent

A, D, N = 3, 2, 4
XS = np.array([[0.5, -1.0], [1.5, 0.2], [-0.7, 0.9]])


def agent_and_params(name):
    agent = ALGORITHMS[name](Elman(D, N), A)  # RLConfig(algorithm=name)'s options: the defaults
    params = agent.init(jax.random.PRNGKey(0), jnp.float64)
    head = "policy" if name == "ac" else "q"
    params[head]["W"] = 3.0 * jax.random.normal(jax.random.PRNGKey(1), (N, A), jnp.float64)  # distinct outputs
    return agent, params


def oracle_outputs(params, head):
    """Each step's head outputs (logits or action values), by NumPy."""
    p = jax.tree.map(np.asarray, params)
    h, outs = np.zeros(N), []
    for x in XS:
        h = np.tanh(x @ p["torso"]["W"] + p["torso"]["B"] + h @ p["torso"]["R"])
        outs.append(h @ p[head]["W"] + p[head]["b"])
    return outs, h


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_greedy_act_takes_the_best_output_and_advances_the_torso(name):
    agent, params = agent_and_params(name)
    outs, h = oracle_outputs(params, "policy" if name == "ac" else "q")
    memory = agent.torso.learner.init(params["torso"])
    for t, x in enumerate(XS):
        action, memory = agent.act(params, memory, jnp.asarray(x), jax.random.PRNGKey(t), greedy=True)
        assert int(action) == int(np.argmax(outs[t])), t
    np.testing.assert_allclose(np.asarray(memory.carry), h, rtol=1e-12)


def frequencies(agent, params, rate_key=0, draws=4000):
    memory = agent.torso.learner.init(params["torso"])
    x = jnp.asarray(XS[0])
    keys = jax.random.split(jax.random.PRNGKey(rate_key), draws)
    actions = jax.vmap(lambda k: agent.act(params, memory, x, k)[0])(keys)
    return np.bincount(np.asarray(actions), minlength=A) / draws


def test_the_actor_critic_samples_its_softmax():
    agent, params = agent_and_params("ac")
    logits = oracle_outputs(params, "policy")[0][0]
    policy = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(frequencies(agent, params), policy, atol=0.03)


@pytest.mark.parametrize("rate", [0.0, 0.3, 1.0])
def test_q_explores_at_its_configured_final_rate(rate):
    agent = QAgent(Elman(D, N), A, epsilon=rate)
    params = agent_and_params("q")[1]
    best = int(np.argmax(oracle_outputs(params, "q")[0][0]))
    expected = np.full(A, rate / A)
    expected[best] += 1 - rate
    np.testing.assert_allclose(frequencies(agent, params), expected, atol=0.03)


def pending_step(value, reward, terminated, truncated, final_value, valid):
    """The loop's pending step (``rtrl.rl.algorithm.Pending``), as an algorithm's ``learn`` reads it."""
    transition = Transition(*(jnp.asarray(a) for a in (reward, terminated, truncated, final_value)))
    return Pending(jnp.asarray(value), transition, jnp.asarray(valid), jnp.zeros(3, bool))


def td_error(agent, pending: Pending, target) -> jax.Array:
    """``agent.learn``'s TD error of ``pending``, ``target`` this step's (``Stepped.target``), gamma 0.9."""
    stepped = Stepped(None, None, jnp.asarray(target), None, None, jnp.zeros(3, bool), None, None)
    return agent.learn(pending, stepped, 0.9, 0.8)["delta"]


@pytest.mark.parametrize("agent", [ActorCritic(Elman(D, N), A), QAgent(Elman(D, N), A)])
def test_the_td_error_bootstraps_from_the_target_or_what_an_ended_episode_owes(agent):
    p = pending_step([1.0, 2.0, -0.5], [0.5, 1.0, 2.0], [False, True, False], [False, False, True], [9.0, 0.0, 3.0],
                     True)
    target = jnp.array([4.0, 7.0, 7.0])
    # by hand: 0.5 + 0.9 * 4 - 1; 1 + 0.9 * 0 - 2 (terminated); 2 + 0.9 * 3 + 0.5 (truncated, owed 3)
    np.testing.assert_allclose(td_error(agent, p, target), [3.1, -1.0, 5.2], rtol=1e-12)
    p = p._replace(valid=jnp.asarray(False))  # the run's first step: nothing pending
    np.testing.assert_array_equal(td_error(agent, p, target), np.zeros(3))
