"""Stream AC(lambda) (``rtrl rl --algorithm ac``): ``ActorCritic``, a categorical policy and a value on the recurrent
torso (``rtrl.rl.agent``), the traces of value and log-policy gradients, an entropy bonus.

Parameters are ``{"torso": <the cell's>, "policy": {"W": (N, A), "b": (A,)}, "value": {"W": (N, 1), "b": (1,)}}``,
with ``head_hidden = M > 0`` a tanh layer before the heads (``rtrl.rl.agent.heads``). With ``split_torso`` the policy
reads the first half of the torso's units and the value the second half, each through a tanh layer of its own: where
the cell is element-wise (minGRU, LRU, RTU, ...; its units recur apart), the two halves are separate actor and critic
networks, and neither's gradient reaches the other's units. With ``critic_network`` the critic is a network of its
own whatever the cell: the cell twice side by side (``rtrl.cells.Parallel``; with encoder blocks, a stack of blocks
each), the policy reading the first's outputs and the value the second's, as Farr et al. 2026 run their agents;
with their gradients apart (``split_critic``) each network is stepped and differentiated on its own (``apart``), so
neither's pullback passes through the other.

One environment's step (``act_grads``) runs the torso's online step on the observation, samples an action and returns,
besides it, the gradients w.r.t. all parameters of three per-step objectives of this step::

    v_t = V(h_t),    log pi(a_t | h_t),    H(pi(. | h_t))   (the policy's entropy)

with ``jax.vjp`` through ``learner.step``: under a trace method the torso's share is the method's gradient (exact
RTRL: BPTT's over the episode so far, the parameters held fixed), under ``tbptt`` the rolling window's.
``objective_grads`` gives the three apart (the reference); ``step``, what the loop calls for all environments at
once, gives what the update needs: per environment the gradient of ``value_coef * v_t + log pi(a_t)``, and the
entropy's gradient averaged over the environments. ``bptt_grads`` computes the same three by BPTT over a stored
history, for the fidelity check. The TD error bootstraps from ``v_t`` (``rtrl.rl.algorithm.td_error``; a truncated
episode from ``V(s_T)`` of its final observation), and only an episode's end cuts the traces.

The Gaussian actor-critic (``rtrl.rl.algorithms.gaussian``, a Box action space) shares the functions of this module
that are not the categorical policy's: ``stepped``, ``bootstrap`` and ``value``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from rtrl.cells.base import Cell, glorot
from rtrl.cells.encoder import sparse_init
from rtrl.cells.parallel import Parallel, part_name
from rtrl.methods import Method
from rtrl.online import Learner, OnlineState
from rtrl.rl.agent import (
    SPARSITY,
    Torso,
    check_heads,
    encoded,
    encoder_params,
    encoder_sizes,
    head_params,
    heads,
    learner_of,
    objectives,
    policy_head,
    split_drive,
    value_head,
)
from rtrl.rl.algorithm import Stepped, learn_on_policy, no_correction


def critic_networked(cell: Cell, critic_network: bool, split_torso: bool, encoder_blocks: int) -> Cell:
    """The torso's cell: ``cell``, or with ``critic_network`` two of it side by side (``Parallel``), the actor's and
    the critic's, each on its own stack of encoder blocks where there are some (else both on the observation);
    ``ValueError`` for ``critic_network`` beside ``split_torso`` (two ways to split one torso)."""
    if not critic_network:
        return cell
    if split_torso:
        raise ValueError("critic_network and split_torso both give the value a torso apart; choose one "
                         "(critic_network: a network each; split_torso: halves of one cell's units)")
    return Parallel((cell, cell), shared_input=not encoder_blocks)


def network_learners(torso: Torso) -> tuple[Learner, ...] | None:
    """The learners of a torso of networks side by side (``critic_networked``'s ``Parallel``), one per network, where
    the torso's online state is theirs side by side (a trace method whose traces of the whole are each member's own,
    as the closed-form ones are: the same carries and traces, leaf for leaf), so that each network can be stepped
    and differentiated apart (``apart``); ``None`` where it is not (tbptt's window, traces over the joint
    parameters)."""
    cell, learner = torso.cell, torso.learner
    params = jax.eval_shape(cell.init, jax.random.PRNGKey(0))
    whole = jax.eval_shape(learner.init, params)
    if not isinstance(whole, OnlineState):  # tbptt's window
        return None
    members = tuple(learner_of(member, learner.method, 1) for member in cell.cells)
    parts = [jax.eval_shape(m.init, params[part_name(k)]) for k, m in enumerate(members)]
    side_by_side = OnlineState(tuple(p.carry for p in parts), tuple(p.traces for p in parts))
    same = jax.tree.structure(whole) == jax.tree.structure(side_by_side) and all(
        (a.shape, a.dtype) == (b.shape, b.dtype) for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(side_by_side),
                                                                 strict=True))
    return members if same else None


def apart(agent, params, memory: OnlineState, x: jax.Array, policy_of) -> tuple:
    """One environment's step with the actor's and the critic's networks stepped apart (``network_learners``):
    ``(policy output, its pullback, value, its pullback, memory')``, ``policy_of(params, h)`` the policy's output
    from the actor's network's ``h``. Why: one pullback of both outputs passes a zero cotangent through the other
    network's traces (XLA computes it); apart, the value's pullback never touches the actor's network, nor the
    policy's the critic's. The same numbers as the joint step (tests/test_rl_anchor_agent.py)."""

    def network(k, head):
        def out(p):
            e = encoded({"encoder": p["encoder"][part_name(k)]}, x) if "encoder" in p else x
            h, state = agent.networks[k].step(p["torso"][part_name(k)],
                                              OnlineState(memory.carry[k], memory.traces[k]), e)
            return head(p, h), state
        return jax.vjp(out, params, has_aux=True)

    policy, pull_policy, actor = network(0, policy_of)
    value, pull_value, critic = network(1, lambda p, h: value_head(p, h, agent.split))
    memory = OnlineState((actor.carry, critic.carry), (actor.traces, critic.traces))
    return policy, lambda ct: pull_policy(ct)[0], value, lambda ct: pull_value(ct)[0], memory


def check_split(cell: Cell, split_torso: bool) -> bool:
    """``split_torso``; ``ValueError`` naming it for a torso of an odd number of units."""
    if split_torso and cell.hidden_size % 2:
        raise ValueError(f"split_torso needs an even number of torso units (half for the policy, half for the "
                         f"value), got hidden {cell.hidden_size}")
    return split_torso


# how ``entropy`` enters the update (``--entropy-sign``)
ENTROPY_SIGNS = {
    "positive": "entropy * grad mean_e H_e added to every update (an ascent of the policy's entropy)",
    "td": "entropy * sign(delta_t) * grad H_t in the traces beside grad log pi(a_t), delta_t the TD error of the step "
          "(rtrl.rl.transforms.signed_entropy)",
    "td+statistics": "as td, and the intentional step's statistics read grad log pi(a_t) with that term too (Farr "
                     "et al.'s; --optimizer intentional)",
}


# the heads' weights at the start (``--head-init``)
HEAD_INITS = {"glorot": "the policy's Glorot times one hundredth (near the uniform policy), the value's Glorot",
              "sparse": "both sparse (nine in ten weights zero), the rest uniform in +-1/sqrt(fan-in) (Farr et al.'s)"}


def check_entropy_sign(entropy_sign: str) -> str:
    if entropy_sign not in ENTROPY_SIGNS:
        raise ValueError(f"entropy_sign must be one of {list(ENTROPY_SIGNS)}, got {entropy_sign!r}")
    return entropy_sign


# -- what the actor-critics share (this one and the Gaussian) ------------------------------------------------------

def stepped(agent, params, memory, x: jax.Array, key: jax.Array, step: jax.Array) -> Stepped:
    """The agent's ``step`` for the update: the traces take ``value_coef * g_v + g_logp``, every update the ascent
    ``entropy * grad mean_e H_e``; the TD target bootstraps from ``v_t``; no action is exploratory. With
    ``split_critic`` the value's and the policy's gradients apart too (``extra``: ``value_grads``, ``policy_grads``;
    ``rtrl.rl.transforms.split_intentional``). With ``entropy_sign`` td or td+statistics no bonus: each
    environment's ``grad H_t`` instead (``extra``: ``entropy_grads``), which the update rule signs by the step's TD
    error inside the traces (``rtrl.rl.transforms.signed_entropy``), and with td+statistics in the intentional
    step's statistics too."""
    E = x.shape[0]
    signed = agent.entropy_sign != "positive"
    action, value, drive, entropy_grad, memory, entropy = agent.step(
        params, memory, x, jax.random.split(key, E), agent.value_coef, agent.entropy > 0, agent.split_critic,
        per_env=signed)
    extra = {}
    if signed:
        bonus, extra["entropy_grads"] = None, entropy_grad
    else:
        bonus = None if entropy_grad is None else jax.tree.map(lambda h: agent.entropy * h, entropy_grad)
    if agent.split_critic:
        extra.update(value_grads=drive["value"], policy_grads=drive["policy"])
        drive = jax.tree.map(lambda v, p: agent.value_coef * v + p, drive["value"], drive["policy"])
    return Stepped(action, value, value, drive, bonus, jnp.zeros((E,), bool), memory, entropy, extra or None)


def value(agent, params, memory, x: jax.Array) -> jax.Array:
    """One environment's ``V(h)`` after the torso's step on ``x`` from ``memory`` (no gradient, nothing kept)."""
    return heads(params, agent.torso.learner.step(params["torso"], memory, encoded(params, x))[0], agent.split)[1]


def bootstrap(agent, params, memory, x: jax.Array, step: jax.Array) -> jax.Array:
    """A truncated episode's final observation's value: ``V(s_T)`` (``value``)."""
    return value(agent, params, memory, x)


def reaches(agent, params) -> tuple[Any, Any]:
    """Which parameters the value's gradient and the policy's can reach: two trees of bools like ``params``, so
    that an update rule that keeps their traces apart (``rtrl.rl.transforms.split_intentional``) keeps each on its
    own leaves. The value's head (``value``, and ``value_head``) is the value's alone; the policy's (``policy``,
    ``log_std``, and ``head`` where the heads read apart) the policy's; with ``critic_network`` the actor's network
    (``part0`` of the torso and of the encoder) the policy's, the critic's (``part1``) the value's; the rest both's
    (the entropy reaches what the policy does)."""
    value_only = {"value", "value_head"}
    policy_only = {"policy", "log_std", *(("head",) if agent.split else ())}
    networks = {"part0": "policy", "part1": "value"} if agent.parts == 2 else {}

    def owner(path, _):
        top, below = (getattr(k, "key", None) for k in (*path, None)[:2])
        if top in value_only:
            return "value"
        if top in policy_only:
            return "policy"
        return networks.get(below, "both") if top in ("torso", "encoder") else "both"

    owners = jax.tree_util.tree_map_with_path(owner, params)
    return jax.tree.map(lambda o: o != "policy", owners), jax.tree.map(lambda o: o != "value", owners)


class ActorCritic:
    """Stream AC(lambda): a categorical policy and a value on the torso (linear heads, or behind a tanh layer of
    ``head_hidden`` units), the traces of value and log-policy gradients, an entropy bonus."""

    options = ("entropy", "entropy_sign", "value_coef", "head_hidden", "head_init", "split_torso", "critic_network",
               "encoder_blocks", "encoder_width", "td_refresh")
    checked = 2  # the fidelity check's gradients: the first two of ``objective_grads`` (v_t's, log pi(a_t)'s)

    def __init__(self, cell: Cell, num_actions: int, method: str | Method = "rtrl", truncation: int = 8, *,
                 head_hidden: int = 0, entropy: float = 0.01, value_coef: float = 1.0, split_torso: bool = False,
                 split_critic: bool = False, entropy_sign: str = "positive", encoder_blocks: int = 0,
                 encoder_width: int = 128, observations: int | None = None, head_init: str = "glorot",
                 critic_network: bool = False, td_refresh: bool = False):
        """``split_critic``: the value's and the policy's gradients apart (the intentional rule with a step of
        the critic's own, ``critic_lr``); ``entropy_sign``: how ``entropy`` enters (``ENTROPY_SIGNS``);
        ``encoder_blocks`` of ``encoder_width`` units before the torso on ``observations`` inputs
        (``rtrl.rl.agent.encoder_sizes``; the cell then reads ``encoder_width``); ``head_init``: the heads' weights
        at the start (``HEAD_INITS``); ``critic_network``: the value a network of its own (``critic_networked``),
        the policy's ``cell`` and blocks again; ``td_refresh``: the step's estimate ``v_t`` evaluated again after
        the step's update (``value`` at the new parameters from the same carry; the loop does it where an algorithm
        says ``td_refresh``), so that the TD error reads ``v_t`` and ``v_{t+1}`` at one set of parameters, as Farr
        et al.'s code does (two passes of the critic a step); off, ``v_t`` as acted on, one update behind
        ``v_{t+1}``, so the part of the TD error that the last update already corrected (where successive
        gradients align) is corrected again. One more forward pass of the value a step."""
        if head_init not in HEAD_INITS:
            raise ValueError(f"head_init must be one of {list(HEAD_INITS)}, got {head_init!r}")
        self.head_init = head_init
        self.parts = 2 if critic_network else 1  # networks side by side, each with its own encoder blocks
        cell = critic_networked(cell, critic_network, split_torso, encoder_blocks)
        self.torso = Torso(cell, method, truncation)
        self.num_actions, self.head_hidden = check_heads(num_actions, head_hidden)
        self.entropy, self.value_coef, self.split_critic = entropy, value_coef, split_critic
        if not isinstance(td_refresh, bool):
            raise ValueError(f"td_refresh must be True or False, got {td_refresh!r}")
        self.td_refresh = td_refresh
        self.entropy_sign = check_entropy_sign(entropy_sign)
        self.split = check_split(cell, split_torso) or critic_network
        self.encoder = encoder_sizes(observations, encoder_blocks, encoder_width, cell, self.parts)
        self.networks = network_learners(self.torso) if critic_network else None

    stepped, learn, value, bootstrap, correction, reaches = (stepped, learn_on_policy, value, bootstrap,
                                                             no_correction, reaches)

    def init(self, key: jax.Array, dtype=jnp.float32):
        k_torso, k_policy, k_value = jax.random.split(key, 3)
        N, A, M = self.torso.cell.hidden_size, self.num_actions, self.head_hidden
        width = M or (N // 2 if self.split else N)
        # A small policy head starts near the uniform policy (as PPO's 0.01-scaled one does); ``head_init`` sparse:
        # both heads sparse at 0.9, as Farr et al.'s
        if self.head_init == "sparse":
            W_policy = sparse_init(k_policy, (width, A), SPARSITY, dtype)
            W_value = sparse_init(k_value, (width, 1), SPARSITY, dtype)
        else:
            W_policy, W_value = 0.01 * glorot(k_policy, (width, A), dtype), glorot(k_value, (width, 1), dtype)
        return {"torso": self.torso.cell.init(k_torso, dtype),
                "policy": {"W": W_policy, "b": jnp.zeros((A,), dtype)},
                "value": {"W": W_value, "b": jnp.zeros((1,), dtype)},
                **head_params(key, N, M, dtype, self.split), **encoder_params(key, self.encoder, dtype, self.parts)}

    def forward(self, params, memory, x: jax.Array):
        """One environment's ``((logits, value), memory')``: the torso's online step on ``x``, then the heads."""
        h, memory = self.torso.learner.step(params["torso"], memory, encoded(params, x))
        return heads(params, h, self.split), memory

    def objective_grads(self, params, memory, x: jax.Array, action: jax.Array):
        """One environment's ``(value, grads, memory', entropy)`` for a given ``action``: ``grads`` stacks (leading
        axis 3) the gradients of ``v_t``, ``log pi(a_t)`` and the entropy, from one pullback mapped over three
        cotangents (the reference the fidelity check and the tests read; the loop takes ``step``)."""
        (logits, value), vjp, memory = jax.vjp(lambda p: self.forward(p, memory, x), params, has_aux=True)
        (_, entropy), pullback = jax.vjp(lambda l: objectives(l, action), logits)
        d_logits = jax.vmap(pullback)(jnp.eye(2, dtype=logits.dtype))[0]
        cotangents = (jnp.stack([jnp.zeros_like(logits), *d_logits]), jnp.array([1.0, 0.0, 0.0], value.dtype))
        return value, jax.vmap(vjp)(cotangents)[0], memory, entropy

    def act(self, params, memory, x: jax.Array, key: jax.Array, greedy: bool = False):
        """One environment's ``(action, memory')``, no gradient: a draw from the policy, or with ``greedy`` its most
        likely action."""
        (logits, _), memory = self.forward(params, memory, x)
        return (jnp.argmax(logits) if greedy else jax.random.categorical(key, logits)), memory

    def act_grads(self, params, memory, x: jax.Array, key: jax.Array):
        """One environment: ``(action, value, grads, memory', entropy)``; ``grads`` as in ``objective_grads``."""
        logits = self.forward(params, memory, x)[0][0]
        action = jax.random.categorical(key, logits)
        return action, *self.objective_grads(params, memory, x, action)

    def step(self, params, memory, x: jax.Array, keys: jax.Array, value_coef: float, entropy: bool = True,
             split: bool = False, per_env: bool = False):
        """All E environments (leading axis of ``memory``, ``x`` (E, D), ``keys`` (E,)) at once, what the update
        needs: ``(action, value, drive, entropy_grad, memory', entropy)``, with ``drive`` per environment (leading
        axis E) the gradient of ``value_coef * v_t + log pi(a_t)`` (what enters the eligibility traces) and
        ``entropy_grad`` the gradient of the mean entropy over the environments (one tree, no E axis; ``None``
        unless ``entropy``). With ``split`` (a Python bool), ``drive`` is ``{"value": grad v_t, "policy": grad log
        pi(a_t)}`` instead, two pullbacks (``split_drive``). ``per_env``: ``entropy_grad`` each environment's (leading
        axis E, one more pullback per environment), not their mean.

        One forward pass per environment, its pullback kept for the drive (the action is drawn from its logits);
        the entropy's gradient, where asked for, is one pullback of the batch with the parameters shared, whose
        readout gradient is one matrix product. Why not ``act_grads`` mapped over E: its three per-environment
        gradients, a pullback mapped over cotangents inside the map over environments, cost 62 ms a step with a
        width-192 LRU torso and 16 environments (its 192x192 readout's gradients laid out (E, 3, N, N), then
        transposed and copied by XLA's CPU backend), against 4.4 ms this way (``rtrl.benchmarks.agent``)."""

        def one(m, xe, key):
            if split and self.networks:  # each network's pullback apart
                logits, pull_policy, value, pull_value, memory_next = apart(self, params, m, xe, policy_head)
            else:
                (logits, value), pullback, memory_next = jax.vjp(lambda p: self.forward(p, m, xe), params,
                                                                 has_aux=True)
            action = jax.random.categorical(key, logits)
            d_logp = jax.grad(lambda l: objectives(l, action)[0])(logits)
            d_h = jax.grad(lambda l: objectives(l, action)[1])(logits) if entropy and per_env else None
            if split and self.networks:
                drive = {"value": pull_value(jnp.ones((), value.dtype)), "policy": pull_policy(d_logp)}
                return action, value, drive, memory_next, logits, None if d_h is None else pull_policy(d_h)
            if split:
                drive = split_drive(pullback, d_logp, value.dtype)
            else:
                drive = pullback((d_logp, jnp.asarray(value_coef, value.dtype)))[0]
            d_entropy = None if d_h is None else pullback((d_h, jnp.zeros((), value.dtype)))[0]
            return action, value, drive, memory_next, logits, d_entropy

        action, value, drives, memory_next, logits, entropy_grad = jax.vmap(one)(memory, x, keys)
        if entropy and not per_env:
            d_entropy = jax.vmap(jax.grad(lambda l, a: objectives(l, a)[1]))(logits, action)
            batched = jax.vmap(self.forward, in_axes=(None, 0, 0))
            vjp = jax.vjp(lambda p: batched(p, memory, x), params, has_aux=True)[1]
            entropy_grad = vjp((d_entropy / x.shape[0], jnp.zeros_like(value)))[0]
        entropies = jax.vmap(lambda l, a: objectives(l, a)[1])(logits, action)
        return action, value, drives, entropy_grad, memory_next, entropies

    def bptt_grads(self, params, xs: jax.Array, start: jax.Array, action: jax.Array) -> Any:
        """One environment's three gradients by BPTT: ``xs`` (H, D) the torso's inputs, the last one the current
        step's; the episode began at ``xs[start]`` (the carry is zeroed there; earlier inputs do not count)."""

        def values(p):
            logits, value = heads(p, self.torso.unrolled(p["torso"], encoded(p, xs), start), self.split)
            return jnp.concatenate([value[None], objectives(logits, action)])

        return jax.jacrev(values)(params)
