"""Peng's Q(lambda) (``rtrl rl --algorithm peng``; Peng and Williams 1996): ``PengQAgent``, Q(lambda)'s pieces
(``action_values``: a head of A action values on the torso, epsilon-greedy with epsilon falling linearly from 1 to
``epsilon`` over ``explore_steps`` steps), learning the lambda-return that bootstraps from the greedy value at every
step and follows the action taken with weight lambda, whatever the action (no Watkins cut)::

    G_t = r_t + gamma * [(1 - lambda) * max_a Q(s_{t+1}, a) + lambda * G_{t+1}]

Its backward view (for fixed parameters equal to the forward view's sum, ``G_t - Q(s_t, a_t) = sum_k (gamma
lambda)^k delta_{t+k}``): the traces are Q(lambda)'s, cut only where an episode ended, and the TD error bootstraps
from the mixture of the greedy value and the value of the action taken next::

    delta_{t-1} = r_{t-1} + gamma * [(1 - lambda) max_a Q(s_t, a) + lambda Q(s_t, a_t)] - Q(s_{t-1}, a_{t-1}),
    z_t = gamma * lambda * (1 - done_{t-1}) * z_{t-1} + grad Q(s_t, a_t)

At ``lambda = 0`` it is one-step Q-learning, at ``lambda = 1`` SARSA(1)'s target: between the two, an exploratory
action shortens the return softly where Watkins' Q(lambda) cuts it. A truncated episode bootstraps from
``max_a Q(s_T, a)`` of its last observation (the return's own bootstrap there); a terminated one from 0.
"""

from __future__ import annotations

from rtrl.rl.algorithm import Pending, Stepped, no_correction, td_error, update_arguments
from rtrl.rl.algorithms import action_values as av
from rtrl.rl.algorithms import q


@av.composed
class PengQAgent:
    """Peng's Q(lambda): Q(lambda)'s pieces and options (``action_values.construct``), its TD target the greedy
    value mixed with the value of the action taken (weight lambda), no Watkins cut."""

    # Q(lambda)'s step (epsilon-greedy; target max_a Q(s_t, a), value Q(s_t, a_t)) and truncation value max_a Q(s_T, a)
    stepped, bootstrap, correction = q.stepped, q.bootstrap, no_correction

    def learn(self, pending: Pending, stepped: Stepped, gamma: float, lam: float) -> dict:
        """The TD error from ``(1 - lam) max_a Q(s_t, a) + lam Q(s_t, a_t)``; the traces cut where an episode ended,
        never after an exploratory action."""
        done = pending.transition.done
        target = (1 - lam) * stepped.target + lam * stepped.value
        return update_arguments(stepped, td_error(pending, target, gamma), done, done)
