"""Layer-local RTRL for a ``Stack``: each layer keeps its own traces, of its own parameters, w.r.t. its own carry.

For layer ``i`` with parameters ``theta_i``, carry ``c_i`` and input ``x_i`` (the output of layer ``i - 1`` at
the same step), the inner method traces ``M_i = d c_i / d theta_i`` as if ``x_i`` did not depend on any
parameter. Dropped: every block ``d c_j / d theta_i`` with ``j > i``, the influence of a lower layer's
parameters on the upper layers' carries through their inputs, accumulated over time. Kept exactly: the
credit. The online step back-propagates ``dL/dh_t`` through the whole stack within step ``t`` (space only), so
the immediate gradients of every layer (including a lower layer's parameters through the upper layers at the
same step) and the credit ``dL/dc_i`` on each layer's previous carry are exact; each layer turns its credit
into a gradient with its own traces.

With one layer this is the inner method on that layer. Cost per step: the sum of the inner method's costs on
the layers; with the dense inner ``rtrl``, O(sum_i C_i^2 P_i) time and O(sum_i C_i P_i) memory, against
O((sum_i C_i)^2 sum_i P_i) and O(sum_i C_i sum_i P_i) for exact RTRL of the whole stack.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rtrl.cells.stack import Stack, layer_name
from rtrl.methods.base import TraceMethod


class LayerLocal(TraceMethod):
    """Per-layer traces under ``inner`` (a trace method name or object, default ``"rtrl"``)."""

    inner: Any = "rtrl"
    name: ClassVar[str] = "layer_local"

    def inner_method(self) -> TraceMethod:
        from rtrl.methods import resolve  # the registry imports this module

        method = resolve(self.inner)
        if not method.online:
            raise ValueError(f"inner must be a trace method, got {method.name!r}, which has no traces")
        return method

    def check(self, cell) -> None:
        if not isinstance(cell, Stack):
            raise ValueError(f"method 'layer_local' applies to a rtrl.cells.Stack, got {cell.name}; "
                             "use the inner method directly on a single cell")
        inner = self.inner_method()
        for layer in cell.layers:
            inner.check(layer)

    def init(self, cell, params, carry):
        inner = self.inner_method()
        return tuple(inner.init(layer, params[layer_name(i)], c)
                     for i, (layer, c) in enumerate(zip(cell.layers, carry, strict=True)))

    def update(self, cell, params, carry, traces, x):
        inner = self.inner_method()
        new = []
        for i, (layer, c, tr) in enumerate(zip(cell.layers, carry, traces, strict=True)):
            p = params[layer_name(i)]
            new.append(inner.update(layer, p, c, tr, x))
            x = layer.step(p, c, x)[1]  # the next layer's input, a constant for its traces
        return tuple(new)

    def contract(self, cell, params, traces, g_carry):
        inner = self.inner_method()
        return {layer_name(i): inner.contract(layer, params[layer_name(i)], tr, g)
                for i, (layer, tr, g) in enumerate(zip(cell.layers, traces, g_carry, strict=True))}
