"""``Frozen``: the base of every hyper-parameter object (cells, methods, tasks).

A subclass is made a frozen dataclass when it is defined, so it declares its options as annotated class
attributes and nothing else: no decorator (one is harmless), and ``__init__``, ``__eq__``, ``__hash__`` and
``__repr__`` come from its fields (class-level constants are annotated ``ClassVar`` or not at all). Equal options
give equal, hashable objects, which is what lets compiled functions be cached per cell and per method (they are
static arguments of ``jax.jit``)."""

from __future__ import annotations

import dataclasses


class Frozen:
    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(frozen=True)(cls)
        # Inherit the refusal below instead: a class that defines __setattr__ itself cannot be decorated again,
        # and subclasses written as ``@dataclasses.dataclass(frozen=True)`` should work as well.
        del cls.__setattr__, cls.__delattr__

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __post_init__(self) -> None:
        """Validate the options (subclasses extend this and call ``super().__post_init__()``)."""
