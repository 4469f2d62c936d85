"""Exact RTRL in chunks for element-wise cells: forward mode between chunks, reverse mode within them.

For an element-wise cell (``rtrl.capabilities.ElementwiseRecurrence``, the ``rtrl.cells.ElementwiseCell``s) the
input enters the carry only as ``u_P = x @ P`` for each projection ``P`` (D, N), every other parameter that
reaches the carry is a per-neuron vector ``v`` (N,), and ``recur`` acts neuron by neuron on a per-neuron state of
order ``l`` (the carry leaves, stacked here before the neurons: ``c`` is ``(*batch, l, N)``). Over a chunk of ``K``
steps with the parameters fixed (derivation: docs/derivations.md):

* ``U_P = X @ P`` for the ``K`` steps at once (one matrix product: ``x`` does not depend on the carry);
* ``recur`` scanned over the steps, keeping the carries ``c_t``;
* the output and loss of the ``K`` steps at once, and one ``vjp`` of them: the credit ``g_t = dL_t/dc_t`` and the
  gradient of the parameters through ``output``;
* the adjoint within the chunk, backwards: ``mu_t = g_t + J_{t+1}^T mu_{t+1}`` (``mu_K = g_K``), and
  ``lambda = J_1^T mu_1 = dL_chunk/dc_0``, the credit on the carry the chunk starts from, with ``J_t =
  dc_t/dc_{t-1}`` (l x l per neuron). The reverse scan carries ``Phi_t = J_K ... J_{t+1}`` beside ``mu`` and
  pulls the ``1 + l`` rows ``[mu_t; Phi_t]`` back through step ``t`` with one ``vjp`` of ``recur`` (recomputed
  from ``c_{t-1}``) mapped over the rows: each row times ``J_t``, ``A_t[P] = dc_t/du_P`` and ``V_t[v] =
  dc_t/dv`` at once, the vectors broadcast over the batch so that their pullback stays per stream;
* the chunk's gradient: ``lambda . e_0`` (the traces ``e = dc/dtheta`` at the chunk's start) plus
  ``sum_t (mu_t . A_t[P]) (x) x_t`` (one matrix product for all projections over the steps and the batch) plus
  ``sum_t mu_t . V_t[v]`` (summed in the reverse scan);
* the traces at the chunk's end, exactly: ``e_K = Phi_0 e_0 + sum_t Phi_t D_t`` with the drive
  ``D_t = A_t[P] (x) x_t`` (one batched matrix product for all projections over the steps) or ``V_t[v]`` (summed
  in the reverse scan).

Within a chunk the projections' traces are one array ``(*batch, l, |P|, N, D)``, the vectors' one ``(*batch, l,
|v|, N)``, and each scan writes one array per step: on the CPU XLA gives every array a loop writes its own kernel, so
per-parameter arrays cost kernels per step, and a per-step ``(J, A, V)`` kept for the chunk costs memory.

The traces are exact at every chunk boundary and memory is constant in ``T`` (``K`` steps of per-neuron
tensors and one set of traces ``(*batch, l, N, D)`` per projection); the gradient is BPTT's. Against
``closed_form`` the per-step read and write of the traces becomes matrix products once per chunk.
A last chunk shorter than ``chunk`` takes the steps that remain.

``kernel`` switches how a chunk's traces and gradient are computed. ``"adjoint"`` (the default) is the above.
``"xla"`` and ``"pallas"`` run the trace recurrence forward instead, through ``rtrl.kernels.trace_chunk`` with that
backend: the forward scan also keeps each step's per-neuron Jacobians (a ``jvp`` per carry leaf, projection and
vector: ``J_t``, ``A_t[P]``, ``V_t[v]``), the credits ``g_t`` come from one ``vjp`` of the chunk's outputs, and
``e_t = J_t e_{t-1} + D_t``, ``grad += g_t . e_t`` run in one launch per parameter (the batch folded into the
neurons, the drive ``D_t = A_t[P] (x) x_t`` materialised for the chunk). ``"pallas"`` keeps each block of neurons'
traces on chip for the whole chunk; on a CPU it runs in Pallas's interpret mode (a correctness path, slow).
"""

from __future__ import annotations

import functools
import math
from typing import ClassVar

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.capabilities import ElementwiseRecurrence
from rtrl.checks import check_positive_int
from rtrl.kernels import trace_chunk
from rtrl.methods.base import SequenceMethod

KERNELS = ("adjoint", "xla", "pallas")  # how a chunk's traces are computed: see the module docstring


class Chunked(SequenceMethod):
    """Exact whole-sequence gradient of an element-wise cell, ``chunk`` steps at a time (default 32): traces
    carried between chunks, an adjoint within them."""

    chunk: int = 32  # of 8, 16, 32 and 64 the fastest or within 8% of it, at 64 x 256 x 32 and 32 x 64 x 8
    kernel: str = "adjoint"  # or "xla" / "pallas": the traces run forward through rtrl.kernels.trace_chunk
    name: ClassVar[str] = "chunked"
    exact: ClassVar[bool] = True

    def __check_init__(self) -> None:
        check_positive_int("chunk", self.chunk)
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {self.kernel!r}")

    def applies(self, cell) -> bool:
        return isinstance(cell, ElementwiseRecurrence)

    def check(self, cell) -> None:
        if not self.applies(cell):
            raise ValueError(f"method 'chunked' needs an element-wise cell (rtrl.cells.ElementwiseCell: projections, "
                             f"per-neuron vectors and an element-wise recur), and {cell.name} is not one; use "
                             "'closed_form' or 'diagonal' for an element-wise cell, 'rtrl' or 'bptt' for any cell")

    def sequence_grad(self, cell, params, xs, targets, loss_fn, carry):
        if self.kernel != "adjoint":
            return run_forward(cell, params, xs, targets, loss_fn, carry, self.chunk, self.kernel)
        loss, grads, _, _ = run(cell, params, xs, targets, loss_fn, carry, self.chunk)
        return loss, grads


def run(cell, params, xs, targets, loss_fn, carry, chunk: int):
    """``(loss, grads, carry, traces)`` of the sequence, ``chunk`` steps at a time: the gradient as
    ``sequence_grad``'s, the last carry, and the traces of it, ``{P: (*batch, N, l, D), v: (*batch, N, l)}``
    (``[..., n, i, d] = dc_i[n]/dP[d, n]`` and ``dc_i[n]/dv[n]``, ``i`` the carry leaves in tree order)."""
    leaves, tree = jax.tree.flatten(carry)
    c = jnp.stack(leaves, -2)
    vectors, projections = cell.split_params(params)
    dtype = jnp.result_type(*jax.tree.leaves(params), c)
    N = c.shape[-1]
    traces = (jnp.zeros(c.shape[:-1] + (len(projections), N, cell.input_size), dtype),
              jnp.zeros(c.shape[:-1] + (len(vectors), N), dtype))
    advance = functools.partial(chunk_grad, cell, params, loss_fn, tree)
    c, (E, Ev), (loss, grads) = over_chunks(advance, c, traces, params, xs, targets, chunk)
    traces = {**{name: jnp.swapaxes(E[..., p, :, :], -3, -2) for p, name in enumerate(projections)},
              **{name: jnp.swapaxes(Ev[..., i, :], -1, -2) for i, name in enumerate(vectors)}}
    return loss, grads, unstacked(tree, c), traces


def over_chunks(advance, c, traces, params, xs, targets, chunk: int):
    """``(c, traces, (loss, grads))`` after ``advance(c, traces, X, Y) -> (c, traces, (loss, grads))`` over the
    sequence's chunks of ``chunk`` steps (the last one shorter where ``chunk`` does not divide ``T``), the chunks'
    losses and gradients summed."""
    dtype = jnp.result_type(*jax.tree.leaves(params), c)
    zero = (jnp.zeros((), dtype), jax.tree.map(jnp.zeros_like, params))

    def body(acc, xy):
        c, traces, (loss, grads) = acc
        c, traces, (chunk_loss, chunk_grads) = advance(c, traces, *xy)
        return c, traces, (loss + chunk_loss, jax.tree.map(jnp.add, grads, chunk_grads))

    T = jnp.shape(xs)[0]
    K = min(chunk, T)
    chunks, tail = divmod(T, K)

    def whole(i, acc):  # chunk i sliced in place: a slice and reshape of the sequence would copy it whole
        return body(acc, jax.tree.map(lambda a: lax.dynamic_slice_in_dim(a, i * K, K), (xs, targets)))

    acc = lax.fori_loop(0, chunks, whole, (c, traces, zero))
    return body(acc, jax.tree.map(lambda a: a[chunks * K:], (xs, targets))) if tail else acc


def unstacked(tree, c):
    """The carry of the stacked ``c`` (*batch, l, N)."""
    return jax.tree.unflatten(tree, [c[..., i, :] for i in range(c.shape[-2])])


def stacked_recur(cell, tree):
    """``recur`` on the stacked carry ``(*batch, l, N)``."""

    def recur(vectors, c, u):
        return jnp.stack(jax.tree.leaves(cell.recur(vectors, unstacked(tree, c), u)), -2)

    return recur


def times(M, v, trailing: int = 1):
    """``M @ v`` per neuron, the neurons last: ``M`` (..., k, l, N), ``v`` (..., l, m, N), or with more
    ``trailing`` axes after ``l`` and ``m`` that broadcast (``M`` (..., k, l, N, 1), ``v`` (..., l, m, N, D)), as
    ``l`` broadcast products added in Python: XLA fuses them element-wise along the last axes. As a dot it would be
    a loop of tiny l x l products; as a reduction over the middle axis (``sum(M[..., None] * v[..., None, :, :],
    -2)``) with an axis of size l last, the CPU's loops ran 5 to 7 times slower for ``l > 1`` (a chunk of IIR2 or
    LRU, 32 x 64 x 8)."""
    rest = (slice(None),) * trailing

    def term(r):
        return M[(..., slice(None), r, None) + rest] * v[(..., None, r, slice(None)) + rest]

    out = term(0)
    for r in range(1, M.shape[-1 - trailing]):
        out = out + term(r)
    return out


def stacked(tree, names, rows):
    """``tree[name]`` for each of ``names``, stacked before the neurons: ``(*rows.shape[:-2], len(names), N)``."""
    if not names:
        return jnp.zeros(rows.shape[:-2] + (0,) + rows.shape[-1:], rows.dtype)
    return jnp.stack([tree[name] for name in names], -2)


def leading_sum(a, axes: int):
    """The sum over the first ``axes`` axes of ``a``, as a product with a vector of ones: XLA's CPU loops reduce
    leading axes an order of magnitude slower (a chunk's ``lambda . e_0`` of AdaptiveIIR2 at 64 x 256 x 32)."""
    rows = math.prod(a.shape[:axes])
    return (jnp.ones((rows,), a.dtype) @ a.reshape((rows, -1))).reshape(a.shape[axes:])


def chunk_credit(cell, params, loss_fn, tree, cs, X, Y):
    """``(loss, grads, g)`` of a chunk's steps from their carries ``cs`` (K, *batch, l, N): the loss, its gradient
    through ``output`` alone (the carries held fixed) and the credit ``g_t = dL_t/dc_t`` on each carry."""

    def chunk_loss(params, cs):
        def one(c, x, y):
            return loss_fn(cell.output(params, unstacked(tree, c), x), y)

        return jax.vmap(one)(cs, X, Y).sum()

    loss, (grads, g) = jax.value_and_grad(chunk_loss, argnums=(0, 1))(params, cs)
    return loss, grads, g


def chunk_grad(cell, params, loss_fn, tree, c0, traces, X, Y):
    """One chunk (see the module docstring): from the stacked carry ``c0`` (*batch, l, N) and its traces ``(E,
    Ev)`` ((*batch, l, |P|, N, D) and (*batch, l, |v|, N)), over the inputs ``X`` (K, *batch, D) and targets ``Y``,
    the last carry, its traces and ``(loss, grads)`` of the chunk's steps.

    The forward scan keeps only the carries. The reverse scan pulls the rows ``[mu; Phi]`` back through each step
    (one ``vjp`` from the carry before it, mapped over the rows) and writes per step one array: ``mu . A`` and
    ``Phi A`` of every projection, for the matrix products over the chunk; the vectors' terms it sums as it goes,
    in one array. Few chunk-sized tensors, and few kernels per step: XLA gives each array a loop writes its own
    kernel. The neurons are the last axis of every per-step array, so that the element-wise loops run along
    them, not along an axis of size l. (It replaced a ``jvp`` per carry leaf, projection and vector, 14 for
    AdaptiveIIR2, and the per-neuron products of their ``l x l`` Jacobians.)"""
    vectors, projections = cell.split_params(params)
    recur = stacked_recur(cell, tree)
    U = cell.project(projections, X)  # (K, *batch, N) each: one matrix product for the chunk

    def forward(c, u):
        new = recur(vectors, c, u)
        return new, new

    c_end, cs = lax.scan(forward, c0, U)

    loss, grads, g = chunk_credit(cell, params, loss_fn, tree, cs, X, Y)
    before = jnp.concatenate([c0[None], cs[:-1]])  # the carry each step starts from
    l, batch = c0.shape[-2], c0.ndim - 2
    batch_vectors = {name: jnp.broadcast_to(v, c0.shape[:-2] + v.shape) for name, v in vectors.items()}

    def adjoint(acc, step):
        R, sums = acc  # rows [lambda; Phi] (1 + l, *batch, l, N); the vectors' terms (1 + l, *batch, |v|, N)
        g_t, c, u = step
        R = R.at[0].add(g_t)  # row 0 becomes mu_t
        pullback = jax.vjp(lambda c, u, v: recur(v, c, u), c, u, batch_vectors)[1]
        dc, du, dv = jax.vmap(pullback)(R)  # every row times J_t, A_t and V_t: one pullback of the step
        return (dc, sums + stacked(dv, tuple(vectors), R)), stacked(du, tuple(projections), R)

    eye = jnp.eye(l, dtype=c0.dtype).reshape((l,) + (1,) * batch + (l, 1))
    R0 = jnp.concatenate([jnp.zeros_like(c0)[None], jnp.broadcast_to(eye, (l,) + c0.shape)])
    sums = jnp.zeros((1 + l,) + c0.shape[:-2] + (len(vectors),) + c0.shape[-1:], c0.dtype)
    (R, sums), out = lax.scan(adjoint, (R0, sums), (g, before, U), reverse=True)
    lam, Phi0 = R[0], jnp.moveaxis(R[1:], 0, -3)  # (*batch, l, N), (*batch, l, l, N)

    E, Ev = traces
    credit, drive = out[:, 0], jnp.moveaxis(out[:, 1:], 1, -3)  # (K, *batch, |P|, N), (K, *batch, l, |P|, N)
    # lambda . e_0 (|P|, N, D). Since it reads E, XLA updates a copy of E, not E in place (one copy of the traces
    # per chunk; lax.optimization_barrier does not avoid it).
    start = leading_sum(times(lam[..., None, :, :, None], E, trailing=2)[..., 0, :, :, :], batch)
    G = jnp.einsum("k...pn,k...d->pnd", credit, X) + start
    E = times(Phi0[..., None], E, trailing=2) + jnp.einsum("k...ipn,k...d->...ipnd", drive, X)
    Gv = leading_sum(sums[0] + times(lam[..., None, :, :], Ev)[..., 0, :, :], batch)  # (|v|, N)
    Ev = times(Phi0, Ev) + jnp.moveaxis(sums[1:], 0, -3)
    for p, name in enumerate(projections):
        grads[name] = grads[name] + G[p].T
    for i, name in enumerate(vectors):
        grads[name] = grads[name] + Gv[i]
    return c_end, (E, Ev), (loss, grads)


def run_forward(cell, params, xs, targets, loss_fn, carry, chunk: int, backend: str):
    """``(loss, grads)`` as ``run``'s, each chunk's traces run forward by ``rtrl.kernels.trace_chunk`` on
    ``backend``. The traces are laid out for the kernel, the batch folded into the neurons (``M = batch x N``):
    ``{P: (l, M, D)}`` and ``{v: (l, M)}``."""
    leaves, tree = jax.tree.flatten(carry)
    c = jnp.stack(leaves, -2)
    vectors, projections = cell.split_params(params)
    dtype = jnp.result_type(*jax.tree.leaves(params), c)
    l, M = c.shape[-2], math.prod(c.shape[:-2]) * c.shape[-1]
    traces = ({name: jnp.zeros((l, M, cell.input_size), dtype) for name in projections},
              {name: jnp.zeros((l, M), dtype) for name in vectors})
    advance = functools.partial(forward_chunk_grad, cell, params, loss_fn, tree, backend)
    _, _, (loss, grads) = over_chunks(advance, c, traces, params, xs, targets, chunk)
    return loss, grads


def forward_chunk_grad(cell, params, loss_fn, tree, backend, c0, traces, X, Y):
    """One chunk with its traces run forward (see the module docstring): the last carry, the traces after the
    chunk and ``(loss, grads)`` of its steps."""
    vectors, projections = cell.split_params(params)
    recur = stacked_recur(cell, tree)
    U = cell.project(projections, X)
    l, N = c0.shape[-2:]

    def forward(c, u):
        new, linear = jax.linearize(lambda c, u, v: recur(v, c, u), c, u, vectors)  # the step once, its jvps after
        zero_c, zero_u, zero_v = jax.tree.map(jnp.zeros_like, (c, u, vectors))
        J = jnp.stack([linear(zero_c.at[..., r, :].set(1), zero_u, zero_v) for r in range(l)], -2)  # (*b, s, r, N)
        A = {p: linear(zero_c, {**zero_u, p: jnp.ones_like(u[p])}, zero_v) for p in projections}
        V = {v: linear(zero_c, zero_u, {**zero_v, v: jnp.ones_like(vectors[v])}) for v in vectors}
        return new, (new, J, A, V)

    c_end, (cs, J, A, V) = lax.scan(forward, c0, U)
    loss, grads, g = chunk_credit(cell, params, loss_fn, tree, cs, X, Y)
    K, M = cs.shape[0], math.prod(c0.shape[:-2]) * N

    def neurons_last(a, axes: int):
        """(K, *batch, *middle, N) -> (K, *middle, M), ``axes`` counting the middle ones and N: the batch folded
        into the neurons."""
        a = jnp.moveaxis(a.reshape((K, -1) + a.shape[-axes:]), 1, -2)
        return a.reshape(a.shape[:-2] + (M,))

    J, g = neurons_last(J, 3), neurons_last(g, 2)
    X_flat = X.reshape((K, -1, X.shape[-1]))  # (K, batch, D)
    E, Ev = dict(traces[0]), dict(traces[1])
    for p in projections:
        drive = jnp.einsum("kbsn,kbd->ksbnd", A[p].reshape((K, -1, l, N)), X_flat).reshape((K, l, M, -1))
        E[p], G = trace_chunk(J, drive, g, E[p], backend=backend)
        grads[p] = grads[p] + G.reshape((-1, N, X.shape[-1])).sum(0).T
    for v in vectors:
        Ev[v], G = trace_chunk(J, neurons_last(V[v], 2), g, Ev[v], backend=backend)
        grads[v] = grads[v] + G.reshape((-1, N)).sum(0)
    return c_end, (E, Ev), (loss, grads)
