"""Stream Q(lambda) with Watkins' cuts (``rtrl rl --algorithm q``): ``QAgent``, a head of A action values on the torso
(linear, or behind a tanh layer of ``head_hidden`` units, ``"head"``, as the actor-critic's; ``action_values``); the
action is epsilon-greedy, epsilon falling linearly from 1 to ``epsilon`` over the first ``explore_steps`` steps; the
trace takes ``g_t = grad Q(s_t, a_t)``, the TD target is ``r + gamma * max_a Q(s', a)``, and the trace is cut after an
action that was not greedy (as after an episode's end)::

    delta_{t-1} = r_{t-1} + gamma * max_a Q(s_t, a) - Q(s_{t-1}, a_{t-1}),
    z_t = gamma * lambda * (1 - done_{t-1}) * (1 - explored_{t-1}) * z_{t-1} + g_t

A truncated episode's target bootstraps from ``max_a Q(s_T, a)`` of its last observation; a terminated one's from 0.
"""

from __future__ import annotations

import jax

from rtrl.rl.algorithm import Pending, Stepped, no_correction, td_error, update_arguments
from rtrl.rl.algorithms import action_values as av


def learn(agent, pending: Pending, stepped: Stepped, gamma: float, lam: float) -> dict:
    """Q(lambda)'s: the TD error from ``max_a Q(s_t, a)`` (``td_error``); the traces cut where an episode ended or
    the previous action was exploratory (Watkins' cut)."""
    done = pending.transition.done
    return update_arguments(stepped, td_error(pending, stepped.target, gamma), done | pending.exploratory, done)


def bootstrap(agent, params, memory, x: jax.Array, step: jax.Array) -> jax.Array:
    """A truncated episode's final observation's value: ``max_a Q(s_T, a)``."""
    return av.greedy_value(agent, params, memory, x)


def stepped(agent, params, memory, x: jax.Array, key: jax.Array, step: jax.Array) -> Stepped:
    """All E environments, epsilon-greedy, off-policy (``action_values.epsilon_greedy``)."""
    return av.epsilon_greedy(agent, params, memory, x, key, step)


@av.composed
class QAgent:
    """Stream Q(lambda): a head of A action values on the torso (linear, or behind a tanh layer of ``head_hidden``
    units), epsilon-greedy, Watkins' cuts; its options ``epsilon``, ``explore_steps`` and ``head_hidden``
    (``action_values.construct``)."""

    stepped, learn, bootstrap, correction = stepped, learn, bootstrap, no_correction
