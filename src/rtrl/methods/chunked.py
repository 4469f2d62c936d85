"""Exact RTRL in chunks for element-wise cells: forward mode between chunks, reverse mode within them.

For an element-wise cell (``rtrl.capabilities.ElementwiseRecurrence``, the ``rtrl.cells.ElementwiseCell``s) the
input enters the carry only as ``u_P = x @ P`` for each projection ``P`` (D, N), every other parameter that
reaches the carry is a per-neuron vector ``v`` (N,), and ``recur`` acts neuron by neuron on a per-neuron state of
order ``l`` (the carry leaves, stacked here on a last axis: ``c`` is ``(*batch, N, l)``). Over a chunk of ``K``
steps with the parameters fixed (derivation: docs/derivations.md):

* ``U_P = X @ P`` for the ``K`` steps at once (one matrix product: ``x`` does not depend on the carry);
* ``recur`` scanned over the steps, keeping per step and neuron ``J_t = dc_t/dc_{t-1}`` (l x l),
  ``A_t[P] = dc_t/du_P`` and ``V_t[v] = dc_t/dv`` (l each): one ``jvp`` per carry leaf, projection and vector;
* the output and loss of the ``K`` steps at once, and one ``vjp`` of them: the credit ``g_t = dL_t/dc_t`` and the
  gradient of the parameters through ``output``;
* the adjoint within the chunk, backwards: ``mu_t = g_t + J_{t+1}^T mu_{t+1}`` (``mu_K = g_K``), and
  ``lambda = J_1^T mu_1 = dL_chunk/dc_0``, the credit on the carry the chunk starts from;
* the chunk's gradient: ``lambda . e_0`` (the traces ``e = dc/dtheta`` at the chunk's start) plus
  ``sum_t (mu_t . A_t[P]) (x) x_t`` (one matrix product per projection over the steps and the batch) plus
  ``sum_t mu_t . V_t[v]``;
* the traces at the chunk's end, exactly: ``e_K = Phi_0 e_0 + sum_t Phi_t D_t`` with the drive
  ``D_t = A_t[P] (x) x_t`` or ``V_t[v]`` and ``Phi_t = J_K ... J_{t+1}`` (one batched matrix product per
  projection over the steps).

The traces are exact at every chunk boundary and memory is constant in ``T`` (``K`` steps of per-neuron
tensors and one set of traces ``(*batch, N, l, D)`` per projection); the gradient is BPTT's. Against
``closed_form`` the per-step read and write of the traces becomes matrix products once per chunk.
A last chunk shorter than ``chunk`` takes the steps that remain.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.capabilities import ElementwiseRecurrence
from rtrl.checks import check_positive_int
from rtrl.methods.base import SequenceMethod


class Chunked(SequenceMethod):
    """Exact whole-sequence gradient of an element-wise cell, ``chunk`` steps at a time (default 16): traces
    carried between chunks, an adjoint within them."""

    chunk: int = 16
    name: ClassVar[str] = "chunked"
    exact: ClassVar[bool] = True

    def __check_init__(self) -> None:
        check_positive_int("chunk", self.chunk)

    def applies(self, cell) -> bool:
        return isinstance(cell, ElementwiseRecurrence)

    def check(self, cell) -> None:
        if not self.applies(cell):
            raise ValueError(f"method 'chunked' needs an element-wise cell (rtrl.cells.ElementwiseCell: projections, "
                             f"per-neuron vectors and an element-wise recur), and {cell.name} is not one; use "
                             "'closed_form' or 'diagonal' for an element-wise cell, 'rtrl' or 'bptt' for any cell")

    def sequence_grad(self, cell, params, xs, targets, loss_fn, carry):
        loss, grads, _, _ = run(cell, params, xs, targets, loss_fn, carry, self.chunk)
        return loss, grads


def run(cell, params, xs, targets, loss_fn, carry, chunk: int):
    """``(loss, grads, carry, traces)`` of the sequence, ``chunk`` steps at a time: the gradient as
    ``sequence_grad``'s, the last carry, and the traces of it, ``{P: (*batch, N, l, D), v: (*batch, N, l)}``
    (``[..., n, i, d] = dc_i[n]/dP[d, n]`` and ``dc_i[n]/dv[n]``, ``i`` the carry leaves in tree order)."""
    leaves, tree = jax.tree.flatten(carry)
    c = jnp.stack(leaves, -1)
    vectors, projections = cell.split_params(params)
    dtype = jnp.result_type(*jax.tree.leaves(params), c)
    traces = {**{name: jnp.zeros(c.shape + (cell.input_size,), dtype) for name in projections},
              **{name: jnp.zeros(c.shape, dtype) for name in vectors}}
    zero = (jnp.zeros((), dtype), jax.tree.map(jnp.zeros_like, params))
    advance = functools.partial(chunk_grad, cell, params, loss_fn, tree)

    def body(acc, xy):
        c, traces, (loss, grads) = acc
        c, traces, (l, g) = advance(c, traces, *xy)
        return (c, traces, (loss + l, jax.tree.map(jnp.add, grads, g))), None

    T = jnp.shape(xs)[0]
    K = min(chunk, T)
    chunks, tail = divmod(T, K)

    def whole(i, acc):  # chunk i sliced in place: a slice and reshape of the sequence would copy it whole
        return body(acc, jax.tree.map(lambda a: lax.dynamic_slice_in_dim(a, i * K, K), (xs, targets)))[0]

    acc = lax.fori_loop(0, chunks, whole, (c, traces, zero))
    if tail:
        acc, _ = body(acc, jax.tree.map(lambda a: a[chunks * K:], (xs, targets)))
    c, traces, (loss, grads) = acc
    return loss, grads, jax.tree.unflatten(tree, list(jnp.moveaxis(c, -1, 0))), traces


def local_derivatives(cell, vectors, tree, c, u):
    """The next stacked carry and this step's per-neuron derivatives: ``J`` (*batch, N, l, l) (``[..., i, j] =
    dc'_i/dc_j``), ``A = {P: dc'/du_P}`` and ``V = {v: dc'/dv}`` (each (*batch, N, l)). ``recur`` is element-wise,
    so an all-ones tangent on one input gives every neuron's own derivative at once."""

    def recur(vectors, c, u):
        return jnp.stack(jax.tree.leaves(cell.recur(vectors, jax.tree.unflatten(tree, list(jnp.moveaxis(c, -1, 0))),
                                                    u)), -1)

    def along(f, primal, tangent):
        return jax.jvp(f, (primal,), (tangent,))[1]

    new = recur(vectors, c, u)
    l = c.shape[-1]
    J = jnp.stack([along(lambda a: recur(vectors, a, u), c, jnp.zeros_like(c).at[..., j].set(1)) for j in range(l)],
                  -1)
    A = {name: along(lambda a, name=name: recur(vectors, c, {**u, name: a}), u[name], jnp.ones_like(u[name]))
         for name in u}
    V = {name: along(lambda a, name=name: recur({**vectors, name: a}, c, u), v, jnp.ones_like(v))
         for name, v in vectors.items()}
    return new, J, A, V


def chunk_grad(cell, params, loss_fn, tree, c0, traces, X, Y):
    """One chunk (see the module docstring): from the stacked carry ``c0`` and its traces, over the inputs ``X``
    (K, *batch, D) and targets ``Y``, the last carry, its traces and ``(loss, grads)`` of the chunk's steps."""
    vectors, projections = cell.split_params(params)
    U = cell.project(projections, X)  # (K, *batch, N) each: one matrix product for the chunk

    def forward(c, u):
        new, J, A, V = local_derivatives(cell, vectors, tree, c, u)
        return new, (new, J, A, V)

    c_end, (cs, Js, As, Vs) = lax.scan(forward, c0, U)

    def chunk_loss(params, cs):
        def one(c, x, y):
            return loss_fn(cell.output(params, jax.tree.unflatten(tree, list(jnp.moveaxis(c, -1, 0))), x), y)

        return jax.vmap(one)(cs, X, Y).sum()

    loss, (grads, g) = jax.value_and_grad(chunk_loss, argnums=(0, 1))(params, cs)

    def adjoint(acc, gJ):
        lam, Phi = acc  # the credit from the later steps, and the product of their Jacobians
        g_t, J_t = gJ
        mu = g_t + lam
        return (jnp.einsum("...ij,...i->...j", J_t, mu), Phi @ J_t), (mu, Phi)

    eye = jnp.broadcast_to(jnp.eye(c0.shape[-1], dtype=c0.dtype), c0.shape + c0.shape[-1:])
    (lam, Phi0), (mus, Phis) = lax.scan(adjoint, (jnp.zeros_like(c0), eye), (g, Js), reverse=True)

    new_traces = {}
    for name in projections:
        e = traces[name]
        credit = jnp.sum(mus * As[name], -1)  # (K, *batch, N)
        grads[name] = (grads[name] + jnp.einsum("k...n,k...d->dn", credit, X)
                       + jnp.einsum("...ni,...nid->dn", lam, e))
        drive = jnp.einsum("k...nij,k...nj->k...ni", Phis, As[name])
        new_traces[name] = jnp.einsum("...nij,...njd->...nid", Phi0, e) + jnp.einsum("k...ni,k...d->...nid", drive, X)
    for name in vectors:
        e = traces[name]
        grads[name] = grads[name] + jnp.einsum("k...ni,k...ni->n", mus, Vs[name]) + jnp.einsum("...ni,...ni->n", lam, e)
        new_traces[name] = jnp.einsum("...nij,...nj->...ni", Phi0, e) + jnp.einsum("k...nij,k...nj->...ni", Phis,
                                                                                   Vs[name])
    return c_end, new_traces, (loss, grads)
