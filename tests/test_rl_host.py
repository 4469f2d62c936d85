"""Environments stepped on the host (``--env gymnasium:ID``; rtrl.rl.envs.gymnasium_env and the host loop of
rtrl.rl.loop): terminated vs truncated, the observation encodings, autoreset, and bad input.

The rule test drives the host loop with a scripted vector of two environments whose episodes end by hand (a
termination, a truncation, and both at once, where the termination wins) and checks every step against the NumPy
oracle of tests/test_rl_rules.py (``Oracle.act`` / ``Oracle.observe``): the TD error bootstraps from the value of
the truncated episode's last observation (the torso's step on it from the episode's own carry) and not from the
next episode's first, and not at all on a termination. Mutations of rtrl/rl/loop.py tried by hand, each killed:
``owed`` left at 0 (a truncation treated as a termination); ``owed`` computed from the carry after the reset (the
torso's memory zeroed first); the final observation not normalised; ``jnp.where(p.done, p.owed, value)`` ->
``value`` (bootstrapping from the next episode).
"""

from __future__ import annotations

import functools
import re
import sys

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium import spaces

from rtrl.rl import RLConfig
from rtrl.rl.algorithms import ActorCritic
from rtrl.rl.assemble import RLAssembly, algorithm_of
from rtrl.rl.envs import gymnasium_env
from rtrl.rl.envs.gymnasium_env import Outcome, Vector, encoder
from rtrl.rl.loop import TIMINGS, OnlineActorCritic
from rtrl.run.rl import time_split
from test_rl_rules import BASE, REWARDS, Oracle, assert_close

E, STEPS = 2, 6
TERMINATED = {(1, 0), (4, 1)}  # (step, environment): the episode ends at that step
TRUNCATED = {(3, 0), (2, 1), (4, 1)}  # (4, 1) both: a termination (nothing owed)


class ScriptedVector:
    """Two host environments whose observations are exact in float32 (so the oracle sees what the device sees):
    ``[1 + e/4 + t/2, t/4 - 1/2, a/2 + 1/8]`` at time ``t`` of the episode after action ``a``; reward ``REWARDS[a]
    + t/4``; episodes end where ``TERMINATED`` / ``TRUNCATED`` say. Every outcome is kept (``log``)."""

    def __init__(self):
        self.log, self.seeds = [], []

    @staticmethod
    def obs(e, t, a):
        return np.array([1 + e / 4 + t / 2, t / 4 - 0.5, a / 2 + 0.125], np.float32)

    def reset(self, seeds, step=0):
        self.seeds.append(seeds)
        self.step_no, self.time = 0, [0] * E
        return np.stack([self.obs(e, 0, 0) for e in range(E)])

    def step(self, actions, step=0):
        k = self.step_no
        reward = np.array([REWARDS[a] + 0.25 * self.time[e] for e, a in enumerate(actions)], np.float32)
        final = np.stack([self.obs(e, self.time[e] + 1, a) for e, a in enumerate(actions)])
        terminated = np.array([(k, e) in TERMINATED for e in range(E)])
        truncated = np.array([(k, e) in TRUNCATED for e in range(E)])
        done = terminated | truncated
        self.time = [0 if done[e] else self.time[e] + 1 for e in range(E)]
        obs = np.where(done[:, None], np.stack([self.obs(e, 0, 0) for e in range(E)]), final)
        out = Outcome(obs, reward, done, truncated & ~terminated, final, np.zeros(E))
        self.log.append((np.array(actions), out))
        self.step_no += 1
        return out


class ScriptedHost:
    """A host environment (``host``) of three observations and three actions, stepped by ``ScriptedVector``."""

    host, obs_size, num_actions, max_steps, name = True, 3, 3, None, "scripted"

    def vector(self, envs):
        assert envs == E
        return ScriptedVector()


@functools.cache
def host_run(config: RLConfig) -> OnlineActorCritic:
    cell = OnlineActorCritic(config).agent.torso.cell
    return OnlineActorCritic(RLAssembly(config, ScriptedHost(), algorithm_of(ActorCritic, config, cell, 3)))


def stepped_beside(run, state, oracle):
    """``(t, state)`` after each of ``STEPS`` single steps of the host run, the oracle stepped beside it on what the
    scripted vector logged (its first observations before the vector wrappers), and the parameters, traces and
    carries checked against the oracle's after each step."""
    obs = np.stack([ScriptedVector.obs(e, 0, 0) for e in range(E)])
    for t in range(STEPS):
        state = run.advance(state, 1)
        actions, out = run.environments.vector.log[-1]
        oracle.act(obs.astype(np.float64), actions)
        oracle.observe(out.reward.astype(np.float64), out.done, out.truncated, out.final_obs.astype(np.float64))
        obs = out.obs
        assert_close(state.params, oracle.p, f"parameters after step {t}")
        assert_close(state.traces, jax.tree.map(lambda *z: np.stack(z), *oracle.z), f"traces after step {t}")
        assert_close(state.memory.carry, oracle.h, f"carries after step {t}")
        yield t, state

def test_truncation_bootstraps_from_the_last_observation_and_termination_does_not():
    config = RLConfig(**{**BASE, "steps": STEPS, "record_every": STEPS})
    run = host_run(config)
    state = run.init(0)
    rng = np.random.default_rng(0)
    params = jax.tree.map(lambda a: jnp.asarray(rng.normal(size=a.shape)), state.params)
    state = state._replace(params=params, opt_state=run.optimizer.init(params))
    start = state
    oracle = Oracle(config, params)
    owed_log, values_log = [], []
    for t, now in stepped_beside(run, state, oracle):
        owed_log.append(oracle.pending[3].copy())
        values_log.append(oracle.values.copy())
        value, reward, done, owed = oracle.pending
        assert_close((now.pending.value, now.pending.transition.reward, now.pending.transition.final_value),
                     (value, reward, owed),
                     f"pending step {t}")
        assert np.array_equal(now.pending.transition.done, done)
    # the case is the one described: owed where truncated only, and there it is not the next episode's value
    truncated = [(k, e) for k in range(STEPS) for e in range(E) if run.environments.vector.log[k][1].truncated[e]]
    assert truncated == [(2, 1), (3, 0)]
    assert all(owed_log[k][e] == 0 for k in range(STEPS) for e in range(E) if (k, e) not in truncated)
    for k, e in truncated:  # what the target uses differs from the next episode's first value
        assert abs(owed_log[k][e] - values_log[k + 1][e]) > 1e-3 and owed_log[k][e] != 0
    # one call of six steps is six calls of one (the fused observe-and-act calls change nothing), both from the
    # first state again: a state not live, so each is re-seeded and restarted (its first observations counted again)
    together = run.advance(start, STEPS)
    assert run.environments.vector.seeds[-1] == run.seeds(start.key)
    stepwise = run.advance(start, 1)
    for _ in range(STEPS - 1):
        stepwise = run.advance(stepwise, 1)
    for a, b in zip(jax.tree.leaves(together), jax.tree.leaves(stepwise), strict=True):
        assert np.array_equal(a, b)


def test_a_restart_reseeds_and_begins_every_episode():
    """A state this loop did not just return (a checkpoint loaded) gets fresh environments, seeded from the run's
    seed and its step, and every episode starts again: nothing pending, the torso zeroed. [Mutation: the restart
    keeping ``pending.valid`` -> the TD error across the cut is applied; this test fails on ``valid``.]"""
    config = RLConfig(**{**BASE, "steps": STEPS, "record_every": STEPS})
    run = host_run(config)
    run.init(4)
    vector = run.environments.vector
    first = vector.seeds[-1]
    state = run.advance(run.init(3), 2)
    at_init = vector.seeds[-1]
    again = run.advance(state, 1)
    assert vector.seeds[-1] == at_init != first  # live: not reset since init (whose seeds are the seed's)
    restarted = run.environments.restarted(state)
    assert vector.seeds[-1] == run.seeds(state.key) != at_init
    assert not bool(restarted.pending.valid) and bool(restarted.pending.transition.done.all())
    assert not np.asarray(restarted.memory.carry).any() and np.asarray(state.memory.carry).any()
    first_obs = jnp.asarray(np.stack([ScriptedVector.obs(e, 0, 0) for e in range(E)]), jnp.float64)
    # the new episodes' first observations through the vector wrappers (held to NumPy in test_rl_envs_normalize.py)
    np.testing.assert_allclose(restarted.obs, run.wrappers.reset(state.wrappers, first_obs)[0], rtol=1e-12)
    assert int(again.step) == 3


SPACES = [
    spaces.Discrete(4, start=2),
    spaces.MultiDiscrete([2, 3]),
    spaces.Box(-1.0, 1.0, (2, 3)),
    spaces.MultiBinary(3),
    spaces.Tuple((spaces.Discrete(2), spaces.Box(0.0, 1.0, (2,)))),
    spaces.Dict({"b": spaces.Discrete(3), "a": spaces.MultiDiscrete([2, 2])}),
]


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
def test_observations_are_encoded_as_gymnasium_flattens_them(space):
    """One-hots for the discrete spaces, the rest flattened, parts concatenated: for 5 observations drawn from the
    space, ``encoder`` on the batch equals ``gymnasium.spaces.flatten`` of each (Gymnasium's code, not ours).
    [Mutations: ``start`` ignored for Discrete / MultiDiscrete; MultiDiscrete's offsets dropped -> fail]"""
    from gymnasium.vector.utils import concatenate, create_empty_array

    space.seed(1)
    samples = [space.sample() for _ in range(5)]
    size, encode = encoder(space, "test")
    batch = concatenate(space, samples, create_empty_array(space, 5))
    expected = np.stack([spaces.flatten(space, s) for s in samples]).astype(np.float32)
    assert size == spaces.flatdim(space) and encode(batch).shape == (5, size)
    np.testing.assert_array_equal(encode(batch), expected)


def test_a_real_vector_reports_the_last_observation_of_a_truncated_episode():
    """Gymnasium's CartPole cut at 3 steps, two copies: at the 3rd step both are truncated (not terminated), the
    last observation is the 3rd one of an environment stepped by hand with the same seed and actions, and the
    next is its reset's (the same-step autoreset). [Mutation: ``final_obs`` left as ``obs`` -> fails]"""
    env = gymnasium_env.GymnasiumEnv("CartPole-v1", (("max_episode_steps", 3),))
    vector = Vector(env, 2)
    vector.reset([5, 6])
    by_hand = gymnasium.make("CartPole-v1", max_episode_steps=3)
    by_hand.reset(seed=6)
    for _ in range(3):
        out = vector.step(np.array([0, 1]))
        last, reward, terminated, truncated, _ = by_hand.step(1)
    assert out.done.tolist() == [True, True] and out.truncated.tolist() == [True, True] and truncated
    np.testing.assert_array_equal(out.final_obs[1], last)
    np.testing.assert_array_equal(out.obs[1], by_hand.reset()[0])
    assert out.episode_return.tolist() == [3.0, 3.0]
    vector.close()


class TextObs(gymnasium.Env):
    observation_space, action_space = spaces.Text(5), spaces.Discrete(2)


class Endless(gymnasium.Env):
    observation_space, action_space = spaces.Discrete(2), spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return 0, {}

    def step(self, action):
        return 0, 0.0, False, False, {}


gymnasium.register("RtrlTestText-v0", entry_point=TextObs)
gymnasium.register("RtrlTestEndless-v0", entry_point=Endless)  # no episode limit stated


@pytest.mark.parametrize("env, words", [
    ("gymnasium:NoSuchEnv-v0", "gymnasium:NoSuchEnv-v0.*doesn't exist"),
    ("gymnasium:Pendulum-v1 --algorithm q", "algorithm must be ac .*Box.*'q' needs a Discrete action space"),
    ("gymnasium:RtrlTestText-v0", "observation space Text.*cannot encode"),
    ("gymnasium:CartPole-v1 --env-arg colour=3", "has no option 'colour'"),
    ("gymnasium:CartPole-v1 --devices 2", "devices must be 1"),
    ("gymnasium:RtrlTestEndless-v0 --fidelity-every 5", "fidelity_every needs a bound.*max_episode_steps=N"),
])
def test_bad_gymnasium_input_is_one_line_and_writes_nothing(env, words, tmp_path, capsys):
    from rtrl.cli import main

    out = tmp_path / "run"
    assert main(["rl", "--env", *env.split(), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(words, err), err
    assert not out.exists()


def test_a_missing_popgym_is_named(monkeypatch, tmp_path, capsys):
    from rtrl.cli import main

    monkeypatch.setitem(sys.modules, "popgym", None)  # import popgym now fails
    monkeypatch.setattr(gymnasium_env, "_probe", gymnasium_env._made)  # nothing cached
    assert main(["rl", "--env", "gymnasium:popgym-FooEasy-v0", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "needs the popgym package: .venv/bin/pip install -e '.[popgym]' in a clone" in err
    assert "pip install 'rtrl[popgym]' where rtrl is installed as a package" in err
    assert not (tmp_path / "r").exists()


def test_every_round_3_preset_assembles_and_one_runs_from_the_command_line(tmp_path, capsys):
    """The presets of issue 24 (DESIGN.md's round-3 names) each with TBPTT and the memoryless row: every row builds
    (environment, spaces, cell); `rtrl rl --preset popgym-repeat-first --seed 1` runs a few steps into a run
    folder whose config is the preset's (the popgym ID, the seed)."""
    from rtrl.cli import main
    from rtrl.rl.assemble import assemble
    from rtrl.rl.presets import PRESETS
    from rtrl.run.folder import read_config, read_metrics

    names = ("memory-chain-128", "popgym-repeat-first", "popgym-repeat-previous", "popgym-count-recall",
             "popgym-autoencode")
    for name in names:
        for row in (name, f"{name}-tbptt", f"{name}-memoryless"):
            parts = assemble(RLConfig(**PRESETS[row].options))
            # round 4 moved memory-chain-128 to minGRU 192, round 5 the popgym-repeat-* presets
            torso = "Elman" if name in ("popgym-count-recall", "popgym-autoencode") else "MinGRU"
            assert type(parts.agent.torso.cell).__name__ == ("FeedForward" if row.endswith("memoryless") else torso)
    out = tmp_path / "rf"
    assert main(["rl", "--preset", "popgym-repeat-first", "--seed", "1", "--steps", "4", "--record-every", "2",
                 "--hidden", "2", "--envs", "2", "--fidelity-every", "0", "--out", str(out), "--quiet"]) == 0
    config = read_config(out)
    assert (config.env, config.seed, config.method) == ("popgym:RepeatFirstEasy", 1, "auto")  # the jitted port
    assert [r["step"] for r in read_metrics(out)] == [2, 4]
    host_args = ["--env", "gymnasium:popgym-RepeatFirstEasy-v0", "--seed", "1", "--steps", "4", "--record-every", "2",
                 "--hidden", "2", "--envs", "2", "--fidelity-every", "0", "--quiet"]
    # the popgym-repeat-* presets give the extra inputs, which the host vector appends as a jitted environment does
    extras = tmp_path / "rf-extras"
    assert main(["rl", "--preset", "popgym-repeat-first", *host_args, "--out", str(extras)]) == 0
    assert read_config(extras).extra_inputs and [r["step"] for r in read_metrics(extras)] == [2, 4]
    host = tmp_path / "rf-host"  # the host route stays: popgym itself through Gymnasium, its time split recorded
    assert main(["rl", "--preset", "popgym-count-recall", *host_args, "--out", str(host)]) == 0
    assert read_config(host).env == "gymnasium:popgym-RepeatFirstEasy-v0"
    records = read_metrics(host)
    assert [r["step"] for r in records] == [2, 4]
    for before, r in zip([{"wall_s": 0.0}, *records], records, strict=False):  # where a host step's time went
        spent = [r[k] for k in TIMINGS]
        assert all(s >= 0 for s in spent) and sum(spent) > 0
        assert sum(spent) <= r["wall_s"] - before["wall_s"] + 1e-3


def test_the_time_split_sums_the_timed_records():
    """rtrl rl's summary line: environment steps a second over the timed records, and each part's share."""
    records = [{"step": 10, "agent_s": 1.0, "transfer_s": 0.5, "env_s": 0.5},
               {"step": 30, "agent_s": 2.0, "transfer_s": 1.0, "env_s": 3.0}]
    assert time_split(records, envs=4) == "; 15 environment steps a second: agent 38%, transfers 19%, environments 44%"
    untimed = [{"step": 10, "return": 0.5}]  # a jitted environment's record (no split): steps not timed left out
    assert time_split(untimed, envs=4) == ""
    assert time_split(untimed + records[1:], envs=4) == time_split([{**records[1], "step": 20}], envs=4)
