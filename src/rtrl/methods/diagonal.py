"""Exact RTRL for element-wise cells, found automatically: traces of parameter size times state order.

A step is element-wise when every carry leaf is a vector over the same ``N`` neurons, neuron ``k``'s next carry
depends on no other neuron's carry, and every parameter entry reaches at most one neuron in one step
(``rtrl.structure.elementwise`` finds this, and which neuron each entry reaches, from the step function alone:
any parameter names and shapes, no declaration). Then, per carry leaf ``s`` and neuron ``k``, the Jacobians of
one step are::

    J[t, s]_k = dc'_{t,k} / dc_{s,k}   (N,)          I[t]_q = dc'_{t,k(q)} / dtheta_q   (the shape of theta)

where ``k(q)`` is the neuron parameter entry ``q`` reaches. Forward mode gives each ``J[:, s]`` at once (a
``jvp`` with an all-ones tangent on carry leaf ``s``), reverse mode each ``I[t]`` at once (a ``vjp`` with an
all-ones cotangent on new leaf ``t``: entry ``q`` collects only its own neuron's derivative). The traces
``e[theta][s]_q = dc_{s,k(q)} / dtheta_q`` (the shape of ``theta``) follow::

    e'[theta][t] = sum_s J[t, s]_{k(q)} e[theta][s] + I[t]

and a credit ``g`` on the carry they describe gives ``dL/dtheta_q = sum_s g_{s,k(q)} e[theta][s]_q``; a
parameter that reaches no carry (a readout) keeps no traces, its gradient is the immediate one. A parameter
keeps traces only for the carry leaves it reaches (found in the step's jaxpr, so exactly), and the sums run
over the ``J[t, s]`` that are not structurally zero: IIR2's feedback coefficients reach ``y1, y2`` but not
``z1, z2``. Traces are keyed ``{parameter path: {carry leaf name: array}}``; each array is its parameter moved
neuron axis first where entry ``k`` along one axis reaches neuron ``k`` (a projection (D, N) keeps an (N, D)
trace: every term of the update is then a per-neuron factor that XLA computes once per row instead of once per
entry), and of the parameter's shape otherwise.
"""

from __future__ import annotations

import functools
import operator
from typing import ClassVar

import jax
import jax.numpy as jnp

from rtrl import structure
from rtrl.methods.base import TraceMethod, TraceRule, example_shapes


def find(cell, params=None, carry=None) -> structure.Elementwise | structure.NotElementwise:
    """The cell's element-wise structure (see ``rtrl.structure.elementwise``), or why it has none."""
    params, carry = example_shapes(cell, params, carry)
    return structure.elementwise(cell, structure.spec(params), structure.spec(carry))


def require(cell, params=None, carry=None) -> structure.Elementwise:
    found = find(cell, params, carry)
    if isinstance(found, structure.NotElementwise):
        raise ValueError(f"method 'diagonal' needs a cell whose recurrence is element-wise, and {cell.name} is not "
                         f"one: {found.reason}; use 'rtrl' (exact for any cell)")
    return found


def trace_placement(place, ndim: int):
    """Where a trace's entries reach neurons: its first axis when the parameter's ``place`` is an axis."""
    return -ndim if isinstance(place, int) else place


def to_trace(a: jax.Array, place) -> jax.Array:
    """A parameter-shaped array in its trace's layout (neuron axis first)."""
    return jnp.moveaxis(a, place, 0) if isinstance(place, int) else a


def to_param(a: jax.Array, place) -> jax.Array:
    return jnp.moveaxis(a, 0, place) if isinstance(place, int) else a


class Diagonal(TraceMethod):
    """Exact element-wise RTRL for any cell whose step is element-wise; traces ``{param: {carry leaf: array}}``."""

    name: ClassVar[str] = "diagonal"
    exact: ClassVar[bool] = True

    def check(self, cell) -> None:
        require(cell)

    def bind(self, cell, params=None, carry=None) -> TraceRule:
        found = require(cell, params, carry)
        return TraceRule(self, functools.partial(zero_traces, found), functools.partial(advance, cell, found),
                         functools.partial(contract, found), functools.partial(to_params, found))


def zero_traces(found: structure.Elementwise, params, carry):
    p_leaves = jax.tree.leaves(params)
    dtype = jnp.result_type(*p_leaves, *jax.tree.leaves(carry))
    zero = [to_trace(jnp.zeros(jnp.shape(p), dtype), place) for p, place in zip(p_leaves, found.placement,
                                                                                 strict=True)]
    return {found.param_names[j]: {found.carry_names[s]: zero[j] for s in found.reach[j]}
            for j in range(len(p_leaves)) if found.reach[j]}


def advance(cell, found: structure.Elementwise, params, carry, traces, x):
    """The traces of ``step(params, carry, x)``'s new carry (the update in the module docstring)."""
    p_leaves, p_tree = jax.tree.flatten(params)
    c_leaves, c_tree = jax.tree.flatten(carry)
    S = len(c_leaves)

    def new_carry(p_leaves, c_leaves):
        return jax.tree.leaves(cell.step(jax.tree.unflatten(p_tree, p_leaves), jax.tree.unflatten(c_tree, c_leaves),
                                         x)[0])

    def replaced(leaves, j, a):
        return [a if i == j else leaf for i, leaf in enumerate(leaves)]

    @functools.cache
    def column(s):
        """``J[:, s]``: a jvp with an all-ones tangent on carry leaf ``s`` alone, so only its paths are
        differentiated (XLA re-evaluates each column inside every trace update it fuses into)."""
        return jax.jvp(lambda a: new_carry(p_leaves, replaced(c_leaves, s, a)), (c_leaves[s],),
                       (jnp.ones_like(c_leaves[s]),))[1]

    @functools.cache
    def immediate(t):
        """``I[t]`` for every parameter leaf that new leaf ``t`` reads: one vjp, an all-ones cotangent."""
        readers = sorted(found.direct[t])

        def leaf_t(*read):
            chosen = dict(zip(readers, read, strict=True))
            return new_carry([chosen.get(i, p) for i, p in enumerate(p_leaves)], c_leaves)[t]

        out, pull = jax.vjp(leaf_t, *[p_leaves[j] for j in readers])
        return dict(zip(readers, pull(jnp.ones_like(out)), strict=True))

    new = {}
    for j, name in enumerate(found.param_names):
        if name not in traces:
            continue
        trace, place = traces[name], found.placement[j]
        along = trace_placement(place, jnp.ndim(p_leaves[j]))
        new[name] = {}
        for t in found.reach[j]:
            target = found.carry_names[t]
            terms = [structure.spread(column(s)[t], along) * trace[found.carry_names[s]]
                     for s in range(S) if s in found.deps[t] and found.carry_names[s] in trace]
            if j in found.direct[t]:
                terms.append(to_trace(immediate(t)[j], place))
            new[name][target] = functools.reduce(operator.add, terms)
    return new


def contract(found: structure.Elementwise, params, traces, g_carry):
    """``dL/dtheta_q = sum_s g_{s,k(q)} e[theta][s]_q``, in the traces' layout."""
    g = dict(zip(found.carry_names, structure.credit_leaves(g_carry), strict=True))
    p_leaves, p_tree = jax.tree.flatten(params)
    grads = []
    for j, (name, p) in enumerate(zip(found.param_names, p_leaves, strict=True)):
        along = trace_placement(found.placement[j], jnp.ndim(p))
        total = to_trace(jnp.zeros_like(p), found.placement[j])
        for s, e in traces.get(name, {}).items():
            if g[s] is not None:  # no credit on that leaf: skip its traces
                total = total + structure.spread(g[s], along) * e
        grads.append(total)
    return jax.tree.unflatten(p_tree, grads)


def to_params(found: structure.Elementwise, params, grads):
    leaves, tree = jax.tree.flatten(grads)
    return jax.tree.unflatten(tree, [to_param(g, place) for g, place in zip(leaves, found.placement, strict=True)])
