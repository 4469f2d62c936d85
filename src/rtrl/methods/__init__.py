"""Gradient methods by name; ``resolve`` turns a name or object into a method checked against a cell."""

from __future__ import annotations

import functools
from collections.abc import Callable

from rtrl.methods.base import Method, SequenceMethod, TraceMethod
from rtrl.methods.bptt import BPTT
from rtrl.methods.closed_form import ClosedForm
from rtrl.methods.dense import DenseRTRL
from rtrl.methods.diagonal import Diagonal
from rtrl.methods.eprop import EProp
from rtrl.methods.layer_local import LayerLocal
from rtrl.methods.snap import SnAp
from rtrl.methods.tbptt import TBPTT
from rtrl.methods.uoro import UORO

# name -> constructor of the method with its default options
_REGISTRY: dict[str, Callable[[], Method]] = {m.name: m for m in (BPTT, DenseRTRL, ClosedForm, Diagonal)}
_REGISTRY.update({"snap1": SnAp, "snap2": functools.partial(SnAp, n=2), "eprop": EProp, "uoro": UORO,
                  "tbptt": TBPTT, "layer_local": LayerLocal})
METHODS: tuple[str, ...] = tuple(_REGISTRY)


def resolve(method: str | Method, cell=None) -> Method:
    """The method object for a name (or the object itself), checked against ``cell`` when one is given."""
    if isinstance(method, str):
        if method not in _REGISTRY:
            raise ValueError(f"unknown method {method!r}; expected one of {list(METHODS)}")
        method = _REGISTRY[method]()
    elif not isinstance(method, Method):
        raise ValueError(f"method must be a name from {list(METHODS)} or a Method object, got {method!r}")
    if cell is not None:
        method.check(cell)
    return method


__all__ = ["METHODS", "TBPTT", "UORO", "EProp", "LayerLocal", "Method", "SequenceMethod", "SnAp", "TraceMethod",
           "resolve"]
