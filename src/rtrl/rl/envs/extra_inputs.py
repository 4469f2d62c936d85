"""``ExtraInputs``: the observation extended by the previous action, the previous reward and the time in the episode,
the inputs that streaming agents under partial observability add (Elsayed et al. 2024; Farr et al. 2026).

At step t of an episode (t = 0 at its first observation) the observation becomes::

    [obs_t, one_hot(a_{t-1}, A), r_{t-1}, t / max_steps]          (zeros and 0 for the first observation)

each part present where its option is on. Where a step ends an episode, ``final_obs`` is the ended episode's last
observation with its extras (the action and reward of that step, its time), and ``obs`` the next episode's first,
with zeros and time 0.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rtrl.rl.envs.base import Env


class ExtraState(NamedTuple):
    env: Any
    time: jax.Array  # steps taken in the episode under way


class ExtraInputs(Env):
    """``ExtraInputs(env, previous_action=True, previous_reward=True, time=True)``; see the module docstring."""

    env: Env = None
    previous_action: bool = True
    previous_reward: bool = True
    time: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.env, Env):
            raise ValueError(f"env must be an rtrl.rl environment, got {self.env!r}")
        for name in ("previous_action", "previous_reward", "time"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")

    name = property(lambda self: f"ExtraInputs({self.env.name})")
    num_actions = property(lambda self: self.env.num_actions)
    max_steps = property(lambda self: self.env.max_steps)

    @property
    def obs_size(self) -> int:
        return (self.env.obs_size + self.env.num_actions * self.previous_action + self.previous_reward
                + self.time)

    def extend(self, obs: jax.Array, action, reward, time) -> jax.Array:
        """``obs`` with the extras of the chosen parts (``action`` an int, or -1 for none: all zeros)."""
        parts = [obs]
        if self.previous_action:
            parts.append(jax.nn.one_hot(action, self.env.num_actions, dtype=obs.dtype))
        if self.previous_reward:
            parts.append(jnp.reshape(reward, (1,)).astype(obs.dtype))
        if self.time:
            parts.append(jnp.reshape(time / self.env.max_steps, (1,)).astype(obs.dtype))
        return jnp.concatenate(parts)

    def reset(self, key):
        obs, state = self.env.reset(key)
        zero = jnp.zeros((), jnp.int32)
        return self.extend(obs, -1, 0.0, zero), ExtraState(state, zero)

    def step(self, key, state, action):
        step = self.env.step(key, state.env, action)
        time = state.time + 1
        final_obs = self.extend(step.final_obs, action, step.reward, time)
        zero = jnp.zeros((), jnp.int32)
        fresh = self.extend(step.obs, -1, 0.0, zero)
        obs = jnp.where(step.done, fresh, final_obs)
        return step._replace(obs=obs, state=ExtraState(step.state, jnp.where(step.done, zero, time)),
                             final_obs=final_obs)
