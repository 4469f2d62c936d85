"""SARSA(lambda) (``rtrl rl --algorithm sarsa``): ``SarsaAgent``, Q(lambda)'s agent (a head of A action values on
the torso, epsilon-greedy with epsilon falling linearly from 1 to ``epsilon`` over ``explore_steps`` steps) learning
on-policy: the TD target bootstraps from the value of the action actually taken next, and no action cuts the traces
(only an episode's end does)::

    delta_{t-1} = r_{t-1} + gamma * Q(s_t, a_t) - Q(s_{t-1}, a_{t-1}),
    z_t = gamma * lambda * (1 - done_{t-1}) * z_{t-1} + grad Q(s_t, a_t)

A truncated episode's target bootstraps from the epsilon-greedy expectation of ``Q(s_T, .)`` at its last
observation, ``(1 - eps) max_a Q(s_T, a) + eps mean_a Q(s_T, a)``, with the rate ``eps`` of the step that would have
acted on ``s_T`` (the loop's step after the one that ended the episode): the expected value of the action the
policy would have taken there, where no action was taken. The worked example of docs/rl.md, "Write an algorithm".
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.rl.agent import Stepped
from rtrl.rl.algorithms.q import QAgent, epsilon


class SarsaAgent(QAgent):
    """SARSA(lambda)'s agent: Q(lambda)'s, its target the action taken (``stepped``), no Watkins cut, a truncation
    bootstrapped from the epsilon-greedy expectation (``bootstrap``)."""

    def stepped(self, params, memory, x: jax.Array, key: jax.Array, config, step: jax.Array) -> Stepped:
        """``QAgent.stepped`` with the previous step's target ``Q(s_t, a_t)``, the value of the action taken, and no
        action exploratory (no cut)."""
        stepped = super().stepped(params, memory, x, key, config, step)
        return stepped._replace(target=stepped.value, exploratory=jnp.zeros_like(stepped.exploratory))

    def bootstrap(self, params, memory, x: jax.Array, config, step: jax.Array) -> jax.Array:
        """One environment's ``(1 - eps) max_a Q(s_T, a) + eps mean_a Q(s_T, a)``, ``eps`` the rate at ``step + 1``."""
        q = self.forward(params, memory, x)[0]
        rate = epsilon(config, step + 1).astype(q.dtype)
        return (1 - rate) * q.max() + rate * q.mean()
