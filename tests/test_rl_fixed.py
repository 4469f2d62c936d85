"""rtrl.rl.fixed: the fixed policies' returns (uniform, sweep), on hand-checked environments, RepeatPrevious and
Battleship."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from rtrl.rl.envs.base import Env, EpisodeStats
from rtrl.rl.fixed import fixed_returns


class TwoSteps(Env):
    """Episodes of two steps: the first rewards the action (0, 1 or 2), the second 10."""

    obs_size = 1
    num_actions = 3
    max_steps = 2

    def reset(self, key):
        return jnp.zeros((1,)), jnp.zeros((), jnp.int32)

    def transition(self, key, t, action):
        reward = jnp.where(t == 0, action, 10).astype(jnp.float32)
        return jnp.zeros((1,)), t + 1, reward, t == 1, jnp.array(False)


def test_the_uniform_policys_return_is_the_mean_over_the_episodes_it_ended():
    """Hand-checked: on TwoSteps the uniform policy's episodes return 10 + a, a uniform in {0, 1, 2}: 11 on
    average; RepeatPrevious's scored steps pay +c or -c for one suit in four: -0.5 (0.25 normalised). [guards
    (each mutation checked): every step's ``last_return`` summed, not only where an episode ended; one action
    for every environment (10 or 12, not 11)]"""
    values = fixed_returns(EpisodeStats(TwoSteps()), [0, 1, 2], steps=301, envs=64)  # 150 episodes and a half
    assert len(values) == 3 and all(abs(v - 11.0) < 0.15 for v in values), values  # 9,600 episodes: se 0.01
    assert len(set(values)) == 3  # each seed its own draws
    assert all(abs(v + 0.5) < 0.02 for v in fixed_returns("popgym:RepeatPreviousEasy", [0, 1])), "RepeatPrevious"
    with pytest.raises(ValueError, match="steps must let every seed end an episode of TwoSteps"):
        fixed_returns(EpisodeStats(TwoSteps()), [0], steps=1, envs=2)  # no episode ended: no mean to give


class Countdown(Env):
    """Episodes of four steps with four actions: step t rewards action t (1), any other action 0."""

    obs_size = 1
    num_actions = 4
    max_steps = 4

    def reset(self, key):
        return jnp.zeros((1,)), jnp.zeros((), jnp.int32)

    def transition(self, key, t, action):
        return jnp.zeros((1,)), t + 1, (action == t).astype(jnp.float32), t == 3, jnp.array(False)


def test_the_sweep_takes_the_previous_action_plus_one_from_zero_at_each_episodes_start():
    """Hand-checked: on Countdown the sweep takes actions 0, 1, 2, 3 in every episode, a return of 4 (uniform: 1 on
    average); a sweep not restarted at an episode's start would take 4, 5, ... mod 4 = 0, 1, ... only by chance of
    the period (here it is: so the episodes are also cut at 3 steps, below, where a carried sweep returns 0 in the
    second episode); on BattleshipEasy it never fires twice, far above the uniform policy: 0.63 normalised against
    0.35. [guards: the previous action not reset to -1 where an episode ends; the first action 1; the policy's
    name not read (uniform played): a line fails]"""
    assert fixed_returns(EpisodeStats(Countdown()), [0, 1], "sweep", steps=40, envs=3) == [4.0, 4.0]
    assert abs(fixed_returns(EpisodeStats(Countdown()), [0], "uniform", steps=400, envs=64)[0] - 1.0) < 0.05

    class Three(Countdown):
        max_steps = 3

        def transition(self, key, t, action):
            return jnp.zeros((1,)), t + 1, (action == t).astype(jnp.float32), t == 2, jnp.array(False)

    assert fixed_returns(EpisodeStats(Three()), [0], "sweep", steps=30, envs=2) == [3.0]
    from rtrl.rl.envs.popgym import normalise

    sweep = normalise("Battleship", fixed_returns("popgym:BattleshipEasy", [0], "sweep", steps=640, envs=16)[0])
    assert 0.58 < sweep < 0.68, sweep
    with pytest.raises(ValueError, match=r"policy must be one of \['uniform', 'sweep'\], got 'greedy'"):
        fixed_returns(EpisodeStats(Countdown()), [0], "greedy")
