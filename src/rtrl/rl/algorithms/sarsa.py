"""SARSA(lambda) (``rtrl rl --algorithm sarsa``): ``SarsaAgent``, Q(lambda)'s pieces (``action_values``: a head of A
action values on the torso, epsilon-greedy with epsilon falling linearly from 1 to ``epsilon`` over
``explore_steps`` steps) learning on-policy: the TD target bootstraps from the value of the action actually taken
next, and no action cuts the traces (only an episode's end does)::

    delta_{t-1} = r_{t-1} + gamma * Q(s_t, a_t) - Q(s_{t-1}, a_{t-1}),
    z_t = gamma * lambda * (1 - done_{t-1}) * z_{t-1} + grad Q(s_t, a_t)

A truncated episode's target bootstraps from the epsilon-greedy expectation of ``Q(s_T, .)`` at its last
observation, ``(1 - eps) max_a Q(s_T, a) + eps mean_a Q(s_T, a)``, with the rate ``eps`` of the step that would have
acted on ``s_T`` (the loop's step after the one that ended the episode): the expected value of the action the
policy would have taken there, where no action was taken. The worked example of docs/rl.md, "Write an algorithm".
"""

from __future__ import annotations

import jax

from rtrl.rl.algorithm import Stepped, learn_on_policy, no_correction
from rtrl.rl.algorithms import action_values as av


@av.composed
class SarsaAgent:
    """SARSA(lambda): Q(lambda)'s pieces, its target the action taken, no Watkins cut, a truncation bootstrapped
    from the epsilon-greedy expectation; Q(lambda)'s options (``action_values.construct``)."""

    learn, correction = learn_on_policy, no_correction

    def stepped(self, params, memory, x: jax.Array, key: jax.Array, step: jax.Array) -> Stepped:
        """All E environments, epsilon-greedy, on-policy: the target ``Q(s_t, a_t)``, no action exploratory."""
        return av.epsilon_greedy(self, params, memory, x, key, step, on_policy=True)

    def bootstrap(self, params, memory, x: jax.Array, step: jax.Array) -> jax.Array:
        """One environment's ``(1 - eps) max_a Q(s_T, a) + eps mean_a Q(s_T, a)``, ``eps`` the rate at ``step + 1``."""
        values = av.forward(self, params, memory, x)[0]
        rate = av.epsilon(self, step + 1).astype(values.dtype)
        return (1 - rate) * values.max() + rate * values.mean()
