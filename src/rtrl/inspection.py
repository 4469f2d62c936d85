"""``rtrl.inspect(cell)``: what the library finds in a cell's step, and what each method would keep.

``inspect(cell, params=None)`` returns an ``Inspection``: ``.method`` is what ``"auto"`` resolves to for the cell
(a name from ``rtrl.METHODS``), ``.trace_floats`` the trace floats per example that method keeps,
``.memory`` the trace floats per example of every trace method that applies (``None`` where a method applies but
its pattern was not probed: SnAp on a cell with more than ``PROBE_LIMIT`` sensitivity entries), ``.sequence`` the
exact methods ``"auto"`` times against each other for a whole sequence (``rtrl.sequence``), ``.roles`` each
parameter's role and ``.carry`` the carry's structure; ``str()`` says all of it for a person. Roles:

* ``per-neuron``: every entry reaches its own neuron, one entry per neuron (an element-wise recurrent vector);
* ``projection``: every entry reaches one neuron, several entries per neuron (input weights, ``(D, N)``);
* ``readout``: reaches no carry (its gradient is the immediate one; no traces);
* ``dense``: the carry couples neurons, or the parameter's entries reach several neurons: dense traces.

An element-wise parameter's role adds what shrinks its traces (``rtrl.structure.Elementwise``): its traces are
``i`` times another's (a complex pair), or it reaches a complex recurrence only through its multiplier
``lambda`` (one shared ``ds/dlambda``); the carry's sentence names the leaves that are a delay line of inputs
(kept as those inputs, no traces).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax

from rtrl import structure, validate
from rtrl.methods import REGISTRY, Auto, resolve
from rtrl.methods.sensitivity import PROBE_LIMIT  # noqa: F401 (where the docstring's limit lives; imported from here)


class Inspection(NamedTuple):
    cell: str
    method: str
    trace_floats: int
    memory: dict[str, int | None]
    roles: dict[str, str]
    carry: str
    sequence: tuple[str, ...] = ()

    def __str__(self) -> str:
        width = max(map(len, self.roles), default=0)
        lines = [f"{self.cell}: auto -> {self.method} ({self.trace_floats:,} trace floats per example)"]
        if len(self.sequence) > 1:
            lines.append(f"whole sequences (rtrl.sequence_grad): auto -> the faster of {' and '.join(self.sequence)} "
                         "on the call's shapes, timed at its first call")
        lines += [f"carry: {self.carry}", "parameters:"]
        lines += [f"  {name:<{width}}  {role}" for name, role in self.roles.items()]
        lines.append("trace floats per example, by method:")
        lines += [f"  {name:<12} {'not probed (too large)' if n is None else f'{n:,}'}"
                  for name, n in self.memory.items()]
        return "\n".join(lines)


def floats(tree) -> int:
    return sum(math.prod(a.shape) for a in jax.tree.leaves(tree))


def roles(cell, params, carry) -> tuple[dict[str, str], str]:
    """Each parameter leaf's role and a sentence on the carry (see the module docstring)."""
    p_spec, c_spec = structure.spec(params), structure.spec(carry)
    leaves = structure.leaf_dependencies(cell, p_spec, c_spec)
    found = structure.elementwise(cell, p_spec, c_spec)
    shapes = [tuple(a.shape) for a in jax.tree.leaves(params)]
    sizes = ", ".join(f"{n} {tuple(a.shape)}" for n, a in zip(leaves.carry_names, jax.tree.leaves(carry), strict=True))
    out = {}
    for j, (name, shape) in enumerate(zip(leaves.param_names, shapes, strict=True)):
        if not leaves.reach(j):
            out[name] = f"readout {shape}: reaches no carry"
        elif isinstance(found, structure.NotElementwise):
            out[name] = f"dense {shape}: reaches carry leaves {[leaves.carry_names[t] for t in leaves.reach(j)]}"
        else:
            kind = "per-neuron" if len(shape) == 1 else "projection"
            out[name] = f"{kind} {shape}: reaches {[leaves.carry_names[t] for t in found.reach[j]]} of its neuron"
            out[name] += "".join(f"; {shared}" for shared in shared_traces(found, j))
    if isinstance(found, structure.NotElementwise):
        return out, f"{sizes}; not element-wise: {found.reason}"
    return out, f"{sizes}; element-wise over {found.neurons} neurons" + "".join(
        f"; {delay_line(found, t)}" for t, d in enumerate(found.stored) if d is not None)


def delay_line(found: structure.Elementwise, t: int) -> str:
    """What carry leaf ``t``, a stored input (``Elementwise.stored``), is, in words."""
    (source, delay), name = found.stored[t], found.carry_names[t]
    if delay == 1:
        return f"{name} reads no carry (a function of the last input: kept as that input, no traces)"
    return (f"{name} is {found.carry_names[source]} {delay - 1} step{'s' * (delay > 2)} later (a delay line: kept as "
            f"the input {delay} steps back, no traces)")


def shared_traces(found: structure.Elementwise, j: int) -> list[str]:
    """What parameter leaf ``j`` shares its traces with (``Elementwise.pairs`` and ``multipliers``), in words."""
    names, carry = found.param_names, found.carry_names
    out = []
    for pair in found.pairs:
        if j == pair.follower:
            out.append(f"its traces are {'' if pair.sign > 0 else '-'}i times {names[pair.leader]}'s "
                       f"(complex pair {carry[pair.re]} + i {carry[pair.im]}: not kept)")
    for m in found.multipliers:
        if j in m.params:
            out.append(f"enters {carry[m.re]} + i {carry[m.im]} only through its multiplier lambda: traces "
                       f"ds/dlambda dlambda/dtheta, one ds/dlambda shared by {[names[k] for k in m.params]}")
    return out


def memory(cell) -> dict[str, int | None]:
    """Trace floats per example of each trace method (default options) that applies to ``cell`` (``None``: not
    found out, ``TraceMethod.trace_shapes``)."""
    out = {}
    for name, make in REGISTRY.items():
        method = make()
        if not method.online or name == "auto":
            continue
        try:
            method = resolve(method, cell)
        except ValueError:
            continue
        shapes = method.trace_shapes(cell)
        out[name] = None if shapes is None else floats(shapes)
    return out


def inspect(cell, params=None) -> Inspection:
    """What ``"auto"`` resolves to for ``cell``, the traces each method keeps and each parameter's role."""
    validate.check_cell(cell)
    if params is None:
        params = jax.eval_shape(cell.init, jax.random.PRNGKey(0))
    else:
        validate.check_params(cell, params)
    carry = jax.eval_shape(lambda: cell.initial_carry(()))
    method = resolve("auto", cell)
    by_method = memory(cell)
    role, carry_text = roles(cell, params, carry)
    sequence = tuple(m.name for m in Auto().sequence_candidates(cell))
    return Inspection(cell.name, method.name, by_method[method.name], by_method, role, carry_text, sequence)
