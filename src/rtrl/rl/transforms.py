"""The online-RL update rule as small optax transformations, each owning its state, composed with ``optax.chain``.

The rule's input at step ``t`` is, per environment ``e`` (leading axis E), the gradient ``g_t`` of what the traces
accumulate (the actor-critic's ``value_coef * v_t + log pi(a_t)``, Q(lambda)'s ``Q(s_t, a_t)``); every member gets
the extra arguments of the step (``optax.GradientTransformationExtraArgs``):

* ``delta`` (E,): the previous step's TD error (0 where none is pending);
* ``cut`` (E,) bool: the trace is cut before ``g_t`` enters it (the previous step ended an episode, or, under
  Watkins' Q(lambda), its action was not greedy; the algorithm decides);
* ``bonus``: an ascent added to the TD ascent, one tree without the E axis (the actor-critic's entropy term), or
  ``None``;
* ``grads``: ``g_t`` again, for the step-size rules whose statistics read it (``intentional``).

The members (docs/rl.md, "The agent and the update, in brief")::

    eligibility_traces(decay, envs)   g_t -> z_{t-1};        z_t = decay * (1 - cut) * z_{t-1} + g_t
    td_ascent(measure)                z -> Ascent(u, m):     u = mean_e delta_e z_e + bonus,
                                                             m = mean_e max(|delta_e|, 1) ||z_e||_1 (ObGD's)
    every(k, inner)                   sums its input over k steps and applies ``inner`` at every k-th (else 0)
    descend(inner)                    Ascent -> inner(-u)    (an optax optimizer: adam, sgd, clipping)
    obgd(lr, kappa)                   Ascent -> lr / max(lr kappa m, 1) * u
    adaptive_obgd(lr, kappa)          z -> ObGD on z / sqrt(v), v the running second moment of the ascent delta z
    intentional(eta, decay)           z -> mean_e clip(delta_e) eta / sqrt(sigma ||z_e||^2_M) * z_e / M + bonus
    qrc(gamma, decay, envs, ...)      Ascent(u, m) -> Ascent(u + QRC(lambda)'s gradient correction, m); its state the
                                      secondary weights h, their traces and their update (see ``qrc``)

Each returns what ``optax.apply_updates`` adds to the parameters. ``update_rule`` builds the chain a run names;
``eligibility`` finds the traces in its state by their type, wherever the rule keeps them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import lax

from rtrl.checks import check_positive_int
from rtrl.config import checked, non_negative_float, positive_float, unit_interval
from rtrl.optim import make_optimizer
from rtrl.optim import obgd as scale_by_obgd

STEP_RULES = {  # rtrl rl --optimizer NAME
    "adam": "Adam (optax) on the TD ascent, its global norm clipped to --clip",
    "sgd": "plain steps of --lr along the TD ascent, its global norm clipped to --clip",
    "obgd": "ObGD (Elsayed et al. 2024): --lr, bounded so the step does not overshoot the TD error (--kappa)",
    "adaptive_obgd": "stream-x's AdaptiveObGD: ObGD on the traces normalised by the running second moment of the "
                     "TD ascent",
    "intentional": "the intentional update (Farr et al. 2026): each output moves by the fraction --lr of its "
                   "clipped TD error, through an estimated preconditioner",
}
PER_ENVIRONMENT = ("adaptive_obgd", "intentional")  # rules that read each environment's trace (no update_every)


def bias_correction(rate: float, count: jax.Array, like: jax.Array) -> jax.Array:
    """``1 - rate ** count`` (1 before the first step, ``count == 0``) in ``like``'s dtype: a Python float raised to
    a traced int32 count is float64 where JAX has x64 on, and would turn a float32 run's statistics float64."""
    return jnp.where(count > 0, 1 - jnp.asarray(rate, like.dtype) ** count, jnp.ones((), like.dtype))


def per_env(a: jax.Array, like: jax.Array) -> jax.Array:
    """``a`` (E,) shaped to broadcast against ``like`` (E, ...)."""
    return a.reshape(a.shape + (1,) * (like.ndim - 1))


def weighted_mean(delta: jax.Array, z) -> Any:
    """``mean_e delta_e z_e`` of per-environment trees ``z`` (leading axis E)."""
    return jax.tree.map(lambda a: jnp.tensordot(delta, a, 1) / delta.shape[0], z)


def plus(tree, bonus):
    return tree if bonus is None else jax.tree.map(jnp.add, tree, bonus)


def l1_per_env(z) -> jax.Array:
    """(E,): each environment's ``||z_e||_1``."""
    E = jax.tree.leaves(z)[0].shape[0]
    return sum(jnp.abs(a).reshape(E, -1).sum(axis=1) for a in jax.tree.leaves(z))


# -- the eligibility traces --------------------------------------------------------------------------------------

class TraceState(NamedTuple):
    traces: Any  # z, like the parameters with a leading axis E


def eligibility_traces(decay: float, envs: int) -> optax.GradientTransformationExtraArgs:
    """Accumulating traces in parameter space, one per environment: the output is ``z_{t-1}`` (the trace the
    previous step's TD error multiplies), then ``z_t = decay * (1 - cut) * z_{t-1} + g_t`` (``decay`` is
    ``gamma * lambda``; ``cut`` (E,) bool, an extra argument)."""
    checked("decay", unit_interval, decay)
    check_positive_int("envs", envs)

    def init(params):
        return TraceState(jax.tree.map(lambda p: jnp.zeros((envs, *p.shape), p.dtype), params))

    def update(updates, state, params=None, *, cut, **extra):
        keep = decay * jnp.where(cut, 0.0, 1.0)
        traces = jax.tree.map(lambda z, g: per_env(keep, z) * z + g, state.traces, updates)
        return state.traces, TraceState(traces)

    return optax.GradientTransformationExtraArgs(init, update)


def eligibility(state) -> tuple:
    """Every set of eligibility traces in an update rule's state (each ``eligibility_traces``' ``TraceState``),
    found by its type wherever the rule nests it, in the state's tree order: one set under one trace of the sum, the
    critic's and the actor's under ``split_intentional``. Read by name, not by position (optax's ``tree.get``
    shape), so a diagnostic needs no knowledge of the chain's order."""
    nodes = jax.tree.leaves(state, is_leaf=lambda node: isinstance(node, TraceState))
    return tuple(node.traces for node in nodes if isinstance(node, TraceState))


class SignedEntropyState(NamedTuple):
    trace: Any  # decay (1 - cut) y_{t-1}: the signed entropy trace, decayed and cut for the next step's entry
    pending: Any  # grad H_{t-1} per environment, whose TD error's sign the next call brings


def signed_entropy(coef: float, decay: float, envs: int) -> optax.GradientTransformationExtraArgs:
    """Farr et al.'s entropy term (``streamlet.algorithms.RecurrentACLambda``: the actor's per-step gradient is
    ``grad log pi(a_t) + coef * sign(delta_t) * grad H_t``, and that sum enters the actor's trace): placed after
    ``eligibility_traces``, it adds to the trace ``z_{t-1}`` it gets the signed entropy's own trace::

        y_{t-1} = decay (1 - cut_{t-1}) y_{t-2} + sign(delta_{t-1}) grad H_{t-1},      output z_{t-1} + coef y_{t-1}

    ``delta_{t-1}`` is the TD error of the step whose gradient ``grad H_{t-1}`` is, known one call later (the extra
    argument ``delta``), so each call adds the previous call's ``grad H`` (kept in the state) under this call's
    sign, and keeps this call's (the extra argument ``entropy_grads``, per environment). ``cut`` as
    ``eligibility_traces`` reads it; ``delta`` 0 (nothing pending) adds nothing. The sum is linear, so ``z + coef
    y`` is their trace of ``g + coef sign(delta) grad H`` exactly."""
    checked("coef", positive_float, coef)
    checked("decay", unit_interval, decay)
    check_positive_int("envs", envs)

    def init(params):
        zeros = jax.tree.map(lambda p: jnp.zeros((envs, *p.shape), p.dtype), params)
        return SignedEntropyState(zeros, zeros)

    def update(z, state, params=None, *, delta, cut, entropy_grads, **extra):
        y = jax.tree.map(lambda t, h: t + per_env(jnp.sign(delta), h) * h, state.trace, state.pending)
        keep = decay * jnp.where(cut, 0.0, 1.0)
        out = jax.tree.map(lambda a, b: a + coef * b, z, y)
        return out, SignedEntropyState(jax.tree.map(lambda b: per_env(keep, b) * b, y), entropy_grads)

    return optax.GradientTransformationExtraArgs(init, update)


# -- the TD ascent ---------------------------------------------------------------------------------------------

class Ascent(NamedTuple):
    """The TD ascent of a step (or the sum of k steps'): its direction and ObGD's overshoot measure (0 unless
    measured). A pytree: ``every`` sums it leaf by leaf."""

    direction: Any
    overshoot: jax.Array


def td_ascent(measure: bool = False) -> optax.GradientTransformationExtraArgs:
    """Per-environment traces ``z`` (E, ...) -> ``Ascent(mean_e delta_e z_e + bonus, m)``, with
    ``m = mean_e max(|delta_e|, 1) ||z_e||_1`` if ``measure`` (ObGD's overshoot: a pass over every trace) else 0."""

    def update(z, state, params=None, *, delta, bonus=None, **extra):
        direction = plus(weighted_mean(delta, z), bonus)
        if measure:
            overshoot = (jnp.maximum(jnp.abs(delta), 1.0) * l1_per_env(z)).mean()
        else:
            overshoot = jnp.zeros((), delta.dtype)
        return Ascent(direction, overshoot), state

    return optax.GradientTransformationExtraArgs(lambda params: optax.EmptyState(), update)


class EveryState(NamedTuple):
    summed: Any  # the inputs since the last application
    count: jax.Array  # calls so far
    inner: Any


def every(k: int, inner: optax.GradientTransformationExtraArgs) -> optax.GradientTransformationExtraArgs:
    """``inner`` applied every ``k``-th call to the sum of its inputs since the last application (zero updates in
    between, ``inner``'s state untouched); ``inner`` itself where ``k = 1``. The input's structure must not depend
    on the call (``init`` reads it from ``params`` through ``like``)."""
    check_positive_int("k", k)
    if k == 1:
        return inner

    def init(params):
        like = Ascent(jax.tree.map(jnp.zeros_like, params), jnp.zeros((), jax.tree.leaves(params)[0].dtype))
        return EveryState(like, jnp.zeros((), jnp.int32), inner.init(params))

    def update(updates, state, params=None, **extra):
        summed = jax.tree.map(jnp.add, state.summed, updates)

        def apply(_):
            out, inner_state = inner.update(summed, state.inner, params, **extra)
            return out, EveryState(jax.tree.map(jnp.zeros_like, summed), state.count + 1, inner_state)

        def hold(_):
            return (jax.tree.map(jnp.zeros_like, params),
                    EveryState(summed, state.count + 1, state.inner))

        return lax.cond((state.count + 1) % k == 0, apply, hold, None)

    return optax.GradientTransformationExtraArgs(init, update)


# -- step-size rules -------------------------------------------------------------------------------------------

def descend(inner: optax.GradientTransformation) -> optax.GradientTransformationExtraArgs:
    """An ``Ascent`` given to an optax optimizer (``adam``, ``sgd``, clipping) as the gradient ``-u`` it descends."""
    inner = optax.with_extra_args_support(inner)

    def update(ascent, state, params=None, **extra):
        return inner.update(jax.tree.map(jnp.negative, ascent.direction), state, params)

    return optax.GradientTransformationExtraArgs(inner.init, update)


def obgd(lr: float = 1.0, kappa: float = 2.0) -> optax.GradientTransformationExtraArgs:
    """ObGD (Elsayed et al. 2024): an ``Ascent`` ``(u, m)`` -> ``lr / max(lr * kappa * m, 1) * u``."""
    inner = scale_by_obgd(lr, kappa)

    def update(ascent, state, params=None, **extra):
        return inner.update(jax.tree.map(jnp.negative, ascent.direction), state, params, overshoot=ascent.overshoot)

    return optax.GradientTransformationExtraArgs(inner.init, update)


class MomentState(NamedTuple):
    moment: Any  # v, like the parameters
    count: jax.Array


def adaptive_obgd(lr: float = 1.0, kappa: float = 2.0, beta2: float = 0.999, eps: float = 1e-8
                  ) -> optax.GradientTransformationExtraArgs:
    """Stream-x's AdaptiveObGD (Elsayed et al. 2024, ``optim.py``): per-environment traces ``z`` (E, ...) ->
    ObGD's step on the ascent preconditioned by the running second moment of the TD ascent::

        v <- beta2 v + (1 - beta2) mean_e (delta_e z_e)^2,   d = sqrt(v / (1 - beta2^n) + eps)
        m = mean_e max(|delta_e|, 1) ||z_e / d||_1,          update = lr / max(lr kappa m, 1) * (mean_e delta_e z_e / d
                                                                                                + bonus)

    (``n`` the calls so far, this one included; with one environment, stream-x's update; ``bonus`` is scaled by the
    step but not preconditioned)."""
    for name, value in (("lr", lr), ("kappa", kappa), ("eps", eps)):
        checked(name, positive_float, value)
    checked("beta2", unit_interval, beta2)

    def init(params):
        return MomentState(jax.tree.map(jnp.zeros_like, params), jnp.zeros((), jnp.int32))

    def update(z, state, params=None, *, delta, bonus=None, **extra):
        count = state.count + 1
        moment = jax.tree.map(lambda v, a: beta2 * v + (1 - beta2) * (jnp.square(per_env(delta, a) * a)).mean(0),
                              state.moment, z)
        bias = bias_correction(beta2, count, jax.tree.leaves(moment)[0])  # one scalar for every leaf
        scale = jax.tree.map(lambda v: jnp.sqrt(v / bias + eps), moment)
        scaled = jax.tree.map(lambda a, d: a / d, z, scale)
        overshoot = (jnp.maximum(jnp.abs(delta), 1.0) * l1_per_env(scaled)).mean()
        step = lr / jnp.maximum(lr * kappa * overshoot, 1.0)
        updates = jax.tree.map(lambda a: step * a, plus(weighted_mean(delta, scaled), bonus))
        return updates, MomentState(moment, count)

    return optax.GradientTransformationExtraArgs(init, update)


class IntentionalState(NamedTuple):
    moment: Any  # v: the running second moment of g, like the parameters
    sigma: jax.Array  # running mean of ||g||^2_M
    count: jax.Array  # g's seen
    squared_delta: jax.Array  # running mean of delta^2, for the clip
    clips: jax.Array  # TD errors seen
    absolute_delta: jax.Array  # running mean of |clip(delta)|, for ``normalize_delta`` (0 without it)


class SignedStatisticsState(NamedTuple):
    inner: IntentionalState  # the statistics and the clip's, as ``intentional`` keeps them
    pending: Any  # (g_{t-1}, grad H_{t-1}) per environment: the gradients whose TD error's sign this call brings


def intentional(eta: float = 0.5, decay: float = 0.8, beta2: float = 0.999, beta_clip: float = 0.9998,
                clip_multiplier: float = 20.0, eps: float = 1e-8, normalize_delta: bool = False,
                beta_norm: float = 0.9998, signed: float = 0.0, envs: int | None = None
                ) -> optax.GradientTransformationExtraArgs:
    """The intentional update (Farr et al. 2026; ``streamlet.optimizers.Intentional`` with its defaults): a step
    that moves each environment's output by the fraction ``eta`` of its (clipped) TD error, the change of the
    output estimated with the preconditioner ``M = sqrt(v / (1 - beta2^n)) + eps`` (``v`` the running second moment
    of the gradients ``g``) and ``sigma``, the running mean (rate ``1 - decay``, ``decay = gamma * lambda``) of
    ``||g||^2_M = sum g^2 / M``, in place of the unknown ``g . z / M``::

        step_e = eta / max(sqrt(sigma * ||z_e||^2_M), eps),   update = mean_e clip(delta_e) step_e z_e / M + bonus

    ``clip(delta) = sign(delta) min(|delta|, 20 * rms(delta))`` (a running RMS, rate ``1 - beta_clip``, from 1).
    The statistics of ``g_{t-1}``, the gradient whose TD error ``delta_{t-1}`` this step corrects, are in the
    state; after the step they take ``g_t`` (the extra argument ``grads``, per environment, averaged over E).

    ``normalize_delta`` (Farr et al.'s actor optimiser, ``IntentionalConfig(normalize_delta=True)``): the clipped TD
    error is divided by the running mean of its absolute value (rate ``1 - beta_norm``, bias-corrected, this step's
    errors included, their mean over E), so the actor's step does not grow and shrink with the critic's error::

        a <- beta_norm a + (1 - beta_norm) mean_e |clip(delta_e)|,   clip(delta_e) / max(a / (1 - beta_norm^n), 1e-12)

    ``signed`` > 0 (with ``envs``, the environments): the statistics read the gradient with the entropy term signed
    by its TD error, ``g_{t-1} + signed sign(delta_{t-1}) grad H_{t-1}`` (the extra argument ``entropy_grads`` of the
    call that gave ``g_{t-1}``), as Farr et al.'s actor optimiser reads its ``actor_grads``: since ``delta_{t-1}``
    arrives a call after ``g_{t-1}``, they take it at the start of this call, before the step, instead of at the end
    of the last one; the step sees the same gradients either way, the signed term aside.
    """
    for name, value in (("eta", eta), ("clip_multiplier", clip_multiplier), ("eps", eps)):
        checked(name, positive_float, value)
    for name, value in (("decay", decay), ("beta2", beta2), ("beta_clip", beta_clip), ("beta_norm", beta_norm)):
        checked(name, unit_interval, value)

    def init(params):
        zero = jnp.zeros((), jax.tree.leaves(params)[0].dtype)
        return IntentionalState(jax.tree.map(jnp.zeros_like, params), zero, jnp.zeros((), jnp.int32), zero + 1.0,
                                jnp.zeros((), jnp.int32), zero)

    def preconditioner(moment, count):
        bias = bias_correction(beta2, count, jax.tree.leaves(moment)[0])
        return jax.tree.map(lambda v: jnp.sqrt(v / bias) + eps, moment)

    def norms(tree, M):
        """(E,): each environment's ``||tree_e||^2_M``."""
        E = jax.tree.leaves(tree)[0].shape[0]
        return sum((jnp.square(a) / m).reshape(E, -1).sum(axis=1)
                   for a, m in zip(jax.tree.leaves(tree), jax.tree.leaves(M), strict=True))

    def statistics(state: IntentionalState, g) -> IntentionalState:
        """``state`` with its statistics taking ``g`` (per environment)."""
        count = state.count + 1
        moment = jax.tree.map(lambda v, x: beta2 * v + (1 - beta2) * jnp.square(x).mean(0), state.moment, g)
        g_norm = norms(g, preconditioner(moment, count)).mean()
        return state._replace(moment=moment, sigma=state.sigma + (1 - decay) * (g_norm - state.sigma), count=count)

    def move(z, state: IntentionalState, delta, bonus):
        M = preconditioner(state.moment, state.count)
        sigma = state.sigma / bias_correction(decay, state.count, state.sigma)
        step = eta / jnp.maximum(jnp.sqrt(sigma * norms(z, M)), eps)
        clips = state.clips + 1
        squared_delta = beta_clip * state.squared_delta + (1 - beta_clip) * jnp.mean(delta ** 2)
        ceiling = clip_multiplier * jnp.sqrt(squared_delta / bias_correction(beta_clip, clips, squared_delta))
        clipped = jnp.sign(delta) * jnp.minimum(jnp.abs(delta), ceiling)
        absolute_delta = state.absolute_delta
        if normalize_delta:
            absolute_delta = beta_norm * absolute_delta + (1 - beta_norm) * jnp.mean(jnp.abs(clipped))
            scale = absolute_delta / bias_correction(beta_norm, clips, absolute_delta)
            clipped = clipped / jnp.maximum(scale, 1e-12)
        updates = plus(jax.tree.map(lambda a, m: a / m, weighted_mean(clipped * step, z), M), bonus)
        return updates, state._replace(squared_delta=squared_delta, clips=clips, absolute_delta=absolute_delta)

    def update(z, state, params=None, *, delta, grads, bonus=None, **extra):
        updates, state = move(z, state, delta, bonus)
        return updates, statistics(state, grads)  # the statistics take g_t

    if not signed:
        return optax.GradientTransformationExtraArgs(init, update)
    checked("signed", positive_float, signed)
    check_positive_int("envs", envs)

    def init_signed(params):
        zeros = jax.tree.map(lambda p: jnp.zeros((envs, *p.shape), p.dtype), params)
        return SignedStatisticsState(init(params), (zeros, zeros))

    def update_signed(z, state, params=None, *, delta, grads, entropy_grads, bonus=None, **extra):
        g, h = state.pending  # g_{t-1}, grad H_{t-1}: their TD error's sign is this call's
        full = jax.tree.map(lambda a, b: a + signed * per_env(jnp.sign(delta), b) * b, g, h)
        started = state.inner.clips > 0  # a call has passed (each counts its TD errors), so something is pending
        inner = jax.tree.map(lambda new, old: jnp.where(started, new, old), statistics(state.inner, full), state.inner)
        updates, inner = move(z, inner, delta, bonus)
        return updates, SignedStatisticsState(inner, (grads, entropy_grads))

    return optax.GradientTransformationExtraArgs(init_signed, update_signed)


class SplitState(NamedTuple):
    critic: Any  # the value's traces and intentional state (``optax.chain``'s)
    actor: Any  # the policy's


def restricted(tree, keep):
    """``tree`` with ``optax.MaskedNode()`` at the leaves where ``keep`` (a tree of bools like ``tree``) is False:
    what a transformation that owns only some of the parameters sees (as ``optax.masked``'s inner one does)."""
    return jax.tree.map(lambda k, a: a if k else optax.MaskedNode(), keep, tree)


def summed(a, b, like):
    """The leaf-by-leaf sum of two ``restricted`` trees shaped as ``like``: a leaf one of them lacks is the
    other's, one both lack zeros."""
    masked = lambda node: isinstance(node, optax.MaskedNode)  # noqa: E731

    def add(x, y, zero):
        present = [t for t in (x, y) if not masked(t)]
        return sum(present[1:], present[0]) if present else jnp.zeros_like(zero)

    leaves, treedef = jax.tree.flatten(like)
    sides = (jax.tree.leaves(t, is_leaf=masked) for t in (a, b))
    return jax.tree.unflatten(treedef, [add(x, y, z) for x, y, z in zip(*sides, leaves, strict=True)])


def split_intentional(actor_eta: float, critic_eta: float, decay: float, envs: int, signed: float = 0.0,
                      reaches: Callable[[Any], tuple[Any, Any]] | None = None, signed_statistics: bool = False
                      ) -> optax.GradientTransformationExtraArgs:
    """Farr et al.'s intentional actor-critic (``RecurrentACLambda`` with an actor and a critic ``Intentional``):
    the value's gradients ``g_v`` and the policy's ``g_pi`` (the extra arguments ``value_grads`` and
    ``policy_grads``, per environment) in traces of their own, each with its own intentional step::

        z^v_t = decay (1 - cut) z^v_{t-1} + g_v,t,     z^pi_t = decay (1 - cut) z^pi_{t-1} + g_pi,t
        update = intentional(critic_eta)(z^v) + intentional(actor_eta, normalize_delta)(z^pi) + bonus

    Why apart: the intentional step sizes a step by the norm of the trace it moves along, and the value's and the
    policy's outputs differ in scale and in how far a step should move them (their best at 2M frames: the actor's
    constant 0.01 to 0.05, the critic's 0.5); one trace of their sum takes one constant for both. The actor's TD
    error is normalised by its running mean absolute value (``intentional``'s ``normalize_delta``), as theirs is.
    Its input (the gradient of the sum, ``drive``) is not read: a run under it keeps these two sets of traces, no
    third of the sum. ``signed`` > 0: the entropy term signed by the TD error in the actor's trace
    (``signed_entropy(signed, ...)``), as theirs is; with ``signed_statistics`` in the actor's step statistics too
    (``intentional``'s ``signed``), as theirs are.

    ``reaches``: ``params -> (value_keep, policy_keep)``, trees of bools like the parameters, the leaves each
    gradient can be non-zero on (the algorithm's ``reaches``); each side's traces and statistics are kept on its
    own leaves only (``restricted``), and every extra argument shaped like the parameters is restricted with them.
    Where the other leaves' gradients are zero this changes no update: a trace that stays zero moves nothing
    (``z / M`` is 0 there) and adds nothing to a norm. With an actor's and a critic's network it halves each side's
    work. ``None``: each side keeps every leaf."""
    critic = optax.chain(eligibility_traces(decay, envs), intentional(critic_eta, decay))
    entropy = (signed_entropy(signed, decay, envs),) if signed else ()
    actor = optax.chain(eligibility_traces(decay, envs), *entropy,
                        intentional(actor_eta, decay, normalize_delta=True, envs=envs,
                                    signed=signed if signed_statistics else 0.0))

    def sides(params):
        if reaches is None:
            every = jax.tree.map(lambda _: True, params)
            return every, every
        return reaches(params)

    def init(params):
        value_keep, policy_keep = sides(params)
        return SplitState(critic.init(restricted(params, value_keep)), actor.init(restricted(params, policy_keep)))

    def update(z, state, params=None, *, value_grads, policy_grads, grads=None, **extra):
        if params is None and reaches is not None:
            raise ValueError("split_intentional with reaches needs params (the update's third argument)")
        like = value_grads if params is None else params  # with reaches None no leaf is left to zeros
        value_keep, policy_keep = sides(like)
        shaped = jax.tree.structure(value_keep)

        def own(keep, tree):  # an extra argument shaped like the parameters, restricted to one side's leaves
            return restricted(tree, keep) if jax.tree.structure(tree) == shaped else tree

        g_v, g_pi = restricted(value_grads, value_keep), restricted(policy_grads, policy_keep)
        v, critic_state = critic.update(g_v, state.critic, own(value_keep, params), grads=g_v,
                                        **{k: own(value_keep, a) for k, a in extra.items() if k != "bonus"})
        pi, actor_state = actor.update(g_pi, state.actor, own(policy_keep, params), grads=g_pi,
                                       **{k: own(policy_keep, a) for k, a in extra.items()})
        return summed(v, pi, like), SplitState(critic_state, actor_state)

    return optax.GradientTransformationExtraArgs(init, update)


# -- QRC(lambda): the gradient correction and the secondary weights ---------------------------------------------

class QRCState(NamedTuple):
    h: Any  # the secondary weights {"W": (N, A), "b": (A,)}
    h_traces: Any  # z^h, like h with a leading axis E
    h_sum: jax.Array  # (E,) e: the decayed sum of h's estimates, cut as the traces are
    carried: Any  # mean_e (e_e - h_e) g_e of the previous step, like the parameters
    h_pull: Any  # mean_e h_e grad h_e of the previous step, like h


def qrc(gamma: float, decay: float, envs: int, features: int, actions: int, h_lr: float = 1e-5, beta: float = 1.0,
        clip: float | None = 1.0) -> optax.GradientTransformationExtraArgs:
    """QRC(lambda) (Patterson et al. 2022's QRC with eligibility traces, as Farr et al. 2026 and Elelimy et al.
    2025 run it): the TD ascent ``Ascent(u, m)`` of step ``t - 1`` gets its gradient correction, and the secondary
    weights ``h`` (a linear head of A outputs on the torso's output ``phi``, zero at the start, its gradient not
    taken into the torso) their update. With ``h_t = h(s_t, a_t)``, ``g_t = grad Q(s_t, a_t)`` (``grads``) and
    ``G_t = grad max_a Q(s_t, a)`` (``target_grads``), per environment::

        u  += mean_e [ (e_{t-1} - h_{t-1}) g_{t-1} - gamma (1 - done_{t-1}) e_{t-1} G_t ]
        h  += h_lr clip( mean_e [ delta_{t-1} z^h_{t-1} - h_{t-1} grad h_{t-1} ] - beta h )
        z^h_t = decay (1 - cut) z^h_{t-1} + grad h_t,    e_t = decay (1 - cut) e_{t-1} + h_t

    (``clip``: to that global norm, as ``optax.clip_by_global_norm``; ``h_t`` read with ``h`` just updated). The
    extra arguments: ``delta``, ``cut``, ``grads`` as every member gets them, ``done`` (E,) bool (step ``t - 1``
    ended an episode: ``G_t`` belongs to the next one), ``action`` (E,) ``a_t``, ``features`` (E, N) ``phi_t``,
    ``target_grads`` ``G_t`` (per environment, like the parameters). ``(e_t - h_t) g_t = decay (1 - cut) e_{t-1} g_t``
    is known at step ``t`` and kept as one tree (no E axis) for step ``t + 1``."""
    checked("gamma", unit_interval, gamma)
    checked("decay", unit_interval, decay)
    checked("h_lr", positive_float, h_lr)
    checked("beta", non_negative_float, beta)
    if clip is not None:
        checked("clip", positive_float, clip)
    for name, value in (("envs", envs), ("features", features), ("actions", actions)):
        check_positive_int(name, value)

    def init(params):
        dtype = jax.tree.leaves(params)[0].dtype
        h = {"W": jnp.zeros((features, actions), dtype), "b": jnp.zeros((actions,), dtype)}
        return QRCState(h, jax.tree.map(lambda a: jnp.zeros((envs, *a.shape), dtype), h), jnp.zeros((envs,), dtype),
                        jax.tree.map(jnp.zeros_like, params), h)

    def update(ascent, state, params=None, *, delta, cut, done, grads, action, features, target_grads, **extra):
        e = state.h_sum
        correction = jax.tree.map(lambda c, a: c - gamma * a, state.carried,
                                  weighted_mean(jnp.where(done, 0.0, e), target_grads))
        h_ascent = jax.tree.map(lambda a, pull, w: a - pull - beta * w, weighted_mean(delta, state.h_traces),
                                state.h_pull, state.h)
        if clip is not None:
            h_ascent = optax.clip_by_global_norm(clip).update(h_ascent, optax.EmptyState())[0]
        h = jax.tree.map(lambda w, a: w + h_lr * a, state.h, h_ascent)
        onehot = jax.nn.one_hot(action, actions, dtype=features.dtype)
        value = (features @ h["W"] * onehot).sum(1) + onehot @ h["b"]  # h_t (E,)
        grad_h = {"W": features[:, :, None] * onehot[:, None, :], "b": onehot}
        keep = decay * jnp.where(cut, 0.0, 1.0)
        h_traces = jax.tree.map(lambda z, g: per_env(keep, z) * z + g, state.h_traces, grad_h)
        new = QRCState(h, h_traces, keep * e + value, weighted_mean(keep * e, grads), weighted_mean(value, grad_h))
        return Ascent(jax.tree.map(jnp.add, ascent.direction, correction), ascent.overshoot), new

    return optax.GradientTransformationExtraArgs(init, update)


# -- a run's rule ------------------------------------------------------------------------------------------------

def update_rule(name: str, *, lr: float, decay: float, envs: int, clip: float | None = 1.0, kappa: float = 2.0,
                every_k: int = 1, correction: optax.GradientTransformationExtraArgs | None = None,
                critic_lr: float | None = None, signed: float = 0.0,
                reaches: Callable[[Any], tuple[Any, Any]] | None = None, signed_statistics: bool = False
                ) -> optax.GradientTransformationExtraArgs:
    """The chain of a run: ``eligibility_traces(decay, envs)``, then the step-size rule ``name`` (``STEP_RULES``;
    ``lr`` is intentional's ``eta``); ``adam``, ``sgd`` and ``obgd`` take ``td_ascent``, the algorithm's
    ``correction`` of the ascent if any (QRC's, ``qrc``) and ``every(every_k)``, the per-environment rules take the
    traces themselves and refuse ``every_k > 1`` and a correction. ``critic_lr`` (``intentional`` only): the
    critic's constant, ``lr`` the actor's, in traces of their own (``split_intentional`` alone, no traces of the
    sum before it; ``reaches`` the leaves each side's gradient reaches, ``split_intentional``'s). ``signed`` > 0:
    the entropy term of that weight signed by the TD error inside the traces (``signed_entropy``; the actor's alone
    under ``critic_lr``), and with ``signed_statistics`` in intentional's step statistics too (the actor's under
    ``critic_lr``; ``intentional``'s ``signed``)."""
    if name not in STEP_RULES:
        raise ValueError(f"optimizer must be one of {sorted(STEP_RULES)}, got {name!r}")
    if critic_lr is not None and name != "intentional":
        raise ValueError(f"critic_lr is read by optimizer 'intentional' only, got optimizer {name!r}")
    if signed_statistics and (name != "intentional" or not signed):
        raise ValueError(f"signed_statistics needs optimizer 'intentional' and signed > 0 (the signed entropy term "
                         f"its statistics read), got optimizer {name!r}, signed {signed}")
    traces = eligibility_traces(decay, envs)  # the chain's first member: the loop reads its state (the traces)
    entropy = (signed_entropy(signed, decay, envs),) if signed and critic_lr is None else ()
    if name in PER_ENVIRONMENT:
        if correction is not None:
            raise ValueError(f"optimizer must be one of adam, sgd or obgd under an algorithm that corrects the TD "
                             f"ascent (qrc), got {name!r}")
        if every_k != 1:
            raise ValueError(f"update_every must be 1 under optimizer {name!r} (its step reads each step's traces), "
                             f"got {every_k}")
        if critic_lr is not None:  # its own two sets of traces: none of the sum before it
            return split_intentional(lr, critic_lr, decay, envs, signed, reaches, signed_statistics)
        rule = (adaptive_obgd(lr, kappa) if name == "adaptive_obgd" else
                intentional(lr, decay, signed=signed if signed_statistics else 0.0, envs=envs))
        return optax.chain(traces, *entropy, rule)
    # Adam and its clip on one flat vector (the ascent has no environment axis, so raveling it is cheap): a few
    # kernels a step instead of a few per parameter leaf (docs/performance-history.md, the streaming agent's step)
    step = obgd(lr, kappa) if name == "obgd" else descend(optax.flatten(make_optimizer(name, lr, clip)))
    corrected = () if correction is None else (correction,)
    return optax.chain(traces, *entropy, td_ascent(measure=name == "obgd"), *corrected, every(every_k, step))
