"""The online-RL algorithms ``rtrl rl --algorithm NAME`` selects (``ALGORITHMS``): each an agent whose ``stepped``
gives the update rule (``rtrl.rl.transforms``) what it needs, the loop (``rtrl.rl.loop``) the same for all.

* ``ac``: stream AC(lambda), ``rtrl.rl.agent.ActorCritic``.
* ``q``: stream Q(lambda) with Watkins' cuts, ``QAgent``: a head of A action values on the torso; the action is
  epsilon-greedy, epsilon falling linearly from 1 to ``epsilon`` over the first ``explore_steps`` steps; the trace
  takes ``g_t = grad Q(s_t, a_t)``, the TD target is ``r + gamma * max_a Q(s', a)``, and the trace is cut after an
  action that was not greedy (as after an episode's end)::

      delta_{t-1} = r_{t-1} + gamma * max_a Q(s_t, a) - Q(s_{t-1}, a_{t-1}),
      z_t = gamma * lambda * (1 - done_{t-1}) * (1 - explored_{t-1}) * z_{t-1} + g_t
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import glorot
from rtrl.rl.agent import ActorCritic, RecurrentAgent, Stepped


def epsilon(config, step: jax.Array) -> jax.Array:
    """The exploration rate at ``step``: from 1 down to ``config.epsilon`` linearly over ``config.explore_steps``
    steps, then ``config.epsilon``."""
    done = jnp.minimum(step / config.explore_steps, 1.0)
    return 1.0 + done * (config.epsilon - 1.0)


class QAgent(RecurrentAgent):
    """Stream Q(lambda)'s agent: a linear head of A action values on the torso, epsilon-greedy, Watkins' cuts."""

    def init(self, key: jax.Array, dtype=jnp.float32):
        k_torso, k_q = jax.random.split(key)
        N, A = self.cell.hidden_size, self.num_actions
        return {"torso": self.cell.init(k_torso, dtype),
                "q": {"W": glorot(k_q, (N, A), dtype), "b": jnp.zeros((A,), dtype)}}

    def forward(self, params, memory, x: jax.Array):
        """One environment's ``(Q(s, .), memory')``: the torso's online step on ``x``, then the head."""
        h, memory = self.learner.step(params["torso"], memory, x)
        return h @ params["q"]["W"] + params["q"]["b"], memory

    def stepped(self, params, memory, x: jax.Array, key: jax.Array, config, step: jax.Array) -> Stepped:
        """All E environments: one forward pass and one pullback each (the gradient of ``Q(s_t, a_t)``, what the
        traces take); ``config`` (an ``RLConfig``) gives ``epsilon`` and ``explore_steps``. ``entropy``: of the
        epsilon-greedy policy."""
        A = self.num_actions
        rate = epsilon(config, step)

        def one(m, xe, k):
            q, pullback, m = jax.vjp(lambda p: self.forward(p, m, xe), params, has_aux=True)
            greedy = jnp.argmax(q)
            k_explore, k_random = jax.random.split(k)
            action = jnp.where(jax.random.uniform(k_explore) < rate, jax.random.randint(k_random, (), 0, A), greedy)
            drive = pullback(jax.nn.one_hot(action, A, dtype=q.dtype))[0]
            return action, q[action], q.max(), drive, action != greedy, m

        action, value, target, drive, exploratory, memory = jax.vmap(one)(memory, x,
                                                                          jax.random.split(key, x.shape[0]))
        return Stepped(action, value, target, drive, None, exploratory, memory, greedy_entropy(rate, A, value))

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


ALGORITHMS = {"ac": ActorCritic, "q": QAgent}
