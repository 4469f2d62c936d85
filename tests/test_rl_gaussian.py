"""The Gaussian actor-critic (``rtrl.rl.algorithms.gaussian``) for Box action spaces: the policy's log-probability,
entropy and their gradients against NumPy formulas written out here, the squashed action's density against a Monte-Carlo
histogram, the squash itself on hand-checked values, the agent's drive against the gradient of the same objective
written out from the cell's step, exact RTRL equal to BPTT (directly and through the loop's fidelity check), and the
configurations a Box refuses."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.cells import MinGRU
from rtrl.rl.algorithms.gaussian import GaussianActorCritic, gaussian_objectives, squashed_log_prob
from rtrl.rl.config import RLConfig
from rtrl.rl.envs.continuous import squash
from rtrl.rl.loop import record, runner

pytest.importorskip("gymnax")


def numpy_gaussian(mean, log_std, u):
    """The oracle: ``(log pi(u), entropy, d logp / d mean, d logp / d log_std)`` of N(mean, diag(exp(2 log_std)))
    from the density's formula, in NumPy."""
    mean, log_std, u = (np.asarray(a, np.float64) for a in (mean, log_std, u))
    std = np.exp(log_std)
    density = np.prod(np.exp(-((u - mean) ** 2) / (2 * std ** 2)) / (std * np.sqrt(2 * np.pi)))
    entropy = np.sum(0.5 * np.log(2 * np.pi * np.e * std ** 2))
    return np.log(density), entropy, (u - mean) / std ** 2, ((u - mean) / std) ** 2 - 1


def close(got, want):
    """Every leaf of ``got`` equals ``want``'s to 1e-10 relative (1e-12 absolute)."""
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_log_probability_and_entropy_on_a_hand_checked_case():
    """mean (0.5, -1), std (1, 2), u (1, 1): log pi = -(0.5^2 / 2 + (2/2)^2 / 2) - log 2 - log(2 pi) = -3.1560;
    H = log 2 + log(2 pi e) = 3.5310."""
    got = gaussian_objectives(jnp.array([0.5, -1.0]), jnp.array([0.0, math.log(2.0)]), jnp.array([1.0, 1.0]))
    np.testing.assert_allclose(got, [-3.156024, 3.531024], atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_log_probability_entropy_and_gradients_against_numpy(seed):
    rng = np.random.default_rng(seed)
    mean, log_std, u = rng.normal(size=3), rng.normal(size=3) * 0.5, rng.normal(size=3)
    logp, entropy, d_mean, d_log_std = numpy_gaussian(mean, log_std, u)
    args = tuple(jnp.asarray(a, jnp.float64) for a in (mean, log_std, u))
    np.testing.assert_allclose(gaussian_objectives(*args), [logp, entropy], rtol=1e-12)
    jac = jax.jacrev(gaussian_objectives, argnums=(0, 1))(*args)  # rows: logp, entropy
    np.testing.assert_allclose(jac[0][0], d_mean, rtol=1e-12)
    np.testing.assert_allclose(jac[1][0], d_log_std, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(jac[0][1], 0.0)
    np.testing.assert_allclose(jac[1][1], 1.0)


def test_squash_on_hand_checked_values():
    """[-2, 2]: u = 0 -> 0, u = atanh(0.5) -> 1; [0, 1]: u = 0 -> 0.5; (-inf, inf): u itself; [-1, inf): u clipped
    at -1; in NumPy and in JAX alike."""
    low, high = (-2.0, 0.0, -math.inf, -1.0), (2.0, 1.0, math.inf, math.inf)
    u = np.array([[0.0, 0.0, 5.0, -3.0], [math.atanh(0.5), 40.0, -7.0, 2.5]])
    want = [[0.0, 0.5, 5.0, -1.0], [1.0, 1.0, -7.0, 2.5]]
    np.testing.assert_allclose(squash(u, low, high, xp=np), want, atol=1e-12)
    np.testing.assert_allclose(squash(jnp.asarray(u), low, high), want, atol=1e-12)


def test_squashed_log_probability_against_monte_carlo():
    """The density of low + (high - low) (tanh(u) + 1) / 2 against a histogram of 2 million draws, on [-2, 2] and
    on [0, 3]; and its gradient w.r.t. the Gaussian's parameters equals the Gaussian's at u (the change of
    variables depends on u alone)."""
    rng = np.random.default_rng(0)
    mean, log_std = 0.3, -0.2
    u = mean + np.exp(log_std) * rng.normal(size=2_000_000)
    for low, high in ((-2.0, 2.0), (0.0, 3.0)):
        a = low + (high - low) * (np.tanh(u) + 1) / 2
        counts, edges = np.histogram(a, bins=40, range=(low, high))
        centres, width = (edges[1:] + edges[:-1]) / 2, edges[1] - edges[0]
        density = counts / (len(a) * width)
        inner = slice(2, -2)  # the density bends sharply near the bounds, where a bin's mean is not its centre's
        model = np.exp([float(squashed_log_prob(jnp.array([mean]), jnp.array([log_std]), jnp.array([c]), [low],
                                                [high])) for c in centres[inner]])
        np.testing.assert_allclose(density[inner], model, rtol=0.03, atol=2e-3)
    action = jnp.array([1.2])
    g_squashed = jax.grad(lambda m, s: squashed_log_prob(m, s, action, [0.0], [3.0]), argnums=(0, 1))(
        jnp.array([mean]), jnp.array([log_std]))
    u0 = jnp.arctanh(2 * action / 3 - 1)
    g_gauss = jax.grad(lambda m, s: gaussian_objectives(m, s, u0)[0], argnums=(0, 1))(jnp.array([mean]),
                                                                                      jnp.array([log_std]))
    np.testing.assert_allclose(np.concatenate(g_squashed), np.concatenate(g_gauss), rtol=1e-10)


def test_the_drive_is_the_gradient_of_value_and_log_policy_written_out():
    """One step from a zero carry, two environments, a Box of 2: the drive is the gradient of ``c v + log pi(u)``,
    written out here from the cell's step and the density's formula; the entropy's gradient is 1 on ``log_std``
    and 0 elsewhere; the draws have the policy's mean and spread."""
    cell = MinGRU(3, 4)
    agent = GaussianActorCritic(cell, 2, method="rtrl", head_hidden=3)
    params = agent.init(jax.random.PRNGKey(1), jnp.float64)
    params["log_std"] = jnp.array([0.2, -0.5])
    assert params["policy"]["W"].shape == (3, 2) and params["log_std"].shape == (2,)
    memory = agent.torso.memory(params, 2)
    x = jnp.array([[0.3, -1.0, 0.5], [1.0, 0.2, -0.4]], jnp.float64)
    keys = jax.random.split(jax.random.PRNGKey(2), 2)
    action, value, drive, bonus, _, entropy = agent.step(params, memory, x, keys, 0.7)

    def mean_and_value(p, xe):
        _, h = cell.step(p["torso"], cell.initial_carry((), jnp.float64), xe)
        hidden = jnp.tanh(h @ p["head"]["W"] + p["head"]["b"])
        return hidden @ p["policy"]["W"] + p["policy"]["b"], (hidden @ p["value"]["W"] + p["value"]["b"])[0]

    def objective(p, xe, u):
        mean, v = mean_and_value(p, xe)
        std = jnp.exp(p["log_std"])
        logp = jnp.sum(-((u - mean) ** 2) / (2 * std ** 2) - p["log_std"] - 0.5 * jnp.log(2 * jnp.pi))
        return 0.7 * v + logp

    for e in range(2):
        expected = jax.grad(objective)(params, x[e], action[e])
        got = jax.tree.map(lambda a, e=e: a[e], drive)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(expected), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(value[e], mean_and_value(params, x[e])[1], rtol=1e-12)
    np.testing.assert_allclose(entropy, numpy_gaussian([0, 0], [0.2, -0.5], [0, 0])[1], rtol=1e-12)
    assert float(bonus["log_std"].sum()) == 2.0 and sum(float(jnp.abs(a).sum()) for a in jax.tree.leaves(bonus)) == 2
    # the draws: mean and spread of the policy of environment 0, over many keys
    many = jax.vmap(lambda k: agent.step(params, jax.tree.map(lambda a: a[:1], memory), x[:1], k[None], 1.0,
                                         entropy=False)[0][0])(jax.random.split(jax.random.PRNGKey(3), 20_000))
    mean0 = mean_and_value(params, x[0])[0]
    np.testing.assert_allclose(many.mean(0), mean0, atol=0.03)
    np.testing.assert_allclose(many.std(0), np.exp([0.2, -0.5]), rtol=0.03)


def test_with_a_critic_constant_the_value_and_policy_gradients_come_apart():
    """``critic_lr`` (Farr et al.'s intentional actor-critic): ``stepped`` gives the update rule ``grad v_t`` and
    ``grad log pi(u_t)`` apart (``value_grads``, ``policy_grads``), each written out here from the cell's step and
    the density's formula, and the drive their sum ``c grad v + grad log pi`` as before. One step from a zero
    carry, two environments, a Box of 2. [guards: the two swapped; the value's cotangent kept in the policy's]"""
    cell = MinGRU(3, 4)
    # the options of RLConfig(optimizer="intentional", lr=0.05, critic_lr=0.5, value_coef=0.7, entropy=0.0)
    agent = GaussianActorCritic(cell, 2, method="rtrl", head_hidden=3, value_coef=0.7, entropy=0.0, split_critic=True)
    params = agent.init(jax.random.PRNGKey(1), jnp.float64)
    params["log_std"] = jnp.array([0.2, -0.5])
    x = jnp.array([[0.3, -1.0, 0.5], [1.0, 0.2, -0.4]], jnp.float64)
    stepped = agent.stepped(params, agent.torso.memory(params, 2), x, jax.random.PRNGKey(2), jnp.array(0))

    def mean_and_value(p, xe):
        _, h = cell.step(p["torso"], cell.initial_carry((), jnp.float64), xe)
        hidden = jnp.tanh(h @ p["head"]["W"] + p["head"]["b"])
        return hidden @ p["policy"]["W"] + p["policy"]["b"], (hidden @ p["value"]["W"] + p["value"]["b"])[0]

    def log_policy(p, xe, u):
        mean, std = mean_and_value(p, xe)[0], jnp.exp(p["log_std"])
        return jnp.sum(-((u - mean) ** 2) / (2 * std ** 2) - p["log_std"] - 0.5 * jnp.log(2 * jnp.pi))

    for e in range(2):
        g_v = jax.grad(lambda p, e=e: mean_and_value(p, x[e])[1])(params)
        g_pi = jax.grad(log_policy)(params, x[e], stepped.action[e])
        assert float(jnp.abs(g_v["log_std"]).max()) == 0 and float(jnp.abs(g_pi["value"]["W"]).max()) == 0
        close(jax.tree.map(lambda a, e=e: a[e], stepped.extra["value_grads"]), g_v)
        close(jax.tree.map(lambda a, e=e: a[e], stepped.extra["policy_grads"]), g_pi)
        close(jax.tree.map(lambda a, e=e: a[e], stepped.drive), jax.tree.map(lambda v, q: 0.7 * v + q, g_v, g_pi))
    one = GaussianActorCritic(cell, 2, method="rtrl", head_hidden=3)  # RLConfig()'s options
    assert one.stepped(params, one.torso.memory(params, 2), x, jax.random.PRNGKey(2),
                       jnp.array(0)).extra is None  # one constant: nothing apart


def test_critic_lr_is_refused_where_nothing_reads_it():
    with pytest.raises(ValueError, match="critic_lr does nothing here: optimizer 'adam' does not read it"):
        RLConfig(critic_lr=0.5)
    for algorithm in ("q", "qrc", "sarsa"):  # every algorithm without a critic of its own
        with pytest.raises(ValueError, match=f"critic_lr does nothing here: algorithm '{algorithm}' does not read it "
                                             r"\(only ac"):
            RLConfig(algorithm=algorithm, optimizer="intentional", critic_lr=0.5)
    with pytest.raises(ValueError, match="critic_lr must be at most 1"):
        RLConfig(optimizer="intentional", critic_lr=2.0)


def test_a_box_preset_under_an_algorithm_of_discrete_actions_names_the_box_not_its_critic_lr(capsys):
    """``--preset hopper-p --algorithm sarsa``: the preset's critic_lr is dropped as unread (as its other options
    of the actor-critic are), and the real reason is said: Box actions need ac [before: "argument --critic-lr:
    critic_lr needs algorithm 'ac'", though no --critic-lr was given]."""
    from rtrl.cli import main
    from rtrl.rl.presets import PRESETS

    assert PRESETS["hopper-p"].options.get("critic_lr") is not None
    assert main(["rl", "--preset", "hopper-p", "--algorithm", "sarsa", "--out", "never-made"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and "algorithm must be ac (a Gaussian policy)" in err and "critic" not in err


@pytest.mark.parametrize("cell, state_std", [("mingru", False), ("elman", False), ("mingru", True)])
def test_exact_rtrl_equals_bptt_on_the_continuous_agent(cell, state_std):
    """The online gradients of v_t, log pi(u_t) and the entropy after 12 steps of an episode (the torso's exact
    traces carried step by step) equal BPTT's over the same inputs, every parameter, to 1e-9 relative; with
    ``state_std`` the spread's head's weights away from 0, so the entropy's gradient reaches the torso."""
    from rtrl.cells.lookup import make_cell

    agent = GaussianActorCritic(make_cell(cell, {}, 3, 5), 2, method="rtrl", state_std=state_std)
    params = agent.init(jax.random.PRNGKey(4), jnp.float64)
    if state_std:
        params["policy"]["W"] = params["policy"]["W"] + 0.3 * jax.random.normal(jax.random.PRNGKey(6), (5, 4))
    xs = jax.random.normal(jax.random.PRNGKey(5), (12, 3), jnp.float64)
    memory = agent.torso.learner.init(params["torso"])
    for t in range(12):
        action = jnp.array([0.4 - 0.1 * t, 0.05 * t])
        online = agent.objective_grads(params, memory, xs[t], action)
        memory = online[2]
    bptt = agent.bptt_grads(params, xs, jnp.asarray(0), action)
    if state_std:
        assert float(jnp.abs(bptt["torso"]["W_h"][2]).max()) > 0  # the entropy's gradient reaches the torso
    for a, b in zip(jax.tree.leaves(online[1]), jax.tree.leaves(bptt), strict=True):
        scale = max(float(jnp.abs(b).max()), 1e-300)
        assert float(jnp.abs(a - b).max()) / scale <= 1e-9


def test_a_pendulum_run_is_exact_against_bptt_through_the_fidelity_check():
    """The loop's fidelity check at every step of a float64 run on pendulum-p (an episode boundary included: 200
    steps an episode, 230 steps), with a vanishing step so the parameters hold still: both cosines 1 to 1e-9."""
    config = RLConfig(env="pendulum-p", cell="mingru", hidden=6, envs=2, steps=230, record_every=230,
                      fidelity_every=1, lr=1e-12, dtype="float64", method="auto")
    run = runner(config)
    state = run.advance(run.init(0), 230)
    rec = record(state)
    assert rec["cos_value"] > 1 - 1e-9 and rec["cos_policy"] > 1 - 1e-9
    assert rec["episodes"] == 2 and -2000 < rec["return"] < 0
    assert state.params["log_std"].shape == (1,)


def test_the_intentional_update_runs_on_the_continuous_agent():
    """Its per-environment step reads the drive (log_std's share included): the parameters move, all finite."""
    config = RLConfig(env="pendulum-p", cell="mingru", hidden=6, envs=2, steps=210, record_every=210,
                      optimizer="intentional", lr=0.01, entropy=0.0, dtype="float64")
    run = runner(config)
    start = run.init(0)
    state = run.advance(start, 210)
    rec = record(state)
    assert rec["episodes"] == 2 and math.isfinite(rec["return"])
    for name in ("log_std", "policy", "value"):
        moved = jax.tree.map(lambda a, b: float(jnp.abs(a - b).max()), state.params[name], start.params[name])
        assert all(0 < m < 10 and math.isfinite(m) for m in jax.tree.leaves(moved)), name


def test_a_box_refuses_what_needs_discrete_actions():
    with pytest.raises(ValueError, match="algorithm must be ac .* 'q' needs a Discrete action space"):
        runner(RLConfig(env="pendulum-p", algorithm="q"))


def test_the_pendulum_p_preset_runs_end_to_end(tmp_path):
    """``rtrl rl --preset pendulum-p`` (made small) writes its records: one episode per environment in 200 steps,
    a return of Pendulum's range (each step's reward in [-16.3, 0])."""
    from rtrl.cli import main
    from rtrl.run.folder import read_config, read_metrics

    out = tmp_path / "run"
    assert main(["rl", "--preset", "pendulum-p", "--steps", "200", "--record-every", "200", "--envs", "2",
                 "--hidden", "8", "--quiet", "--out", str(out)]) == 0
    record_ = read_metrics(out)[-1]
    assert record_["episodes"] == 2 and -16.3 * 200 < record_["return"] < 0
    config = read_config(out)
    assert config.env == "pendulum-p" and config.head_hidden == 64


def test_act_draws_from_the_policy_or_gives_its_mean():
    """``act`` (a rollout's, no gradient): with ``greedy`` the mean, else the step's draw for the same key; the
    memory advanced as the step advances it."""
    agent = GaussianActorCritic(MinGRU(2, 3), 2)
    params = agent.init(jax.random.PRNGKey(0), jnp.float64)
    memory = agent.torso.learner.init(params["torso"])
    x, key = jnp.array([0.5, -0.2]), jax.random.PRNGKey(1)
    ((mean, _), _), after = agent.forward(params, memory, x)
    greedy, kept = agent.act(params, memory, x, key, greedy=True)
    np.testing.assert_array_equal(greedy, mean)
    drawn, _ = agent.act(params, memory, x, key)
    stepped = agent.step(params, jax.tree.map(lambda a: a[None], memory), x[None], key[None], 1.0, entropy=False)
    np.testing.assert_allclose(drawn, stepped[0][0], rtol=1e-12)
    for a, b in zip(jax.tree.leaves(kept), jax.tree.leaves(after), strict=True):
        np.testing.assert_array_equal(a, b)


def test_init_std_sets_the_policys_spread_at_the_start():
    """``init_std`` 0.5: ``log_std`` starts at log 0.5 in every dimension, the draws spread by 0.5 about the mean;
    refused on discrete actions and under an algorithm without a policy."""
    from rtrl.rl.assemble import assemble

    agent = assemble(RLConfig(env="pendulum-p", cell="mingru", hidden=4, init_std=0.5)).agent
    params = agent.init(jax.random.PRNGKey(0))
    np.testing.assert_allclose(params["log_std"], [math.log(0.5)], rtol=1e-6)
    memory = agent.torso.learner.init(params["torso"])
    x = jnp.array([0.3, -0.2], params["log_std"].dtype)
    draws = jax.vmap(lambda k: agent.act(params, memory, x, k)[0])(jax.random.split(jax.random.PRNGKey(1), 20_000))
    np.testing.assert_allclose(float(draws.std()), 0.5, rtol=0.03)
    assert float(assemble(RLConfig(env="pendulum-p", hidden=4)).agent.init(jax.random.PRNGKey(0))["log_std"][0]) == 0
    with pytest.raises(ValueError, match="init_std is the Gaussian policy's, for a Box action space"):
        assemble(RLConfig(env="tmaze", init_std=0.5))
    with pytest.raises(ValueError, match="init_std does nothing here: algorithm 'q' does not read it"):
        RLConfig(algorithm="q", init_std=0.5)


def test_a_state_dependent_spread_is_a_head_whose_gradients_are_written_out():
    """``state_std``: ``log_std`` is A more columns of the policy head (weights 0, biases ``log(init_std)``: the
    policy at the start is the state-independent one of the same key); the drive is the gradient of ``c v + log
    pi(u)`` with ``log_std = hidden @ W_s + b_s``, and the entropy's gradient the mean over the environments of
    ``d H / d log_std = 1`` pulled through the head: ``b_s`` 1, ``W_s`` the mean hidden state, the torso's its
    pullback; both written out here from the cell's step. One step from a zero carry, two environments, a Box of 2.
    [guards: log_std read from the mean's columns; the entropy's gradient left constant; W_s not starting at 0]"""
    cell = MinGRU(3, 4)
    plain = GaussianActorCritic(cell, 2, method="rtrl", head_hidden=3, init_std=0.5)
    agent = GaussianActorCritic(cell, 2, method="rtrl", head_hidden=3, init_std=0.5, state_std=True)
    params, before = agent.init(jax.random.PRNGKey(1), jnp.float64), plain.init(jax.random.PRNGKey(1), jnp.float64)
    assert "log_std" not in params and params["policy"]["W"].shape == (3, 4)
    np.testing.assert_array_equal(params["policy"]["W"][:, :2], before["policy"]["W"])
    np.testing.assert_array_equal(params["policy"]["W"][:, 2:], 0)
    np.testing.assert_allclose(params["policy"]["b"], [0, 0, math.log(0.5), math.log(0.5)], rtol=1e-12)
    params["policy"]["W"] = params["policy"]["W"].at[:, 2:].set(jnp.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]]))
    x = jnp.array([[0.3, -1.0, 0.5], [1.0, 0.2, -0.4]], jnp.float64)
    keys = jax.random.split(jax.random.PRNGKey(2), 2)
    action, _, drive, bonus, _, entropy = agent.step(params, agent.torso.memory(params, 2), x, keys, 0.7)

    def hidden_state(p, xe):
        _, h = cell.step(p["torso"], cell.initial_carry((), jnp.float64), xe)
        return jnp.tanh(h @ p["head"]["W"] + p["head"]["b"])

    def parts(p, xe):
        hidden = hidden_state(p, xe)
        W, b = p["policy"]["W"], p["policy"]["b"]
        return (hidden @ W[:, :2] + b[:2], hidden @ W[:, 2:] + b[2:],
                (hidden @ p["value"]["W"] + p["value"]["b"])[0])

    def objective(p, xe, u):
        mean, log_std, v = parts(p, xe)
        logp = jnp.sum(-((u - mean) ** 2) / (2 * jnp.exp(2 * log_std)) - log_std - 0.5 * jnp.log(2 * jnp.pi))
        return 0.7 * v + logp

    for e in range(2):
        close(jax.tree.map(lambda a, e=e: a[e], drive), jax.grad(objective)(params, x[e], action[e]))
        log_std = parts(params, x[e])[1]
        np.testing.assert_allclose(entropy[e], numpy_gaussian([0, 0], log_std, [0, 0])[1], rtol=1e-12)
    close(bonus, jax.grad(lambda p: sum(jnp.sum(parts(p, xe)[1]) for xe in x) / 2)(params))
    np.testing.assert_allclose(bonus["policy"]["b"], [0, 0, 1, 1], rtol=1e-12)
    np.testing.assert_allclose(bonus["policy"]["W"][:, 2],
                               (hidden_state(params, x[0]) + hidden_state(params, x[1])) / 2, rtol=1e-12)
    assert float(jnp.abs(bonus["torso"]["W_h"]).max()) > 0  # it reaches the torso


def test_a_pendulum_run_with_a_state_dependent_spread_passes_the_fidelity_check():
    """The loop's fidelity check at every step of a float64 ``state_std`` run on pendulum-p, across an episode
    boundary: both cosines 1 to 1e-9; ``state_std`` refused on discrete actions and under Q."""
    from rtrl.rl.assemble import assemble

    config = RLConfig(env="pendulum-p", cell="mingru", hidden=6, envs=2, steps=230, record_every=230,
                      fidelity_every=1, lr=1e-12, dtype="float64", method="auto", state_std=True)
    run = runner(config)
    state = run.advance(run.init(0), 230)
    rec = record(state)
    assert rec["cos_value"] > 1 - 1e-9 and rec["cos_policy"] > 1 - 1e-9 and rec["episodes"] == 2
    assert state.params["policy"]["W"].shape == (6, 2) and "log_std" not in state.params
    with pytest.raises(ValueError, match="state_std is the Gaussian policy's, for a Box action space"):
        assemble(RLConfig(env="tmaze", state_std=True))
    with pytest.raises(ValueError, match="state_std does nothing here: algorithm 'q' does not read it"):
        RLConfig(algorithm="q", state_std=True)
