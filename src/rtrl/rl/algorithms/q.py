"""Stream Q(lambda) with Watkins' cuts (``rtrl rl --algorithm q``): ``QAgent``, a head of A action values on the torso
(linear, or behind a tanh layer of ``head_hidden`` units, ``"head"``, as the actor-critic's); the action is
epsilon-greedy, epsilon falling linearly from 1 to ``epsilon`` over the first ``explore_steps`` steps; the trace takes
``g_t = grad Q(s_t, a_t)``, the TD target is ``r + gamma * max_a Q(s', a)``, and the trace is cut after an action that
was not greedy (as after an episode's end)::

    delta_{t-1} = r_{t-1} + gamma * max_a Q(s_t, a) - Q(s_{t-1}, a_{t-1}),
    z_t = gamma * lambda * (1 - done_{t-1}) * (1 - explored_{t-1}) * z_{t-1} + g_t

A truncated episode's target bootstraps from ``max_a Q(s_T, a)`` of its last observation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import glorot
from rtrl.rl.agent import RecurrentAgent, Stepped, head_params, through_head


def epsilon(config, step: jax.Array) -> jax.Array:
    """The exploration rate at ``step``: from 1 down to ``config.epsilon`` linearly over ``config.explore_steps``
    steps, then ``config.epsilon``."""
    done = jnp.minimum(step / config.explore_steps, 1.0)
    return 1.0 + done * (config.epsilon - 1.0)


class QAgent(RecurrentAgent):
    """Stream Q(lambda)'s agent: a head of A action values on the torso (linear, or behind a tanh layer of
    ``head_hidden`` units), epsilon-greedy, Watkins' cuts."""

    heads_hidden = True
    options = ("epsilon", "explore_steps", "head_hidden")
    checked = 1  # the fidelity check's gradient: Q(s_t, a_t)'s (recorded as ``cos_value``)
    epsilon: float | None = None  # the final exploration rate, what ``act`` explores with (``configure``)

    def init(self, key: jax.Array, dtype=jnp.float32):
        k_torso, k_q = jax.random.split(key)
        N, A = self.cell.hidden_size, self.num_actions
        return {"torso": self.cell.init(k_torso, dtype),
                "q": {"W": glorot(k_q, (self.features, A), dtype), "b": jnp.zeros((A,), dtype)},
                **head_params(key, N, self.head_hidden, dtype)}

    @property
    def features(self) -> int:
        """The width of what the head of action values reads, ``phi``: the tanh layer's, else the torso's."""
        return self.head_hidden or self.cell.hidden_size

    def forward(self, params, memory, x: jax.Array):
        """One environment's ``(Q(s, .), (memory', phi))``: the torso's online step on ``x``, its output through the
        tanh layer where there is one (``phi``), then the head."""
        h, memory = self.learner.step(params["torso"], memory, x)
        phi = through_head(params, h)
        return phi @ params["q"]["W"] + params["q"]["b"], (memory, phi)

    def configure(self, config) -> QAgent:
        """The final exploration rate ``config.epsilon``, what ``act`` explores with."""
        self.epsilon = config.epsilon
        return self

    def act(self, params, memory, x: jax.Array, key: jax.Array, greedy: bool = False):
        """One environment's ``(action, memory')`` (``RecurrentAgent.act``): the action of highest value, or without
        ``greedy`` epsilon-greedy with the final rate (``configure``)."""
        q, (memory, _) = self.forward(params, memory, x)
        best = jnp.argmax(q)
        if greedy:
            return best, memory
        if self.epsilon is None:
            raise ValueError("epsilon is not set: configure(config) first, or act with greedy=True")
        k_explore, k_random = jax.random.split(key)
        explore = jax.random.uniform(k_explore) < self.epsilon
        return jnp.where(explore, jax.random.randint(k_random, (), 0, self.num_actions), best), memory

    def stepped(self, params, memory, x: jax.Array, key: jax.Array, config, step: jax.Array) -> Stepped:
        """All E environments: one forward pass and one pullback each (the gradient of ``Q(s_t, a_t)``, what the
        traces take); ``config`` (an ``RLConfig``) gives ``epsilon`` and ``explore_steps``. ``entropy``: of the
        epsilon-greedy policy."""
        return self.epsilon_greedy(params, memory, x, key, config, step, targets=False)

    def epsilon_greedy(self, params, memory, x: jax.Array, key: jax.Array, config, step: jax.Array,
                       targets: bool) -> Stepped:
        """``stepped``; with ``targets`` a second pullback per environment too, and ``extra`` holds ``action``,
        ``features`` (what the head reads, ``phi_t``, (E, ``features``)) and ``target_grads`` (``grad max_a Q(s_t, a)``
        per environment): what QRC's correction reads."""
        A = self.num_actions
        rate = epsilon(config, step)

        def one(m, xe, k):
            q, pullback, (m, phi) = jax.vjp(lambda p: self.forward(p, m, xe), params, has_aux=True)
            greedy = jnp.argmax(q)
            k_explore, k_random = jax.random.split(k)
            action = jnp.where(jax.random.uniform(k_explore) < rate, jax.random.randint(k_random, (), 0, A), greedy)
            drive = pullback(jax.nn.one_hot(action, A, dtype=q.dtype))[0]
            target = pullback(jax.nn.one_hot(greedy, A, dtype=q.dtype))[0] if targets else None
            return action, q[action], q.max(), drive, action != greedy, m, phi, target

        action, value, target, drive, exploratory, memory, phi, target_grads = jax.vmap(one)(
            memory, x, jax.random.split(key, x.shape[0]))
        extra = {"action": action, "features": phi, "target_grads": target_grads} if targets else None
        return Stepped(action, value, target, drive, None, exploratory, memory, greedy_entropy(rate, A, value),
                       extra)

    def objective_grads(self, params, memory, x: jax.Array, action: jax.Array):
        """One environment's ``(Q(s_t, a_t), grads, memory', None)``: ``grads`` the gradient of ``Q(s_t, a_t)``
        (leading axis 1) as the traces take it, what the fidelity check holds to ``bptt_grads``."""
        q, pullback, (memory, _) = jax.vjp(lambda p: self.forward(p, memory, x), params, has_aux=True)
        grad = pullback(jax.nn.one_hot(action, self.num_actions, dtype=q.dtype))[0]
        return q[action], jax.tree.map(lambda a: a[None], grad), memory, None

    def bptt_grads(self, params, xs: jax.Array, start: jax.Array, action: jax.Array):
        """One environment's gradient of ``Q(s_t, a_t)`` by BPTT (leading axis 1): ``xs`` (H, D) the torso's inputs,
        the last one the current step's, the episode begun at ``xs[start]``."""

        def value(p):
            return (through_head(p, self.unrolled(p["torso"], xs, start)) @ p["q"]["W"] + p["q"]["b"])[action][None]

        return jax.jacrev(value)(params)

    def value(self, params, memory, x: jax.Array) -> jax.Array:
        """One environment's ``max_a Q(s, a)`` after the torso's step on ``x`` from ``memory`` (nothing kept): what a
        truncated episode's TD target still owes."""
        return self.forward(params, memory, x)[0].max()


def greedy_entropy(rate: jax.Array, actions: int, like: jax.Array) -> jax.Array:
    """(E,) like ``like``: the entropy of the epsilon-greedy policy (``rate`` spread evenly, the rest on one)."""
    low = rate / actions
    high = 1 - rate + low
    h = -(actions - 1) * low * jnp.log(jnp.maximum(low, 1e-30)) - high * jnp.log(high)
    return jnp.broadcast_to(h, like.shape).astype(like.dtype)

