"""The online actor-critic's rules (rtrl.rl.loop), one by one, on a tiny scripted case with exact numbers.

Two environments, five steps; environment 0's episode ends at its 2nd step (and again at its 5th), environment
1's at its 4th. A plain NumPy re-implementation of the loop (``Oracle``: the Elman torso's sensitivities, the
heads' gradients, the TD error, the parameter-space traces, the update cadence, reward scaling and observation
normalisation, each written out from its formula, nothing from rtrl) must give the same parameters, traces,
carries and pending step after every step. It guards:

* the TD error at an episode end: ``r + 0 - v`` (no bootstrap from the next episode's first state; the loop makes
  no difference between an episode that ends and one cut by a time limit: ``done`` is terminal);
* the traces ``z`` cut at the start of an episode, for that environment only; the torso's carry reset for that
  environment only;
* the pending step: no TD error before the first step, the previous step's carried across calls;
* the update cadence: an update every ``update_every`` steps, the ascents of the steps between summed, the
  parameters unchanged in between; ObGD's step bound.

Mutations of rtrl/rl/loop.py (and, for the statistics, rtrl/rl/envs/normalize.py) tried by hand, each killed (a test
failed; then restored): bootstrapping across the episode end (``jnp.where(p.done, 0.0, value)`` -> ``value``); the
traces not cut (``decay`` without the ``done`` factor); every environment's carry reset where one ends; the update
due at ``step % k == 0``; the accumulated ascent, or the accumulated overshoot, not summed (the last step's only);
the discounted return not restarted at an episode's start; the first step's TD error not masked (``p.valid``
ignored); the entropy term summed over the environments, or the TD term not divided by E; ``value_coef`` on the
policy's gradient instead; the observation normalised, or the reward scaled, by the statistics before this step's;
the pending reward unscaled; one action key for every environment; the key not advanced between steps; one
environment key for all environments.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rtrl.rl.algorithms import ActorCritic
from rtrl.rl.assemble import RLAssembly, algorithm_of, assemble
from rtrl.rl.config import RLConfig
from rtrl.rl.envs import Env, EpisodeStats
from rtrl.rl.loop import OnlineActorCritic

E, STEPS, LENGTH = 2, 5, 3
FIRST_EPISODE = (2, 4)  # steps left in each environment's first episode (later ones: LENGTH)
REWARDS = (0.5, -1.0, 2.0)  # by action, plus 0.25 * the step within the episode


class ScriptState(NamedTuple):
    time: jax.Array  # steps taken in this episode
    left: jax.Array  # steps left in it
    last: jax.Array  # the last action
    noise: jax.Array  # a draw from the step's key (``noisy``), else 0
    taken: jax.Array  # the action of the step that led here (kept across the reset, unlike ``last``)


class Scripted(Env):
    """Deterministic episodes of ``LENGTH`` steps whatever the actions; the reward and the observation say which
    action was taken. ``noisy``: the observation also shows a uniform draw from the step's key."""

    actions: int = 3
    noisy: bool = False

    obs_size = 3
    num_actions = property(lambda self: self.actions)
    max_steps = property(lambda self: max(LENGTH, *FIRST_EPISODE))

    def observe(self, s: ScriptState) -> jax.Array:
        return jnp.stack([1.0 + 0.1 * s.left, 0.5 * s.time - 0.2, 0.3 * s.last + 0.1 + s.noise]).astype(jnp.float64)

    def begin(self, left) -> ScriptState:
        return ScriptState(jnp.int32(0), jnp.int32(left), jnp.int32(0), jnp.float64(0.0), jnp.int32(-1))

    def reset(self, key):
        state = self.begin(LENGTH)
        return self.observe(state), state

    def transition(self, key, state, action):
        noise = jax.random.uniform(key, dtype=jnp.float64) if self.noisy else jnp.float64(0.0)
        reward = (jnp.asarray(REWARDS)[action % 3] + 0.25 * state.time).astype(jnp.float32)  # exact in float32
        state = ScriptState(state.time + 1, state.left - 1, action.astype(jnp.int32), noise, state.taken)
        return self.observe(state), state, reward, state.left == 0, jnp.zeros((), bool)

    def step(self, key, state, action):
        step = super().step(key, state, action)
        return step._replace(state=step.state._replace(taken=jnp.asarray(action, jnp.int32)))


@functools.cache
def compiled(config: RLConfig, env: Scripted, agent=ActorCritic) -> OnlineActorCritic:
    """``OnlineActorCritic`` on ``env`` (wrapped as ``make`` wraps) with an ``agent`` of the config's algorithm,
    compiled once per test module."""
    cell = assemble(config).agent.torso.cell
    return OnlineActorCritic(RLAssembly(config, EpisodeStats(env), algorithm_of(agent, config, cell, env.num_actions)))


def scripted_run(config: RLConfig, env: Scripted, seed: int = 0, first=FIRST_EPISODE, agent=ActorCritic):
    """The run and its first state: the environments' first episodes ``first`` steps long, the parameters drawn
    at full scale (the policy far from uniform)."""
    run = compiled(config, env, agent)
    state = run.init(seed)
    inner = jax.vmap(env.begin)(jnp.asarray(first))
    obs, wrappers = run.wrappers.init(jax.vmap(env.observe)(inner))  # as the run's vector wrappers give them
    env_state = state.env_state._replace(env=inner)
    rng = np.random.default_rng(seed)
    params = jax.tree.map(lambda a: jnp.asarray(rng.normal(size=a.shape)), state.params)
    return run, state._replace(env_state=env_state, obs=obs, wrappers=wrappers, params=params,
                               opt_state=run.optimizer.init(params))


# -- the oracle ----------------------------------------------------------------------------------------------------

def standardized(seen, x, centred=True):
    """``x`` standardised by the samples ``seen`` (leading axis) and the statistics' prior, one more sample at 0
    that carries variance 1 of its own (the population variance over n + 1); ``centred=False``: divided only."""
    everything = np.concatenate([np.zeros((1, *np.shape(seen)[1:])), seen])
    mean = everything.mean(0)
    var = (((everything - mean) ** 2).sum(0) + 1) / len(everything)
    return ((x - mean) if centred else x) / np.sqrt(var + 1e-8)


class Oracle:
    """The loop for an Elman torso (tanh) and linear heads, written from the formulas in NumPy float64."""

    def __init__(self, config: RLConfig, params):
        self.c = config
        self.p = jax.tree.map(np.array, params)
        N, D = self.p["torso"]["R"].shape[0], self.p["torso"]["W"].shape[0]
        self.h = np.zeros((E, N))
        self.S = [{"W": np.zeros((N, D, N)), "B": np.zeros((N, N)), "R": np.zeros((N, N, N))} for _ in range(E)]
        self.z = [jax.tree.map(np.zeros_like, self.p) for _ in range(E)]
        self.acc, self.acc_overshoot = jax.tree.map(np.zeros_like, self.p), 0.0
        self.pending = None  # (value, scaled reward, done, owed) of the previous step
        self.deltas = []  # the TD errors, step by step
        self.seen_obs, self.seen_returns = [], []
        self.discounted = np.zeros(E)
        self.step = 0
        self.env = [dict(time=0, left=left, last=0) for left in FIRST_EPISODE]

    def obs(self, e):
        s = self.env[e]
        return np.array([1.0 + 0.1 * s["left"], 0.5 * s["time"] - 0.2, 0.3 * s["last"] + 0.1])

    def value_after(self, e, x):
        """V(h') of one torso step on ``x`` from environment e's carry, nothing kept."""
        t = self.p["torso"]
        h = np.tanh(x @ t["W"] + t["B"] + self.h[e] @ t["R"])
        return h @ self.p["value"]["W"][:, 0] + self.p["value"]["b"][0]

    def torso(self, e, x):
        """h' = tanh(x W + B + h R) and its sensitivities dh'_k / dtheta, recurring through h."""
        t, h, S = self.p["torso"], self.h[e], self.S[e]
        N = h.size
        h_new = np.tanh(x @ t["W"] + t["B"] + h @ t["R"])
        d = 1 - h_new**2
        eye = np.eye(N)
        recur = {k: np.einsum("nk,n...->k...", t["R"], S[k]) for k in S}  # sum_n R[n, k] dh_n/dtheta
        direct = {"W": np.einsum("kj,i->kij", eye, x), "B": eye, "R": np.einsum("kj,i->kij", eye, h)}
        self.S[e] = {k: d.reshape((N,) + (1,) * (S[k].ndim - 1)) * (recur[k] + direct[k]) for k in S}
        self.h[e] = h_new
        return h_new

    def grads(self, e, h, action):
        """The gradients of v, log pi(action) and the entropy w.r.t. every parameter."""
        p, S = self.p, self.S[e]
        logits = h @ p["policy"]["W"] + p["policy"]["b"]
        value = h @ p["value"]["W"][:, 0] + p["value"]["b"][0]
        log_pi = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())  # finite where pi underflows
        pi = np.exp(log_pi)
        entropy = -(pi * log_pi).sum()
        d_logp = np.eye(pi.size)[action] - pi
        d_entropy = -pi * (log_pi + entropy)

        def through(d_h, d_logits, d_value):
            return {"torso": {k: np.tensordot(d_h, S[k], 1) for k in S},
                    "policy": {"W": np.outer(h, d_logits), "b": d_logits},
                    "value": {"W": h[:, None] * d_value, "b": np.array([d_value])}}

        w_v, w_p = p["value"]["W"][:, 0], p["policy"]["W"]
        return value, (through(w_v, 0 * logits, 1.0), through(w_p @ d_logp, d_logp, 0.0),
                       through(w_p @ d_entropy, d_entropy, 0.0))

    def advance(self, actions):
        """One step in the scripted environments (``Scripted``, written out again here)."""
        self.act(np.stack([self.obs(e) for e in range(E)]), actions)
        rewards, done = np.zeros(E), np.zeros(E, bool)
        for e in range(E):
            s = self.env[e]
            rewards[e] = REWARDS[actions[e]] + 0.25 * s["time"]
            s.update(time=s["time"] + 1, left=s["left"] - 1, last=int(actions[e]))
            done[e] = s["left"] == 0
            if done[e]:
                self.env[e] = dict(time=0, left=LENGTH, last=0)
        self.observe(rewards, done, np.zeros(E, bool), None)
        return done

    def act(self, obs, actions):
        """The agent's part: act on ``obs``, the previous step's TD error, the update, the traces."""
        c = self.c
        self.seen_obs.append(obs)
        seen = np.concatenate(self.seen_obs)
        x = standardized(seen, obs)
        values, g = np.zeros(E), []
        for e in range(E):
            values[e], ge = self.grads(e, self.torso(e, x[e]), actions[e])
            g.append(ge)
        # the previous step's TD error: no bootstrap where it ended an episode; none before the first step
        # a truncated one bootstraps from the value owed (its last observation's); none before the first step
        if self.pending is None:
            delta = np.zeros(E)
            done_before = np.zeros(E, bool)
        else:
            v_prev, r_prev, done_before, owed = self.pending
            delta = r_prev + c.gamma * np.where(done_before, owed, values) - v_prev
        self.deltas.append(delta)
        ascent = jax.tree.map(lambda *zs: sum(delta[e] * zs[e] for e in range(E)) / E, *self.z)
        ascent = jax.tree.map(lambda a, *hs: a + c.entropy * sum(hs) / E, ascent, *[ge[2] for ge in g])
        l1 = [sum(np.abs(a).sum() for a in jax.tree.leaves(z)) for z in self.z]
        overshoot = np.mean([max(abs(delta[e]), 1.0) * l1[e] for e in range(E)])
        self.acc = jax.tree.map(np.add, self.acc, ascent)
        self.acc_overshoot += overshoot
        if (self.step + 1) % c.update_every == 0:
            lr = c.lr
            if c.optimizer == "obgd":
                lr = c.lr / max(c.lr * c.kappa * self.acc_overshoot, 1.0)
            else:
                assert c.optimizer == "sgd" and c.clip is None
            self.p = jax.tree.map(lambda a, u: a + lr * u, self.p, self.acc)
            self.acc, self.acc_overshoot = jax.tree.map(np.zeros_like, self.acc), 0.0
        # the traces: cut where this step begins an episode, for that environment only
        for e in range(E):
            decay = 0.0 if done_before[e] else c.gamma * c.lam
            self.z[e] = jax.tree.map(lambda z, gv, gp, decay=decay: decay * z + c.value_coef * gv + gp,
                                     self.z[e], g[e][0], g[e][1])
        self.values, self.done_before = values, done_before

    def observe(self, rewards, done, truncated, final_obs):
        """The bookkeeping after the environments' step: the discounted return (restarted with each episode),
        reward scaling, the value owed where an episode was truncated (its last observation normalised by the
        statistics so far, the torso stepped from the episode's carry, the parameters just updated), resets."""
        c, done_before = self.c, self.done_before
        owed = np.zeros(E)
        seen = np.concatenate(self.seen_obs)
        for e in np.flatnonzero(truncated):
            owed[e] = self.value_after(e, standardized(seen, final_obs[e]))
        self.discounted = c.gamma * np.where(done_before, 0.0, self.discounted) + rewards
        self.seen_returns.append(self.discounted.copy())
        scaled = standardized(np.concatenate(self.seen_returns), rewards, centred=False)
        for e in np.flatnonzero(done):  # the torso starts the next episode from zero
            self.h[e] = 0.0
            self.S[e] = jax.tree.map(np.zeros_like, self.S[e])
        self.pending = (self.values, scaled, done, owed)
        self.step += 1


BASE = dict(env="tmaze", cell="elman", hidden=2, envs=E, steps=STEPS, record_every=STEPS, gamma=0.9, lam=0.5,
            entropy=0.05, value_coef=0.7, optimizer="sgd", lr=0.3, clip=None, dtype="float64", method="rtrl")


def assert_close(ours, theirs, what):
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, what
        scale = max(np.abs(b).max(), 1e-300)
        assert np.abs(a - b).max() <= 1e-10 * scale, f"{what}: {a} != {b}"


@pytest.mark.parametrize("optimizer, update_every", [("sgd", 1), ("obgd", 2)])
def test_every_step_is_the_written_out_actor_critic_update(optimizer, update_every):
    config = RLConfig(**{**BASE, "optimizer": optimizer, "update_every": update_every, "lr": 0.3})
    run, state = scripted_run(config, Scripted())
    oracle = Oracle(config, state.params)
    ends, changed = [], []
    start = state
    for t in range(STEPS):
        before = state.params
        state = run.advance(state, 1)
        actions = np.asarray(state.env_state.env.taken)
        done = oracle.advance(actions)
        ends.append(done.tolist())
        changed.append(not all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(before),
                                                                    jax.tree.leaves(state.params), strict=True)))
        assert_close(state.params, oracle.p, f"parameters after step {t}")
        assert_close(state.traces, jax.tree.map(lambda *z: np.stack(z), *oracle.z), f"traces after step {t}")
        assert_close(state.memory.carry, oracle.h, f"carries after step {t}")
        value, reward, done, _ = oracle.pending
        assert_close((state.pending.value, state.pending.transition.reward), (value, reward), f"pending step {t}")
        assert np.array_equal(state.pending.transition.done, done) and bool(state.pending.valid)
    # the scripted case is the one described: env 0 ends at steps 2 and 5, env 1 at step 4
    assert ends == [[False, False], [True, False], [False, False], [False, True], [True, False]]
    assert changed == [(t + 1) % update_every == 0 for t in range(STEPS)]
    # one call of five steps is five calls of one (the pending step is carried in the state)
    together = run.advance(start, STEPS)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(together), jax.tree.leaves(state), strict=True))


def test_the_first_step_makes_no_td_error_only_the_entropy_ascent():
    """Before the first step nothing is pending: the first update is the entropy term alone (the traces are zero
    anyway, so the test sets them non-zero: a TD error of a pending step that is not there would show)."""
    config = RLConfig(**BASE)
    run, state = scripted_run(config, Scripted())
    state = state._replace(opt_state=optax.tree.set(state.opt_state, traces=jax.tree.map(jnp.ones_like, state.traces)),
                           pending=state.pending._replace(value=jnp.full((E,), 3.0),
                                                          transition=state.pending.transition._replace(
                                                              reward=jnp.ones(E))))
    oracle = Oracle(config, state.params)
    oracle.z = [jax.tree.map(np.ones_like, oracle.p) for _ in range(E)]
    after = run.advance(state, 1)
    oracle.advance(np.asarray(after.env_state.env.taken))
    assert_close(after.params, oracle.p, "parameters after the first step")


def test_keys_are_fresh_every_step_different_for_every_environment_and_replayed_from_the_seed():
    """With a near-uniform policy over 64 actions the action shows its key: four environments over four steps
    draw many different actions (one key for all environments, or one key for all steps, draws at most 4); the
    environments' own draws all differ. The same seed replays them; another seed does not."""
    config = RLConfig(**{**BASE, "envs": 4, "steps": 4, "record_every": 4})
    env = Scripted(actions=64, noisy=True)

    def draws(seed):
        run, state = scripted_run(config, env, seed, first=(9, 9, 9, 9))
        state = state._replace(params=jax.tree.map(lambda a: 1e-3 * a, state.params))  # near-uniform policy
        actions, noise = [], []
        for _ in range(4):
            state = run.advance(state, 1)
            actions.append(np.asarray(state.env_state.env.taken))
            noise.append(np.asarray(state.env_state.env.noise))
        return np.array(actions), np.array(noise)  # (steps, envs)

    actions, noise = draws(0)
    assert len(np.unique(actions)) >= 10, actions
    for axis in (0, 1):  # no step repeats the previous one's actions in every env, and no env acts as another
        assert (np.diff(actions, axis=axis) != 0).any(axis=1 - axis).all(), actions
    assert len(np.unique(noise)) == noise.size, noise
    again = draws(0)
    assert np.array_equal(again[0], actions) and np.array_equal(again[1], noise)
    other = draws(1)
    assert not np.array_equal(other[0], actions) and not np.array_equal(other[1], noise)


# -- the rolling TBPTT window (rtrl.rl.rolling) ------------------------------------------------------------------

XS, ENDS = (1.0, -1.0, 3.0, 2.0, -2.0, 1.0, 0.5), (2,)  # an episode ends at step 2: step 3 begins the next one
R, W, B = 0.5, 2.0, 0.25


def rolling_by_hand(K: int):
    """A linear scalar cell ``h_t = R h_{t-1} + W x_t + B`` (zero before each episode) under a window of K steps:
    ``h_t`` depends on ``theta`` through steps ``t - K + 1 .. t`` of its episode only, the carry before them a
    constant, so ``dh_t/dW = sum_j R^j x_{t-j}``, ``dh_t/dB = sum_j R^j``, ``dh_t/dR = sum_j R^j h_{t-1-j}``
    over ``j = 0 .. min(K - 1, t - s)`` (``s``: the episode's first step; ``h_{s-1} = 0``)."""
    h, s, rows = {}, 0, []
    for t, x in enumerate(XS):
        h[t] = R * (h[t - 1] if t > s else 0.0) + W * x + B
        js = range(min(K - 1, t - s) + 1)
        before = [h[t - 1 - j] if t - 1 - j >= s else 0.0 for j in js]
        rows.append((h[t], sum(R**j * XS[t - j] for j in js), sum(R**j for j in js),
                     sum(R**j * before[j] for j in js)))
        if t in ENDS:
            s = t + 1
    return np.array(rows)  # (T, 4): h, dh/dW, dh/dB, dh/dR


@pytest.mark.parametrize("K", [1, 2, 3])
def test_the_rolling_window_differentiates_through_exactly_its_last_k_steps_of_the_episode(K):
    """At every step, ``h_t`` and its gradient are the hand-computed ones: the window fills over the first K - 1
    steps, then slides (the carry before it a constant), and where an episode begins inside it the steps before do
    not count. Mutations of rtrl/rl/rolling.py tried by hand, each killed: the start carry taken after the second
    slot (``a[1]``), so the window is K - 1 long; the carry not zeroed at an episode's first step (``zero_where``
    dropped); the pending reset kept after the step that consumed it; ``fresh`` shifted by one slot; an empty slot
    not passing the carry on. (Dropping the ``stop_gradient`` on the next window's start changes nothing: the
    window comes into ``step`` as a value, never differentiated through, here or in the agent.)"""
    from rtrl.cells import Elman
    from rtrl.rl.rolling import rolling_tbptt

    learner = rolling_tbptt(Elman(1, 1, activation="identity"), K)
    params = {"W": jnp.full((1, 1), W), "B": jnp.full((1,), B), "R": jnp.full((1, 1), R)}

    def h_and_grads(window, x):
        h, new = learner.step(params, window, x)
        grads = jax.grad(lambda p: learner.step(p, window, x)[0][0])(params)
        return h[0], grads, new

    h_and_grads = jax.jit(h_and_grads)
    window = learner.init(params)
    rows = []
    for t, x in enumerate(XS):
        h, g, window = h_and_grads(window, jnp.array([x]))
        rows.append((h, g["W"][0, 0], g["B"][0], g["R"][0, 0]))
        if t in ENDS:
            window = learner.reset(window, jnp.array(True))
    np.testing.assert_allclose(np.array(rows, dtype=float), rolling_by_hand(K), rtol=1e-13, atol=1e-13)


def test_the_shortest_tmaze_episode_allowed_still_reaches_its_reward():
    """``max_steps = length + 1``, the least ``TMaze`` accepts: two steps down the corridor, then the turn to the cue
    at the last step is rewarded (+1) and ends the episode. [the bound made ``length + 2``: refused here; made
    ``length``: the boundary row of tests/test_validate.py accepts an episode that cannot reach the turn]"""
    from rtrl.rl.envs.tmaze import FORWARD, TMaze

    env = TMaze(length=2, max_steps=3)
    _, state = env.reset(jax.random.PRNGKey(0))
    for step in range(2):
        _, state, reward, done, _ = env.transition(None, state, FORWARD)
        assert (float(reward), bool(done)) == (0.0, False), step
    _, state, reward, done, _ = env.transition(None, state, int(state.cue))
    assert (float(reward), bool(done), int(state.time)) == (1.0, True, 3)
