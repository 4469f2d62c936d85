"""The uniform random policy's returns: the level an agent that learned nothing stays at.

``uniform_returns(env, seeds)`` plays ``UNIFORM_STEPS`` steps of ``UNIFORM_ENVS`` environments a seed, every action
drawn uniformly, every seed under one ``vmap``, and gives each seed's mean return over the episodes it ended. The
POPGym suite's ``uniform`` row (``rtrl results popgym``) is this rollout.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.rl.envs import make

UNIFORM_STEPS, UNIFORM_ENVS = 2_000, 64  # per seed: 128,000 steps, at least 600 episodes of every POPGym task


def uniform_returns(env, seeds: list[int], steps: int = UNIFORM_STEPS, envs: int = UNIFORM_ENVS) -> list[float]:
    """Each seed's mean return of the episodes a uniform random policy ends in ``steps`` steps of ``envs``
    environments of ``env`` (a jitted environment or its name; every seed under one ``vmap``): the level an agent
    that learned nothing stays at, and that learning should leave behind."""
    env = make(env) if isinstance(env, str) else env

    def play(seed):
        k_reset, key = jax.random.split(jax.random.PRNGKey(seed))
        state = jax.vmap(env.reset)(jax.random.split(k_reset, envs))[1]

        def one(carry, _):
            state, key, total, episodes = carry
            key, k_act, k_env = jax.random.split(key, 3)
            action = jax.random.randint(k_act, (envs,), 0, env.num_actions)
            step = jax.vmap(env.step)(jax.random.split(k_env, envs), state, action)
            return (step.state, key, total + jnp.where(step.done, step.state.last_return, 0.0).sum(),
                    episodes + step.done.sum(dtype=jnp.int32)), None

        zero = jnp.zeros((), jnp.float32)
        (_, _, total, episodes), _ = jax.lax.scan(one, (state, key, zero, jnp.zeros((), jnp.int32)), None, steps)
        return total, episodes

    totals, episodes = jax.jit(jax.vmap(play))(jnp.asarray(seeds, jnp.uint32))
    if int(episodes.min()) == 0:
        raise ValueError(f"steps must let every seed end an episode of {env.name} ({envs} environments), got {steps}")
    return [float(t) / int(n) for t, n in zip(totals, episodes, strict=True)]
