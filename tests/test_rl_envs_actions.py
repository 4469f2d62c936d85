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
