"""The jitted POPGym tasks by name (``popgym:<Task><Level>``, rtrl.rl.envs.popgym): every name builds with popgym's
sizes (the flattened observation space, the actions), runs under ``jit(vmap(scan))`` with its automatic resets
and episodes no longer than ``max_steps``; ``rtrl rl --env popgym:NAME`` runs; bad names and options get one line."""

from __future__ import annotations

import gymnasium
import jax
import numpy as np
import popgym  # noqa: F401
import pytest

from rtrl.rl import make
from rtrl.rl.envs.popgym import NAMES

SPACE = {"RepeatFirstEasy": (4, 4), "CountRecallHard": (26, 17), "AutoencodeEasy": (6, 4),
         "ConcentrationHard": (728, 52), "BattleshipEasy": (2, 64), "MineSweeperHard": (10, 64)}


def test_every_name_has_popgyms_sizes():
    for name in NAMES:
        env, gym = make("popgym:" + name), gymnasium.make(f"popgym-{name}-v0")
        actions = gym.action_space
        count = int(actions.n) if isinstance(actions, gymnasium.spaces.Discrete) else int(np.prod(actions.nvec))
        assert (env.obs_size, env.num_actions) == (gymnasium.spaces.flatdim(gym.observation_space), count), name
        u = gym.unwrapped  # the limit as popgym states it (HigherLower: its deck, dealt a card a step after one)
        limit = u.episode_length if "Concentration" in name else u.deck_size - 1 if "HigherLower" in name \
            else u.max_episode_length
        assert env.max_steps == limit, name
        gym.close()
    assert {n: (make("popgym:" + n).obs_size, make("popgym:" + n).num_actions) for n in SPACE} == SPACE


@pytest.mark.parametrize("name", ["RepeatPreviousEasy", "CountRecallEasy", "ConcentrationEasy", "MineSweeperEasy",
                                  "NoisyPositionOnlyCartPoleEasy"])
def test_runs_under_jit_vmap_scan_with_resets(name):
    env, E, T = make("popgym:" + name), 4, 300

    @jax.jit
    def run(key):
        obs, state = jax.vmap(env.reset)(jax.random.split(key, E))

        def body(state, key):
            k_act, k_env = jax.random.split(key)
            action = jax.random.randint(k_act, (E,), 0, env.num_actions)
            step = jax.vmap(env.step)(jax.random.split(k_env, E), state, action)
            return step.state, (step.obs, step.done, step.state.last_length)

        return jax.lax.scan(body, state, jax.random.split(key, T))

    final, (obs, done, lengths) = jax.device_get(run(jax.random.key(0)))
    assert obs.shape == (T, E, env.obs_size) and np.isfinite(obs).all()
    ended = lengths[done]
    assert done.sum() >= E and (ended >= 1).all() and (ended <= env.max_steps).all()
    if name in ("RepeatPreviousEasy", "CountRecallEasy"):  # a card game's episodes all have the one length
        assert set(ended.tolist()) == {51}
    decks = {"RepeatPreviousEasy": lambda s: [s.deck], "CountRecallEasy": lambda s: [s.values, s.queries]}
    for deck in decks.get(name, lambda s: [])(final.env):  # the decks dealt after the resets are whole decks
        assert (np.sort(deck, axis=1) == np.arange(52)).all()
    if name == "ConcentrationEasy":  # 26 cards of each colour on every board
        assert (np.sort(final.env.board, axis=1) == np.repeat([0, 1], 26)).all()


def test_bad_names_and_options_get_one_line():
    with pytest.raises(ValueError, match=r"^unknown environment 'popgym:RepeatPrevious'; expected popgym:<Task>"
                                         r"<Easy\|Medium\|Hard> with Task one of RepeatPrevious, .*Battleship"):
        make("popgym:RepeatPrevious")
    with pytest.raises(ValueError, match="takes no options"):
        make("popgym:RepeatPreviousEasy", k=3)
    from rtrl.rl.envs.popgym import RepeatPrevious
    with pytest.raises(ValueError, match="k must be less than the 52 cards"):
        RepeatPrevious(k=52)


def test_the_command_line_runs_a_popgym_task(tmp_path, capsys):
    from rtrl.cli import main
    from rtrl.run.folder import read_config, read_metrics

    out = tmp_path / "r"
    assert main(["rl", "--env", "popgym:RepeatPreviousEasy", "--steps", "4", "--record-every", "2", "--hidden", "2",
                 "--envs", "2", "--out", str(out), "--quiet"]) == 0
    assert read_config(out).env == "popgym:RepeatPreviousEasy" and [r["step"] for r in read_metrics(out)] == [2, 4]
    assert main(["rl", "--env", "popgym:Nope", "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "popgym:<Task><Easy|Medium|Hard>" in err and len(err.strip().splitlines()) == 1


def test_the_benchmark_steps_the_same_task_on_both_sides():
    """rtrl.benchmarks.popgym: both sides step E x T steps of the task (a card game: every episode 51 steps, so
    2 x 102 steps end 4 episodes on each side), and the rates are positive."""
    from rtrl.benchmarks import popgym as bench

    assert int(bench.jitted_runner("RepeatFirstEasy", 2, 102)(jax.random.key(0))[0]) == 4
    host, vector = bench.host_runner("RepeatFirstEasy", 2, 102)
    assert host(0)[0] == 4
    vector.close()
    rates = bench.measure("MineSweeperEasy", 2, 5, repeats=1)
    assert rates["jitted"] > 0 and rates["host"] > 0


def test_the_agent_benchmark_runs_the_same_configuration_on_both_loops(monkeypatch):
    """rtrl.benchmarks.popgym --agent: rtrl.rl.train of one configuration on popgym:<task> and on its Gymnasium
    route; each side's rate is E x T over its median time (here two runs of 2 x 3 steps a side, and the jitted
    seconds returned are the median's)."""
    from rtrl.benchmarks import popgym as bench

    envs = []
    real = bench.train

    def spy(config, **options):  # quiet=True: a benchmark's runs show no progress
        envs.append((config.env, config.envs, config.steps, config.seed, options))
        return real(config, **options)

    monkeypatch.setattr(bench, "train", spy)
    monkeypatch.setattr(bench, "AGENT", {"hidden": 2, "envs": 5, "fidelity_every": 0})  # the run's envs win
    rate = bench.measure_agent("RepeatFirstEasy", 2, 3, repeats=1)
    quiet = {"quiet": True}
    assert envs == [("popgym:RepeatFirstEasy", 2, 3, 0, quiet), ("popgym:RepeatFirstEasy", 2, 3, 1, quiet),
                    ("gymnasium:popgym-RepeatFirstEasy-v0", 2, 3, 0, quiet),
                    ("gymnasium:popgym-RepeatFirstEasy-v0", 2, 3, 1, quiet)]
    assert rate["jitted"] == pytest.approx(6 / rate["seconds"]) and rate["host"] > 0
