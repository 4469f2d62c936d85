"""Structure discovery: what a cell's step can reach, read from its jaxpr or probed, outside the traced computation.

Every trace method asks the same few questions of a cell's step, and this module answers them once:

* ``structural_dependencies(fn, *args)``: which inputs each output of ``fn`` can depend on, from its jaxpr
  (structural, so exact; conservative through nested calls). The online step uses it to find the carry leaves
  that ``output`` reads; ``diagonal`` to find which parameters reach which carry leaves.
* ``jacobian_supports(cell, ...)``: the supports of the one-step Jacobians ``I = d carry'/d params`` (C, P) and
  ``J = d carry'/d carry`` (C, C), probed at ``PROBES`` random points (an entry that vanishes at every probe,
  e.g. a relu unit inactive at all of them, chance ``2**-PROBES``, counts as zero). SnAp's patterns come from it.
* ``elementwise(cell, ...)``: whether the step is element-wise (every carry leaf a vector over the same N
  neurons, the carry coupled only within a neuron, every parameter entry reaching at most one neuron in one
  step), and if so which neuron each parameter entry reaches (an ``Elementwise``; else a ``NotElementwise``
  saying why): what ``diagonal`` needs, from the step alone. An entry that the jaxpr says depends on the carry
  (or reaches it) but whose derivative is zero at every probe reaches neurons unknown: the step then counts as
  not element-wise (dense traces, exact all the same).
* ``flat_step(cell, params, carry, x)``: the carry update as a function of flat vectors, for the methods that
  carry matrices over the flattened carry and parameters (dense RTRL, SnAp, e-prop, UORO).

And one policy: a credit leaf ``None`` means *no credit on that carry leaf*. The online step passes ``None``
for the leaves that ``output`` does not read (``unread_as_none``); a method either skips those leaves' traces
or, when it works on the flattened carry, reads them as zeros through ``flat_credit``.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.core import Literal
from jax.flatten_util import ravel_pytree

PROBES = 32


# -- jaxpr dependencies ---------------------------------------------------------------------------------------
def structural_dependencies(fn: Callable, *args) -> list[frozenset[int]]:
    """For each output leaf of ``fn(*args)``, the positional arguments it can depend on, read from its jaxpr
    (conservative: a nested call depends on all of its inputs). ``args`` may be arrays or shape structs."""
    return jaxpr_dependencies(jax.make_jaxpr(fn)(*args).jaxpr)


def passed_through(jaxpr) -> list[int | None]:
    """For each output of ``jaxpr``, the input it returns unchanged (an index), or ``None``."""
    index = {v: i for i, v in enumerate(jaxpr.invars)}
    return [None if isinstance(v, Literal) else index.get(v) for v in jaxpr.outvars]


def jaxpr_dependencies(jaxpr) -> list[frozenset[int]]:
    """``structural_dependencies`` of a jaxpr."""
    return dependencies_cut_at(jaxpr, set())


def old_values_read(jaxpr) -> list[frozenset[int]]:
    """For each output of a step's ``jaxpr`` (its outputs the next values of its inputs), the inputs whose old
    value it reads, not counting reads through another output's new value (a layer that reads the new carry of
    the layer below does not read its old one); conservative as ``jaxpr_dependencies``."""
    return dependencies_cut_at(jaxpr, {v for v in jaxpr.outvars if not isinstance(v, Literal)} - set(jaxpr.invars))


def dependencies_cut_at(jaxpr, cut) -> list[frozenset[int]]:
    """``jaxpr_dependencies``, where a later equation's read of a variable in ``cut`` depends on nothing."""
    deps = {v: frozenset([i]) for i, v in enumerate(jaxpr.invars)}

    def of(v):
        return frozenset() if isinstance(v, Literal) else deps.get(v, frozenset())

    def read(v):
        return frozenset() if not isinstance(v, Literal) and v in cut else of(v)

    for eqn in jaxpr.eqns:
        d = frozenset().union(*(read(v) for v in eqn.invars))
        deps.update({v: d for v in eqn.outvars})
    return [of(v) for v in jaxpr.outvars]


def leaf_names(tree) -> list[str]:
    """A readable name per leaf (``"y1"``, ``"0/c"``; ``"carry"`` for a bare array)."""
    paths = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [jax.tree_util.keystr(path, simple=True, separator="/") or "carry" for path, _ in paths]


# -- the credit policy ----------------------------------------------------------------------------------------
def unread_as_none(output: Callable, g_carry):
    """``g_carry`` with ``None`` for the leaves that ``output(carry)`` does not read (found in its jaxpr): their
    credit is zero, so a method may skip their traces instead of multiplying them by zeros."""
    leaves, tree = jax.tree.flatten(g_carry)
    read = set().union(*structural_dependencies(lambda *c: output(jax.tree.unflatten(tree, c)), *leaves))
    return jax.tree.unflatten(tree, [g if i in read else None for i, g in enumerate(leaves)])


def credit_leaves(g_carry) -> list:
    """The leaves of a credit, ``None`` (no credit) included, in the carry's leaf order."""
    return jax.tree.leaves(g_carry, is_leaf=lambda a: a is None)


def flat_credit(g_carry, carry_like) -> jax.Array:
    """The credit as one flat vector in ``ravel_pytree(carry_like)``'s order, a ``None`` leaf read as zeros."""
    like, tree = jax.tree.flatten(carry_like)
    leaves = [jnp.zeros_like(t) if g is None else g for t, g in zip(like, credit_leaves(g_carry), strict=True)]
    return ravel_pytree(jax.tree.unflatten(tree, leaves))[0]


# -- the flattened step ---------------------------------------------------------------------------------------
def flat_step(cell, params, carry, x):
    """``(f, p, c, unravel_params)``: the carry update ``c' = f(p, c)`` over flat vectors at input ``x``."""
    flat_p, unravel_p = ravel_pytree(params)
    flat_c, unravel_c = ravel_pytree(carry)

    def f(p, c):
        return ravel_pytree(cell.step(unravel_p(p), unravel_c(c), x)[0])[0]

    return f, flat_p, flat_c, unravel_p


def step_jacobians(cell, params, carry, x) -> tuple[jax.Array, jax.Array]:
    """``(I, J)``: ``d carry'/d params`` (C, P) and ``d carry'/d carry`` (C, C) of one step, flattened, by
    reverse mode (a step has fewer outputs, C, than parameters, P)."""
    f, flat_p, flat_c, _ = flat_step(cell, params, carry, x)
    return jax.jacrev(f, argnums=(0, 1))(flat_p, flat_c)


# -- probing --------------------------------------------------------------------------------------------------
def spec(tree):
    """A hashable description of a pytree's structure and shapes (static under jit); supports ignore dtypes."""
    leaves, treedef = jax.tree.flatten(tree)
    return treedef, tuple(tuple(jnp.shape(a)) for a in leaves)


def concrete(fn: Callable, *args):
    """``jax.jit(fn)(*args)`` for concrete ``args``, evaluated now even when called while a method is being
    traced (a compiled executable is not staged into the enclosing trace)."""
    return jax.jit(fn).lower(*args).compile()(*args)


def probe_points(shapes) -> list[np.ndarray]:
    """``PROBES`` random points (leading axis) of arrays of the given shapes, drawn with NumPy in the widest float
    JAX allows, at a scale that keeps pre-activations O(1): they are sums of up to max(size) products of two
    probe values, so each value has variance ``max(size) ** -0.5``."""
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    scale = max(int(np.prod(s)) for s in shapes) ** -0.25
    rng = np.random.default_rng(0)
    return [(scale * rng.standard_normal((PROBES, *s))).astype(dtype) for s in shapes]


@functools.lru_cache(maxsize=32)
def jacobian_supports(cell, params_spec, carry_spec) -> tuple[np.ndarray, np.ndarray]:
    """Supports of the immediate (C, P) and recurrence (C, C) Jacobians of ``cell.step`` for one example, probed
    at ``PROBES`` random points."""
    (p_def, p_shapes), (c_def, c_shapes) = params_spec, carry_spec
    probes = probe_points([*p_shapes, *c_shapes, (cell.input_size,)])

    def abs_jacobians(leaves):
        params = jax.tree.unflatten(p_def, leaves[: len(p_shapes)])
        carry = jax.tree.unflatten(c_def, leaves[len(p_shapes): -1])
        return jax.tree.map(jnp.abs, step_jacobians(cell, params, carry, leaves[-1]))

    def total(probes):  # a loop, not a vmap: one probe's Jacobians in memory at a time
        def add(i, acc):
            return jax.tree.map(jnp.add, acc, abs_jacobians([a[i] for a in probes]))

        zero = jax.tree.map(jnp.zeros_like, jax.eval_shape(abs_jacobians, [a[0] for a in probes]))
        return lax.fori_loop(0, PROBES, add, zero)

    immediate, recurrence = concrete(total, probes)
    return np.asarray(immediate) > 0, np.asarray(recurrence) > 0


def reach(recurrence: np.ndarray, pattern: np.ndarray, steps: int) -> np.ndarray:
    """The entries that ``steps`` more steps of the connectivity ``recurrence`` (C, C) carry ``pattern`` to."""
    recurrence = recurrence.astype(np.float32)
    for _ in range(steps):
        pattern = pattern | (recurrence @ pattern.astype(np.float32) > 0)
    return pattern


# -- element-wise structure -----------------------------------------------------------------------------------
class Elementwise(NamedTuple):
    """The element-wise structure of a cell's step for one example (leaves in ``jax.tree.leaves`` order).

    ``placement[j]`` says which neuron each entry of parameter leaf ``j`` reaches in one step: ``None`` (no entry
    reaches the carry: a readout), an int ``axis`` (entry ``k`` along that axis reaches neuron ``k``, as for a
    ``(D, N)`` projection or an ``(N,)`` vector), or an int array of the leaf's shape (-1: none). ``reach[j]``
    lists the carry leaves whose sensitivity to leaf ``j`` is not structurally zero (reached directly or through
    other leaves); ``direct[t]`` the parameter leaves new carry leaf ``t`` reads, ``deps[t]`` the carry leaves.

    Two economies (docs/derivations.md, "Structure that shrinks automatic traces"): ``stored[t]`` is
    ``(source, delay)`` where carry leaf ``t`` is a delayed input, the value that leaf ``source`` (which reads no
    carry) took ``delay`` steps ago: its sensitivities are those of one step at that input, so a method keeps the
    input instead of traces (``None`` for the other leaves); ``pairs`` lists the ``Pair``s of parameter leaves
    whose traces are ``i`` times one another's, on two carry leaves that hold a holomorphic recurrence's real and
    imaginary parts; ``multipliers`` the ``Multiplier``s, the parameter leaves that reach such a pair only
    through its recurrence's multiplier ``lambda``, whose traces are one complex trace times ``dlambda/dtheta``."""

    neurons: int
    carry_names: tuple[str, ...]
    param_names: tuple[str, ...]
    placement: tuple[Any, ...]
    reach: tuple[tuple[int, ...], ...]
    direct: tuple[frozenset[int], ...]
    deps: tuple[frozenset[int], ...]
    stored: tuple[tuple[int, int] | None, ...]
    pairs: tuple[Pair, ...]
    multipliers: tuple[Multiplier, ...]

    def traced(self, j: int) -> tuple[int, ...]:
        """The carry leaves whose traces of parameter leaf ``j`` are kept (reached, and not stored inputs)."""
        return tuple(t for t in self.reach[j] if self.stored[t] is None)


class Multiplier(NamedTuple):
    """Carry leaves ``re, im`` (indices) hold ``s' = lambda s + b`` with ``lambda`` (complex, per neuron) depending
    on the parameters alone, and parameter leaves ``params`` reach them only through ``lambda``: their traces are
    ``Q dlambda/dtheta`` with ``Q = ds/dlambda``, ``Q' = lambda Q + s``, one complex trace for them all."""

    re: int
    im: int
    params: tuple[int, ...]


class Pair(NamedTuple):
    """Parameter leaf ``follower``'s traces are ``sign * i`` times parameter leaf ``leader``'s, read as complex
    numbers ``e[re] + i e[im]`` on carry leaves ``re`` and ``im`` (indices): ``e_f[re] = -sign e_l[im]``,
    ``e_f[im] = sign e_l[re]``, so only the leader's are kept."""

    leader: int
    follower: int
    re: int
    im: int
    sign: int


class NotElementwise(NamedTuple):
    """Why a cell's step is not element-wise (``reason``, a sentence), as ``elementwise`` found it."""

    reason: str


def placement_of(neuron: np.ndarray, N: int):
    """``Elementwise.placement`` of a leaf from the neuron each entry reaches (-1: none)."""
    if (neuron < 0).all():
        return None
    for axis, size in enumerate(neuron.shape):
        if size == N and (neuron == np.arange(N).reshape([-1 if a == axis else 1 for a in range(neuron.ndim)])).all():
            return axis - neuron.ndim  # negative: counts from the end, where a broadcast vector lines up
    return neuron


def spread(v: jax.Array, placement) -> jax.Array:
    """A per-neuron vector ``v`` (N,) laid out to multiply a parameter leaf whose entries reach neurons as
    ``placement`` says: broadcast along its axis, or gathered (zero where an entry reaches none)."""
    if isinstance(placement, int):
        return v.reshape(v.shape + (1,) * (-placement - 1))
    return jnp.where(placement >= 0, v[np.maximum(placement, 0)], 0)


class Leaves(NamedTuple):
    """Leaf-level dependencies of one step, from its jaxpr: for each new carry leaf, the parameter leaves
    (``direct``) and the previous carry leaves (``deps``) it reads, and the previous carry leaf it is a copy of
    (``copies``: returned unchanged, a delay line's tap; ``None`` for a leaf computed)."""

    param_names: tuple[str, ...]
    carry_names: tuple[str, ...]
    direct: tuple[frozenset[int], ...]
    deps: tuple[frozenset[int], ...]
    copies: tuple[int | None, ...]

    def reach(self, j: int) -> tuple[int, ...]:
        """The carry leaves that parameter leaf ``j`` reaches, directly or through other leaves."""
        reached = {t for t in range(len(self.deps)) if j in self.direct[t]}
        while more := {t for t in range(len(self.deps)) if self.deps[t] & reached} - reached:
            reached |= more  # a leaf that depends on a reached leaf is reached
        return tuple(sorted(reached))


def names_of(treedef, shapes, dtype) -> tuple[str, ...]:
    return tuple(leaf_names(jax.tree.unflatten(treedef, [jax.ShapeDtypeStruct(s, dtype) for s in shapes])))


def carry_step(cell, params_spec, carry_spec) -> Callable:
    """``new_carry(*param_leaves, *carry_leaves, x) -> new carry leaves``, checking the carry's structure."""
    (p_def, p_shapes), (c_def, c_shapes) = params_spec, carry_spec
    P, S = len(p_shapes), len(c_shapes)

    def new_carry(*leaves):
        params = jax.tree.unflatten(p_def, leaves[:P])
        carry = jax.tree.unflatten(c_def, leaves[P:P + S])
        new = cell.step(params, carry, leaves[-1])[0]
        if jax.tree.structure(new) != c_def:
            raise ValueError(f"{cell.name}.step must return a carry of the structure {c_def}, got "
                             f"{jax.tree.structure(new)}")
        return tuple(jax.tree.leaves(new))

    return new_carry


@functools.lru_cache(maxsize=64)
def leaf_dependencies(cell, params_spec, carry_spec) -> Leaves:
    """``Leaves`` of ``cell.step``, read from its jaxpr (structural, so exact)."""
    (p_def, p_shapes), (c_def, c_shapes) = params_spec, carry_spec
    P, S = len(p_shapes), len(c_shapes)
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    shapes = [*p_shapes, *c_shapes, (cell.input_size,)]
    jaxpr = jax.make_jaxpr(carry_step(cell, params_spec, carry_spec))(
        *[jax.ShapeDtypeStruct(s, dtype) for s in shapes]).jaxpr
    deps = jaxpr_dependencies(jaxpr)
    return Leaves(names_of(p_def, p_shapes, dtype), names_of(c_def, c_shapes, dtype),
                  tuple(frozenset(j for j in d if j < P) for d in deps),
                  tuple(frozenset(j - P for j in d if P <= j < P + S) for d in deps),
                  tuple(i - P if i is not None and P <= i < P + S else None for i in passed_through(jaxpr)))


UNSEEN = (" (their derivatives were zero at every probe, e.g. a ReLU that is off at all of them), so where they "
          "reach is unknown and their exact traces are dense")
COUPLED = ("its recurrence couples neurons (neuron k's next carry depends on other neurons' carry), so its exact "
           "traces are dense")


@functools.lru_cache(maxsize=64)
def elementwise(cell, params_spec, carry_spec) -> Elementwise | NotElementwise:
    """The element-wise structure of ``cell.step``, or ``NotElementwise`` with a sentence saying why it has none.

    Leaf-level dependencies come from the jaxpr. Neuron-level structure is probed at ``PROBES`` random points
    with a binary code: with the cotangent (tangent) on neuron ``k`` of every carry leaf scaled by bit ``b`` of
    ``k``, a parameter entry (carry entry) that reaches one neuron ``k`` gets either exactly nothing or exactly
    what the all-ones code gives it, and the bits spell ``k``; an entry that reaches two neurons differs from both
    at a bit where their indices differ. ``1 + log2(N)`` VJPs and JVPs per probe, whatever the parameters."""
    p_shapes, c_shapes = params_spec[1], carry_spec[1]
    sizes = {s for s in c_shapes}
    if len(sizes) != 1 or len(next(iter(sizes))) != 1:
        return NotElementwise(f"its carry leaves are not per-neuron vectors of one size (shapes {list(c_shapes)})")
    (N,) = next(iter(sizes))
    P, S = len(p_shapes), len(c_shapes)
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    new_carry = carry_step(cell, params_spec, carry_spec)
    leaves = leaf_dependencies(cell, params_spec, carry_spec)
    shapes = [*p_shapes, *c_shapes, (cell.input_size,)]

    bits = max(int(N - 1).bit_length(), 1)
    codes = np.stack([np.ones(N)] + [(np.arange(N) >> b) & 1 for b in range(bits)]).astype(dtype)  # (1 + bits, N)
    # Distinct per leaf, so that leaves' contributions do not cancel; irrational (1 + the fractional parts of k
    # sqrt 2), because rational ones cancel against a cell's own round numbers: with 1 and 1.5, LIF's spike
    # (leak 2/3 times 1.5 minus threshold 1 times 1) had a zero derivative on the carry at every probe.
    weights = (1.0 + np.modf(np.sqrt(2.0) * np.arange(1, S + 1))[0]).astype(dtype)
    # Relative to the all-ones code's value, which can be a difference of larger terms (a complex rotation's two
    # parts): at 1e3 eps, XLA's unoptimised CPU code (the test suite's flags) left LRU(2, 8) and RTU(2, 5) with
    # bits off by ~1e-11 relative and refused them as coupled; a true second neuron's share is O(1).
    tol = 1e6 * float(np.finfo(dtype).eps)

    def couples_at(leaves):
        """One jvp, a tangent on neuron 0 of every carry leaf: whether it reaches another neuron (a cheap first
        look that settles dense cells before the full survey)."""
        tangents = tuple(jnp.zeros(N, dtype).at[0].set(w) for w in weights)
        out = jax.jvp(lambda *c: new_carry(*leaves[:P], *c, leaves[-1]), tuple(leaves[P:P + S]), tangents)[1]
        return jnp.any(jnp.stack([jnp.any(jnp.where(jnp.isfinite(t), t, 0)[1:] != 0) for t in out]))

    def probe(leaves):
        """Per parameter leaf, the neuron code of each entry and whether it is consistent; whether the carry
        couples neurons; per new carry leaf, which entries were seen to depend on the carry."""
        primals = tuple(leaves)
        out, pull = jax.vjp(lambda *p: new_carry(*p, *primals[P:]), *primals[:P])
        def coded(code):  # the code on every leaf, each leaf scaled by its weight
            return tuple((w * code).astype(o.dtype) for w, o in zip(weights, out, strict=True))

        grads = jax.vmap(lambda code: pull(coded(code)))(codes)
        tangents = jax.vmap(lambda code: jax.jvp(lambda *c: new_carry(*primals[:P], *c, primals[-1]),
                                                 primals[P:P + S], coded(code))[1])(codes)

        def decode(g):  # g: (1 + bits, *shape) -> neuron index (-1: none seen), consistent
            g0, gb = g[0], g[1:]
            seen = jnp.isfinite(g).all(axis=0) & (g0 != 0)
            near = lambda a, b: jnp.abs(a - b) <= tol * jnp.abs(g0)  # noqa: E731
            ok = jnp.all(near(gb, 0) | near(gb, g0), axis=0)
            index = jnp.sum((jnp.abs(gb) > 0.5 * jnp.abs(g0)).astype(jnp.int32) << jnp.arange(bits).reshape(
                (-1,) + (1,) * g0.ndim), axis=0)
            return jnp.where(seen, index, -1).astype(jnp.int32), ~seen | (ok & (index < N))

        params = [decode(g) for g in grads]
        # A new carry entry seen from a neuron other than its own, or from two neurons, means coupling.
        carry = [decode(t) for t in tangents]
        couples = jnp.any(jnp.stack([~ok | (index >= 0) & (index != jnp.arange(N)) for index, ok in carry]))
        return params, couples, [index >= 0 for index, _ in carry]

    probes = probe_points(shapes)
    if S and N > 1 and concrete(couples_at, [a[0] for a in probes]):
        return NotElementwise(COUPLED)

    def survey(probes):
        def add(i, acc):
            neurons, consistent, couples, seen = acc
            params, c, seen_now = probe([a[i] for a in probes])
            new_neurons, new_consistent = [], []
            for n, ok, (index, ok_now) in zip(neurons, consistent, params, strict=True):
                clash = (n >= 0) & (index >= 0) & (n != index)
                new_neurons.append(jnp.where(n >= 0, n, index))
                new_consistent.append(ok & ok_now & ~clash)
            return new_neurons, new_consistent, couples | c, [a | b for a, b in zip(seen, seen_now, strict=True)]

        init = ([jnp.full(s, -1, jnp.int32) for s in p_shapes], [jnp.ones(s, bool) for s in p_shapes],
                jnp.zeros((), bool), [jnp.zeros(N, bool) for _ in c_shapes])
        return lax.fori_loop(0, PROBES, add, init)

    neurons, consistent, couples, seen = jax.tree.map(np.asarray, concrete(survey, probes))
    if couples:
        return NotElementwise(COUPLED)
    # The jaxpr says what can depend on what; an entry that does but whose derivative was zero at every probe (a
    # ReLU the probes never switch on) reaches neurons unknown to us, which element-wise traces cannot assume.
    for t, name in enumerate(leaves.carry_names):
        if leaves.deps[t] and not seen[t].all():
            return NotElementwise(f"carry leaf {name!r} depends on the carry, but not at any probe for some "
                                  f"neurons{UNSEEN}")
    for j, name in enumerate(leaves.param_names):
        if leaves.reach(j) and not (neurons[j] >= 0).all():
            return NotElementwise(f"parameter {name!r} reaches the carry, but some of its entries reach no neuron at "
                                  f"any probe{UNSEEN}")
    for name, ok in zip(leaves.param_names, consistent, strict=True):
        if not ok.all():
            return NotElementwise(f"parameter {name!r} has entries that reach several neurons in one step, so its "
                                  "exact traces are dense")
    reach = tuple(leaves.reach(j) if (neurons[j] >= 0).any() else () for j in range(P))
    placement = tuple(placement_of(n, N) for n in neurons)
    stored = delay_lines(leaves, reach, p_shapes, cell.input_size)
    candidates = complex_candidates(leaves, reach, stored)
    multipliers = linear_multipliers(new_carry, probes, candidates, reach, placement)
    pairs = complex_pairs(new_carry, probes, candidates, reach, placement, p_shapes,
                          {j for m in multipliers for j in m.params})
    return Elementwise(N, leaves.carry_names, leaves.param_names, placement, reach, leaves.direct, leaves.deps,
                       stored, pairs, multipliers)


def delay_lines(leaves: Leaves, reach, p_shapes, input_size: int) -> tuple[tuple[int, int] | None, ...]:
    """``Elementwise.stored``: a carry leaf that reads no carry is a function of the parameters and the last input
    alone (delay 1); a copy of such a leaf is the same function of the input before (delay 2), and so on. Kept
    as inputs only where the input and its flag are smaller than the traces they replace."""
    S = len(leaves.deps)
    stored: list[tuple[int, int] | None] = [(t, 1) if not leaves.deps[t] else None for t in range(S)]
    for t in range(S):
        size = sum(int(np.prod(p_shapes[j])) for j in range(len(reach)) if t in reach[j])
        if stored[t] is not None and input_size + 1 >= size:
            stored[t] = None
    while more := [t for t, s in enumerate(leaves.copies)
                   if stored[t] is None and s is not None and stored[s] is not None]:
        for t in more:
            source, delay = stored[leaves.copies[t]]
            stored[t] = (source, delay + 1)
    return tuple(stored)


def complex_candidates(leaves: Leaves, reach, stored) -> tuple[tuple[int, int], ...]:
    """Pairs of carry leaves (not stored inputs) that read no other carry leaf, and that are exactly the leaves
    some parameter reaches."""
    free = [t for t in range(len(leaves.deps)) if stored[t] is None]
    return tuple((r, i) for r, i in itertools.combinations(free, 2)
                 if leaves.deps[r] | leaves.deps[i] <= {r, i} and (r, i) in reach)


def probed_jacobians(new_carry: Callable, leaves_now, P: int, S: int):
    """``(column, immediate)`` at one probe: ``column(s)`` the new carry's jvp along an all-ones tangent on carry
    leaf ``s`` (``J[:, s]``), ``immediate(t)`` the vjp of new leaf ``t`` along all-ones (``I[t]``, per leaf)."""
    prm, carry, x = leaves_now[:P], leaves_now[P:P + S], leaves_now[-1]

    def column(s, prm=prm, carry=carry, x=x):
        return jax.jvp(lambda a: new_carry(*prm, *[a if k == s else c for k, c in enumerate(carry)], x),
                       (carry[s],), (jnp.ones_like(carry[s]),))[1]

    def immediate(t):
        out, pull = jax.vjp(lambda *p: new_carry(*p, *carry, x)[t], *prm)
        return pull(jnp.ones_like(out))

    return column, immediate


def near(a, b, tol):
    """``a`` equals ``b`` to rounding, relative to the larger of the two arrays' scales."""
    return jnp.all(jnp.abs(a - b) <= tol * jnp.maximum(jnp.max(jnp.abs(a)), jnp.max(jnp.abs(b))))


def complex_block(column, r: int, i: int, tol) -> jax.Array:
    """Whether one step's Jacobian on carry leaves ``r, i`` is a complex multiplication per neuron."""
    J_r, J_i = column(r), column(i)
    return near(J_r[r], J_i[i], tol) & near(J_i[r], -J_r[i], tol)


def survey_all(probe: Callable, probes, shape) -> np.ndarray:
    """The conjunction over every probe of ``probe(leaves) -> bool array of shape``."""
    return np.asarray(concrete(lambda probes: lax.fori_loop(0, PROBES, lambda k, acc: acc & probe(
        [a[k] for a in probes]), jnp.ones(shape, bool)), probes))


def linear_multipliers(new_carry: Callable, probes, candidates, reach, placement) -> tuple[Multiplier, ...]:
    """``Elementwise.multipliers``, probed. On a pair of carry leaves whose one-step Jacobian is a complex
    multiplication ``lambda`` equal at the probe and at a zero carry and input (so a function of the parameters
    alone: ``s' = lambda s + b``), the parameter leaves whose immediate Jacobian is ``dlambda/dtheta s`` at every
    probe (``dlambda/dtheta``: the vjp of ``lambda``'s parts along all-ones) reach the pair only through
    ``lambda``. Kept where two or more do (for one, its own trace is as small)."""
    P = len(placement)
    S = len(probes) - P - 1
    tol = 1e3 * float(np.finfo(probes[0].dtype).eps)
    on = [[j for j in range(P) if reach[j] == (r, i)] for r, i in candidates]
    if not any(len(js) >= 2 for js in on):
        return ()

    def probe(leaves_now):
        column, immediate = probed_jacobians(new_carry, leaves_now, P, S)
        zero = [jnp.zeros_like(a) for a in leaves_now[P:]]
        at_zero = probed_jacobians(new_carry, [*leaves_now[:P], *zero], P, S)[0]
        rows = []
        for (r, i), js in zip(candidates, on, strict=True):
            linear = complex_block(column, r, i, tol)
            linear &= near(column(r)[r], at_zero(r)[r], tol) & near(column(r)[i], at_zero(r)[i], tol)
            s_r, s_i = leaves_now[P + r], leaves_now[P + i]
            mu = multiplier_derivatives(new_carry, leaves_now[:P], zero, r, i, js)
            I_r, I_i = immediate(r), immediate(i)
            through = []
            for j in js:
                (re, im), a, b = mu[j], spread(s_r, placement[j]), spread(s_i, placement[j])
                through.append(near(I_r[j], a * re - b * im, tol) & near(I_i[j], a * im + b * re, tol))
            rows.append(jnp.stack([linear & t for t in through] + [jnp.zeros((), bool)] * (P - len(js))))
        return jnp.stack(rows)

    holds = survey_all(probe, probes, (len(candidates), P))
    found = []
    for (r, i), js, row in zip(candidates, on, holds, strict=True):
        params = tuple(j for j, ok in zip(js, row, strict=False) if ok)
        if len(params) >= 2:
            found.append(Multiplier(r, i, params))
    return tuple(found)


def multiplier_vjp(new_carry: Callable, p_leaves, zero_rest, r: int, i: int, js) -> Callable:
    """``(g_re, g_im) -> {j: g_re dRe lambda/dtheta_j + g_im dIm lambda/dtheta_j}`` (each of parameter leaf
    ``j``'s shape; ``g`` per neuron) for the multiplier ``lambda = J[r, r] + i J[i, r]`` of carry leaves ``r, i``,
    taken at ``zero_rest``: a zero carry and input."""

    def parts(*chosen):
        prm = [dict(zip(js, chosen, strict=True)).get(k, p) for k, p in enumerate(p_leaves)]
        carry, x = zero_rest[:-1], zero_rest[-1]
        col = jax.jvp(lambda a: new_carry(*prm, *[a if k == r else c for k, c in enumerate(carry)], x),
                      (carry[r],), (jnp.ones_like(carry[r]),))[1]
        return col[r], col[i]

    out, pull = jax.vjp(parts, *[p_leaves[j] for j in js])
    return lambda g_re, g_im: dict(zip(js, pull((g_re.astype(out[0].dtype), g_im.astype(out[1].dtype))),
                                       strict=True))


def multiplier_derivatives(new_carry: Callable, p_leaves, zero_rest, r: int, i: int, js) -> dict[int, tuple]:
    """``{j: (dRe lambda/dtheta_j, dIm lambda/dtheta_j)}`` (see ``multiplier_vjp``)."""
    pull = multiplier_vjp(new_carry, p_leaves, zero_rest, r, i, js)
    one, zero = jnp.ones_like(zero_rest[r]), jnp.zeros_like(zero_rest[r])
    d_re, d_im = pull(one, zero), pull(zero, one)
    return {j: (d_re[j], d_im[j]) for j in js}


def complex_pairs(new_carry: Callable, probes, candidates, reach, placement, p_shapes, taken) -> tuple[Pair, ...]:
    """``Elementwise.pairs``, probed. Carry leaves ``re, im`` that read no other carry leaves hold a holomorphic
    recurrence's parts where one step's Jacobian on them is a complex multiplication per neuron (``J[re, re] =
    J[im, im]``, ``J[re, im] = -J[im, re]``); then the traces of two parameter leaves that reach exactly those
    leaves, alike in shape and placement, are ``sign * i`` times one another's for ever where their immediate
    Jacobians are (a recurrence by complex multiplication keeps the factor). Both conditions are checked at every
    probe, to rounding. Leaves in ``taken`` (a multiplier's) are left out."""
    P = len(p_shapes)
    S = len(probes) - P - 1
    quads = [(r, i, a, b) for r, i in candidates
             for a, b in itertools.combinations([j for j in range(P) if reach[j] == (r, i) and j not in taken], 2)
             if p_shapes[a] == p_shapes[b] and same_placement(placement[a], placement[b])]
    if not quads:
        return ()
    tol = 1e3 * float(np.finfo(probes[0].dtype).eps)

    def probe(leaves_now):
        """Per candidate: the Jacobian on its carry leaves is complex, and the immediate Jacobians are i times one
        another's, or minus i times."""
        column, immediate = probed_jacobians(new_carry, leaves_now, P, S)
        found = []
        for r, i, a, b in quads:
            I_r, I_i, J = immediate(r), immediate(i), complex_block(column, r, i, tol)
            plus = near(I_r[b], -I_i[a], tol) & near(I_i[b], I_r[a], tol)
            minus = near(I_r[b], I_i[a], tol) & near(I_i[b], -I_r[a], tol)
            found.append(jnp.stack([J & plus, J & minus]))
        return jnp.stack(found)

    holds = survey_all(probe, probes, (len(quads), 2))
    pairs, used = [], set()
    for (r, i, a, b), (plus, minus) in zip(quads, holds, strict=True):
        if (plus or minus) and not {a, b} & used:
            pairs.append(Pair(a, b, r, i, 1 if plus else -1))
            used |= {a, b}
    return tuple(pairs)


def same_placement(a, b) -> bool:
    if isinstance(a, int) or isinstance(b, int):
        return a == b
    return np.array_equal(a, b)
