"""The Gaussian actor-critic: stream AC(lambda) (``rtrl.rl.algorithms.ac``) for a Box action space of A dimensions,
what ``--algorithm ac`` runs where the environment's actions are floats (``GaussianActorCritic``).

The policy is a diagonal Gaussian over ``R^A``::

    u ~ N(mean(h_t), diag(std^2)),     mean = the policy head on the torso's output (through the shared tanh layer
                                       where ``head_hidden``),   std = exp(log_std)

with ``log_std`` (A,) a learnt parameter of its own, not a function of the state. Why state-independent: its
gradient never passes through the torso, so the standard deviation cannot shrink in the states one noisy streaming
update happens to visit (an exploration collapse that the value's and the mean's errors would drive), and the
policy's entropy and its gradient are exact in closed form, with no pass through the network; it is the choice of
the on-policy continuous agents this one is measured beside (PPO's, stream AC's). ``log_std`` starts at
``log(init_std)`` (``--init-std``, default 1) and is not clipped (a clip would freeze its gradient at the edge).
With ``state_std`` (``--state-std``; Farr et al.'s MuJoCo agents' ``state_dependent_std``) ``log_std`` is a head on
the torso instead, A more columns of the policy head (``[mean, log_std] = policy(h)``, their weights starting at 0
and their biases at ``log(init_std)``, so the policy at the start is the same), and the entropy's gradient passes
through the head and the torso as the log-probability's does; ``std_map`` softplus (``--std-map``) reads those
columns as ``std = softplus(column)`` instead (Farr et al.'s ``Gaussian(state_dependent_std=True)``), their biases
at ``softplus^-1(init_std)``. On hopper-p ``state_std`` did worse than the vector in four of six seeds (mean 1411
against 1621 over seeds 0-4), its spread shrinking to about 0.5, and on walker2d-p in three of five (mean 887
against 961; docs/rl-results.md). ``head_init`` sparse (``--head-init``): the heads' weights sparse at 0.9 (the
spread columns' too, so the spread at the start varies with the state about ``init_std``), as Farr et al.'s.

The environment maps ``u`` onto the space's bounds (``rtrl.rl.envs.continuous``: tanh-squashed where both bounds
are finite, clipped to one finite bound, as it is where none is): the map is part of the environment, so the
log-probability the update differentiates is the Gaussian's, exactly. The density of the squashed action
(``squashed_log_prob``) has the change-of-variables term ``- sum log((high - low) / 2 (1 - tanh(u)^2))`` besides,
a function of ``u`` alone: its gradient w.r.t. the parameters is the Gaussian's. The entropy term is the Gaussian's
(of ``u``, before the map)::

    log pi(u) = - sum_i [ (u_i - mean_i)^2 / (2 std_i^2) + log std_i ] - A/2 log(2 pi)
    H         =   sum_i log std_i + A/2 log(2 pi e)

(the squashed policy's entropy has no closed form; it is the Gaussian's plus the expected change-of-variables
term, which only penalises a mean far outside the squash's linear range). Its gradient is 1 for each ``log_std``,
0 elsewhere.

Everything else is the actor-critic's (its module's shared functions: ``stepped``, ``bootstrap``, ``value``): the
traces take ``value_coef * grad v_t + grad log pi(u_t)`` per environment, the TD error and the update rule
(``adam``, ``sgd``, ``obgd``, ``adaptive_obgd``, ``intentional``) are the same, and the fidelity check compares
``grad v_t`` and ``grad log pi(u_t)`` with BPTT's. Parameters: the actor-critic's (``"policy"`` the mean's head,
(M or N, A)) and ``"log_std"`` (A,); with ``state_std`` the policy head (M or N, 2A) and no ``"log_std"``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from rtrl.cells.base import Cell
from rtrl.cells.encoder import sparse_init
from rtrl.methods import Method
from rtrl.rl.agent import SPARSITY, encoded, heads, policy_head, split_drive
from rtrl.rl.algorithm import learn_on_policy, no_correction
from rtrl.rl.algorithms import ac


def gaussian_objectives(mean: jax.Array, log_std: jax.Array, u: jax.Array) -> jax.Array:
    """``[log pi(u), entropy]`` of the diagonal Gaussian ``N(mean, diag(exp(log_std)^2))`` (all (A,))."""
    A = mean.shape[-1]
    z = (u - mean) * jnp.exp(-log_std)
    logp = -0.5 * jnp.sum(z ** 2) - jnp.sum(log_std) - 0.5 * A * math.log(2 * math.pi)
    return jnp.stack([logp, jnp.sum(log_std) + 0.5 * A * math.log(2 * math.pi * math.e)])


def squashed_log_prob(mean: jax.Array, log_std: jax.Array, action: jax.Array, low, high) -> jax.Array:
    """The log-density of the action ``low + (high - low) (tanh(u) + 1) / 2`` at ``action`` (inside the open Box
    ``(low, high)``, every bound finite), ``u`` drawn from the Gaussian: the Gaussian's at ``u = atanh(y)``,
    ``y = 2 (action - low) / (high - low) - 1``, less ``sum log((high - low) / 2 (1 - y^2))``."""
    low, high = jnp.asarray(low, mean.dtype), jnp.asarray(high, mean.dtype)
    y = 2 * (action - low) / (high - low) - 1
    return gaussian_objectives(mean, log_std, jnp.arctanh(y))[0] - jnp.sum(jnp.log((high - low) / 2)
                                                                          + jnp.log1p(-y ** 2))


# std_map: the map from the policy head's spread columns (``state_std``) to the standard deviation
STD_MAPS = {"exp": "exp of the column (a log standard deviation)",
            "softplus": "softplus of the column (Farr et al.'s state_dependent_std)"}


class GaussianActorCritic:
    """Stream AC(lambda) with a Gaussian policy over ``R^A`` (the module's docstring): ``(cell, num_actions,
    method="rtrl", truncation=8, **options)``, ``num_actions`` the Box's dimensions; the actor-critic's options and
    ``init_std`` (the policy's standard deviation at the start) and ``state_std`` (``log_std`` a head on the torso)."""

    options = (*ac.ActorCritic.options, "init_std", "state_std", "std_map")
    checked = 2  # the fidelity check's gradients: v_t's and log pi(u_t)'s

    def __init__(self, cell: Cell, num_actions: int, method: str | Method = "rtrl", truncation: int = 8, *,
                 head_hidden: int = 0, entropy: float = 0.01, value_coef: float = 1.0, split_torso: bool = False,
                 init_std: float = 1.0, state_std: bool = False, split_critic: bool = False,
                 entropy_sign: str = "positive", encoder_blocks: int = 0, encoder_width: int = 128,
                 observations: int | None = None, std_map: str = "exp", head_init: str = "glorot",
                 critic_network: bool = False, td_refresh: bool = False):
        """``std_map`` (with ``state_std``): how the head's A columns become the standard deviation, ``exp`` (of a
        log) or ``softplus`` (Farr et al.'s ``Gaussian(state_dependent_std=True)``: ``softplus(head)``), the bias
        started where it gives ``init_std`` either way."""
        if std_map not in STD_MAPS:
            raise ValueError(f"std_map must be one of {list(STD_MAPS)}, got {std_map!r}")
        if std_map != "exp" and not state_std:
            raise ValueError(f"std_map {std_map!r} maps the policy head's spread columns, which only state_std "
                             f"gives (without it the spread is one learnt log_std vector)")
        self.std_map = std_map
        # the categorical actor-critic's parts (torso, heads, options) with the Gaussian's own: composed, not inherited
        self.categorical = ac.ActorCritic(cell, num_actions, method, truncation, head_hidden=head_hidden,
                                          entropy=entropy, value_coef=value_coef, split_torso=split_torso,
                                          split_critic=split_critic, entropy_sign=entropy_sign,
                                          encoder_blocks=encoder_blocks, encoder_width=encoder_width,
                                          observations=observations, head_init=head_init,
                                          critic_network=critic_network, td_refresh=td_refresh)
        self.torso, self.num_actions, self.head_hidden = self.categorical.torso, num_actions, head_hidden
        self.entropy, self.value_coef, self.split_critic = entropy, value_coef, split_critic
        self.entropy_sign, self.td_refresh = entropy_sign, self.categorical.td_refresh
        self.split, self.init_std, self.state_std = self.categorical.split, init_std, state_std
        self.parts = self.categorical.parts

    stepped, learn, value, bootstrap, correction, reaches = (ac.stepped, learn_on_policy, ac.value, ac.bootstrap,
                                                             no_correction, ac.reaches)

    def init(self, key: jax.Array, dtype=jnp.float32):
        """The actor-critic's parameters and ``"log_std"`` (A,) at ``log(init_std)``; with ``state_std`` the policy
        head's A more columns instead, their weights 0 and biases ``log(init_std)`` (the same policy at the start)."""
        params = self.categorical.init(key, dtype)
        log_std = jnp.full((self.num_actions,), math.log(self.init_std), dtype)
        if not self.state_std:
            return {**params, "log_std": log_std}
        W, b = params["policy"]["W"], params["policy"]["b"]
        start = log_std if self.std_map == "exp" else jnp.full_like(log_std, math.log(math.expm1(self.init_std)))
        spread = (sparse_init(jax.random.fold_in(key, 32), W.shape, SPARSITY, dtype)
                  if self.categorical.head_init == "sparse" else jnp.zeros_like(W))
        return {**params, "policy": {"W": jnp.concatenate([W, spread], axis=1),
                                     "b": jnp.concatenate([b, start])}}

    def distribution(self, params, h: jax.Array):
        """``((mean, log_std), value)`` of one hidden state ``h``: the heads, and the policy's ``log_std``."""
        out, value = heads(params, h, self.split)
        return self.gaussian(params, out), value

    def gaussian(self, params, out: jax.Array):
        """``(mean, log_std)`` from the policy head's output ``out``: with ``state_std`` its spread columns mapped
        (``std_map``), else the learnt ``log_std``."""
        if self.state_std:
            spread = out[..., self.num_actions:]
            log_std = spread if self.std_map == "exp" else jnp.log(jax.nn.softplus(spread))
            return out[..., :self.num_actions], log_std
        return out, jnp.broadcast_to(params["log_std"], out.shape)

    def forward(self, params, memory, x: jax.Array):
        """One environment's ``(((mean, log_std), value), memory')``: the torso's online step on ``x``, the heads."""
        h, memory = self.torso.learner.step(params["torso"], memory, encoded(params, x))
        return self.distribution(params, h), memory

    def objective_grads(self, params, memory, x: jax.Array, action: jax.Array):
        """One environment's ``(value, grads, memory', entropy)`` for a given ``action`` ``u`` (A,): ``grads`` stacks
        (leading axis 3) the gradients of ``v_t``, ``log pi(u)`` and the entropy."""
        (dist, value), vjp, memory = jax.vjp(lambda p: self.forward(p, memory, x), params, has_aux=True)
        (_, entropy), pullback = jax.vjp(lambda d: gaussian_objectives(*d, action), dist)
        d_dist = jax.vmap(pullback)(jnp.eye(2, dtype=value.dtype))[0]  # (mean, log_std), each stacked (2, A)
        d_dist = jax.tree.map(lambda d: jnp.concatenate([jnp.zeros_like(d[:1]), d]), d_dist)
        return value, jax.vmap(vjp)((d_dist, jnp.array([1.0, 0.0, 0.0], value.dtype)))[0], memory, entropy

    def act(self, params, memory, x: jax.Array, key: jax.Array, greedy: bool = False):
        """One environment's ``(action, memory')``, no gradient: a draw ``u`` from the policy, or with ``greedy``
        (a Python bool) its mean (the environment maps either onto its Box)."""
        ((mean, log_std), _), memory = self.forward(params, memory, x)
        if greedy:
            return mean, memory
        return mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype), memory

    def act_grads(self, params, memory, x: jax.Array, key: jax.Array):
        """One environment: ``(action, value, grads, memory', entropy)``; ``grads`` as in ``objective_grads``."""
        action = self.act(params, memory, x, key)[0]
        return action, *self.objective_grads(params, memory, x, action)

    def step(self, params, memory, x: jax.Array, keys: jax.Array, value_coef: float, entropy: bool = True,
             split: bool = False, per_env: bool = False):
        """All E environments at once (``ac.ActorCritic.step``'s contract): ``(action, value, drive, entropy_grad,
        memory', entropy)``, ``action`` (E, A) the draws ``u``; one forward pass and one pullback per environment.
        The entropy's gradient needs no pass (1 for each ``log_std``, 0 elsewhere) but with ``state_std``, where it
        is one more pullback per environment, averaged. ``split``: ``drive`` the value's
        and the policy's gradients apart; ``per_env``: ``entropy_grad`` each environment's, not their mean
        (``ac.ActorCritic.step``)."""

        def one(m, xe, key):
            networks = split and self.categorical.networks  # each network's pullback apart (ac.apart)
            if networks:
                dist, pull_policy, value, pull_value, memory_next = ac.apart(
                    self.categorical, params, m, xe, lambda p, h: self.gaussian(p, policy_head(p, h)))
            else:
                (dist, value), pullback, memory_next = jax.vjp(lambda p: self.forward(p, m, xe), params,
                                                               has_aux=True)
                pull_policy = lambda ct: pullback((ct, jnp.zeros((), value.dtype)))[0]  # noqa: E731
            mean, log_std = dist
            action = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)
            d_dist = jax.grad(lambda d: gaussian_objectives(*d, action)[0])(dist)
            if networks:
                drive = {"value": pull_value(jnp.ones((), value.dtype)), "policy": pull_policy(d_dist)}
            elif split:
                drive = split_drive(pullback, d_dist, value.dtype)
            else:
                drive = pullback((d_dist, jnp.asarray(value_coef, value.dtype)))[0]
            d_entropy = None
            if entropy and self.state_std:  # through the head (else 1 for each log_std, below)
                d_entropy = pull_policy((jnp.zeros_like(mean), jnp.ones_like(log_std)))
            return action, value, drive, memory_next, gaussian_objectives(mean, log_std, action)[1], d_entropy

        action, value, drives, memory_next, entropies, d_entropy = jax.vmap(one)(memory, x, keys)
        entropy_grad = None
        if entropy and self.state_std:
            entropy_grad = d_entropy if per_env else jax.tree.map(lambda g: g.mean(0), d_entropy)
        elif entropy:
            entropy_grad = jax.tree.map(jnp.zeros_like, params)
            entropy_grad["log_std"] = jnp.ones_like(params["log_std"])
            if per_env:
                entropy_grad = jax.tree.map(lambda g: jnp.broadcast_to(g, (x.shape[0], *g.shape)), entropy_grad)
        return action, value, drives, entropy_grad, memory_next, entropies

    def bptt_grads(self, params, xs: jax.Array, start: jax.Array, action: jax.Array):
        """One environment's three gradients by BPTT (``ac.ActorCritic.bptt_grads``'s contract), ``action`` the draw
        ``u`` (A,)."""

        def values(p):
            dist, value = self.distribution(p, self.torso.unrolled(p["torso"], encoded(p, xs), start))
            return jnp.concatenate([value[None], gaussian_objectives(*dist, action)])

        return jax.jacrev(values)(params)

