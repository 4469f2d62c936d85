"""The recurrent actor-critic: a cell under an online learner (the torso), and policy and value heads on it.

Parameters are ``{"torso": <the cell's>, "policy": {"W": (N, A), "b": (A,)}, "value": {"W": (N, 1), "b": (1,)}}``,
with ``head_hidden = M > 0`` also ``"head": {"W": (N, M), "b": (M,)}``, a tanh layer both heads read
(``u = tanh(h @ W + b)``, the heads (M, A) and (M, 1)): a non-linear readout of the torso that needs no traces (it
does not recur), its gradient immediate. With ``split_torso`` the policy reads the first half of the torso's units
and the value the second half, each through a tanh layer of its own (``"head"``, ``"value_head"``): where the cell is
element-wise (minGRU, LRU, RTU, ...; its units recur apart), the two halves are separate actor and critic networks,
as Farr et al. 2026 run theirs, and neither's gradient reaches the other's units.
One environment's step (``act_grads``) runs the torso's online step on the observation, samples an action and returns,
besides it, the gradients w.r.t. all parameters of three per-step objectives of this step::

    v_t = V(h_t),    log pi(a_t | h_t),    H(pi(. | h_t))   (the policy's entropy)

with ``jax.vjp`` through ``learner.step``: under a trace method the torso's share is the method's gradient (exact
RTRL: BPTT's over the episode so far, the parameters held fixed), under ``tbptt`` the rolling window's.
``objective_grads`` gives the three apart (the reference); ``step``, what the loop calls for all environments at
once, gives what the update needs: per environment the gradient of ``value_coef * v_t + log pi(a_t)``, and the
entropy's gradient averaged over the environments. ``bptt_grads`` computes the same three by BPTT
over a stored history, for the fidelity check.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.cells.base import Cell, glorot
from rtrl.checks import check_positive_int
from rtrl.methods import TBPTT, Method, resolve
from rtrl.online import Learner, online, zero_where
from rtrl.rl.rolling import RollingTBPTT


class Stepped(NamedTuple):
    """What an agent's step gives the update, for all E environments (leading axis E)."""

    action: jax.Array  # (E,)
    value: jax.Array  # (E,) the estimate whose TD error the next step finds: v_t, or Q(s_t, a_t)
    target: jax.Array  # (E,) what the previous step's TD target bootstraps from: v_t, or max_a Q(s_t, a)
    drive: Any  # per environment, the gradient that enters the eligibility traces
    bonus: Any  # an ascent added to every update (one tree without E), or None
    exploratory: jax.Array  # (E,) bool: the action is not the greedy one (Watkins' cut after it)
    memory: Any  # the torso's online state after the step
    entropy: jax.Array  # (E,) of the policy the action was drawn from
    extra: Any = None  # the further extra arguments the agent's correction of the update reads (a dict), or None


def learner_of(cell: Cell, method: str | Method | RollingTBPTT, truncation: int) -> Learner:
    """The learner of ``cell`` under ``method``: a trace method bound by ``rtrl.online``; for ``tbptt`` the rolling
    window (``RollingTBPTT``) of ``truncation`` steps, or of its own when ``method`` is a ``TBPTT`` or
    ``RollingTBPTT`` object; ``ValueError`` for a method an online agent cannot use."""
    if isinstance(method, RollingTBPTT):
        return method.bind(cell)
    if method == "tbptt" or isinstance(method, TBPTT):
        return RollingTBPTT(method.truncation if isinstance(method, TBPTT) else truncation).bind(cell)
    method = resolve(method, cell)
    if not method.online:
        raise ValueError(f"method {method.name!r} needs whole episodes and cannot drive an online agent; use a "
                         "trace method (e.g. 'rtrl') or 'tbptt' (rolling truncated BPTT, window 'truncation')")
    return online(cell, method)


def through_head(params, h: jax.Array, name: str = "head") -> jax.Array:
    """The torso's output ``h`` through the tanh layer ``tanh(h @ W + b)`` ``params[name]`` where ``params`` has one
    (``head_hidden``), else ``h``: what the heads read."""
    return jnp.tanh(h @ params[name]["W"] + params[name]["b"]) if name in params else h


def head_params(key: jax.Array, torso_size: int, head_hidden: int, dtype, split: bool = False) -> dict:
    """``{"head": {"W": (N, M), "b": (M,)}}`` for a tanh layer of ``M = head_hidden`` units (``{}`` for none), drawn
    from its own key (``fold_in(key, 1)``), so the parameters without it are those of before it existed; with
    ``split`` (``split_torso``) two of ``N / 2`` inputs, the value's ``"value_head"`` (``fold_in(key, 2)``)."""
    if not head_hidden:
        return {}
    reads = torso_size // 2 if split else torso_size
    layers = {"head": 1, "value_head": 2} if split else {"head": 1}
    return {name: {"W": glorot(jax.random.fold_in(key, i), (reads, head_hidden), dtype),
                   "b": jnp.zeros((head_hidden,), dtype)} for name, i in layers.items()}


def heads(params, h: jax.Array, split: bool = False) -> tuple[jax.Array, jax.Array]:
    """``(logits, value)`` of one hidden state ``h`` (N,), through the tanh layer where ``params`` has one; with
    ``split`` (``split_torso``) the policy reads ``h[:N/2]`` and the value ``h[N/2:]``, each through its own."""
    if split:
        half = h.shape[-1] // 2
        h_policy, h_value = through_head(params, h[:half]), through_head(params, h[half:], "value_head")
    else:
        h_policy = h_value = through_head(params, h)
    return (h_policy @ params["policy"]["W"] + params["policy"]["b"],
            (h_value @ params["value"]["W"] + params["value"]["b"])[0])


def split_drive(pullback, d_policy, dtype) -> dict:
    """``{"value": grad v_t, "policy": grad log pi(a_t)}`` from one environment's ``pullback`` of ``(policy
    output, value)``, ``d_policy`` the cotangent of ``log pi(a_t)`` w.r.t. the policy's output: two pullbacks, for
    a step rule that moves the critic and the actor apart (``rtrl.rl.transforms.split_intentional``)."""
    zero = jax.tree.map(jnp.zeros_like, d_policy)
    return {"value": pullback((zero, jnp.ones((), dtype)))[0], "policy": pullback((d_policy, jnp.zeros((), dtype)))[0]}


def objectives(logits: jax.Array, action: jax.Array) -> jax.Array:
    """``[log pi(action), entropy]`` of the policy ``softmax(logits)``."""
    logp = jax.nn.log_softmax(logits)
    return jnp.stack([logp[action], -(jnp.exp(logp) * logp).sum()])


class RecurrentAgent:
    """What every algorithm's agent shares: ``(cell, num_actions, method="rtrl", truncation=8, head_hidden=0)``, the
    torso (the cell under its online learner), its per-environment state and its reset; ``head_hidden`` is the
    width of the shared tanh layer before the heads (0: none), for the agents that have one (``heads_hidden``). A
    subclass gives ``init`` (the parameters, the torso's under ``"torso"``), ``act`` (one environment, no gradient),
    ``stepped`` (a ``Stepped`` of all environments), ``value`` (what a truncated episode's TD target bootstraps from,
    unless it overrides ``bootstrap``) and, for the fidelity check, ``objective_grads`` and ``bptt_grads`` (the online
    and BPTT gradients of the same objectives, leading axis the objective) and ``checked`` (how many of them the
    check compares); ``td_error`` or ``learn`` where they differ from those here, ``correction`` if its update corrects
    the TD ascent, ``configure`` if ``act`` reads the configuration, ``options`` the ``RLConfig`` options only it
    reads."""

    heads_hidden = False  # whether the agent takes a tanh layer before its heads (``head_hidden``)
    # the ``RLConfig`` options only this kind of agent reads (``RLConfig`` refuses them, given, under another), and
    # ``clip`` where the algorithm reads it whatever the step-size rule
    options: tuple[str, ...] = ()

    def __init__(self, cell: Cell, num_actions: int, method: str | Method = "rtrl", truncation: int = 8,
                 head_hidden: int = 0):
        if not isinstance(cell, Cell):
            raise ValueError(f"cell must be an rtrl cell (rtrl.cells.*), got {cell!r}")
        check_positive_int("num_actions", num_actions)
        if head_hidden and not self.heads_hidden:
            raise ValueError(f"head_hidden must be 0 for {type(self).__name__} (linear heads only), got {head_hidden}")
        if head_hidden < 0:
            raise ValueError(f"head_hidden must be a non-negative integer, got {head_hidden}")
        self.cell, self.num_actions, self.head_hidden = cell, num_actions, head_hidden
        self.learner = learner_of(cell, method, truncation)

    def memory(self, params, envs: int):
        """The torso's online state for ``envs`` environments (leading axis), each mapped separately."""
        one = self.learner.init(params["torso"])
        return jax.tree.map(lambda a: jnp.broadcast_to(a, (envs, *a.shape)), one)

    def reset(self, memory, done: jax.Array):
        """Zero the torso's state where an episode ended (``done``: (E,) bool)."""
        return jax.vmap(self.learner.reset)(memory, done)

    def unrolled(self, torso, xs: jax.Array, start: jax.Array) -> jax.Array:
        """The torso's output after the inputs ``xs`` (H, D), the episode begun at ``xs[start]`` (the carry zeroed
        there; earlier inputs do not count): one ``lax.scan``, what ``bptt_grads`` differentiates."""

        def body(carry, jx):
            j, x = jx
            carry, h = self.cell.step(torso, zero_where(j == start, carry), x)
            return carry, h

        zero = self.cell.initial_carry((), xs.dtype)
        return lax.scan(body, zero, (jnp.arange(xs.shape[0]), xs))[1][-1]

    def correction(self, config, envs: int):
        """The transform that corrects the TD ascent in the update rule (``rtrl.rl.transforms.update_rule``), with
        its state, for ``envs`` environments; ``None``: the TD ascent as it is."""
        return None

    def configure(self, config) -> RecurrentAgent:
        """Read what ``act`` needs of ``config`` (an ``RLConfig``) outside the training steps, which are given it
        (Q(lambda): the final exploration rate); returns the agent. ``rtrl.rl.assemble`` calls it."""
        return self

    def act(self, params, memory, x: jax.Array, key: jax.Array, greedy: bool = False):
        """One environment's ``(action, memory')`` on the observation ``x``, no gradient taken: what an evaluation or
        a rollout calls. ``greedy`` (a Python bool): the policy's best action, else a draw from the behaviour
        policy. The torso's online state advances as in training (its traces too), so learning may go on from it."""
        raise NotImplementedError

    def learn(self, pending, stepped: Stepped, gamma: float) -> dict:
        """What the update rule (``rtrl.rl.transforms``) reads of this step besides the traces' drive, its extra
        arguments: ``delta``, the previous step's TD error (``td_error``); ``cut``, where the traces are cut before
        the drive enters them (the previous step ended an episode, or its action was exploratory: Watkins' cut,
        where ``stepped`` flags one); ``done``; ``bonus``; ``grads`` (the drive again); and ``stepped.extra``.
        ``pending``: the loop's ``Pending``, the previous step."""
        p = pending
        return {"delta": self.td_error(p, stepped.target, gamma), "cut": p.done | p.exploratory, "done": p.done,
                "bonus": stepped.bonus, "grads": stepped.drive, **(stepped.extra or {})}

    def td_error(self, pending, target: jax.Array, gamma: float) -> jax.Array:
        """(E,): the previous step's TD error, once this step's ``target`` (``Stepped.target``: what the previous
        step's TD target bootstraps from) is known; ``pending`` the loop's ``Pending`` (the previous step's
        ``value``, ``reward``, ``done``, ``owed`` (what ``bootstrap`` gave where the episode was truncated, 0 where it
        terminated) and ``valid``)::

            delta_{t-1} = r_{t-1} + gamma * (owed_{t-1} if done_{t-1} else target_t) - value_{t-1}

        and 0 where nothing is pending (the run's first step)."""
        p = pending
        return jnp.where(p.valid, p.reward + gamma * jnp.where(p.done, p.owed, target) - p.value, 0.0)

    def bootstrap(self, params, memory, x: jax.Array, config, step: jax.Array) -> jax.Array:
        """One environment's value that a truncated episode's TD target owes, of its last observation ``x`` (the
        torso's step on it from the episode's carry ``memory``, nothing kept), at the loop's ``step`` (the one that
        acted) under ``config``: ``value`` by default."""
        return self.value(params, memory, x)


class ActorCritic(RecurrentAgent):
    """Stream AC(lambda)'s agent: policy and value heads on the torso (linear, or behind a shared tanh layer of
    ``head_hidden`` units), the traces of value and log-policy gradients, an entropy bonus (rtrl.rl.agent)."""

    heads_hidden = True
    options = ("entropy", "value_coef", "head_hidden", "split_torso", "init_std", "state_std")
    checked = 2  # the fidelity check's gradients: the first two of ``objective_grads`` (v_t's, log pi(a_t)'s)
    split = False  # ``split_torso``: the policy and the value read halves of the torso (``configure``)

    def configure(self, config) -> ActorCritic:
        """``config.split_torso``; ``ValueError`` naming it for a torso of an odd number of units."""
        if config.split_torso and self.cell.hidden_size % 2:
            raise ValueError(f"split_torso needs an even number of torso units (half for the policy, half for the "
                             f"value), got hidden {self.cell.hidden_size}")
        self.split = config.split_torso
        return self

    def init(self, key: jax.Array, dtype=jnp.float32):
        k_torso, k_policy, k_value = jax.random.split(key, 3)
        N, A, M = self.cell.hidden_size, self.num_actions, self.head_hidden
        width = M or (N // 2 if self.split else N)
        # A small policy head starts near the uniform policy (as PPO's 0.01-scaled one does).
        return {"torso": self.cell.init(k_torso, dtype),
                "policy": {"W": 0.01 * glorot(k_policy, (width, A), dtype), "b": jnp.zeros((A,), dtype)},
                "value": {"W": glorot(k_value, (width, 1), dtype), "b": jnp.zeros((1,), dtype)},
                **head_params(key, N, M, dtype, self.split)}

    def forward(self, params, memory, x: jax.Array):
        """One environment's ``((logits, value), memory')``: the torso's online step on ``x``, then the heads."""
        h, memory = self.learner.step(params["torso"], memory, x)
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
        """One environment's ``(action, memory')`` (``RecurrentAgent.act``): a draw from the policy, or with
        ``greedy`` its most likely action."""
        (logits, _), memory = self.forward(params, memory, x)
        return (jnp.argmax(logits) if greedy else jax.random.categorical(key, logits)), memory

    def act_grads(self, params, memory, x: jax.Array, key: jax.Array):
        """One environment: ``(action, value, grads, memory', entropy)``; ``grads`` as in ``objective_grads``."""
        logits = self.forward(params, memory, x)[0][0]
        action = jax.random.categorical(key, logits)
        return action, *self.objective_grads(params, memory, x, action)

    def step(self, params, memory, x: jax.Array, keys: jax.Array, value_coef: float, entropy: bool = True,
             split: bool = False):
        """All E environments (leading axis of ``memory``, ``x`` (E, D), ``keys`` (E,)) at once, what the update
        needs: ``(action, value, drive, entropy_grad, memory', entropy)``, with ``drive`` per environment (leading
        axis E) the gradient of ``value_coef * v_t + log pi(a_t)`` (what enters the eligibility traces) and
        ``entropy_grad`` the gradient of the mean entropy over the environments (one tree, no E axis; ``None``
        unless ``entropy``). With ``split`` (a Python bool), ``drive`` is ``{"value": grad v_t, "policy": grad log
        pi(a_t)}`` instead, two pullbacks (``split_drive``).

        One forward pass per environment, its pullback kept for the drive (the action is drawn from its logits);
        the entropy's gradient, where asked for, is one pullback of the batch with the parameters shared, whose
        readout gradient is one matrix product. Why not ``act_grads`` mapped over E: its three per-environment
        gradients, a pullback mapped over cotangents inside the map over environments, cost 62 ms a step with a
        width-192 LRU torso and 16 environments (its 192x192 readout's gradients laid out (E, 3, N, N), then
        transposed and copied by XLA's CPU backend), against 4.4 ms this way (``rtrl.benchmarks.agent``)."""

        def one(m, xe, key):
            (logits, value), pullback, memory_next = jax.vjp(lambda p: self.forward(p, m, xe), params, has_aux=True)
            action = jax.random.categorical(key, logits)
            d_logp = jax.grad(lambda l: objectives(l, action)[0])(logits)
            if split:
                drive = split_drive(pullback, d_logp, value.dtype)
            else:
                drive = pullback((d_logp, jnp.asarray(value_coef, value.dtype)))[0]
            return action, value, drive, memory_next, logits

        action, value, drives, memory_next, logits = jax.vmap(one)(memory, x, keys)
        entropy_grad = None
        if entropy:
            d_entropy = jax.vmap(jax.grad(lambda l, a: objectives(l, a)[1]))(logits, action)
            batched = jax.vmap(self.forward, in_axes=(None, 0, 0))
            vjp = jax.vjp(lambda p: batched(p, memory, x), params, has_aux=True)[1]
            entropy_grad = vjp((d_entropy / x.shape[0], jnp.zeros_like(value)))[0]
        entropies = jax.vmap(lambda l, a: objectives(l, a)[1])(logits, action)
        return action, value, drives, entropy_grad, memory_next, entropies

    def stepped(self, params, memory, x: jax.Array, key: jax.Array, config, step: jax.Array) -> Stepped:
        """``step`` for the update (``config``: an ``RLConfig``, read for ``value_coef`` and ``entropy``): the traces
        take ``value_coef * g_v + g_logp``, every update the ascent ``entropy * grad mean_e H_e``; the TD target
        bootstraps from ``v_t``; no action is exploratory (no cut but at episode ends)."""
        E = x.shape[0]
        split = config.critic_lr is not None  # the critic's and the actor's steps apart (``split_intentional``)
        action, value, drive, entropy_grad, memory, entropy = self.step(params, memory, x, jax.random.split(key, E),
                                                                        config.value_coef, config.entropy > 0, split)
        bonus = None if entropy_grad is None else jax.tree.map(lambda h: config.entropy * h, entropy_grad)
        extra = None
        if split:
            extra = {"value_grads": drive["value"], "policy_grads": drive["policy"]}
            drive = jax.tree.map(lambda v, p: config.value_coef * v + p, drive["value"], drive["policy"])
        return Stepped(action, value, value, drive, bonus, jnp.zeros((E,), bool), memory, entropy, extra)

    def value(self, params, memory, x: jax.Array) -> jax.Array:
        """One environment's ``V(h)`` after the torso's step on ``x`` from ``memory`` (no gradient, nothing kept): the
        value of a truncated episode's last observation, which its TD target still owes."""
        return heads(params, self.learner.step(params["torso"], memory, x)[0], self.split)[1]

    def bptt_grads(self, params, xs: jax.Array, start: jax.Array, action: jax.Array) -> Any:
        """One environment's three gradients by BPTT: ``xs`` (H, D) the torso's inputs, the last one the current
        step's; the episode began at ``xs[start]`` (the carry is zeroed there; earlier inputs do not count)."""

        def values(p):
            logits, value = heads(p, self.unrolled(p["torso"], xs, start), self.split)
            return jnp.concatenate([value[None], objectives(logits, action)])

        return jax.jacrev(values)(params)
