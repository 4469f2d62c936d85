"""Element-wise cells: a convenient way to write a recurrence that acts neuron by neuron.

An ``ElementwiseCell`` splits its parameters into three kinds and writes its step in two parts::

    u    = {P: x @ params[P] for P in projections()}      # (N,) per projection: the only way x enters
    c'   = recur(vectors, carry, u)                        # element-wise over neurons
    h    = output(params, c', x)                           # may mix neurons; the recurrence never sees it

* ``projections()``: names of ``(D, N)`` parameters that enter the recurrence only as ``x @ P``;
* ``readout()``: names of parameters that never enter the carry update;
* every other parameter is a per-neuron vector ``(N,)`` and ``recur`` receives exactly these (``vectors``).

Every carry leaf is ``(*batch, N)``, ``N = units()`` (``hidden_size`` unless the cell says otherwise). ``step`` is
defined here from ``recur`` and ``output``, so the same step feeds BPTT and every trace method, and it checks the
declaration.

Hand-derived traces of a projection ``P`` (D, N) are kept **neuron-major**, ``(N, D)`` (``e[P]`` transposed):
every term of their update is a per-neuron factor times a row, ``J[k] e[P][k, :] + d[k] x``, so the factor is
invariant along the row in memory and XLA computes it once per neuron instead of once per entry (the ELSTM's
trace update at 64x256x32: 2x faster). ``trace_zeros``, ``outer`` and ``per_neuron`` lay the traces and their
terms out; a cell's ``trace_to_params`` turns the summed contraction back into the parameters' shapes
(``neuron_major_to_params``). The ``diagonal`` method does not need it: it
finds the element-wise structure of any cell's step (``rtrl.structure.elementwise``); the declaration is for the
person writing the cell, and for the hand-derived traces of the library's cells.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Carry, Cell, Params
from rtrl.structure import spread


def computed_once(*vectors: jax.Array) -> tuple[jax.Array, ...]:
    """``vectors`` (of one shape) unchanged, but computed once. On a CPU, XLA fuses an element-wise computation
    on a per-neuron vector into every consumer that broadcasts it, and so recomputes it for each element there: an
    LRU's eigenvalues (``exp``, ``cos``, ``sin`` of ``(N,)``) for every entry of its ``(B, D, N)`` traces made
    the trace update ten times slower. A product with the identity over the stacked vectors is an operation XLA
    does not fuse into its consumers, so they are computed once (exactly: ``1 * v + 0 * w``). Elsewhere the
    vectors as they are."""
    if jax.default_backend() != "cpu":
        return vectors
    stacked = jnp.stack(vectors)
    return tuple(jnp.tensordot(jnp.eye(len(vectors), dtype=stacked.dtype), stacked, axes=1))


def outer(d: jax.Array, x: jax.Array) -> jax.Array:
    """``x (x) d`` of a projection's trace, neuron-major: ``(N, D)`` from ``d`` (N,) and ``x`` (D,)."""
    return d[:, None] * x[None, :]


def per_neuron(v: jax.Array, trace: jax.Array) -> jax.Array:
    """A per-neuron vector ``v`` (N,) laid out to multiply a neuron-major trace (``(N,)`` or ``(N, D)``)."""
    return spread(v, -trace.ndim)


def trace_zeros(param: jax.Array, dtype) -> jax.Array:
    """The zero trace of a parameter, neuron-major: ``(N, D)`` for a projection ``(D, N)``, ``(N,)`` for a vector."""
    return jnp.zeros(jnp.shape(param)[::-1], dtype)


def neuron_major_to_params(grads: Params, projections) -> Params:
    """Neuron-major gradients laid out like their parameters: the ``projections`` (N, D) transposed to (D, N)."""
    return {name: g.T if name in projections else g for name, g in grads.items()}


class ElementwiseCell(Cell):
    """Base class of cells whose carry update acts neuron by neuron (see the module docstring)."""

    # -- to be provided by subclasses -------------------------------------------------------------------
    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        raise NotImplementedError

    def projections(self) -> tuple[str, ...]:
        """Names of the ``(D, N)`` parameters that enter the recurrence only as ``x @ P``."""
        return ()

    def readout(self) -> tuple[str, ...]:
        """Names of the parameters that never enter the carry update."""
        return ()

    def units(self) -> int:
        """The number of neurons ``N`` of the recurrence: ``hidden_size``, unless ``h`` has another width (a cell
        whose ``h`` is its ``N`` complex units' real and imaginary parts, ``hidden_size = 2 N``)."""
        return self.hidden_size

    def recur(self, vectors: Params, carry: Carry, u: Params) -> Carry:
        """The next carry, element-wise over neurons, from the ``(N,)`` vectors, the carry and ``u``."""
        raise NotImplementedError

    def output(self, params: Params, carry: Carry, x: jax.Array) -> jax.Array:
        """``h`` from all parameters, the new carry and the input."""
        raise NotImplementedError

    # -- shared -----------------------------------------------------------------------------------------
    def vector_names(self) -> tuple[str, ...]:
        """The per-neuron ``(N,)`` parameters: all that are neither projections nor readout."""
        other = set(self.projections()) | set(self.readout())
        return tuple(name for name in self.param_shapes() if name not in other)

    def check_structure(self) -> None:
        """Raise ``ValueError`` when the declared structure does not match ``param_shapes`` and ``carry_sizes``."""
        shapes = self.param_shapes()
        D, N = self.input_size, self.units()
        width = "hidden_size" if N == self.hidden_size else "units()"
        for kind, names in (("projections", self.projections()), ("readout", self.readout())):
            unknown = sorted(set(names) - set(shapes))
            if unknown:
                raise ValueError(f"{self.name}.{kind}() names {unknown}, which are not parameters {sorted(shapes)}")
        both = sorted(set(self.projections()) & set(self.readout()))
        if both:
            raise ValueError(f"{self.name} declares {both} both as projections and as readout")
        for name in self.projections():
            if shapes[name] != (D, N):
                raise ValueError(f"projection {name!r} of {self.name} must have shape (input_size, {width}) = "
                                 f"{(D, N)}, got {shapes[name]}")
        for name in self.vector_names():
            if shapes[name] != (N,):
                raise ValueError(f"parameter {name!r} of {self.name} must be a per-neuron vector of shape {(N,)} "
                                 f"(or be declared in projections() or readout()), got {shapes[name]}")
        sizes = self.carry_sizes()
        leaves = {"carry": N} if sizes is None else sizes
        for name, k in leaves.items():
            if k != N:
                raise ValueError(f"carry leaf {name!r} of {self.name} must have size {width} = {N}, got {k}")

    def split_params(self, params: Params) -> tuple[Params, Params]:
        """``(vectors, projections)``: the parameters the recurrence sees, by kind."""
        return ({name: params[name] for name in self.vector_names()},
                {name: params[name] for name in self.projections()})

    def project(self, projections: Params, x: jax.Array) -> Params:
        return {name: x @ P for name, P in projections.items()}

    def step(self, params: Params, carry: Carry, x: jax.Array) -> tuple[Carry, jax.Array]:
        self.check_input(x)
        self.check_structure()
        self.check_params(params, self.param_shapes())
        vectors, projections = self.split_params(params)
        carry = self.recur(vectors, carry, self.project(projections, x))
        return carry, self.output(params, carry, x)
