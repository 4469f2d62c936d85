"""``ExtraInputs``: the observation extended by the previous action, the previous reward and the time in the episode,
the inputs that streaming agents under partial observability add (Elsayed et al. 2024; Farr et al. 2026).

At step t of an episode (t = 0 at its first observation) the observation becomes::

    [obs_t, action(a_{t-1}), r_{t-1}, t / max_steps]          (zeros and 0 for the first observation)

each part present where its option is on; ``action`` is the one-hot of a Discrete action (A entries) and, for a Box,
the action as the environment takes it (its A floats, mapped onto the bounds: ``rtrl.rl.envs.continuous``). Where a
step ends an episode, ``final_obs`` is the ended episode's last observation with its extras (the action and reward
of that step, its time), and ``obs`` the next episode's first, with zeros and time 0. ``extended`` builds the row
for a jitted environment (``ExtraInputs``) and for the Gymnasium vector on the host (``rtrl.rl.envs.gymnasium_env``)
alike.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rtrl.rl.envs.base import Env
from rtrl.rl.envs.continuous import Squashed


def extended(obs, action=None, reward=None, time=None, max_steps: int = 1, xp=jnp):
    """``obs`` (..., D) with the parts given appended on its last axis: ``action`` (..., A) as it is, ``reward``
    (...) and ``time / max_steps`` (...) as one entry each, in the observation's dtype; ``xp``: ``jax.numpy`` (a
    jitted environment) or ``numpy`` (the host)."""
    parts = [obs]
    if action is not None:
        parts.append(xp.asarray(action).astype(obs.dtype))
    if reward is not None:
        parts.append(xp.asarray(reward).astype(obs.dtype)[..., None])
    if time is not None:
        parts.append((xp.asarray(time) / max_steps).astype(obs.dtype)[..., None])
    return xp.concatenate(parts, axis=-1)


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
    action_bounds = property(lambda self: self.env.action_bounds)

    @property
    def obs_size(self) -> int:
        return (self.env.obs_size + self.env.num_actions * self.previous_action + self.previous_reward
                + self.time)

    def action_input(self, action) -> jax.Array:
        """The previous action's entries: a Discrete action's one-hot, a Box action as the environment takes it."""
        if self.env.action_bounds is None:
            return jax.nn.one_hot(action, self.env.num_actions)
        return self.env.to_space(action) if isinstance(self.env, Squashed) else action

    def extend(self, obs: jax.Array, action, reward, time) -> jax.Array:
        """``obs`` with the extras of the chosen parts (``action`` ``None`` for none: all zeros)."""
        action = jnp.zeros(self.env.num_actions) if action is None else self.action_input(action)
        return extended(obs, action if self.previous_action else None, reward if self.previous_reward else None,
                        time if self.time else None, self.env.max_steps)

    def reset(self, key):
        obs, state = self.env.reset(key)
        zero = jnp.zeros((), jnp.int32)
        return self.extend(obs, None, 0.0, zero), ExtraState(state, zero)

    def step(self, key, state, action):
        step = self.env.step(key, state.env, action)
        time = state.time + 1
        final_obs = self.extend(step.final_obs, action, step.reward, time)
        zero = jnp.zeros((), jnp.int32)
        fresh = self.extend(step.obs, None, 0.0, zero)
        obs = jnp.where(step.done, fresh, final_obs)
        return step._replace(obs=obs, state=ExtraState(step.state, jnp.where(step.done, zero, time)),
                             final_obs=final_obs)
