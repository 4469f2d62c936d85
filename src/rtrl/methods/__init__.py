"""Gradient methods, by name or as objects.

``REGISTRY`` maps each name in ``METHODS`` to the constructor of that method with its default options (a class,
or a ``functools.partial`` fixing an option: ``snap2`` is ``SnAp(n=2)``); ``resolve`` turns a name or an object
into a method, checked against a cell. A trace method's ``bind(cell)`` gives its ``TraceRule`` for that cell
(``rtrl.methods.base``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from rtrl.methods.auto import Auto
from rtrl.methods.base import TRACE_DTYPES, Method, SequenceMethod, TraceMethod, TraceRule
from rtrl.methods.bptt import BPTT
from rtrl.methods.chunked import Chunked
from rtrl.methods.closed_form import ClosedForm
from rtrl.methods.diagonal import Diagonal
from rtrl.methods.eprop import EProp, EPropWindow
from rtrl.methods.layer_local import LayerLocal
from rtrl.methods.sensitivity import DenseRTRL, Sensitivity, SnAp
from rtrl.methods.tbptt import TBPTT
from rtrl.methods.uoro import UORO
from rtrl.validate import check_cell, closest, what

REGISTRY: dict[str, Callable[..., Method]] = {
    "bptt": BPTT,
    "rtrl": DenseRTRL,
    "closed_form": ClosedForm,
    "diagonal": Diagonal,
    "snap1": SnAp,
    "snap2": functools.partial(SnAp, n=2),
    "eprop": EProp,
    "eprop_window": EPropWindow,
    "uoro": UORO,
    "tbptt": TBPTT,
    "chunked": Chunked,
    "layer_local": LayerLocal,
    "auto": Auto,
}
METHODS: tuple[str, ...] = tuple(REGISTRY)


def resolve(method: str | Method, cell=None) -> Method:
    """The method object for a name (or the object itself), checked against ``cell`` when one is given; ``auto``
    given a cell becomes the method it chooses for it."""
    if isinstance(method, str):
        if method not in REGISTRY:
            raise ValueError(f"unknown method {method!r}{closest(method, METHODS)} (expected one of {list(METHODS)})")
        method = REGISTRY[method]()
    elif not isinstance(method, Method):
        raise TypeError(f"method must be a name from {list(METHODS)} or a Method object such as "
                        f"rtrl.methods.SnAp(n=2), got {what(method)}")
    if cell is not None:
        check_cell(cell)
        method = method.choose(cell) if isinstance(method, Auto) else method
        method.check(cell)
    return method


__all__ = ["BPTT", "TRACE_DTYPES", "Auto", "Chunked", "METHODS", "REGISTRY", "TBPTT", "UORO", "ClosedForm", "DenseRTRL",
           "Diagonal", "EProp", "EPropWindow", "LayerLocal", "Method", "Sensitivity", "SequenceMethod", "SnAp",
           "TraceMethod", "TraceRule", "resolve"]
