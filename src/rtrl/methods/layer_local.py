"""Layer-local RTRL for layered cells: each recurrent layer keeps its own traces, of its own parameters, w.r.t.
its own carry.

A layered cell (``rtrl.cells.Stack``, ``rtrl.cells.Network``; the protocol ``rtrl.capabilities.Layered``) exposes
``layers``, ``layer_params(params)``, ``layer_inputs(params, carry, x)`` (the input each layer reads at this
step) and ``from_layer_grads(params, grads)``. Binding resolves the inner method for each layer and binds it to
that layer, once. For layer ``i`` with parameters ``theta_i``, carry ``c_i`` and input ``x_i``, the inner method traces
``M_i = d c_i / d theta_i`` as if ``x_i`` did not depend on any parameter. Dropped: every block
``d c_j / d theta`` with ``j`` above the layer that owns ``theta``, i.e. the influence of a lower layer's
parameters (and of the parameters outside the cells: a network's encoder and mixing layers) on the upper layers'
carries through their inputs, accumulated over time. Kept exactly: the credit. The online step back-propagates
``dL/dh_t`` through the whole network within step ``t`` (space only), so the immediate gradients of every
parameter (including a lower layer's through the upper layers at the same step) and the credit ``dL/dc_i`` on
each layer's previous carry are exact; each layer turns its credit into a gradient with its own traces.

With one layer, and no parameter below its cell, this is the inner method on that layer (exact). Cost per step:
the sum of the inner method's costs on the layers plus one forward and backward pass of the network; with the
dense inner ``rtrl``, O(sum_i C_i^2 P_i) time and O(sum_i C_i P_i) memory, against O((sum_i C_i)^2 sum_i P_i) and
O(sum_i C_i sum_i P_i) for exact RTRL of the whole stack; with ``closed_form`` or ``diagonal`` on element-wise
cells (LRU, RTU, IIR2), traces the size of the cells' recurrent parameters times their state order.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from rtrl.capabilities import Layered
from rtrl.methods.base import TraceMethod, TraceRule, example_shapes


class LayerLocal(TraceMethod):
    """Per-layer traces under ``inner``: a trace method name or object, resolved for each layer (the default
    ``"auto"`` gives every layer its own cheapest exact method: closed form, diagonal or dense)."""

    inner: Any = "auto"
    name: ClassVar[str] = "layer_local"

    def __check_init__(self) -> None:
        """``inner`` is refused here, not at the first step: a trace method's name or a trace method object."""
        from rtrl.methods import REGISTRY, Auto  # the registry imports this module
        from rtrl.validate import closest, what

        names = [name for name, make in REGISTRY.items()  # classes (or partials of them): nothing is made here
                 if name == "auto" or (name != "layer_local" and getattr(make, "func", make).online)]
        if isinstance(self.inner, str):
            if self.inner not in names:
                raise ValueError(f"inner must be the name of a trace method, one of {names}, got "
                                 f"{self.inner!r}{closest(self.inner, names)}")
        elif not isinstance(self.inner, TraceMethod | Auto) or isinstance(self.inner, LayerLocal):
            raise TypeError(f"inner must be the name of a trace method, one of {names}, or a trace method object "
                            f"such as rtrl.methods.SnAp(n=2), got {what(self.inner)}")
        if getattr(self.inner, "trace_dtype", None) is not None:  # the online step stores traces by our option alone
            raise ValueError(f"inner must not have a trace_dtype (got {self.inner.trace_dtype!r}): give trace_dtype to "
                             f"layer_local itself, which stores every layer's traces")

    def inner_methods(self, cell) -> tuple[TraceMethod, ...]:
        """The method of each layer of ``cell``, checked against it."""
        from rtrl.methods import resolve  # the registry imports this module

        return tuple(resolve(self.inner, layer) for layer in cell.layers)  # trace methods: see __check_init__

    def check(self, cell) -> None:
        require_layered(cell)
        self.inner_methods(cell)

    def bind(self, cell, params=None, carry=None) -> TraceRule:
        """Each layer's rule, bound once (an inner method that does not apply to a layer refuses there)."""
        from rtrl.methods import resolve  # the registry imports this module

        require_layered(cell)
        params, carry = example_shapes(cell, params, carry)
        inner = resolve(self.inner)
        rules = tuple(inner.bind(layer, p, c) for layer, p, c in
                      zip(cell.layers, cell.layer_params(params), carry, strict=True))
        return TraceRule(self, functools.partial(init, cell, rules), functools.partial(update, cell, rules),
                         functools.partial(contract, cell, rules), functools.partial(to_params, cell, rules))


def require_layered(cell) -> None:
    if not isinstance(cell, Layered):
        raise ValueError(f"method 'layer_local' applies to a rtrl.cells.Stack or rtrl.cells.Network (a layered "
                         f"cell), got {cell.name}; use the inner method directly on a single cell")


def init(cell, rules, params, carry):
    return tuple(rule.init(p, c) for rule, p, c in zip(rules, cell.layer_params(params), carry, strict=True))


def update(cell, rules, params, carry, traces, x):
    inputs = cell.layer_inputs(params, carry, x)  # constants for each layer's traces
    return tuple(rule.update(p, c, tr, xi) for rule, p, c, tr, xi in
                 zip(rules, cell.layer_params(params), carry, traces, inputs, strict=True))


def contract(cell, rules, params, traces, g_carry):
    return tuple(rule.contract(p, tr, g) for rule, p, tr, g in
                 zip(rules, cell.layer_params(params), traces, g_carry, strict=True))


def to_params(cell, rules, params, grads):
    return cell.from_layer_grads(params, tuple(rule.to_params(p, g) for rule, p, g in
                                               zip(rules, cell.layer_params(params), grads, strict=True)))
