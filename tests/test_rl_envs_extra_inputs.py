"""Environment wrappers against NumPy oracles: ExtraInputs (previous action, previous reward, time in episode)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.rl import RLConfig, TMaze
from rtrl.rl.assemble import assemble
from rtrl.rl.envs.extra_inputs import ExtraInputs


def test_extra_inputs_against_a_numpy_oracle():
    """A T-maze of length 1 (episodes of 2-3 steps) driven by fixed actions through episode ends: every observation
    and final observation against the extras built in NumPy from the inner environment's own outputs."""
    inner = TMaze(length=1)
    env = ExtraInputs(inner)
    A, H = inner.num_actions, inner.max_steps
    assert env.obs_size == inner.obs_size + A + 2
    key = jax.random.PRNGKey(3)
    actions = [0, 1, 0, 2, 0, 0, 1, 2, 0, 1]
    k0, key = jax.random.split(key)
    obs, state = env.reset(k0)
    raw_obs, raw_state = inner.reset(k0)
    np.testing.assert_array_equal(np.asarray(obs), np.concatenate([raw_obs, np.zeros(A), [0.0], [0.0]]))
    t, ends = 0, 0
    for a in actions:
        k, key = jax.random.split(key)
        step = env.step(k, state, jnp.asarray(a))
        raw = inner.step(k, raw_state, jnp.asarray(a))
        t += 1
        extras = np.concatenate([np.eye(A)[a], [float(raw.reward)], [t / H]])
        np.testing.assert_allclose(np.asarray(step.final_obs), np.concatenate([raw.final_obs, extras]), rtol=1e-6)
        if bool(raw.done):
            ends += 1
            t = 0
            expected = np.concatenate([raw.obs, np.zeros(A), [0.0], [0.0]])
        else:
            expected = np.concatenate([raw.obs, extras])
        np.testing.assert_allclose(np.asarray(step.obs), expected, rtol=1e-6)
        assert bool(step.done) == bool(raw.done) and float(step.reward) == float(raw.reward)
        state, raw_state = step.state, raw.state
    assert ends >= 2  # the cases at an episode's end were reached


def test_extra_inputs_parts_and_options():
    inner = TMaze(length=2)
    assert ExtraInputs(inner, previous_action=False).obs_size == inner.obs_size + 2
    assert ExtraInputs(inner, previous_reward=False, time=False).obs_size == inner.obs_size + inner.num_actions
    with pytest.raises(ValueError, match="time must be True or False"):
        ExtraInputs(inner, time=1)
    parts = assemble(RLConfig(env="tmaze", extra_inputs=True))
    assert parts.env.obs_size == inner.obs_size + inner.num_actions + 2
    assert parts.agent.cell.input_size == parts.env.obs_size
    with pytest.raises(ValueError, match="extra_inputs needs a jitted environment"):
        assemble(RLConfig(env="gymnasium:CartPole-v1", extra_inputs=True))
