"""Environments as pure functions, in the style of gymnax: the base class and the wrappers (``Masked``,
``EpisodeStats``); each environment has a module of its own, and ``rtrl.rl.envs.registry`` names them.

An environment is a frozen dataclass of its options (``rtrl.frozen.Frozen``) with::

    obs, state = env.reset(key)
    obs, state, reward, done, truncated, final_obs = env.step(key, state, action)   # a ``Step``

where ``done`` (the episode is over: obs and state begin the next one), ``truncated`` (it was cut by a time limit,
not terminated: the value of ``final_obs``, its last observation, is still owed) and ``final_obs`` (where
``done``; else ``obs``). ``step`` resets automatically, so E environments run side by side under ``jax.vmap`` with
no branch. ``obs`` is a float vector of ``obs_size``, ``action`` an integer in ``range(num_actions)`` (or, where
``action_bounds`` is not ``None``, a float vector of ``num_actions``: a Box); no episode is longer than
``max_steps``. A subclass writes ``reset`` and ``transition`` (one step, no reset: ``(obs, state, reward, done,
truncated)``, ``truncated`` implying ``done``); wrappers hold the environment they wrap in the field ``env``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rtrl.frozen import Frozen


class Step(NamedTuple):
    """What ``Env.step`` returns: the next observation (the next episode's first where ``done``), the state, the
    reward, whether the episode is over, whether it was cut by a time limit (then bootstrapped from
    ``final_obs``), and the episode's last observation (``obs`` itself where not ``done``)."""

    obs: jax.Array
    state: Any
    reward: jax.Array
    done: jax.Array
    truncated: jax.Array
    final_obs: jax.Array


def select(done: jax.Array, new, old):
    """``new`` where ``done`` (a scalar) else ``old``, leaf by leaf."""
    return jax.tree.map(lambda a, b: jnp.where(done, a, b), new, old)


class Env(Frozen):
    """Base of every environment: ``reset``, an auto-resetting ``step`` and the sizes."""

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def obs_size(self) -> int:
        raise NotImplementedError

    @property
    def num_actions(self) -> int:
        raise NotImplementedError

    @property
    def max_steps(self) -> int:
        """No episode is longer (the fidelity check keeps this many steps of history)."""
        raise NotImplementedError

    @property
    def action_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """``None``: the actions are integers in ``range(num_actions)`` (a Discrete space); else ``(low, high)``, the
        bounds of a Box of ``num_actions`` float dimensions (``-inf`` / ``inf`` where a dimension has none)."""
        return None

    def reset(self, key: jax.Array) -> tuple[jax.Array, Any]:
        raise NotImplementedError

    def transition(self, key: jax.Array, state, action) -> tuple[jax.Array, Any, jax.Array, jax.Array, jax.Array]:
        """One step without the automatic reset: ``(obs, state, reward, done, truncated)``."""
        raise NotImplementedError

    def restart(self, key: jax.Array, state) -> tuple[jax.Array, Any]:
        """The next episode's first observation and state where ``state``'s episode ended: ``reset(key)``, unless
        the environment prepares its next episode along the way (POPGym's card games shuffle the next deck a swap a
        step, where a whole shuffle at every step would cost more than the game)."""
        return self.reset(key)

    def check_action(self, action) -> None:
        """A ``ValueError`` naming the environment, the action and what it takes, for a concrete action (called
        outside ``jit``) that is not one: an integer in ``range(num_actions)`` (not a bool, a float or a vector),
        or a float vector of ``num_actions`` for a Box. Inside ``jit`` nothing is checked, as in gymnax: the step
        computes with whatever it is given (an index out of range is clamped, as JAX's indexing does), so an agent
        that makes its own actions must make valid ones."""
        if isinstance(action, jax.core.Tracer):
            return
        a = np.asarray(action)
        if self.action_bounds is None:
            if a.shape != () or a.dtype.kind not in "iu" or not 0 <= int(a) < self.num_actions:
                raise ValueError(f"action must be an integer in 0..{self.num_actions - 1} for {self.name}, got "
                                 f"{action!r}")
        elif a.shape != (self.num_actions,) or a.dtype.kind != "f":
            raise ValueError(f"action must be a float vector of {self.num_actions} for {self.name}, got {action!r}")

    def step(self, key: jax.Array, state, action) -> Step:
        self.check_action(action)
        k_step, k_reset = jax.random.split(key)
        final_obs, state, reward, done, truncated = self.transition(k_step, state, action)
        obs, state = select(done, self.restart(k_reset, state), (final_obs, state))
        return Step(obs, state, reward, done, truncated & done, final_obs)


class Masked(Env):
    """``env`` with only the observation entries ``keep`` visible (``keep=(0, 2)`` hides CartPole's velocities)."""

    env: Env = None
    keep: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.env, Env):
            raise ValueError(f"env must be an rtrl.rl environment, got {self.env!r}")
        size = self.env.obs_size
        if not self.keep or any(not isinstance(i, int) or not 0 <= i < size for i in self.keep):
            raise ValueError(f"keep must be a non-empty tuple of observation indices in [0, {size}), "
                             f"got {self.keep!r}")

    @property
    def name(self) -> str:
        return f"Masked({self.env.name}, keep={list(self.keep)})"

    obs_size = property(lambda self: len(self.keep))
    num_actions = property(lambda self: self.env.num_actions)
    max_steps = property(lambda self: self.env.max_steps)
    action_bounds = property(lambda self: self.env.action_bounds)

    def mask(self, obs: jax.Array) -> jax.Array:
        return obs[jnp.asarray(self.keep)]

    def reset(self, key):
        obs, state = self.env.reset(key)
        return self.mask(obs), state

    def transition(self, key, state, action):
        obs, *rest = self.env.transition(key, state, action)
        return self.mask(obs), *rest

    def step(self, key, state, action):
        step = self.env.step(key, state, action)
        return step._replace(obs=self.mask(step.obs), final_obs=self.mask(step.final_obs))


class StatsState(NamedTuple):
    env: Any
    episode_return: jax.Array  # of the episode under way
    episode_length: jax.Array
    last_return: jax.Array  # of the episode that ended last (read it where ``done``)
    last_length: jax.Array


class EpisodeStats(Env):
    """``env`` whose state also counts each episode's return and length: where a step ends an episode,
    ``state.last_return`` and ``state.last_length`` are that episode's."""

    env: Env = None

    name = property(lambda self: self.env.name)
    obs_size = property(lambda self: self.env.obs_size)
    num_actions = property(lambda self: self.env.num_actions)
    max_steps = property(lambda self: self.env.max_steps)
    action_bounds = property(lambda self: self.env.action_bounds)

    def reset(self, key):
        obs, state = self.env.reset(key)
        zero = jnp.zeros((), jnp.float32)
        return obs, StatsState(state, zero, jnp.zeros((), jnp.int32), zero, jnp.zeros((), jnp.int32))

    def step(self, key, state, action):
        step = self.env.step(key, state.env, action)
        inner, reward, done = step.state, step.reward, step.done
        episode_return = state.episode_return + reward
        length = state.episode_length + 1
        stats = StatsState(inner, jnp.where(done, 0.0, episode_return), jnp.where(done, 0, length),
                           jnp.where(done, episode_return, state.last_return),
                           jnp.where(done, length, state.last_length))
        return step._replace(state=stats)
