"""The online step: one call per time step, whose ordinary ``jax.grad`` is the method's gradient.

``learner.step(params, state, x)`` returns ``h`` and the next state. It is a ``custom_vjp``: its forward pass
advances the carry and the traces; its backward pass, given ``dL/dh``, back-propagates through this one step
only and turns a credit on a carry into a parameter gradient with the traces of that carry. Two equivalent ways:

* **new traces** (exact methods, and a rule whose definition it is, ``TraceRule.contracts_new_traces``: the
  cell's own e-prop; on a cell with ``output(params, carry_t, x_t) -> h_t``)::

      dL_t/dtheta = dL_t/dh_t * [ dh_t/dtheta |output + dh_t/dcarry_t * M_t ]

  The backward pass never touches the recurrence (only the input's gradient goes through it), and ``M_{t-1}``
  is dead once ``M_t`` is written, so XLA updates the traces in place instead of copying them every step.
* **previous traces** (any cell; approximations, because the last step's Jacobian is then taken exactly)::

      dL_t/dtheta = dL_t/dh_t * [ dh_t/dtheta |immediate + dh_t/dcarry_{t-1} * M_{t-1} ]

Either way any readout or loss built on ``h`` composes with ``jax.grad`` and optax, nothing is counted twice
within a step (the path carry -> h is taken once), and the state carries no gradient (its cotangent is
ignored). Summed over a sequence, an exact method's per-step gradients equal BPTT's.

A method's ``trace_dtype`` (e.g. ``"bfloat16"``) is the dtype the state keeps its traces in: the method's
update and contraction read them widened to the parameters' dtype, and the new traces are rounded to
``trace_dtype`` once per step (``stored``); the method itself never sees the narrow dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from rtrl import validate
from rtrl.capabilities import HasOutput
from rtrl.methods import TraceMethod, resolve
from rtrl.methods.base import bound
from rtrl.structure import old_values_read, passed_through, unread_as_none


def steps_per_body(learner, params, carry, x) -> int:
    """How many online steps of ``learner`` a scan over them should compile into one loop body: 2 where the
    cell's step passes a carry leaf on unchanged to another place (the IIR filters' ``z2' = z1``, ``y2' = y1``),
    or, under a method that gains from it (``two_steps_where_leaves_cross``: ``closed_form``; ``diagonal`` where
    the leaves are a complex recurrence's parts), where a leaf of the
    new carry reads the old value of another (an LRU's or RTU's rotation of its real and imaginary parts, a
    spiking neuron's reset: ``rtrl.structure.old_values_read``); else 1. With two steps per body those leaves and
    their traces alternate between two buffers, where one step per body makes XLA copy them every step
    (AdaptiveIIR2 64x256x32 closed_form: 7.3 ms against 2.3 ms a step, one thread; LRU closed_form 0.79x);
    where each leaf reads only itself, one step per body is the faster (ELSTM closed_form 0.65 ms against 0.88 ms,
    the tanh cell 134 us against 159 us), and ``diagonal`` on LIF was 1.7x to 2.0x slower with two (on LRU and
    RTU 0.84x to 1.03x).
    """
    jaxpr = jax.make_jaxpr(lambda c: learner.cell.step(params, c, x)[0])(carry).jaxpr
    if any(j is not None and j != i for i, j in enumerate(passed_through(jaxpr))):
        return 2
    crossed = any(leaves - {i} for i, leaves in enumerate(old_values_read(jaxpr)))
    return 2 if crossed and learner.method.two_steps_where_leaves_cross(learner.cell) else 1


# The contraction's loop over examples takes four per iteration: XLA then sums four examples' traces in one pass over
# the accumulator, with a quarter of the loop's per-iteration dispatch (64x256x32, one thread, a whole-sequence
# gradient per step: the tanh cell's diagonal 142 -> 126 us, ELSTM closed_form 569 -> 544 us; eight per iteration
# is no faster, the whole batch at once slower). The loop starts from zero so that B a multiple of four leaves no
# remainder, which XLA would fuse into the gradient's transpose.
CONTRACT_UNROLL = 4


class OnlineState(NamedTuple):
    carry: Any
    traces: Any


class Learner(NamedTuple):
    """``init(params, batch_shape=(), carry=None)``, ``step(params, state, x)``, ``reset(state, done)``; ``cell``
    and ``method`` (the method bound: ``auto`` resolved)."""

    cell: Any
    method: Any
    init: Callable
    step: Callable
    reset: Callable


def over_batch(fn: Callable, batch_ndim: int, in_axes) -> Callable:
    """``fn`` of one example mapped over ``batch_ndim`` leading batch dimensions."""
    for _ in range(batch_ndim):
        fn = jax.vmap(fn, in_axes=in_axes)
    return fn


def sum_batch(tree, batch_ndim: int):
    return jax.tree.map(lambda a: a.sum(axis=tuple(range(batch_ndim))), tree)


def contract_summed(contract: Callable, traces, g_carry, batch_ndim: int):
    """``sum over examples of contract(traces_i, g_i)``.

    On a CPU the examples are accumulated one after another: XLA turns the vmapped product followed by a sum over
    the leading batch axis into a strided reduction several times slower than streaming each example's traces
    once (ELSTM 64x256x32: 0.75 ms against about 0.2 ms a step). Elsewhere the vmapped form keeps the parallelism,
    and so it does under a mesh of several devices (``rtrl.devices.tracing``): there a loop over the examples would
    make XLA gather every device's traces onto each device at every step.
    """
    if batch_ndim == 0:
        return contract(traces, g_carry)
    examples = math.prod(jax.tree.leaves(g_carry)[0].shape[:batch_ndim])
    if jax.default_backend() != "cpu" or examples == 0 or partitioned():
        return sum_batch(over_batch(contract, batch_ndim, 0)(traces, g_carry), batch_ndim)
    flat = jax.tree.map(lambda a: a.reshape((examples,) + a.shape[batch_ndim:]), (traces, g_carry))

    def example(i):
        return contract(*jax.tree.map(lambda a: a[i], flat))

    def body(i, total):
        return jax.tree.map(jnp.add, total, example(i))

    zero = jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), jax.eval_shape(example, 0))
    return lax.fori_loop(0, examples, body, zero, unroll=CONTRACT_UNROLL)


def partitioned() -> bool:
    """Whether the step is being traced under a mesh of several devices (``jax.set_mesh``)."""
    mesh = jax.sharding.get_abstract_mesh()
    return not mesh.empty and mesh.size > 1


def stored(traces, dtype):
    """The floating leaves of ``traces`` in ``dtype`` (``None``: as they are); counters and flags stay."""
    if dtype is None:
        return traces
    return jax.tree.map(lambda a: a.astype(dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a, traces)


def zero_where(done: jax.Array, tree):
    """Zero every leaf's example where ``done`` (shape ``batch``) is true."""

    def leaf(a):
        mask = done.reshape(done.shape + (1,) * (a.ndim - done.ndim))
        return jnp.where(mask, jnp.zeros((), a.dtype), a)

    return jax.tree.map(leaf, tree)


def online(cell, method: str | TraceMethod = "rtrl") -> Learner:
    """The online learner of ``cell`` under a trace method (a name from ``rtrl.METHODS`` or an object), which is
    bound to the cell here, once (``method.bind(cell)``: ``rtrl.methods.TraceRule``); the learner's step wraps the
    bound rule's pure functions of one example, mapped over the batch.

    ``learner.init(params, batch_shape)`` makes the state in the parameters' dtype (promoted with ``carry``'s when
    one is given); ``learner.step`` computes in it and returns gradients in each parameter's own dtype, and refuses
    an ``x`` wider than the state (``rtrl.validate``: float16 parameters with float32 inputs need a float32 state,
    ``learner.init(params, carry=cell.initial_carry(batch_shape, jnp.float32))``)."""
    validate.check_cell(cell)
    method = resolve(method)
    if not method.online:
        raise ValueError(
            f"method {method.name!r} needs the whole sequence and has no online step; "
            "use rtrl.sequence_grad, or a trace method such as 'rtrl'"
        )
    rule = bound(method, cell)  # what the method needs of the cell, found once; ValueError where it does not apply

    def init(params, batch_shape: tuple[int, ...] = (), carry=None) -> OnlineState:
        if carry is None:
            dtype = jnp.result_type(*jax.tree.leaves(params))
            carry = cell.initial_carry(tuple(batch_shape), dtype)
        batch_ndim = jax.tree.leaves(carry)[0].ndim - 1
        traces = over_batch(lambda c: rule.init(params, c), batch_ndim, 0)(carry)
        return OnlineState(carry, stored(traces, rule.trace_dtype))

    def widened(params, traces):
        """The stored traces in the parameters' dtype, as the rule computes with them."""
        return traces if rule.trace_dtype is None else stored(traces, jnp.result_type(*jax.tree.leaves(params)))

    def advance(params, state, x):
        update = over_batch(lambda c, tr, xi: rule.update(params, c, tr, xi), jnp.ndim(x) - 1, 0)
        return stored(update(state.carry, widened(params, state.traces), x), rule.trace_dtype)

    def contract(params, traces, g_carry):
        if rule.sums_batch:  # the rule sums the batch itself
            return rule.to_params(params, rule.contract(params, widened(params, traces), g_carry))
        summed = contract_summed(lambda tr, g: rule.contract(params, widened(params, tr), g), traces,
                                 g_carry, jnp.ndim(jax.tree.leaves(g_carry)[0]) - 1)
        return rule.to_params(params, summed)

    def forward_new(params, state, x):
        cell.check_input(x)
        carry, recur_vjp = jax.vjp(lambda x: cell.step(params, state.carry, x)[0], x)
        traces = advance(params, state, x)
        h, output_vjp = jax.vjp(cell.output, params, carry, x)
        return (h, OnlineState(carry, traces)), (params, x, traces, recur_vjp, output_vjp)

    def backward_new(residuals, cotangents):
        params, x, traces, recur_vjp, output_vjp = residuals
        g_params, g_carry, g_x = output_vjp(cotangents[0])  # the next state carries no gradient
        credit = unread_as_none(lambda c: cell.output(params, c, x), g_carry)
        g_params = jax.tree.map(jnp.add, g_params, contract(params, traces, credit))
        g_x = g_x + recur_vjp(g_carry)[0]
        zero_state = OnlineState(jax.tree.map(jnp.zeros_like, g_carry), jax.tree.map(jnp.zeros_like, traces))
        return g_params, zero_state, g_x

    def forward_previous(params, state, x):
        cell.check_input(x)
        (carry, h), step_vjp = jax.vjp(cell.step, params, state.carry, x)
        return (h, OnlineState(carry, advance(params, state, x))), (params, state, step_vjp)

    def backward_previous(residuals, cotangents):
        params, state, step_vjp = residuals
        zero_carry = jax.tree.map(jnp.zeros_like, state.carry)
        g_params, g_carry, g_x = step_vjp((zero_carry, cotangents[0]))  # the next state carries no gradient
        g_params = jax.tree.map(jnp.add, g_params, contract(params, state.traces, g_carry))
        return g_params, jax.tree.map(jnp.zeros_like, state), g_x

    forward, backward = ((forward_new, backward_new) if rule.contracts_new_traces and isinstance(cell, HasOutput)
                         else (forward_previous, backward_previous))

    @jax.custom_vjp
    def step(params, state, x):
        return forward(params, state, x)[0]

    step.defvjp(forward, backward)

    def reset(state: OnlineState, done: jax.Array) -> OnlineState:
        if not isinstance(state, OnlineState):
            raise TypeError(f"state must be the OnlineState that learner.init returns, got {validate.what(state)}")
        batch_shape = jax.tree.leaves(state.carry)[0].shape[:-1]
        try:
            flags = jnp.asarray(done)
        except TypeError:  # a string, None, an object: said below, not in JAX's words
            flags = None
        if flags is None or flags.shape != batch_shape or flags.dtype != jnp.bool_:
            got = validate.what(done) if flags is None else f"{flags.dtype} {flags.shape}"
            raise ValueError(f"done must be a bool array of the batch shape {batch_shape}, got {got}")
        done = flags
        return OnlineState(zero_where(done, state.carry), zero_where(done, state.traces))

    return Learner(cell, rule.method, *validate.online(cell, rule.method, init, step, OnlineState), reset)


def accumulate(step_loss: Callable, params, state, data, unroll: int = 1):
    """The per-step gradients of a stream summed over its steps, in constant memory: the one gradient-accumulating
    driver (``stream_grad``, the trainer's windows).

    ``step_loss(params, state, d) -> (loss, (next_state, out))`` is one step on ``d``, an element of ``data``
    along its leading axis (time); ``jax.grad`` of ``loss`` w.r.t. ``params`` is that step's gradient (through
    ``learner.step``: the method's). Returns ``(state, grads, outs)``: the last state, the sum of the gradients
    (added in step order) and each step's ``out`` stacked. ``unroll`` steps are compiled into one loop body
    (``steps_per_body``)."""

    def body(acc, d):
        state, grads = acc
        (_, (state, out)), g = jax.value_and_grad(step_loss, has_aux=True)(params, state, d)
        return (state, jax.tree.map(jnp.add, grads, g)), out

    (state, grads), outs = lax.scan(body, (state, jax.tree.map(jnp.zeros_like, params)), data, unroll=unroll)
    return state, grads, outs


def stream_grad(learner: Learner, params, state: OnlineState, xs, targets, loss_fn):
    """Sum of losses and of per-step gradients over ``xs`` (T, ...), in constant memory; and the last state."""
    if not isinstance(learner, Learner):
        raise TypeError(f"learner must be a rtrl.online(cell, method) learner, got {validate.what(learner)}")
    validate.check_sequence(learner.cell, xs, targets)
    xs = jnp.asarray(xs)
    h = jax.eval_shape(lambda p, s, x: learner.step(p, s, x)[0], params, state, xs[0])
    loss = validate.check_loss(loss_fn, h, jax.tree.map(lambda a: a[0], targets))

    def step_loss(p, running, xy):
        state, total = running  # the loss is summed in step order too
        h, state = learner.step(p, state, xy[0])
        value = loss_fn(h, xy[1])
        return value, ((state, total + value), None)

    (state, loss), grads, _ = accumulate(step_loss, params, (state, jnp.zeros((), loss.dtype)), (xs, targets),
                                         unroll=steps_per_body(learner, params, state.carry, xs[0]))
    return loss, grads, state


__all__ = ["Learner", "OnlineState", "online", "stream_grad"]
