"""POPGym's PositionOnlyCartPole and NoisyPositionOnlyCartPole in JAX (rtrl.rl.envs.popgym.cartpole) against popgym
itself, step by step over 1,000 steps of random actions (tests/popgym_check.py), at every level; and the rules on
hand-worked states.

popgym's state after its seeded reset is injected (float64: the suite runs in JAX's 64-bit mode, where the port's
physics are Gymnasium's operation for operation, so the float32 observations are compared for equality). The noise
of the noisy task: at reset, popgym's own (its seeded generator replayed); at each step, the port's draw handed to
popgym's generator. Mutations tried by hand, each caught: the force's sign flipped; ``theta_acc`` without the
``4/3`` term; the angle limit in degrees; the noise not clipped; the time limit one step late.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from popgym_check import agree
from rtrl.rl.envs.popgym import PositionOnlyCartPole
from rtrl.rl.envs.popgym.cartpole import CartPoleState


def inject(env, gym):
    """The port's state from popgym's; the first observation with popgym's reset noise, its generator replayed."""
    replay = np.random.default_rng(gym.np_random_seed)
    physics = replay.uniform(-0.05, 0.05, (4,))
    assert np.array_equal(physics, gym.state)
    noise = replay.normal(0, gym.noise_sigma).astype(np.float32) if env.noise else np.zeros(2, np.float32)
    physics = jnp.asarray(gym.state, jnp.float64)
    return env.observe(physics, jnp.asarray(noise)), CartPoleState(physics, jnp.zeros((), jnp.int32))


class Drawn:
    """popgym's generator, its next ``normal()`` the port's noise."""

    def __init__(self, noise):
        self.noise = np.asarray(noise)

    def normal(self, loc, scale):
        return self.noise


def noise_draw(env, gym, key):
    gym._np_random = Drawn(env.draw(key))


@pytest.mark.parametrize("level", ["Easy", "Medium", "Hard"])
@pytest.mark.parametrize("task, feed", [("PositionOnlyCartPole", None), ("NoisyPositionOnlyCartPole", noise_draw)])
def test_agrees_with_popgym_step_by_step(task, feed, level):
    lengths = agree(task + level, inject, steps=1000 if level == "Easy" else 300, feed=feed)
    assert len(lengths) >= 5 and max(lengths) < 200  # random pushes drop the pole long before the time limit


def test_rules():
    """A push right (1) from rest accelerates the cart right and the pole left; the episode ends past 12 degrees or
    2.4 m (terminated), or after ``length`` steps (truncated); every step rewards 1 / length; the noisy task's
    observation is clipped to popgym's bounds."""
    env = PositionOnlyCartPole(length=3)
    step = jax.jit(env.transition)
    rest = CartPoleState(jnp.zeros(4), jnp.zeros((), jnp.int32))
    obs, state, reward, done, truncated = step(jax.random.key(0), rest, 1)
    # x_acc = (10 - 0.05 * theta_acc) / 1.1 with theta_acc = -(10 / 1.1) / (0.5 (4/3 - 0.1 / 1.1)): Euler moves the
    # velocities only in the first step
    theta_acc = -(10 / 1.1) / (0.5 * (4 / 3 - 0.1 / 1.1))
    np.testing.assert_allclose(state.physics, [0, 0.02 * (10 / 1.1 - 0.05 * theta_acc / 1.1), 0, 0.02 * theta_acc],
                               rtol=1e-12)
    assert np.asarray(obs).tolist() == [0, 0] and float(reward) == np.float32(1 / 3) and not done
    _, state, _, done, _ = step(jax.random.key(0), state, 1)
    _, _, _, done, truncated = step(jax.random.key(0), state, 1)
    assert (bool(done), bool(truncated)) == (True, True)  # the third step: the time limit
    tipped = CartPoleState(jnp.asarray([0.0, 0.0, 0.2094, 1.0]), jnp.zeros((), jnp.int32))
    assert [bool(x) for x in step(jax.random.key(0), tipped, 1)[3:]] == [True, False]  # past 12 degrees (0.20944)
    off = CartPoleState(jnp.asarray([2.399, 1.0, 0.0, 0.0]), jnp.zeros((), jnp.int32))
    assert [bool(x) for x in step(jax.random.key(0), off, 1)[3:]] == [True, False]  # past 2.4 m
    noisy = PositionOnlyCartPole(noise=0.1)
    far = noisy.observe(jnp.asarray([4.79, 0.0, 0.41, 0.0]), jnp.asarray([1.0, 1.0], jnp.float32))
    assert np.asarray(far).tolist() == [np.float32(4.8), np.float32(0.41887903)]
    obs, state = noisy.reset(jax.random.key(1))
    assert bool((jnp.abs(state.physics) <= 0.05).all()) and not np.array_equal(obs, state.physics[jnp.array([0, 2])])


def test_a_fall_on_the_time_limits_last_step_is_terminated_not_truncated():
    """``length = 3``: a pole past 12 degrees on the third step ends the episode terminated (no value owed), not
    truncated; an upright pole on that step is truncated (the limit). Through ``env.step`` and ``transition`` alike.
    [guards: ``truncated = time >= length`` without ``& ~terminated``]"""
    env = PositionOnlyCartPole(length=3)
    two = jnp.asarray(2, jnp.int32)
    for physics, want in (([0.0, 0.0, 0.2094, 1.0], [True, False]), ([0.0, 0.0, 0.0, 0.0], [True, True])):
        state = CartPoleState(jnp.asarray(physics), two)
        _, _, _, done, truncated = env.transition(jax.random.key(0), state, 1)
        assert [bool(done), bool(truncated)] == want, physics
        step = env.step(jax.random.key(0), state, 1)
        assert [bool(step.done), bool(step.truncated)] == want, physics
