"""What the action-value algorithms share (``q``, ``qrc``, ``sarsa``; each composes these plain functions, none
subclasses another): a head of A action values on the torso (linear, or behind a tanh layer of ``head_hidden`` units,
``"head"``, as the actor-critic's), ``Q(s, .) = phi @ W + b`` on what the head reads, ``phi``; the action
epsilon-greedy, epsilon falling linearly from 1 to ``epsilon`` over the first ``explore_steps`` steps; the trace
takes ``g_t = grad Q(s_t, a_t)``; the fidelity check compares that gradient with BPTT's.

Each function takes the algorithm first (``agent``: its ``torso``, ``num_actions``, ``head_hidden``, ``epsilon``,
``explore_steps``), so that an algorithm's class names them as its methods; ``composed`` names, on a class, those it
does not write itself (Q(lambda)'s, SARSA(lambda)'s: each writes its ``stepped``, ``learn``, ``bootstrap`` and
``correction``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Cell, glorot
from rtrl.methods import Method
from rtrl.rl.agent import Torso, check_heads, head_params, through_head
from rtrl.rl.algorithm import Stepped

OPTIONS = ("epsilon", "explore_steps", "head_hidden")  # the ``RLConfig`` options of every action-value algorithm


def construct(agent, cell: Cell, num_actions: int, method: str | Method = "rtrl", truncation: int = 8, *,
              head_hidden: int = 0, epsilon: float = 0.01, explore_steps: int = 10_000) -> None:
    """An action-value algorithm's constructor: its torso (``cell`` under ``method``), ``num_actions`` and
    ``head_hidden`` checked, ``epsilon`` (the exploration rate reached after ``explore_steps`` steps, from 1; what
    ``act`` explores with) and ``explore_steps``."""
    agent.torso = Torso(cell, method, truncation)
    agent.num_actions, agent.head_hidden = check_heads(num_actions, head_hidden)
    agent.epsilon, agent.explore_steps = epsilon, explore_steps


def epsilon(options, step: jax.Array) -> jax.Array:
    """The exploration rate at ``step``: from 1 down to ``options.epsilon`` linearly over ``options.explore_steps``
    steps, then ``options.epsilon`` (``options``: an action-value algorithm, or an ``RLConfig``)."""
    done = jnp.minimum(step / options.explore_steps, 1.0)
    return 1.0 + done * (options.epsilon - 1.0)


def features(agent) -> int:
    """The width of what the head of action values reads, ``phi``: the tanh layer's, else the torso's."""
    return agent.head_hidden or agent.torso.cell.hidden_size


def init(agent, key: jax.Array, dtype=jnp.float32):
    """The parameters: the torso's, ``"q"`` (``features`` x A) and the tanh layer's where there is one."""
    k_torso, k_q = jax.random.split(key)
    N, A = agent.torso.cell.hidden_size, agent.num_actions
    return {"torso": agent.torso.cell.init(k_torso, dtype),
            "q": {"W": glorot(k_q, (features(agent), A), dtype), "b": jnp.zeros((A,), dtype)},
            **head_params(key, N, agent.head_hidden, dtype)}


def forward(agent, params, memory, x: jax.Array):
    """One environment's ``(Q(s, .), (memory', phi))``: the torso's online step on ``x``, its output through the
    tanh layer where there is one (``phi``), then the head."""
    h, memory = agent.torso.learner.step(params["torso"], memory, x)
    phi = through_head(params, h)
    return phi @ params["q"]["W"] + params["q"]["b"], (memory, phi)


def act(agent, params, memory, x: jax.Array, key: jax.Array, greedy: bool = False):
    """One environment's ``(action, memory')``, no gradient: the action of highest value, or without ``greedy``
    epsilon-greedy with the final rate ``agent.epsilon``."""
    q, (memory, _) = forward(agent, params, memory, x)
    best = jnp.argmax(q)
    if greedy:
        return best, memory
    k_explore, k_random = jax.random.split(key)
    explore = jax.random.uniform(k_explore) < agent.epsilon
    return jnp.where(explore, jax.random.randint(k_random, (), 0, agent.num_actions), best), memory


def epsilon_greedy(agent, params, memory, x: jax.Array, key: jax.Array, step: jax.Array, targets: bool = False,
                   on_policy: bool = False) -> Stepped:
    """All E environments: one forward pass and one pullback each (the gradient of ``Q(s_t, a_t)``, what the traces
    take), the action epsilon-greedy at the rate of ``step``; ``entropy`` of the epsilon-greedy policy. The TD
    target bootstraps from ``max_a Q(s_t, a)`` and a non-greedy action is exploratory (off-policy: Q(lambda)), or
    with ``on_policy`` from ``Q(s_t, a_t)``, the value of the action taken, and no action is exploratory
    (SARSA(lambda)). With ``targets`` a second pullback per environment too, and ``extra`` holds ``action``,
    ``features`` (what the head reads, ``phi_t``, (E, ``features``)) and ``target_grads`` (``grad max_a Q(s_t, a)``
    per environment): what QRC's correction reads."""
    A = agent.num_actions
    rate = epsilon(agent, step)

    def one(m, xe, k):
        q, pullback, (m, phi) = jax.vjp(lambda p: forward(agent, p, m, xe), params, has_aux=True)
        greedy = jnp.argmax(q)
        k_explore, k_random = jax.random.split(k)
        action = jnp.where(jax.random.uniform(k_explore) < rate, jax.random.randint(k_random, (), 0, A), greedy)
        drive = pullback(jax.nn.one_hot(action, A, dtype=q.dtype))[0]
        target = pullback(jax.nn.one_hot(greedy, A, dtype=q.dtype))[0] if targets else None
        if on_policy:
            return action, q[action], q[action], drive, jnp.zeros((), bool), m, phi, target
        return action, q[action], q.max(), drive, action != greedy, m, phi, target

    action, value, target, drive, exploratory, memory, phi, target_grads = jax.vmap(one)(
        memory, x, jax.random.split(key, x.shape[0]))
    extra = {"action": action, "features": phi, "target_grads": target_grads} if targets else None
    return Stepped(action, value, target, drive, None, exploratory, memory, greedy_entropy(rate, A, value), extra)


def greedy_value(agent, params, memory, x: jax.Array) -> jax.Array:
    """One environment's ``max_a Q(s, a)`` after the torso's step on ``x`` from ``memory`` (nothing kept)."""
    return forward(agent, params, memory, x)[0].max()


def objective_grads(agent, params, memory, x: jax.Array, action: jax.Array):
    """One environment's ``(Q(s_t, a_t), grads, memory', None)``: ``grads`` the gradient of ``Q(s_t, a_t)``
    (leading axis 1) as the traces take it, what the fidelity check holds to ``bptt_grads``."""
    q, pullback, (memory, _) = jax.vjp(lambda p: forward(agent, p, memory, x), params, has_aux=True)
    grad = pullback(jax.nn.one_hot(action, agent.num_actions, dtype=q.dtype))[0]
    return q[action], jax.tree.map(lambda a: a[None], grad), memory, None


def bptt_grads(agent, params, xs: jax.Array, start: jax.Array, action: jax.Array):
    """One environment's gradient of ``Q(s_t, a_t)`` by BPTT (leading axis 1): ``xs`` (H, D) the torso's inputs,
    the last one the current step's, the episode begun at ``xs[start]``."""

    def value(p):
        return (through_head(p, agent.torso.unrolled(p["torso"], xs, start)) @ p["q"]["W"] + p["q"]["b"])[action][None]

    return jax.jacrev(value)(params)


def composed(cls: type) -> type:
    """``cls`` with the members of an action-value algorithm that it does not write itself: ``options``
    (``OPTIONS``), ``checked`` (1: the gradient of ``Q(s_t, a_t)``), the constructor (``construct``), ``init``,
    ``forward``, ``act``, ``objective_grads``, ``bptt_grads`` and ``features``. Named on the class, not inherited."""
    shared = {"options": OPTIONS, "checked": 1, "__init__": construct, "init": init, "forward": forward, "act": act,
              "objective_grads": objective_grads, "bptt_grads": bptt_grads, "features": property(features)}
    for name, member in shared.items():
        if name not in vars(cls):
            setattr(cls, name, member)
    return cls


def greedy_entropy(rate: jax.Array, actions: int, like: jax.Array) -> jax.Array:
    """(E,) like ``like``: the entropy of the epsilon-greedy policy (``rate`` spread evenly, the rest on one)."""
    low = rate / actions
    high = 1 - rate + low
    h = -(actions - 1) * low * jnp.log(jnp.maximum(low, 1e-30)) - high * jnp.log(high)
    return jnp.broadcast_to(h, like.shape).astype(like.dtype)
