"""The jitted environments' ``step`` checks a concrete action (called outside ``jit``) and names the environment,
the action and the range; inside ``jit`` it checks nothing (documented in ``Env.check_action``). Every POPGym task,
the T-maze and a gymnax environment, each wrapped as ``rtrl.rl.make`` wraps it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.rl.envs import make
from rtrl.rl.envs.popgym import TASKS

ENVS = ["tmaze", "cartpole-masked", *(f"popgym:{task}Easy" for task in TASKS)]


@pytest.mark.parametrize("name", ENVS)
def test_a_valid_action_steps_and_every_invalid_one_is_refused_by_name(name):
    env = make(name)
    key = jax.random.PRNGKey(0)
    obs, state = env.reset(key)
    A = env.num_actions
    for good in (0, A - 1, jnp.int32(A - 1), np.int64(0)):
        assert env.step(key, state, good).obs.shape == obs.shape
    for bad in (-1, A, 0.0, 1.5, True, jnp.array([0, 0]), jnp.float32(0)):
        with pytest.raises(ValueError) as e:
            env.step(key, state, bad)
        message = str(e.value)
        assert message.startswith(f"action must be an integer in 0..{A - 1} for ") and repr(bad)[:10] in message


def test_inside_jit_an_action_is_not_checked():
    """As gymnax: under ``jit`` (and ``vmap``) the step computes with what it is given; no error is raised."""
    env = make("popgym:RepeatPreviousEasy")
    key = jax.random.PRNGKey(0)
    _, state = env.reset(key)
    jax.jit(env.step)(key, state, jnp.int32(99))  # no error


@pytest.mark.parametrize("name", ["pendulum", "pendulum-p"])
def test_a_box_environment_takes_a_float_vector_of_its_size_and_refuses_anything_else(name):
    """A jitted Box environment as ``make`` wraps it (the agent's actions in R^A, squashed onto the bounds): a float
    vector of A = 1 steps (float32 or float64); a scalar (a float, a 0-d array), a vector of another length, a
    matrix, an integer or bool vector, a bool or an int are each refused, the message naming the action as given
    (before it is squashed). [found by this test: the squashing wrapper broadcast a scalar to (A,) before the check,
    so a scalar passed; guards: the check without the shape, or without the dtype]"""
    env = make(name)
    key = jax.random.PRNGKey(0)
    obs, state = env.reset(key)
    assert env.num_actions == 1 and env.action_bounds is not None
    for good in (jnp.zeros(1), jnp.ones(1, jnp.float32), np.array([-2.5])):
        assert env.step(key, state, good).obs.shape == obs.shape
    for bad in (0.0, jnp.zeros(()), jnp.zeros(2), np.zeros((1, 1)), jnp.zeros(1, jnp.int32), jnp.array([True]),
                True, 0):
        with pytest.raises(ValueError) as e:
            env.step(key, state, bad)
        message = str(e.value)
        assert message.startswith("action must be a float vector of 1 for ") and message.endswith(repr(bad)), message


def test_unsigned_integer_actions_are_integers():
    """``numpy.uint8`` and ``jnp.uint32`` actions in range step a discrete environment; out of range refused."""
    env = make("popgym:RepeatPreviousEasy")
    key = jax.random.PRNGKey(0)
    obs, state = env.reset(key)
    for good in (np.uint8(0), jnp.uint32(env.num_actions - 1)):
        assert env.step(key, state, good).obs.shape == obs.shape
    with pytest.raises(ValueError, match="action must be an integer in 0.."):
        env.step(key, state, np.uint8(env.num_actions))


def test_a_gymnasium_box_takes_clipped_actions_under_option_actions_clip():
    """``--env-arg actions=clip`` (Farr et al.'s ``ClipActionWrapper``): the agent's actions clipped to the Box, by
    hand on [-2, 2]: 3 -> 2, -0.5 -> -0.5, -7 -> -2 (the default squash: -0.5 -> -2 + 4 (tanh(-0.5) + 1) / 2); the
    vector steps Pendulum with the clipped action (its reward equals Gymnasium's own for 2.0 from the same seed);
    another value, or the option on Discrete actions, refused by name."""
    gymnasium = pytest.importorskip("gymnasium")
    from rtrl.rl.envs.gymnasium_env import to_space

    space = gymnasium.spaces.Box(-2.0, 2.0, (1,), np.float32)
    u = np.array([[3.0], [-0.5], [-7.0]], np.float32)
    np.testing.assert_allclose(to_space(space, ((-2.0,), (2.0,)), u, clip=True)[:, 0], [2.0, -0.5, -2.0])
    np.testing.assert_allclose(to_space(space, ((-2.0,), (2.0,)), u)[1, 0], -2 + 4 * (np.tanh(-0.5) + 1) / 2,
                               rtol=1e-6)
    vector = make("gymnasium:Pendulum-v1", actions="clip").vector(1)
    vector.reset([3])
    reward = vector.step(np.array([[5.0]], np.float32)).reward[0]
    plain = gymnasium.make("Pendulum-v1")
    plain.reset(seed=3)
    assert reward == pytest.approx(plain.step(np.array([2.0], np.float32))[1], rel=1e-6)
    with pytest.raises(ValueError, match="option actions must be one of"):
        make("gymnasium:Pendulum-v1", actions="tanh")
    with pytest.raises(ValueError, match="option actions maps a Box's actions, and its actions are Discrete"):
        make("gymnasium:CartPole-v1", actions="clip")
