"""gymnax environments (the ``rl`` extra) behind the ``rtrl.rl`` environment API.

gymnax is imported here, when an environment is built, never by ``import rtrl`` or ``import rtrl.rl``.
``options`` are fields of the gymnax environment's ``EnvParams`` (``memory_length`` of ``MemoryChain-bsuite``,
``max_steps_in_episode`` ...), as sorted ``(name, value)`` pairs so the object stays hashable.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax.numpy as jnp
import numpy as np

from rtrl.extras import install
from rtrl.rl.envs.base import Env


@functools.cache
def _gymnax(name: str):
    try:
        import gymnax
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ValueError(f"environment {name!r} needs gymnax: {install('rl')}") from error
    return gymnax.make(name)


def check_like(name: str, value, default) -> None:
    """``ValueError`` unless ``value`` is of the kind of the option's ``default`` (a flag, a whole number, a finite
    number) and, like it, positive where the default is positive (a size, a mass, a step limit) and non-negative
    where it is zero; gymnax itself checks nothing, and a zero step limit would end every episode at once."""
    flag = isinstance(default, bool)
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if flag:
        ok, kind = isinstance(value, bool), "true or false"
    elif isinstance(default, (int, float)):
        whole = isinstance(default, int)
        ok = number and (isinstance(value, int) or not whole) and (value > 0 if default > 0 else value >= 0)
        kind = ("a positive " if default > 0 else "a non-negative ") + ("integer" if whole else "finite number")
    else:
        raise ValueError(f"{name} cannot be set here (its default is {default!r})")
    if not ok:
        raise ValueError(f"{name} must be {kind} (its default is {default}), got {value!r}")


class Gymnax(Env):
    gymnax_name: str = "CartPole-v1"
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        env, default = _gymnax(self.gymnax_name)
        fields = [f.name for f in dataclasses.fields(default)]
        for key, value in self.options:
            if key not in fields:
                raise ValueError(f"environment {self.gymnax_name!r} has no option {key!r}; its options are {fields}")
            check_like(f"{self.gymnax_name} option {key}", value, getattr(default, key))

    @property
    def name(self) -> str:
        return self.gymnax_name + "".join(f" {k}={v}" for k, v in self.options)

    @property
    def _env(self):
        return _gymnax(self.gymnax_name)[0]

    @property
    def params(self):
        return _gymnax(self.gymnax_name)[1].replace(**dict(self.options))

    @property
    def obs_size(self) -> int:
        return int(self._env.observation_space(self.params).shape[0])

    @property
    def num_actions(self) -> int:
        bounds = self.action_bounds
        return len(bounds[0]) if bounds is not None else int(self._env.num_actions)

    @property
    def action_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """``None`` for a Discrete action space; a Box's ``(low, high)``, flattened (Pendulum-v1: ``((-2.0,),
        (2.0,))``, its ``max_torque``)."""
        space = self._env.action_space(self.params)
        if not hasattr(space, "low"):
            return None
        return tuple(tuple(float(v) for v in np.broadcast_to(np.asarray(bound, np.float64), space.shape).ravel())
                     for bound in (space.low, space.high))

    @property
    def max_steps(self) -> int:
        params = self.params
        if self.gymnax_name == "MemoryChain-bsuite":  # it ends after memory_length + 1 steps
            return min(int(params.memory_length) + 1, int(params.max_steps_in_episode))
        return int(params.max_steps_in_episode)

    def reset(self, key):
        obs, state = self._env.reset_env(key, self.params)
        return jnp.asarray(obs, jnp.float32), state

    def transition(self, key, state, action):
        # gymnax's step_env reports the termination alone; its time limit (max_steps_in_episode) is a truncation,
        # which a terminal state at the same step overrides (as in Gymnasium).
        obs, state, reward, terminated, _ = self._env.step_env(key, state, action, self.params)
        truncated = self._env.is_truncated(state, self.params) & ~terminated
        return jnp.asarray(obs, jnp.float32), state, jnp.asarray(reward, jnp.float32), terminated | truncated, \
            truncated
