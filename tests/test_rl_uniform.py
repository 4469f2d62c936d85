"""rtrl.rl.uniform: the uniform random policy's returns, on a hand-checked environment and on RepeatPrevious."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from rtrl.rl.envs.base import Env, EpisodeStats
from rtrl.rl.uniform import uniform_returns


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
    values = uniform_returns(EpisodeStats(TwoSteps()), [0, 1, 2], steps=301, envs=64)  # 150 episodes and a half
    assert len(values) == 3 and all(abs(v - 11.0) < 0.15 for v in values), values  # 9,600 episodes: se 0.01
    assert len(set(values)) == 3  # each seed its own draws
    assert all(abs(v + 0.5) < 0.02 for v in uniform_returns("popgym:RepeatPreviousEasy", [0, 1])), "RepeatPrevious"
    with pytest.raises(ValueError, match="steps must let every seed end an episode of TwoSteps"):
        uniform_returns(EpisodeStats(TwoSteps()), [0], steps=1, envs=2)  # no episode ended: no mean to give
