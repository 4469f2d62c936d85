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
    np.testing.assert_array_equal(np.asarray(obs), np.concatenate([raw_obs, np.zeros(A), [0.0], [-0.5]]))
    t, ends = 0, 0
    for a in actions:
        k, key = jax.random.split(key)
        step = env.step(k, state, jnp.asarray(a))
        raw = inner.step(k, raw_state, jnp.asarray(a))
        t += 1
        extras = np.concatenate([np.eye(A)[a], [float(raw.reward)], [t / H - 0.5]])
        np.testing.assert_allclose(np.asarray(step.final_obs), np.concatenate([raw.final_obs, extras]), rtol=1e-6)
        if bool(raw.done):
            ends += 1
            t = 0
            expected = np.concatenate([raw.obs, np.zeros(A), [0.0], [-0.5]])
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
    assert ExtraInputs.of(inner, ("time",)).obs_size == inner.obs_size + 1
    assert ExtraInputs.of(inner, "action,reward").obs_size == inner.obs_size + inner.num_actions + 1
    parts = assemble(RLConfig(env="tmaze", extra_inputs=True))
    assert parts.env.obs_size == inner.obs_size + inner.num_actions + 2
    assert parts.agent.torso.cell.input_size == parts.env.obs_size
    host = assemble(RLConfig(env="gymnasium:CartPole-v1", extra_inputs=True))
    assert host.env.obs_size == 4 + 2 + 2 and host.agent.torso.cell.input_size == 8
    box = assemble(RLConfig(env="gymnasium:Pendulum-v1", extra_inputs=True))
    assert box.env.obs_size == 3 + 1 + 2
    with pytest.raises(ValueError, match="extra_inputs gives the time over the episode's limit.*max_episode_steps"):
        assemble(RLConfig(env="gymnasium:Blackjack-v1", extra_inputs=True))


def test_extra_inputs_of_a_box_are_the_actions_the_environment_takes():
    """pendulum-p (a jitted Box, actions in R^1 tanh-squashed onto [-2, 2]): the previous action's entry is the
    squashed action, computed here by hand, then the reward and t / 200 - 1/2."""
    env = assemble(RLConfig(env="pendulum-p", extra_inputs=True)).env
    assert env.obs_size == 2 + 1 + 2
    obs, state = env.reset(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(np.asarray(obs[2:]), [0.0, 0.0, -0.5])
    for t, u in enumerate([0.3, -5.0, 1.2], start=1):
        step = env.step(jax.random.PRNGKey(t), state, jnp.asarray([u]))
        np.testing.assert_allclose(np.asarray(step.obs[2:]), [2 * np.tanh(u), float(step.reward), t / 200 - 0.5],
                                   rtol=1e-6)
        state = step.state


@pytest.mark.parametrize("env_id, actions", [
    ("CartPole-v1", [[1, 0], [0, 0], [1, 1], [0, 1], [1, 0]]),
    ("Pendulum-v1", [[[0.3], [-5.0]], [[1.2], [0.0]], [[-0.4], [2.5]], [[0.1], [-0.1]], [[3.0], [-1.0]]]),
])
def test_extra_inputs_on_the_host_against_a_numpy_oracle(env_id, actions):
    """The Gymnasium vector with ``extra_inputs``, two copies cut at 3 steps (two episode ends in 5 steps), against
    the same environments stepped by hand: each observation is the raw one, the previous action (CartPole's
    one-hot; Pendulum's squashed onto [-2, 2], by hand), the reward and t / 3 - 1/2; zeros and time 0 at a reset, and
    the ended episode's last observation with its own extras in ``final_obs``. [Mutations: time not reset where done,
    the final observation without its extras, the raw Box action in place of the squashed one -> fail]"""
    import gymnasium
    from gymnasium.vector import AutoresetMode

    from rtrl.rl.envs.gymnasium_env import GymnasiumEnv

    env = GymnasiumEnv(env_id, (("max_episode_steps", 3),), extra_inputs=True)
    vector = env.vector(2)
    by_hand = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="sync", max_episode_steps=3,
                                 vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    A = 2 if env_id == "CartPole-v1" else 1
    obs = vector.reset([4, 5])
    raw, _ = by_hand.reset(seed=[4, 5])
    np.testing.assert_allclose(obs, np.concatenate([raw, np.zeros((2, A + 1)), np.full((2, 1), -0.5)], axis=1),
                               rtol=1e-6)
    time, ends = np.zeros(2), 0
    for a in actions:
        a = np.asarray(a)
        taken = a if A == 2 else 2 * np.tanh(a)
        raw, reward, terminated, truncated, info = by_hand.step(taken if A == 1 else a)
        out = vector.step(a)
        time += 1
        action = np.eye(2)[a] if A == 2 else taken
        done = terminated | truncated
        for e in range(2):
            extras = np.concatenate([action[e], [reward[e], time[e] / 3 - 0.5]])
            last = info["final_obs"][e] if done[e] else raw[e]
            np.testing.assert_allclose(out.final_obs[e], np.concatenate([last, extras]), rtol=1e-5, atol=1e-6)
            fresh = np.concatenate([raw[e], np.zeros(A + 1), [-0.5]])
            expected = fresh if done[e] else np.concatenate([raw[e], extras])
            np.testing.assert_allclose(out.obs[e], expected, rtol=1e-5, atol=1e-6)
        ends += int(done.sum())
        time[done] = 0
    assert ends >= 2  # the cases at an episode's end were reached
    vector.close()


def test_parts_of_reads_every_spelling_and_refuses_the_rest():
    """Older run folders hold a switch (true: all three); names come in PARTS' order; anything else is refused."""
    from rtrl.rl.envs.extra_inputs import parts_of

    assert parts_of(True) == ("action", "reward", "time") and parts_of(False) == () and parts_of("none") == ()
    assert parts_of("time, action") == ("action", "time") and parts_of(["reward"]) == ("reward",)
    for bad in ("velocity", ("time", "time"), 1, None, [1]):
        with pytest.raises(ValueError, match="extra inputs"):
            parts_of(bad)
    assert RLConfig(extra_inputs="time").extra_inputs == ("time",)
    assert RLConfig.from_dict({**RLConfig().to_dict(), "extra_inputs": True}).extra_inputs == (
        "action", "reward", "time")
    with pytest.raises(ValueError, match="extra_inputs must be names from"):
        RLConfig(extra_inputs="speed")


def test_only_the_parts_chosen_are_appended_on_a_jitted_env():
    """TMaze (4 actions) with the time alone: [obs, t / limit - 1/2]; with action and reward: [obs, one-hot, r], at
    the first observation zeros (and the time -1/2) and at the next step the action taken and its reward."""
    import jax

    inner = TMaze(length=2)
    for parts, width in ((("time",), 1), (("action", "reward"), inner.num_actions + 1)):
        env = ExtraInputs.of(inner, parts)
        obs, state = env.reset(jax.random.PRNGKey(0))
        raw_obs, raw_state = inner.reset(jax.random.PRNGKey(0))
        first = [-0.5] if parts == ("time",) else np.zeros(width)
        np.testing.assert_array_equal(np.asarray(obs), np.concatenate([np.asarray(raw_obs), first]))
        step = env.step(jax.random.PRNGKey(1), state, 2)
        raw = inner.step(jax.random.PRNGKey(1), raw_state, 2)
        extras = ([1 / inner.max_steps - 0.5] if parts == ("time",)
                  else [*np.eye(inner.num_actions)[2], float(raw.reward)])
        assert not bool(raw.done)
        np.testing.assert_allclose(np.asarray(step.obs), np.concatenate([np.asarray(raw.obs), extras]), rtol=1e-6)
