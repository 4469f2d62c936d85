"""The returns of fixed policies: the levels an agent reaches without learning.

``fixed_returns(env, seeds, policy)`` plays ``FIXED_STEPS`` steps of ``FIXED_ENVS`` environments a seed, every seed
under one ``vmap``, and gives each seed's mean return over the episodes it ended. The policies (``POLICIES``):

* ``uniform``: every action drawn uniformly: what an agent that learned nothing stays at;
* ``sweep``: the previous action plus one (modulo the actions), from action 0 at each episode's start: a policy
  without memory that reads only the previous action, an input Farr et al.'s POPGym agents get. On a grid task
  (Battleship, MineSweeper) it fires at every cell once, in order, so it never fires at a cell twice: the level a
  memoryless agent with that input could reach there by a rule no memory is needed for.

The POPGym suite's ``uniform`` and ``sweep`` rows (``rtrl results popgym``) are these rollouts.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.rl.envs import make

FIXED_STEPS, FIXED_ENVS = 2_000, 64  # per seed: 128,000 steps, at least 600 episodes of every POPGym task


def uniform(key: jax.Array, previous: jax.Array, actions: int) -> jax.Array:
    return jax.random.randint(key, previous.shape, 0, actions)


def sweep(key: jax.Array, previous: jax.Array, actions: int) -> jax.Array:
    return (previous + 1) % actions


# name -> (key, previous actions (E,), -1 at an episode's start; the number of actions) -> actions (E,)
POLICIES = {"uniform": uniform, "sweep": sweep}


def fixed_returns(env, seeds: list[int], policy: str = "uniform", steps: int = FIXED_STEPS,
                  envs: int = FIXED_ENVS) -> list[float]:
    """Each seed's mean return of the episodes the fixed ``policy`` (``POLICIES``) ends in ``steps`` steps of
    ``envs`` environments of ``env`` (a jitted environment or its name; every seed under one ``vmap``)."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {list(POLICIES)}, got {policy!r}")
    env, act = make(env) if isinstance(env, str) else env, POLICIES[policy]

    def play(seed):
        k_reset, key = jax.random.split(jax.random.PRNGKey(seed))
        state = jax.vmap(env.reset)(jax.random.split(k_reset, envs))[1]

        def one(carry, _):
            state, previous, key, total, episodes = carry
            key, k_act, k_env = jax.random.split(key, 3)
            action = act(k_act, previous, env.num_actions)
            step = jax.vmap(env.step)(jax.random.split(k_env, envs), state, action)
            return (step.state, jnp.where(step.done, -1, action).astype(jnp.int32), key,
                    total + jnp.where(step.done, step.state.last_return, 0.0).sum(),
                    episodes + step.done.sum(dtype=jnp.int32)), None

        start = (state, jnp.full((envs,), -1, jnp.int32), key, jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32))
        (*_, total, episodes), _ = jax.lax.scan(one, start, None, steps)
        return total, episodes

    totals, episodes = jax.jit(jax.vmap(play))(jnp.asarray(seeds, jnp.uint32))
    if int(episodes.min()) == 0:
        raise ValueError(f"steps must let every seed end an episode of {env.name} ({envs} environments), got {steps}")
    return [float(t) / int(n) for t, n in zip(totals, episodes, strict=True)]
