"""popgym's PositionOnlyCartPole and NoisyPositionOnlyCartPole: Gymnasium's CartPole-v1 with the cart's position and
the pole's angle shown, not their velocities (and, noisy, with Gaussian noise on both).

* The physics are Gymnasium's ``CartPoleEnv`` (Euler steps of 0.02 s, force +-10 N), in the default float dtype
  (float64 under JAX's 64-bit mode, where they equal Gymnasium's; float32 otherwise). Reset draws the state
  ``(x, x_dot, theta, theta_dot)`` uniform in [-0.05, 0.05).
* Observation: ``[x, theta]`` as float32; with ``noise`` > 0, plus Gaussian noise of that deviation (``draw(key)``,
  a fresh draw each step and at reset) clipped to popgym's bounds ``+-[4.8, 0.4189]`` (``Box(2)``).
* Action 1 pushes right, 0 left. Every step rewards ``1 / length`` (the step the pole falls too). The episode ends
  (terminated) when ``|x| > 2.4`` or ``|theta| > 12 degrees``, and is truncated after ``length`` steps.
* PositionOnlyCartPole Easy / Medium / Hard: ``length`` 200 / 400 / 600; NoisyPositionOnlyCartPole: ``length``
  200 and noise 0.1 / 0.2 / 0.3.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rtrl.checks import check_positive_int
from rtrl.rl.envs.base import Env

GRAVITY, MASS_CART, MASS_POLE, HALF_LENGTH, FORCE, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
TOTAL_MASS = MASS_POLE + MASS_CART
POLE_MOMENT = MASS_POLE * HALF_LENGTH
X_LIMIT, THETA_LIMIT = 2.4, 12 * 2 * math.pi / 360
BOUNDS = np.array([X_LIMIT * 2, THETA_LIMIT * 2], np.float32)  # popgym's observation space: +-BOUNDS


class CartPoleState(NamedTuple):
    physics: jax.Array  # (4,) x, x_dot, theta, theta_dot
    time: jax.Array  # int32: steps taken


def physics_step(state: jax.Array, action: jax.Array) -> jax.Array:
    """Gymnasium's ``CartPoleEnv.step`` (Euler), operation for operation."""
    x, x_dot, theta, theta_dot = state
    force = jnp.where(action == 1, FORCE, -FORCE)
    cos, sin = jnp.cos(theta), jnp.sin(theta)
    temp = (force + POLE_MOMENT * jnp.square(theta_dot) * sin) / TOTAL_MASS
    theta_acc = (GRAVITY * sin - cos * temp) / (HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * jnp.square(cos) / TOTAL_MASS))
    x_acc = temp - POLE_MOMENT * theta_acc * cos / TOTAL_MASS
    return jnp.stack([x + TAU * x_dot, x_dot + TAU * x_acc, theta + TAU * theta_dot, theta_dot + TAU * theta_acc])


class PositionOnlyCartPole(Env):
    length: int = 200
    noise: float = 0.0

    def __post_init__(self) -> None:
        check_positive_int("length", self.length)
        if isinstance(self.noise, bool) or not isinstance(self.noise, (int, float)) or not 0 <= self.noise < math.inf:
            raise ValueError(f"noise must be a finite number >= 0, got {self.noise!r}")

    @property
    def name(self) -> str:
        noisy = f"Noisy{type(self).__name__}(noise={self.noise}, " if self.noise else f"{type(self).__name__}("
        return f"popgym {noisy}length={self.length})"

    obs_size = 2
    num_actions = 2
    max_steps = property(lambda self: self.length)

    def draw(self, key: jax.Array) -> jax.Array:
        """The observation's noise drawn from ``key`` (float32)."""
        return (self.noise * jax.random.normal(key, (2,))).astype(jnp.float32)

    def observe(self, physics: jax.Array, noise: jax.Array) -> jax.Array:
        """``[x, theta]`` as float32, plus ``noise`` clipped to the bounds where the task is noisy."""
        shown = physics.astype(jnp.float32)[jnp.array([0, 2])]
        return jnp.clip(shown + noise, -BOUNDS, BOUNDS) if self.noise else shown

    def reset(self, key):
        k_state, k_noise = jax.random.split(key)
        physics = jax.random.uniform(k_state, (4,), minval=-0.05, maxval=0.05)
        return self.observe(physics, self.draw(k_noise)), CartPoleState(physics, jnp.zeros((), jnp.int32))

    def transition(self, key, state, action):
        physics = physics_step(state.physics, action)
        x, theta, time = physics[0], physics[2], state.time + 1
        terminated = (x < -X_LIMIT) | (x > X_LIMIT) | (theta < -THETA_LIMIT) | (theta > THETA_LIMIT)
        truncated = (time >= self.length) & ~terminated
        reward = jnp.asarray(1.0 / self.length, jnp.float32)
        obs = self.observe(physics, self.draw(key))
        return obs, CartPoleState(physics, time), reward, terminated | truncated, truncated
