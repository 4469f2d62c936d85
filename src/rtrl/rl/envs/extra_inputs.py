"""``ExtraInputs``: the observation extended by the previous action, the previous reward and the time in the episode,
the inputs that streaming agents under partial observability add (Elsayed et al. 2024; Farr et al. 2026: their
masked MuJoCo agents read the time alone, their POPGym agents the previous action and reward alone).

At step t of an episode (t = 0 at its first observation) the observation becomes::

    [obs_t, action(a_{t-1}), r_{t-1}, t / max_steps - 1/2]    (zeros, 0 and -1/2 for the first observation)

each part present where it is chosen (``parts``: a subset of ``PARTS``, ``rtrl rl --extra-inputs action,reward``);
``action`` is the one-hot of a Discrete action (A entries) and, for a Box, the action as the environment takes it
(its A floats, mapped onto the bounds: ``rtrl.rl.envs.continuous``). Where a
step ends an episode, ``final_obs`` is the ended episode's last observation with its extras (the action and reward
of that step, its time), and ``obs`` the next episode's first, with zeros and time 0. ``extended`` builds the row
for a jitted environment (``ExtraInputs``) and for the Gymnasium vector on the host (``rtrl.rl.envs.gymnasium_env``)
alike.

The time is a clock, centred on [-1/2, 1/2] as Farr et al.'s time-aware wrapper gives it, and observation
normalisation leaves it as it is (``clock_columns``: the last column of the row; ``rtrl.rl.envs.normalize``): its
running statistics drift as the episodes lengthen (short at the start of a run, so an early deviation is small), and
a later, longer episode would read its time as many deviations out (a tenfold rise in the length: about 13 deviations
at step 300 after 200k frames of a Hopper run), an input the agent has never seen, at the moment it first survives
longer. Runs before this rule normalised it with the observation.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rtrl.rl.envs.base import Env
from rtrl.rl.envs.continuous import Squashed

PARTS = ("action", "reward", "time")  # the extras in the order they are appended


def parts_of(value) -> tuple[str, ...]:
    """The extras ``value`` names, in ``PARTS``' order: a subset of ``PARTS`` (a tuple or list of names, or one
    string of them comma-separated), ``True`` for all three (the one switch that older run folders hold) and
    ``False``, ``""`` or ``"none"`` for none; ``ValueError`` for anything else."""
    if value is True:
        return PARTS
    if value is False or value in ("", "none"):
        return ()
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"the extra inputs must be names from {list(PARTS)} (comma-separated), true or false, got "
                         f"{value!r}")
    names = [n.strip() for n in names]
    unknown = [n for n in names if n not in PARTS]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"the extra inputs must be distinct names from {list(PARTS)}, got {value!r}")
    return tuple(p for p in PARTS if p in names)


def named(name: str, parts: tuple[str, ...]) -> str:
    """An environment's name with its extras: ``ExtraInputs(name)`` with all three, ``ExtraInputs[time](name)`` with
    some, ``name`` with none."""
    if not parts:
        return name
    return f"ExtraInputs({name})" if tuple(parts) == PARTS else f"ExtraInputs[{','.join(parts)}]({name})"


def extended(obs, parts=PARTS, action=None, reward=None, time=None, max_steps: int = 1, xp=jnp):
    """``obs`` (..., D) with the ``parts`` chosen (names from ``PARTS``) appended on its last axis, in that order:
    ``action`` (..., A) as it is, ``reward`` (...) and ``time / max_steps - 1/2`` (...) as one entry each, in the
    observation's dtype; ``xp``: ``jax.numpy`` (a jitted environment) or ``numpy`` (the host)."""
    columns = [obs]
    if "action" in parts:
        columns.append(xp.asarray(action).astype(obs.dtype))
    if "reward" in parts:
        columns.append(xp.asarray(reward).astype(obs.dtype)[..., None])
    if "time" in parts:
        columns.append((xp.asarray(time) / max_steps - 0.5).astype(obs.dtype)[..., None])
    return xp.concatenate(columns, axis=-1)


def clock_columns(parts) -> int:
    """The columns at the end of an extended row that observation normalisation leaves as they are: 1 where the
    ``parts`` (``parts_of``) hold the time (the clock, see the module docstring), else 0."""
    return int("time" in parts_of(parts))


class ExtraState(NamedTuple):
    env: Any
    time: jax.Array  # steps taken in the episode under way


class ExtraInputs(Env):
    """``ExtraInputs(env, previous_action=True, previous_reward=True, time=True)``; see the module docstring.
    ``ExtraInputs.of(env, parts)`` chooses them by name."""

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

    parts = property(lambda self: tuple(p for p, on in zip(PARTS, (self.previous_action, self.previous_reward,
                                                                    self.time), strict=True) if on))
    name = property(lambda self: named(self.env.name, self.parts))
    num_actions = property(lambda self: self.env.num_actions)
    max_steps = property(lambda self: self.env.max_steps)
    action_bounds = property(lambda self: self.env.action_bounds)

    @property
    def obs_size(self) -> int:
        return (self.env.obs_size + self.env.num_actions * self.previous_action + self.previous_reward
                + self.time)

    @classmethod
    def of(cls, env: Env, parts) -> ExtraInputs:
        """``env`` with the extras ``parts`` names (``parts_of``)."""
        parts = parts_of(parts)
        return cls(env, "action" in parts, "reward" in parts, "time" in parts)

    def action_input(self, action) -> jax.Array:
        """The previous action's entries: a Discrete action's one-hot, a Box action as the environment takes it."""
        if self.env.action_bounds is None:
            return jax.nn.one_hot(action, self.env.num_actions)
        return self.env.to_space(action) if isinstance(self.env, Squashed) else action

    def extend(self, obs: jax.Array, action, reward, time) -> jax.Array:
        """``obs`` with the extras of the chosen parts (``action`` ``None`` for none: all zeros)."""
        action = jnp.zeros(self.env.num_actions) if action is None else self.action_input(action)
        return extended(obs, self.parts, action, reward, time, self.env.max_steps)

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
