"""A chunk of the element-wise trace recurrence and its contraction in one launch: ``trace_chunk``.

An element-wise cell of per-neuron state order ``S`` (``S`` carry leaves of ``N`` neurons, neuron ``k``'s next
state depending on its own state only) keeps, for each parameter, traces ``e[s]`` of shape ``(N, *rest)``: the
parameter laid out neuron axis first (``rest = ()`` for a per-neuron vector, ``(D,)`` for a projection moved to
``(N, D)``). Over a chunk of ``T`` steps, given the immediate Jacobians of each step (per neuron)::

    J (T, S, S, N)       J[t, s, r, k] = dc'_{s,k} / dc_{r,k}        (rtrl.methods.diagonal: a jvp per carry leaf)
    I (T, S, N, *rest)   I[t, s, k, q] = dc'_{s,k} / dtheta_{k,q}     (a vjp per carry leaf, all-ones cotangent)
    g (T, S, N)          g[t, s, k]   = dL / dc_{s,k} at step t      (the credit on the carry after step t)

``trace_chunk(J, I, g, e0)`` runs::

    e_t[s] = sum_r J[t, s, r] * e_{t-1}[r] + I[t, s]            (J broadcast along ``rest``)
    grad   = sum_t sum_s g[t, s] * e_t[s]

and returns ``(e_T, grad)``: the traces after the chunk and the chunk's trace part of ``dL/dtheta`` (laid out
``(N, *rest)``). A whole sequence is then a loop over chunks, each one launch, its Jacobians and credits from the
forward pass of the chunk (the test ``tests/test_kernels.py`` builds them for an LRU and gets BPTT's gradient).

Two backends compute the same function:

* ``"xla"`` (the default): a ``lax.scan`` over the steps; XLA launches the update and the contraction as
  separate kernels every step, and the traces go to memory and back between them;
* ``"pallas"``: one ``pl.pallas_call`` for the whole chunk. Each program of its grid owns a block of neurons and
  keeps their traces in its registers (or on-chip memory) for all ``T`` steps, reading only that step's ``J``,
  ``I`` and ``g`` and writing ``e_T`` and ``grad`` once at the end: the traces' memory traffic of ``T`` steps falls
  to one read and one write. On a CPU, Pallas runs in interpret mode (``interpret=True``: a correctness path,
  slow); on a GPU it compiles (through Triton, whose tiles are powers of two: the trailing axes are padded
  with zero traces up to one).

The grid splits the neurons only: the recurrence of one neuron is sequential in ``t`` and independent of every
other neuron's, so blocks of neurons are the parallel work. ``block_n`` defaults to the largest power of two
that divides ``N`` and keeps the block's traces and gradient, ``(S + 1) * block_n * R`` numbers (``R``: ``rest``
padded to a power of two), within ``MAX_BLOCK_FLOATS``, and at most 128: a GPU's tile dimensions are powers of
two, 128 neurons fill four 32-lane warps, and a program whose traces outgrow its registers spills them to memory.
On an H100 a block of 128 neurons ran ELSTM (``S = 1``, ``R = 64``: 16384 numbers) 0.43x BPTT's time, and LRU
(``S = 2``: 24576) and IIR2 (``S = 4``: 40960) slower than ``chunked``'s adjoint (docs/performance.md, "On a GPU").
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax import lax

BACKENDS = ("xla", "pallas")
MAX_BLOCK = 128
MAX_BLOCK_FLOATS = 16384  # a block's traces and gradient: ELSTM's at 128 neurons, D = 64 (see the docstring)


def check_shapes(J, I, g, e0) -> tuple[int, int, int]:
    """``(T, S, N)`` of consistent arguments; a ``ValueError`` naming the argument otherwise."""
    if jnp.ndim(J) != 4 or J.shape[1] != J.shape[2]:
        raise ValueError(f"J must have shape (T, S, S, N), got {jnp.shape(J)}")
    T, S, _, N = J.shape
    if jnp.ndim(g) != 3 or g.shape != (T, S, N):
        raise ValueError(f"g must have shape (T, S, N) = {(T, S, N)}, got {jnp.shape(g)}")
    if jnp.ndim(I) < 3 or I.shape[:3] != (T, S, N):
        raise ValueError(f"I must have shape (T, S, N, *rest) with (T, S, N) = {(T, S, N)}, got {jnp.shape(I)}")
    if jnp.shape(e0) != I.shape[1:]:
        raise ValueError(f"e0 must have shape (S, N, *rest) = {I.shape[1:]} (I without its T), got {jnp.shape(e0)}")
    return T, S, N


def default_block(N: int, order: int = 1, width: int = 1) -> int:
    """The largest power of two that divides ``N``, at most ``MAX_BLOCK``, whose ``(order + 1) * block * width``
    trace and gradient numbers stay within ``MAX_BLOCK_FLOATS`` where any block does (see the module docstring)."""
    fits = MAX_BLOCK_FLOATS // ((order + 1) * width)
    cap = 1 << (max(fits, 1).bit_length() - 1)  # the largest power of two at most fits
    return math.gcd(N, min(MAX_BLOCK, cap))


def trace_chunk(J, I, g, e0, backend: str = "xla", block_n: int | None = None, interpret: bool | None = None):
    """``(e_T, grad)`` of ``T`` steps of the element-wise trace recurrence (see the module docstring).

    ``backend``: ``"xla"`` (a scan) or ``"pallas"`` (one kernel launch); ``block_n``: neurons per Pallas program
    (default ``default_block(N, S, R)``; must divide ``N``); ``interpret``: run Pallas in interpret mode (default: on a
    CPU, where it has no compiled backend)."""
    T, S, N = check_shapes(J, I, g, e0)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "xla":
        return _xla(J, I, g, e0)
    rest = I.shape[3:]
    R = math.prod(rest)
    pad = (1 << (R - 1).bit_length()) - R  # Triton's tiles are powers of two: zero traces pad the rest to one
    block_n = default_block(N, S, R + pad) if block_n is None else block_n
    if isinstance(block_n, bool) or not isinstance(block_n, int) or block_n < 1 or N % block_n:
        raise ValueError(f"block_n must be a positive integer that divides N = {N}, got {block_n!r}")
    interpret = jax.default_backend() == "cpu" if interpret is None else interpret
    I = jnp.pad(I.reshape(T, S, N, R), ((0, 0), (0, 0), (0, 0), (0, pad)))
    e_T, grad = _pallas(J, I, g, jnp.pad(e0.reshape(S, N, R), ((0, 0), (0, 0), (0, pad))), block_n, interpret)
    return e_T[..., :R].reshape(e0.shape), grad[:, :R].reshape((N, *rest))


@jax.jit
def _xla(J, I, g, e0):
    """The reference: one step per iteration of a ``lax.scan``."""
    rest = (1,) * (I.ndim - 3)  # J and g broadcast along the trailing axes

    def step(carry, inputs):
        e, grad = carry
        J_t, I_t, g_t = inputs
        e = jnp.sum(J_t.reshape(*J_t.shape, *rest) * e[None], axis=1) + I_t
        return (e, grad + jnp.sum(g_t.reshape(*g_t.shape, *rest) * e, axis=0)), None

    dtype = jnp.result_type(J, I, g, e0)
    zero = jnp.zeros(I.shape[2:], dtype)
    (e, grad), _ = lax.scan(step, (e0.astype(dtype), zero), (J, I, g))
    return e, grad


def _kernel(J_ref, I_ref, g_ref, e0_ref, e_ref, grad_ref, *, steps: int, order: int):
    """One block of neurons for all ``steps``: its traces ``e[s]`` (block, R) stay in the loop's carry."""

    def step(t, carry):
        e, grad = carry
        new = tuple(sum(J_ref[t, s, r][:, None] * e[r] for r in range(order)) + I_ref[t, s]
                    for s in range(order))
        grad = grad + sum(g_ref[t, s][:, None] * new[s] for s in range(order))
        return new, grad

    e0 = tuple(e0_ref[s] for s in range(order))
    e, grad = lax.fori_loop(0, steps, step, (e0, jnp.zeros(grad_ref.shape, grad_ref.dtype)))
    for s in range(order):
        e_ref[s] = e[s]
    grad_ref[...] = grad


@functools.partial(jax.jit, static_argnames=("block_n", "interpret"))
def _pallas(J, I, g, e0, block_n: int, interpret: bool):
    from jax.experimental import pallas as pl  # here: importing Pallas costs every ``import rtrl`` otherwise

    T, S, N, R = I.shape
    dtype = jnp.result_type(J, I, g, e0)
    return pl.pallas_call(
        functools.partial(_kernel, steps=T, order=S),
        grid=(N // block_n,),
        in_specs=[pl.BlockSpec((T, S, S, block_n), lambda i: (0, 0, 0, i)),
                  pl.BlockSpec((T, S, block_n, R), lambda i: (0, 0, i, 0)),
                  pl.BlockSpec((T, S, block_n), lambda i: (0, 0, i)),
                  pl.BlockSpec((S, block_n, R), lambda i: (0, i, 0))],
        out_specs=[pl.BlockSpec((S, block_n, R), lambda i: (0, i, 0)),
                   pl.BlockSpec((block_n, R), lambda i: (i, 0))],
        out_shape=[jax.ShapeDtypeStruct((S, N, R), dtype), jax.ShapeDtypeStruct((N, R), dtype)],
        interpret=interpret,
    )(J.astype(dtype), I.astype(dtype), g.astype(dtype), e0.astype(dtype))
