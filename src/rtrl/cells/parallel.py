"""Cells side by side: separate networks stepped as one cell, each on its own input (or all on the same one), their
outputs concatenated.

For members ``0 .. K-1`` with parameters ``params["part{k}"]`` and carries ``carry[k]``, one step is::

    x_k = x[o_k : o_k + D_k]          (or x itself, with ``shared_input``)
    carry'[k], h_k = cells[k].step(params["part{k}"], carry[k], x_k)
    h' = [h_0, h_1, ..., h_{K-1}]     (concatenated)

No member's parameters reach another member's carry, so the exact RTRL sensitivities are block-diagonal: each
member's own traces, whatever its method would keep alone. Where every member has closed-form traces
(``rtrl.capabilities.HandDerivedTraces``) the cell has them too, each member's in its slot (the capability is the
cell's at construction, as the spiking cells' is: a member without them leaves ``Parallel`` without them, and
``auto`` then picks ``diagonal`` or dense ``rtrl``); likewise ``output`` (``HasOutput``) where every member has one.

What it is for: an actor and a critic as two networks (``rtrl.rl``'s ``--critic-network``, Farr et al. 2026's agents),
one recurrent state and one online learner, no gradient of one reaching the other.
"""

from __future__ import annotations

import dataclasses
import itertools

import jax
import jax.numpy as jnp

from rtrl.capabilities import HandDerivedTraces, HasOutput
from rtrl.cells.base import Carry, Cell, Params, check_member_carry, check_member_params, member_cells

CLOSED_FORM = ("init", "update", "contract", "to_params")  # trace_* (rtrl.capabilities.HandDerivedTraces)


def part_name(k: int) -> str:
    return f"part{k}"


class Parallel(Cell):
    """``Parallel((cell_0, cell_1, ...), shared_input=False)``: ``input_size`` the members' summed (or, with
    ``shared_input``, their common one), ``hidden_size`` their outputs' summed."""

    cells: tuple[Cell, ...] = ()
    shared_input: bool = False
    input_size: int = dataclasses.field(init=False)
    hidden_size: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        cells = member_cells("cells", self.cells)
        if not isinstance(self.shared_input, bool):
            raise ValueError(f"shared_input must be True or False, got {self.shared_input!r}")
        if self.shared_input and len({c.input_size for c in cells}) > 1:
            raise ValueError(f"shared_input needs cells of one input_size (each reads the whole input), got "
                             f"{[c.input_size for c in cells]}")
        object.__setattr__(self, "cells", cells)
        inputs = cells[0].input_size if self.shared_input else sum(c.input_size for c in cells)
        object.__setattr__(self, "input_size", inputs)
        object.__setattr__(self, "hidden_size", sum(c.hidden_size for c in cells))
        if all(isinstance(c, HasOutput) for c in cells):
            object.__setattr__(self, "output", self.joint_output)
        if all(isinstance(c, HandDerivedTraces) for c in cells):
            for name in CLOSED_FORM:
                object.__setattr__(self, "trace_" + name, getattr(self, "joint_trace_" + name))

    def init(self, key, dtype=None) -> Params:
        keys = jax.random.split(key, len(self.cells))
        return {part_name(k): cell.init(key_k, dtype) for k, (cell, key_k) in enumerate(zip(self.cells, keys,
                                                                                             strict=True))}

    def initial_carry(self, batch_shape: tuple[int, ...] = (), dtype=None) -> Carry:
        return tuple(cell.initial_carry(batch_shape, dtype) for cell in self.cells)

    def inputs(self, x) -> tuple:
        """Each member's input: ``x`` itself with ``shared_input``, else its slice of ``x``'s last axis."""
        if self.shared_input:
            return (x,) * len(self.cells)
        ends = tuple(itertools.accumulate(c.input_size for c in self.cells))
        return tuple(x[..., end - c.input_size:end] for c, end in zip(self.cells, ends, strict=True))

    def step(self, params: Params, carry: Carry, x):
        self.check_input(x)
        what = f"a {len(self.cells)}-cell Parallel"
        check_member_params(params, [part_name(k) for k in range(len(self.cells))], what)
        check_member_carry(carry, len(self.cells), what, "cells")
        stepped = [cell.step(params[part_name(k)], c, xk)
                   for k, (cell, c, xk) in enumerate(zip(self.cells, carry, self.inputs(x), strict=True))]
        return tuple(c for c, _ in stepped), jnp.concatenate([h for _, h in stepped], axis=-1)

    # -- what every member has, the cell has (attached in __post_init__) ---------------------------------------
    def each(self, method: str, params: Params, *per_member) -> tuple:
        """``cells[k].method(params["part{k}"], *(a[k] for a in per_member))`` for every member ``k``."""
        return tuple(getattr(cell, method)(params[part_name(k)], *(a[k] for a in per_member))
                     for k, cell in enumerate(self.cells))

    def joint_output(self, params: Params, carry: Carry, x):
        return jnp.concatenate(self.each("output", params, carry, self.inputs(x)), axis=-1)

    def joint_trace_init(self, params: Params, carry: Carry):
        return self.each("trace_init", params, carry)

    def joint_trace_update(self, params: Params, carry: Carry, traces, x):
        return self.each("trace_update", params, carry, traces, self.inputs(x))

    def joint_trace_contract(self, params: Params, traces, g_carry: Carry) -> Params:
        grads = self.each("trace_contract", params, traces, g_carry)
        return {part_name(k): g for k, g in enumerate(grads)}

    def joint_trace_to_params(self, params: Params, grads: Params) -> Params:
        each = self.each("trace_to_params", params, [grads[part_name(k)] for k in range(len(self.cells))])
        return {part_name(k): g for k, g in enumerate(each)}
