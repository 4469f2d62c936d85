"""Exact RTRL for element-wise cells, derived automatically: traces of parameter size times state order.

The cell declares its structure by subclassing ``rtrl.cells.ElementwiseCell``: per example, carry leaves ``c_s``
(``s = 1..S``, each ``(N,)``), per-neuron vectors ``v`` (N,) and projections ``P`` (D, N) that enter only as
``u_P = x @ P``, with ``c' = recur(v, c, u)`` acting neuron by neuron. Then every Jacobian of one step is
diagonal over neurons::

    J[s', s] = dc'_s' / dc_s        I[s', v] = dc'_s' / dv        I[s', P] = dc'_s' / du_P        (each (N,))

and forward mode gets each column at once: a ``jvp`` with an all-ones tangent on one input gives, at neuron
``k``, the derivative with respect to that input's entry ``k``. The traces ``e[v][s] = dc_s/dv`` (N,) and
``E[P][s][i, k] = dc_{s,k}/dP_{ik}`` (D, N) follow ::

    e'[v][s'] = sum_s J[s', s] e[v][s] + I[s', v]
    E'[P][s'] = sum_s J[s', s] E[P][s] + x (x) I[s', P]

and a credit ``g`` on the carry they describe gives ``dL/dv = sum_s g_s e[v][s]``, ``dL/dP = sum_s g_s E[P][s]``
(broadcast over ``i``); readout parameters get no traces (their gradient is the immediate one).

Sparsity, found in ``recur``'s jaxpr (structural, so exact): a parameter keeps traces only for the carry leaves
it can reach, and the sums run over the ``J[s', s]`` that are not structurally zero. So the traces are the size
of the recurrent parameters times the number of leaves each one reaches (IIR2's feedback coefficients reach
``y1, y2`` but not ``z1, z2``).
"""

from __future__ import annotations

import functools
import operator
from typing import ClassVar

import jax
import jax.numpy as jnp

from rtrl.cells.elementwise import ElementwiseCell
from rtrl.methods.base import TraceMethod
from rtrl.structure import couples_neurons, credit_leaves, leaf_names, probe_point, structural_dependencies


def flat_recur(cell: ElementwiseCell, carry_tree, S: int):
    """``recur`` as a function of its inputs' leaves: carry leaves, then vectors, then projections."""
    vectors, projections = cell.vector_names(), cell.projections()

    def f(*inputs):
        carry = jax.tree.unflatten(carry_tree, inputs[:S])
        v = dict(zip(vectors, inputs[S:S + len(vectors)], strict=True))
        u = dict(zip(projections, inputs[S + len(vectors):], strict=True))
        new = cell.recur(v, carry, u)
        if jax.tree.structure(new) != carry_tree:
            raise ValueError(f"{cell.name}.recur must return a carry of the structure {carry_tree}, "
                             f"got {jax.tree.structure(new)}")
        return tuple(jax.tree.leaves(new))

    return f


@functools.lru_cache(maxsize=64)
def recurrence_structure(cell: ElementwiseCell, dtype) -> tuple[list[str], list[frozenset[int]], dict[str, tuple]]:
    """``(leaves, deps, reach)`` of the cell's recurrence: carry leaf names; for each new leaf the inputs it
    depends on directly (indices into carry leaves, vectors, projections); for each recurrent parameter the
    carry leaves it reaches (directly or through other leaves), which are the leaves it keeps traces for."""
    carry = cell.initial_carry((), dtype)
    leaves, tree = jax.tree.flatten(carry)
    S = len(leaves)
    params = list(cell.vector_names()) + list(cell.projections())
    vec = jax.ShapeDtypeStruct((cell.hidden_size,), dtype)
    deps = structural_dependencies(flat_recur(cell, tree, S), *[vec] * (S + len(params)))
    reach = {}
    for j, name in enumerate(params, start=S):
        reached = {s for s in range(S) if j in deps[s]}
        while True:  # close over the recurrence: a leaf that depends on a reached leaf is reached
            more = {s for s in range(S) if deps[s] & reached} - reached
            if not more:
                break
            reached |= more
        reach[name] = tuple(sorted(reached))
    return leaf_names(carry), deps, reach


@functools.lru_cache(maxsize=64)
def check_elementwise(cell) -> None:
    """``ValueError`` unless ``cell`` declares an element-wise structure that its recurrence respects (probed at
    a random point)."""
    N = cell.hidden_size
    leaves, tree = jax.tree.flatten(cell.initial_carry(()))
    if not isinstance(cell, ElementwiseCell):
        params = jax.eval_shape(cell.init, jax.random.PRNGKey(0))
        p_leaves, p_tree = jax.tree.flatten(params)
        values = probe_point(*(a.shape for a in p_leaves), (cell.input_size,), *(a.shape for a in leaves))
        params, x = jax.tree.unflatten(p_tree, values[:len(p_leaves)]), values[len(p_leaves)]

        def carry_update(*c):
            return jax.tree.leaves(cell.step(params, jax.tree.unflatten(tree, c), x)[0])

        if not all(a.shape == (N,) for a in leaves):
            why = f"its carry leaves are not per-neuron (each of size hidden_size = {N})"
        elif N > 1 and couples_neurons(carry_update, values[len(p_leaves) + 1:]):
            why = ("its recurrence couples neurons (neuron k's next carry depends on other neurons' carry), so "
                   "its exact traces are dense")
        else:
            why = "it does not declare its element-wise structure (subclass rtrl.cells.ElementwiseCell)"
        raise ValueError(f"method 'diagonal' needs a cell whose recurrence is element-wise, and {cell.name} is not "
                         f"one: {why}; use 'rtrl' (exact for any cell)")
    cell.check_structure()
    n_inputs = len(leaves) + len(cell.vector_names()) + len(cell.projections())
    if N > 1 and couples_neurons(flat_recur(cell, tree, len(leaves)), probe_point(*[(N,)] * n_inputs)):
        raise ValueError(f"{cell.name}.recur couples neurons (neuron k of the new carry depends on other neurons), "
                         "so it is not element-wise as ElementwiseCell requires; use 'rtrl' (exact for any cell)")


class Diagonal(TraceMethod):
    """Exact element-wise RTRL for any ``ElementwiseCell``; traces ``{param: {carry leaf: array}}``."""

    name: ClassVar[str] = "diagonal"
    exact: ClassVar[bool] = True

    def check(self, cell) -> None:
        check_elementwise(cell)

    def init(self, cell, params, carry):
        names, _, reach = recurrence_structure(cell, jnp.result_type(*jax.tree.leaves(carry)))
        return {p: {names[s]: jnp.zeros(jnp.shape(params[p]), jnp.result_type(params[p], *jax.tree.leaves(carry)))
                    for s in reach[p]}
                for p in reach}

    def update(self, cell, params, carry, traces, x):
        leaves, tree = jax.tree.flatten(carry)
        S = len(leaves)
        names, deps, _ = recurrence_structure(cell, jnp.result_type(*leaves))
        vectors, projections = cell.split_params(params)
        inputs = (*leaves, *vectors.values(), *cell.project(projections, x).values())
        index = {name: j for j, name in enumerate(list(vectors) + list(projections), start=S)}
        recur = flat_recur(cell, tree, S)

        @functools.cache
        def column(j):
            """``d new_leaf / d input_j`` at every neuron, for every new leaf: a jvp with an all-ones tangent on
            input ``j`` alone, so only the paths from that input are differentiated. (XLA fuses each column into
            every (D, N) trace update that uses it and re-evaluates it there: a batched evaluation of all columns
            at once made that re-evaluation, not the traces' memory traffic, the largest cost.)"""
            def of_input(a):
                return recur(*inputs[:j], a, *inputs[j + 1:])

            return jax.jvp(of_input, (inputs[j],), (jnp.ones_like(inputs[j]),))[1]

        new = {}
        for p, trace in traces.items():
            new[p] = {}
            for target in trace:
                t = names.index(target)
                terms = [column(names.index(s))[t] * e for s, e in trace.items() if names.index(s) in deps[t]]
                if index[p] in deps[t]:
                    immediate = column(index[p])[t]
                    terms.append(x[:, None] * immediate if p in projections else immediate)
                new[p][target] = functools.reduce(operator.add, terms)
        return new

    def contract(self, cell, params, traces, g_carry):
        leaves = credit_leaves(g_carry)
        g = dict(zip(recurrence_structure(cell, jnp.result_type(*jax.tree.leaves(traces)))[0], leaves, strict=True))
        grads = {p: jnp.zeros_like(a) for p, a in params.items()}
        for p, trace in traces.items():
            for s, e in trace.items():
                if g[s] is not None:  # no credit on that leaf: skip its traces
                    grads[p] = grads[p] + g[s] * e
        return grads

