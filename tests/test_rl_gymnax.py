"""The gymnax environments behind rtrl.rl (the ``rl`` extra, which ``make test`` installs)."""

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.rl import RLConfig, make, train


def test_memory_chain_length_is_an_option_and_the_episode_lasts_it():
    env = make("memory-chain", memory_length=6)
    assert (env.obs_size, env.num_actions, env.max_steps) == (3, 2, 7)
    obs, state = env.reset(jax.random.PRNGKey(0))
    context = float(obs[2])  # the bit to remember, shown at the first step only
    step = jax.jit(env.step)
    for t in range(7):
        obs, state, reward, done, truncated, _ = step(jax.random.PRNGKey(t), state, jnp.int32(context > 0))
        assert bool(done) == (t == 6) and not truncated  # the answer ends it: a termination
    assert float(reward) == 1.0 and float(state.last_return) == 1.0 and int(state.last_length) == 7


def test_cartpole_masked_shows_position_and_angle_only():
    full, masked = make("cartpole"), make("cartpole-masked")
    assert (full.obs_size, masked.obs_size, masked.max_steps) == (4, 2, 500)
    key = jax.random.PRNGKey(3)
    (obs_full, _), (obs, _) = full.reset(key), masked.reset(key)
    np.testing.assert_array_equal(obs, obs_full[jnp.array([0, 2])])
    _, reference_params = gymnax.make("CartPole-v1")
    assert masked.env.env.params == reference_params


@pytest.mark.parametrize("build, words", [
    (lambda: make("memory-chain", memory=3), "no option 'memory'"),
    (lambda: make("cartpole-masked", gravity_scale=2.0), "no option 'gravity_scale'"),
])
def test_an_option_the_environment_does_not_have(build, words):
    with pytest.raises(ValueError, match=words):
        build()


def test_agent_runs_on_masked_cartpole():
    state, records = train(RLConfig(env="cartpole-masked", hidden=8, envs=2, steps=40, record_every=20,
                                    method="snap1"))
    assert [r["step"] for r in records] == [20, 40] and all(r["episodes"] >= 0 for r in records)
    assert all(np.isfinite(a).all() for a in jax.tree.leaves(state.params))
