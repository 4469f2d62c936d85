"""Exact RTRL for element-wise cells, found automatically: traces of parameter size times state order.

A step is element-wise when every carry leaf is a vector over the same ``N`` neurons, neuron ``k``'s next carry
depends on no other neuron's carry, and every parameter entry reaches at most one neuron in one step
(``rtrl.structure.elementwise`` finds this, and which neuron each entry reaches, from the step function alone:
any parameter names and shapes, no declaration). Then, per carry leaf ``s`` and neuron ``k``, the Jacobians of
one step are::

    J[t, s]_k = dc'_{t,k} / dc_{s,k}   (N,)          I[t]_q = dc'_{t,k(q)} / dtheta_q   (the shape of theta)

where ``k(q)`` is the neuron parameter entry ``q`` reaches. Forward mode gives each ``J[:, s]`` at once (a
``jvp`` with an all-ones tangent on carry leaf ``s``), reverse mode each ``I[t]`` at once (a ``vjp`` with an
all-ones cotangent on new leaf ``t``: entry ``q`` collects only its own neuron's derivative), except for a
per-neuron vector ``(N,)``, whose ``I[:, theta]`` a ``jvp`` with an all-ones tangent on it gives (the same tangent
for every example, so what depends on the parameters alone is differentiated once a step). The traces
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

Three patterns found in the step keep fewer numbers (``rtrl.structure.Elementwise``; derivations in
docs/derivations.md, "Structure that shrinks automatic traces"): a carry leaf that reads no carry, and its
copies (a delay line: IIR2's ``z1, z2``), keeps the input it was made from and a flag instead of traces
(``traces["inputs"][leaf] = {"x", "n"}``; its sensitivities are a vjp at that input); of two parameters whose
traces are ``i`` times one another's on a holomorphic recurrence's parts (the LRU's ``B_re, B_im``) only one
keeps traces; parameters that reach such a pair only through a multiplier ``lambda`` independent of the carry
and input (the LRU's ``nu, theta``) share one ``Q = ds/dlambda`` (``traces["multipliers"]["re+im"]``).
The other traces are ``traces["params"][param][carry leaf]``.
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
    """Exact element-wise RTRL for any cell whose step is element-wise; traces ``{"params": {param: {carry leaf:
    array}}, "inputs": {carry leaf: {"x", "n"}}}``."""

    name: ClassVar[str] = "diagonal"
    exact: ClassVar[bool] = True

    def check(self, cell) -> None:
        require(cell)

    def two_steps_where_leaves_cross(self, cell) -> bool:
        """Where the crossing leaves are a complex recurrence's parts (a ``Pair`` found: the LRU's and the linear
        RTU's rotation), not a spiking reset: whole-sequence gradient, one thread, busy 2-core CPU, 32x64x8 and
        64x256x32, against one step per body: LRU 0.90x to 1.03x, RTU 0.84x to 0.89x, LIF 1.7x to 2.0x."""
        found = find(cell)
        return not isinstance(found, structure.NotElementwise) and bool(found.pairs)

    def bind(self, cell, params=None, carry=None) -> TraceRule:
        params, carry = example_shapes(cell, params, carry)
        found = require(cell, params, carry)
        step = structure.carry_step(cell, structure.spec(params), structure.spec(carry))
        return TraceRule(self, functools.partial(zero_traces, found, cell.input_size),
                         functools.partial(advance, step, found),
                         functools.partial(contract, step, found, cell.input_size), functools.partial(to_params, found))


def kept(found: structure.Elementwise) -> dict[int, tuple[int, ...]]:
    """``{parameter leaf: the carry leaves whose traces it keeps}``: none for a readout or a pair's follower."""
    shared = {pair.follower for pair in found.pairs} | {j for m in found.multipliers for j in m.params}
    return {j: found.traced(j) for j in range(len(found.param_names)) if found.traced(j) and j not in shared}


def multiplier_key(found: structure.Elementwise, m: structure.Multiplier) -> str:
    return f"{found.carry_names[m.re]}+{found.carry_names[m.im]}"


def kept_inputs(found: structure.Elementwise) -> tuple[int, ...]:
    """The carry leaves kept as their inputs: the stored inputs that some parameter reaches."""
    return tuple(t for t, s in enumerate(found.stored) if s is not None and any(t in r for r in found.reach))


def per_neuron(found: structure.Elementwise, j: int, leaf) -> bool:
    """Whether parameter leaf ``j`` is a per-neuron vector: entry ``k`` reaches neuron ``k`` and no other entry does."""
    return isinstance(found.placement[j], int) and jnp.shape(leaf) == (found.neurons,)


def zero_traces(found: structure.Elementwise, input_size: int, params, carry):
    p_leaves = jax.tree.leaves(params)
    dtype = jnp.result_type(*p_leaves, *jax.tree.leaves(carry))
    traces = {found.param_names[j]: {found.carry_names[t]: to_trace(jnp.zeros(jnp.shape(p_leaves[j]), dtype),
                                                                    found.placement[j]) for t in leaves}
              for j, leaves in kept(found).items()}
    none = {"x": jnp.zeros((input_size,), dtype), "n": jnp.zeros((), dtype)}  # the flag: 0 until a step has run
    zero = jnp.zeros((found.neurons,), dtype)
    return {"params": traces, "inputs": {found.carry_names[t]: none for t in kept_inputs(found)},
            "multipliers": {multiplier_key(found, m): {found.carry_names[m.re]: zero, found.carry_names[m.im]: zero}
                            for m in found.multipliers}}


def at_stored_input(step, found: structure.Elementwise, p_leaves, stored, t):
    """``cotangent -> {parameter leaf: array}``: the sensitivities of stored leaf ``t`` (a leaf that reads no
    carry, at the input it was made from, or none before the first step) against a per-neuron ``cotangent``."""
    source = found.stored[t][0]
    readers = sorted(found.direct[source])
    zeros = [jnp.zeros((found.neurons,), stored["x"].dtype)] * len(found.carry_names)  # the source reads no carry

    def leaf(*read):
        chosen = dict(zip(readers, read, strict=True))
        return step(*[chosen.get(i, p) for i, p in enumerate(p_leaves)], *zeros, stored["x"])[source]

    out, pull = jax.vjp(leaf, *[p_leaves[j] for j in readers])
    return lambda cotangent: dict(zip(readers, pull((stored["n"] * cotangent).astype(out.dtype)), strict=True))


def advance(step, found: structure.Elementwise, params, carry, traces, x):
    """The traces of ``step(params, carry, x)``'s new carry (the update in the module docstring)."""
    p_leaves, c_leaves = jax.tree.leaves(params), jax.tree.leaves(carry)
    S, names = len(c_leaves), found.carry_names

    def replaced(leaves, j, a):
        return [a if i == j else leaf for i, leaf in enumerate(leaves)]

    @functools.cache
    def column(s):
        """``J[:, s]``: a jvp with an all-ones tangent on carry leaf ``s`` alone, so only its paths are
        differentiated (XLA re-evaluates each column inside every trace update it fuses into)."""
        return jax.jvp(lambda a: step(*p_leaves, *replaced(c_leaves, s, a), x), (c_leaves[s],),
                       (jnp.ones_like(c_leaves[s]),))[1]

    @functools.cache
    def tangent(j):
        """``I[:, j]`` of a per-neuron parameter leaf ``j`` (entry ``k`` reaches neuron ``k``, its only one): a jvp
        with an all-ones tangent on it, so what depends on the parameters alone is differentiated once a step
        rather than once per example as a vjp's per-example cotangent would."""
        return jax.jvp(lambda a: step(*replaced(p_leaves, j, a), *c_leaves, x), (p_leaves[j],),
                       (jnp.ones_like(p_leaves[j]),))[1]

    @functools.cache
    def immediate(t):
        """``I[t]`` for every parameter leaf that new leaf ``t`` reads: a per-neuron leaf's from its jvp, the
        others' from one vjp, an all-ones cotangent."""
        vectors = {j: tangent(j)[t] for j in found.direct[t] if per_neuron(found, j, p_leaves[j])}
        readers = sorted(found.direct[t] - set(vectors))
        if not readers:
            return vectors

        def leaf_t(*read):
            chosen = dict(zip(readers, read, strict=True))
            return step(*[chosen.get(i, p) for i, p in enumerate(p_leaves)], *c_leaves, x)[t]

        out, pull = jax.vjp(leaf_t, *[p_leaves[j] for j in readers])
        return {**vectors, **dict(zip(readers, pull(jnp.ones_like(out)), strict=True))}

    @functools.cache
    def through_stored(t, s):
        """``J[t, s] e[s]`` for every parameter leaf, ``s`` a stored leaf: its sensitivities at its input."""
        return at_stored_input(step, found, p_leaves, traces["inputs"][names[s]], s)(column(s)[t])

    new = {}
    for j, leaves in kept(found).items():
        name, place = found.param_names[j], found.placement[j]
        trace, along = traces["params"][name], trace_placement(place, jnp.ndim(p_leaves[j]))
        new[name] = {}
        for t in leaves:
            terms = [structure.spread(column(s)[t], along) * trace[names[s]] for s in range(S)
                     if s in found.deps[t] and names[s] in trace]
            terms += [to_trace(through_stored(t, s)[j], place) for s in range(S)
                      if s in found.deps[t] and names[s] in traces["inputs"] and j in through_stored(t, s)]
            if j in found.direct[t]:
                terms.append(to_trace(immediate(t)[j], place))
            new[name][names[t]] = functools.reduce(operator.add, terms)
    inputs, one = {}, jnp.ones((), x.dtype)
    delayed = {found.stored[t]: names[t] for t in kept_inputs(found)}
    for t in kept_inputs(found):
        source, delay = found.stored[t]
        inputs[names[t]] = {"x": x, "n": one} if delay == 1 else traces["inputs"][delayed[source, delay - 1]]
    multipliers = {}
    for m in found.multipliers:  # Q' = lambda Q + s, lambda's parts from the columns
        Q = traces["multipliers"][multiplier_key(found, m)]
        q_r, q_i = Q[names[m.re]], Q[names[m.im]]
        multipliers[multiplier_key(found, m)] = {
            names[m.re]: column(m.re)[m.re] * q_r + column(m.im)[m.re] * q_i + c_leaves[m.re],
            names[m.im]: column(m.re)[m.im] * q_r + column(m.im)[m.im] * q_i + c_leaves[m.im]}
    return {"params": new, "inputs": inputs, "multipliers": multipliers}


def contract(step, found: structure.Elementwise, input_size: int, params, traces, g_carry):
    """``dL/dtheta_q = sum_s g_{s,k(q)} e[theta][s]_q``, in the traces' layout: a pair's follower from its
    leader's traces, a stored leaf's sensitivities at its input."""
    g = dict(zip(found.carry_names, structure.credit_leaves(g_carry), strict=True))
    p_leaves, p_tree = jax.tree.flatten(params)
    along = [trace_placement(place, jnp.ndim(p)) for p, place in zip(p_leaves, found.placement, strict=True)]
    total = [[] for _ in p_leaves]
    for j in kept(found):
        for s, e in traces["params"][found.param_names[j]].items():
            if g[s] is not None:  # no credit on that leaf: skip its traces
                total[j].append(structure.spread(g[s], along[j]) * e)
    for pair in found.pairs:  # e_f[re] = -sign e_l[im], e_f[im] = sign e_l[re]
        e = traces["params"][found.param_names[pair.leader]]
        re, im = found.carry_names[pair.re], found.carry_names[pair.im]
        if g[im] is not None:
            total[pair.follower].append(pair.sign * structure.spread(g[im], along[pair.follower]) * e[re])
        if g[re] is not None:
            total[pair.follower].append(-pair.sign * structure.spread(g[re], along[pair.follower]) * e[im])
    for t in kept_inputs(found):
        if g[found.carry_names[t]] is not None:
            sensitivities = at_stored_input(step, found, p_leaves, traces["inputs"][found.carry_names[t]], t)
            for j, a in sensitivities(g[found.carry_names[t]]).items():
                total[j].append(to_trace(a, found.placement[j]))
    for m in found.multipliers:  # Re(conj(g) Q dlambda/dtheta) = A dRe lambda/dtheta + B dIm lambda/dtheta
        Q = traces["multipliers"][multiplier_key(found, m)]
        g_r, g_i = g[found.carry_names[m.re]], g[found.carry_names[m.im]]
        if g_r is None and g_i is None:
            continue
        q_r, q_i = Q[found.carry_names[m.re]], Q[found.carry_names[m.im]]
        g_r, g_i = (jnp.zeros_like(q_r) if a is None else a for a in (g_r, g_i))
        zero_rest = [jnp.zeros_like(q_r)] * len(found.carry_names) + [jnp.zeros((input_size,), q_r.dtype)]
        pull = structure.multiplier_vjp(step, p_leaves, zero_rest, m.re, m.im, m.params)
        for j, a in pull(g_r * q_r + g_i * q_i, g_i * q_r - g_r * q_i).items():
            total[j].append(to_trace(a, found.placement[j]))
    grads = [functools.reduce(operator.add, terms) if terms else to_trace(jnp.zeros_like(p), place)
             for terms, p, place in zip(total, p_leaves, found.placement, strict=True)]
    return jax.tree.unflatten(p_tree, grads)


def to_params(found: structure.Elementwise, params, grads):
    leaves, tree = jax.tree.flatten(grads)
    return jax.tree.unflatten(tree, [to_param(g, place) for g, place in zip(leaves, found.placement, strict=True)])
