"""The algorithms (rtrl.rl.algorithms) through the whole loop, step by step, against a NumPy oracle on the scripted
case of tests/test_rl_rules.py, and ``rtrl rl --algorithm q`` end to end.

Stream Q(lambda): two environments, five steps, an Elman torso of 2 units and a head of 3 action values, epsilon-
greedy with epsilon 1 at the first step and 0.5 after (so some actions are greedy and some not). The oracle
(``QOracle``: the torso's sensitivities of tests/test_rl_rules.py's ``Oracle``, the rest written here) takes the
actions the run drew and finds, from its own action values, which were greedy. It guards:

* the TD target ``r + gamma * max_a Q(s', a)`` (not ``Q(s', a')``), no bootstrap at a termination, and at a
  truncation the value owed ``max_a Q(s_T, a)`` of the episode's last observation;
* the traces ``z`` of ``grad Q(s_t, a_t)``, cut after an episode's end and after an action that was not greedy
  (Watkins), for that environment only;
* the update ``lr * mean_e delta_e z_e`` (sgd) and ObGD's bound on it.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.cli import main
from rtrl.rl.algorithms import QAgent, epsilon
from rtrl.rl.config import RLConfig
from test_rl_rules import BASE, LENGTH, REWARDS, STEPS, E, Oracle, Scripted, assert_close, scripted_run, standardized


class Truncating(Scripted):
    """``Scripted`` whose episodes that end at an even step are cut by a time limit (truncated), the others
    terminated: environment 0's first episode (2 steps) and environment 1's (4) are truncated, environment 0's
    second (3) terminated."""

    def transition(self, key, state, action):
        obs, state, reward, done, _ = super().transition(key, state, action)
        return obs, state, reward, done, done & (state.time % 2 == 0)


class QOracle(Oracle):
    """Stream Q(lambda) for an Elman torso and a linear Q head, from the formulas."""

    def __init__(self, config, params, truncating: bool):
        super().__init__(config, params)
        self.truncating = truncating
        self.explored = np.zeros(E, bool)
        self.explored_seen = []

    def q_values(self, h):
        return h @ self.p["q"]["W"] + self.p["q"]["b"]

    watkins = True  # the trace is cut after an action that was not greedy

    def target(self, q, action):
        """What the previous step's TD target bootstraps from, of this step's action values and action."""
        return q.max()

    def bootstrap(self, q):
        """What a truncated episode's TD target owes, of its last observation's action values."""
        return q.max()

    def value_after(self, e, x):
        t = self.p["torso"]
        return self.bootstrap(self.q_values(np.tanh(x @ t["W"] + t["B"] + self.h[e] @ t["R"])))

    def advance(self, actions):
        self.act(np.stack([self.obs(e) for e in range(E)]), actions)
        rewards, done, truncated = np.zeros(E), np.zeros(E, bool), np.zeros(E, bool)
        final = np.zeros((E, 3))
        for e in range(E):
            s = self.env[e]
            rewards[e] = REWARDS[actions[e]] + 0.25 * s["time"]
            s.update(time=s["time"] + 1, left=s["left"] - 1, last=int(actions[e]))
            final[e] = self.obs(e)
            done[e] = s["left"] == 0
            truncated[e] = self.truncating and done[e] and s["time"] % 2 == 0
            if done[e]:
                self.env[e] = dict(time=0, left=LENGTH, last=0)
        self.observe(rewards, done, truncated, final)
        return done, truncated

    def td_error(self, targets):
        """``(delta, cut, done)`` of the pending step, ``targets`` this step's ``max_a Q(s_t, a)``: no bootstrap
        where it terminated, the value owed where truncated; the trace cut after an episode's end or an action that
        was not greedy (Watkins)."""
        if self.pending is None:
            delta, cut, done_before = np.zeros(E), np.zeros(E, bool), np.zeros(E, bool)
        else:
            v_prev, r_prev, done_before, owed = self.pending
            delta = r_prev + self.c.gamma * np.where(done_before, owed, targets) - v_prev
            cut = done_before | (self.explored & self.watkins)
        self.deltas.append(delta)
        return delta, cut, done_before

    def act(self, obs, actions):
        c = self.c
        self.seen_obs.append(obs)
        seen = np.concatenate(self.seen_obs)
        x = standardized(seen, obs)
        values, targets, g, explored = np.zeros(E), np.zeros(E), [], np.zeros(E, bool)
        for e in range(E):
            h = self.torso(e, x[e])
            q = self.q_values(h)
            a = actions[e]
            values[e], targets[e], explored[e] = q[a], self.target(q, a), a != np.argmax(q)
            onehot = np.eye(q.size)[a]
            g.append({"torso": {k: np.tensordot(self.p["q"]["W"][:, a], self.S[e][k], 1) for k in self.S[e]},
                      "q": {"W": np.outer(h, onehot), "b": onehot}})
        delta, cut, done_before = self.td_error(targets)
        ascent = jax.tree.map(lambda *zs: sum(delta[e] * zs[e] for e in range(E)) / E, *self.z)
        lr = c.lr
        if c.optimizer == "obgd":
            l1 = [sum(np.abs(a).sum() for a in jax.tree.leaves(z)) for z in self.z]
            lr = c.lr / max(c.lr * c.kappa * np.mean([max(abs(delta[e]), 1.0) * l1[e] for e in range(E)]), 1.0)
        else:
            assert c.optimizer == "sgd" and c.clip is None
        self.p = jax.tree.map(lambda a, u: a + lr * u, self.p, ascent)
        for e in range(E):
            decay = 0.0 if cut[e] else c.gamma * c.lam
            self.z[e] = jax.tree.map(lambda z, ge, decay=decay: decay * z + ge, self.z[e], g[e])
        self.values, self.done_before = values, done_before
        self.explored = explored
        self.explored_seen.append(explored)


def steps_against(run, state, oracle, cuts_as_expected):
    """``STEPS`` steps of ``run`` from ``state``, each held to ``oracle`` (parameters, traces, the pending step) and
    to ``cuts_as_expected(state, t)`` (the exploratory flags); each step's done and truncated flags."""
    ends, truncations = [], []
    for t in range(STEPS):
        state = run.advance(state, 1)
        done, truncated = oracle.advance(np.asarray(state.env_state.env.taken))
        ends.append(done.tolist())
        truncations.append(truncated.tolist())
        assert_close(state.params, oracle.p, f"parameters after step {t}")
        assert_close(state.traces, jax.tree.map(lambda *z: np.stack(z), *oracle.z), f"traces after step {t}")
        value, reward, done, owed = oracle.pending
        pending = state.pending
        assert_close((pending.value, pending.transition.reward, pending.transition.final_value), (value, reward, owed),
                     f"pending step {t}")
        assert cuts_as_expected(state, t), t
    return ends, truncations


def scripted_episodes(truncating: bool) -> tuple[list, list]:
    """The scripted case's ends and truncations, step by step: environment 0 ends at steps 2 and 5, environment 1 at
    step 4; under ``Truncating`` the ends at steps 2 (environment 0) and 4 (environment 1) are truncations."""
    ends = [[False, False], [True, False], [False, False], [False, True], [True, False]]
    truncations = [[False, False], [truncating, False], [False, False], [False, truncating], [False, False]]
    return ends, truncations


Q_BASE = {**{k: v for k, v in BASE.items() if k not in ("entropy", "value_coef")}, "algorithm": "q", "epsilon": 0.5,
          "explore_steps": 1, "lam": 0.8}  # the actor-critic's options refused


@pytest.mark.parametrize("optimizer", ["sgd", "obgd"])
@pytest.mark.parametrize("env", [Scripted(), Truncating()], ids=["terminating", "truncating"])
def test_every_step_is_the_written_out_q_lambda_update(optimizer, env):
    config = RLConfig(**{**Q_BASE, "optimizer": optimizer, "lr": 0.3 if optimizer == "sgd" else 1.0})
    # seed 2 draws greedy and non-greedy actions in mid-episode
    run, state = scripted_run(config, env, seed=2, agent=QAgent)
    oracle = QOracle(config, state.params, isinstance(env, Truncating))
    ends, truncations = steps_against(run, state, oracle,
                                      lambda state, t: np.array_equal(state.pending.exploratory, oracle.explored))
    truncating = isinstance(env, Truncating)
    assert (ends, truncations) == scripted_episodes(truncating)
    # the case holds what it guards: a non-greedy action before a step that does not begin an episode (a Watkins
    # cut), and a greedy one (no cut), the owed values non-zero where truncated, TD errors non-zero
    explored = np.array(oracle.explored_seen[:-1])
    fresh = np.array(ends[:-1])
    assert (explored & ~fresh).any() and (~explored & ~fresh).any(), (explored, fresh)
    assert np.count_nonzero(np.concatenate(oracle.deltas)) >= 2 * (STEPS - 1)


def test_epsilon_falls_linearly_from_one_to_its_floor():
    config = RLConfig(algorithm="q", epsilon=0.1, explore_steps=10)
    got = [float(epsilon(config, jnp.asarray(s))) for s in (0, 5, 10, 20)]
    np.testing.assert_allclose(got, [1.0, 0.55, 0.1, 0.1], rtol=1e-6)


@pytest.mark.parametrize("algorithm", ["q", "qrc", "sarsa"])
def test_fidelity_check_of_q_is_one_for_exact_rtrl_and_below_for_approximations(algorithm):
    """The fidelity check of a Q agent compares the online gradient of ``Q(s_t, a_t)`` (the traces' drive) with
    BPTT's over the episode so far (``cos_value``; there is no policy's): with a vanishing step size the parameters
    hold still, so exact RTRL's is BPTT's at every step, over episodes of several lengths; e-prop's is not.
    [Mutations killed: BPTT's carry not zeroed at the episode's start; the head read before the last step.]"""
    from rtrl.rl.loop import train

    base = RLConfig(env="tmaze", env_args=(("length", 3),), hidden=4, envs=2, steps=24, record_every=24,
                    algorithm=algorithm, explore_steps=8, fidelity_every=1, lr=1e-12, dtype="float64", seed=3)
    (rec,) = train(base)[1]
    assert rec["cos_value"] > 1 - 1e-9 and "cos_policy" not in rec
    (rec,) = train(RLConfig(**{**base.__dict__, "method": "eprop"}))[1]
    assert rec["cos_value"] < 0.999


def test_per_environment_rules_with_update_every_are_refused():
    with pytest.raises(ValueError, match="update_every must be 1 under optimizer 'intentional'"):
        RLConfig(optimizer="intentional", update_every=2)
    with pytest.raises(ValueError, match="algorithm"):
        RLConfig(algorithm="ppo")


@pytest.mark.parametrize("env", ["memory-chain", "tmaze"])
def test_rtrl_rl_algorithm_q_runs(tmp_path, env):
    """``rtrl rl --algorithm q`` end to end on memory-chain and tmaze (a few hundred steps, the intentional rule):
    it writes its records, each with a return or none, and finite health figures."""
    out = tmp_path / "run"
    argv = ["rl", "--env", env, "--algorithm", "q", "--optimizer", "intentional", "--lr", "0.5", "--hidden", "4",
            "--envs", "2", "--steps", "200", "--record-every", "100", "--explore-steps", "100", "--out", str(out),
            "--quiet"]
    assert main(argv) == 0  # in this process: the command's own code, without a second start of Python and JAX
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [100, 200]
    assert all(np.isfinite(r["td_rms"]) for r in records)
    assert json.loads((out / "config.json").read_text())["algorithm"] == "q"


def test_a_step_where_one_environment_terminates_and_another_truncates():
    """Both environments' first episodes end at step 2, environment 0's at its 2nd step of the episode (even:
    truncated, ``Truncating``), environment 1's at its 3rd (it starts one step into its episode: odd, terminated).
    Per environment: 0 is owed ``max_a Q(s_T, a)`` of its last observation, 1 nothing (no bootstrap), and each TD
    error uses its own; every step against the oracle. [guards: the owed value masked by ``done`` instead of
    ``truncated`` (the terminated environment bootstraps from V(s_T) too); the owed values summed over the
    environments]"""
    config = RLConfig(**{**Q_BASE, "optimizer": "sgd", "lr": 0.3})
    env = Truncating()
    run, state = scripted_run(config, env, seed=2, first=(2, 2), agent=QAgent)
    inner = state.env_state.env._replace(time=jnp.asarray([0, 1], jnp.int32))  # environment 1 a step in
    obs, wrappers = run.wrappers.init(jax.vmap(env.observe)(inner))
    state = state._replace(env_state=state.env_state._replace(env=inner), obs=obs, wrappers=wrappers)
    oracle = QOracle(config, state.params, truncating=True)
    oracle.env = [dict(time=0, left=2, last=0), dict(time=1, left=2, last=0)]
    ends, truncations, owed = [], [], []
    for t in range(STEPS):
        state = run.advance(state, 1)
        done, truncated = oracle.advance(np.asarray(state.env_state.env.taken))
        ends.append(done.tolist())
        truncations.append(truncated.tolist())
        owed.append(np.asarray(state.pending.transition.final_value).tolist())
        assert_close(state.params, oracle.p, f"parameters after step {t}")
        assert_close(state.traces, jax.tree.map(lambda *z: np.stack(z), *oracle.z), f"traces after step {t}")
        pending = state.pending
        assert_close((pending.value, pending.transition.reward, pending.transition.final_value), oracle.pending[:2] +
                     (oracle.pending[3],), f"pending step {t}")
    assert ends[1] == [True, True] and truncations[1] == [True, False]  # the mixed step
    assert owed[1][0] != 0 and owed[1][1] == 0  # owed to the truncated environment only
    assert oracle.deltas[2][1] != 0 and oracle.deltas[2][0] != oracle.deltas[2][1]
