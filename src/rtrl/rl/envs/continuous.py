"""Box action spaces: the agent acts in ``R^A`` and the environment's side maps that onto the space.

A Gaussian policy (``rtrl.rl.algorithms.gaussian``) draws ``u`` from ``N(mean, std^2)`` over all of ``R^A``;
``squash(u, low, high)`` is the action the environment gets, dimension by dimension::

    both bounds finite     low + (high - low) * (tanh(u) + 1) / 2      (tanh-squashed into the open interval)
    one bound finite       u clipped to it
    none                   u

The map is part of the environment, not of the policy: the policy the update differentiates is the Gaussian over
``u``, whose log-probability is exact whatever the map (the log-density of the squashed action differs from it by
``sum log |d squash / du|``, a function of ``u`` alone, so their gradients w.r.t. the parameters are equal;
``rtrl.rl.algorithms.gaussian.squashed_log_prob`` gives the squashed density). ``Squashed(env)`` applies it to a jitted
environment (``rtrl.rl.envs.make`` wraps every one with a Box action space), and the Gymnasium vector applies it on
the host (``rtrl.rl.envs.gymnasium_env``); both then state unbounded ``action_bounds``, what the agent acts in.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from rtrl.rl.envs.base import Env


def squash(u, low, high, xp=jnp):
    """The action in the Box ``[low, high]`` of ``u`` (``(..., A)``; ``low``, ``high`` (A,) sequences of floats, each
    bound possibly infinite); ``xp``: ``jax.numpy`` (jitted environments) or ``numpy`` (the host)."""
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    lo_finite, hi_finite = np.isfinite(low), np.isfinite(high)
    both = lo_finite & hi_finite
    # the infinite bounds replaced by 0 in the arithmetic (their dimensions take another branch)
    lo, hi = np.where(lo_finite, low, 0.0), np.where(hi_finite, high, 0.0)
    u = xp.asarray(u)
    squashed = lo + (hi - lo) * (xp.tanh(u) + 1) / 2
    clipped = xp.clip(u, np.where(lo_finite, lo, -np.inf), np.where(hi_finite, hi, np.inf))
    return xp.where(both, squashed, clipped).astype(u.dtype)


def unbounded(size: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The ``action_bounds`` of ``R^size``."""
    return (-math.inf,) * size, (math.inf,) * size


class Squashed(Env):
    """``env`` (a Box action space) taking actions in ``R^A``, mapped onto its bounds by ``squash``."""

    env: Env = None

    def __post_init__(self) -> None:
        if not isinstance(self.env, Env) or self.env.action_bounds is None:
            raise ValueError(f"env must be an rtrl.rl environment with a Box action space, got {self.env!r}")

    name = property(lambda self: self.env.name)
    obs_size = property(lambda self: self.env.obs_size)
    num_actions = property(lambda self: self.env.num_actions)
    max_steps = property(lambda self: self.env.max_steps)
    action_bounds = property(lambda self: unbounded(self.env.num_actions))

    def to_space(self, action):
        return squash(action, *self.env.action_bounds)

    def reset(self, key):
        return self.env.reset(key)

    def transition(self, key, state, action):
        return self.env.transition(key, state, self.to_space(action))

    def step(self, key, state, action):
        self.check_action(action)  # the action as given (a float vector of A), before it is squashed
        return self.env.step(key, state, self.to_space(action))
