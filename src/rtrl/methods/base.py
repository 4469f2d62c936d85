"""What a gradient method is.

Two kinds:

* ``TraceMethod`` (online): carries eligibility traces forward with the carry. Its three pure functions act on
  **one example** (no batch dimensions; the library vmaps them over the batch):

  - ``init(cell, params, carry) -> traces``: traces of a carry that does not depend on the parameters (zeros);
  - ``update(cell, params, carry, traces, x) -> traces'``: the traces of ``carry' = step(params, carry, x)``;
  - ``contract(cell, params, traces, g_carry) -> grads``: the parameter gradient that a credit ``g_carry`` on
    the carry the traces describe amounts to (a pytree like ``params``). A leaf of ``g_carry`` may be ``None``:
    no credit, so the traces of that leaf need not be read (exact methods get this for the carry leaves a
    cell's ``output`` does not read).

  Their use (``rtrl.online``) back-propagates a step's loss through that one step only, to the parameters
  (immediate part) and to the previous carry, whose credit the previous traces turn into the rest.

* ``SequenceMethod``: needs the whole sequence (``bptt``); only ``sequence_grad`` applies.

Every method has ``check(cell)``, which raises ``ValueError`` saying why the method does not apply to a cell.
"""

from __future__ import annotations

from typing import Any


class Method:
    name: str = "method"
    online: bool = False
    exact: bool = False

    def check(self, cell) -> None:
        """Raise ``ValueError`` when this method does not apply to ``cell``."""

    # Methods are compared by value (type and options) so that compiled functions can be cached per method.
    def __eq__(self, other) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(vars(self).items()))))

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in sorted(vars(self).items()))
        return f"{type(self).__name__}({options})"


class TraceMethod(Method):
    online = True

    def init(self, cell, params, carry) -> Any:
        raise NotImplementedError

    def update(self, cell, params, carry, traces, x) -> Any:
        raise NotImplementedError

    def contract(self, cell, params, traces, g_carry) -> Any:
        raise NotImplementedError


class SequenceMethod(Method):
    online = False

    def sequence_grad(self, cell, params, xs, targets, loss_fn, carry):
        raise NotImplementedError
