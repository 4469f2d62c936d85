"""The step-by-step comparison of a jitted POPGym port with popgym itself (tests/test_rl_envs_popgym_*.py).

``agree(task, inject, ...)`` drives popgym's Gymnasium environment ``popgym-<task>-v0`` and the port
``popgym:<task>`` with the same draws and the same (random) actions: popgym is reset with a seed, and ``inject``
reads what it drew (its shuffled deck, its board ...) into the port's state; then each step's action goes to both,
and the flattened observation (``gymnasium.spaces.flatten``), the reward (as float32), the end of the episode and
its kind must be identical. Where an episode ends, popgym is reset with the next seed and injected again. Draws
taken during a step (a bandit's payout, an observation's noise) go the other way: ``feed(env, gym, key)`` hands
the port's draw for the step's key to popgym before the step.
"""

from __future__ import annotations

import gymnasium
import jax
import numpy as np
import popgym  # noqa: F401  (registers popgym's environments)

from rtrl.rl.envs.popgym import popgym_env


def flat(space, obs) -> np.ndarray:
    return np.asarray(gymnasium.spaces.flatten(space, obs), np.float32)


def agree(task: str, inject, steps: int = 1000, seed: int = 0, feed=None, to_gym=lambda env, a: a,
          atol: float = 0.0) -> list[int]:
    """Drive both for ``steps`` steps (then to the end of the episode under way); return the episode lengths.
    ``inject(env, gym) -> (obs, state)``: the port's first observation and state from popgym's after its reset;
    ``to_gym(env, a)``: popgym's form of the port's action ``a``; ``atol``: the observations' tolerance (0: equal)."""
    env = popgym_env("popgym:" + task)
    gym = gymnasium.make(f"popgym-{task}-v0")
    space = gym.observation_space
    transition = jax.jit(env.transition)
    rng = np.random.default_rng(seed)
    keys = iter(jax.random.split(jax.random.key(seed), 100 * steps))
    lengths, length, episode, step = [], 0, 0, 0
    obs, _ = gym.reset(seed=seed)
    first, state = inject(env, gym.unwrapped)
    np.testing.assert_allclose(np.asarray(first), flat(space, obs), rtol=0, atol=atol)
    while step < steps or length:
        action = int(rng.integers(env.num_actions))
        key = next(keys)
        if feed is not None:
            feed(env, gym.unwrapped, key)
        obs, reward, terminated, truncated, _ = gym.step(to_gym(env, action))
        got, state, got_reward, done, got_truncated = transition(key, state, action)
        where = f"{task}, episode {episode}, step {length + 1}"
        np.testing.assert_allclose(np.asarray(got), flat(space, obs), rtol=0, atol=atol, err_msg=where)
        assert float(got_reward) == np.float32(reward), (where, float(got_reward), reward)
        assert (bool(done), bool(got_truncated)) == (terminated or truncated, truncated and not terminated), where
        step, length = step + 1, length + 1
        if done:
            lengths.append(length)
            length, episode = 0, episode + 1
            obs, _ = gym.reset(seed=seed + episode)
            first, state = inject(env, gym.unwrapped)
            np.testing.assert_allclose(np.asarray(first), flat(space, obs), rtol=0, atol=atol, err_msg=where)
    gym.close()
    return lengths
