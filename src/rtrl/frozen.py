"""``Frozen``: the base of every hyper-parameter object (cells, methods, tasks).

A subclass is made a frozen dataclass when it is defined, so it declares its options as annotated class
attributes and nothing else: no decorator (one is harmless), and ``__init__``, ``__eq__``, ``__hash__`` and
``__repr__`` come from its fields (class-level constants are annotated ``ClassVar`` or not at all). Equal options
give equal, hashable objects, which is what lets compiled functions be cached per cell and per method (they are
static arguments of ``jax.jit``).

Invariants go in ``__check_init__`` (as in Equinox): after an object is constructed (and ``__post_init__`` has
normalised its options), every class of its MRO that defines ``__check_init__`` has it run, the most basic
first. A subclass therefore cannot skip its bases' checks by overriding them, and does not call ``super()``:
it only adds its own."""

from __future__ import annotations

import dataclasses
import functools


def check_init(obj) -> None:
    """Run every ``__check_init__`` defined along ``type(obj)``'s MRO, the most basic class first."""
    for cls in reversed(type(obj).__mro__):
        check = cls.__dict__.get("__check_init__")
        if check is not None:
            check(obj)


class Frozen:
    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(frozen=True)(cls)
        # Inherit the refusal below instead: a class that defines __setattr__ itself cannot be decorated again,
        # and subclasses written as ``@dataclasses.dataclass(frozen=True)`` should work as well.
        del cls.__setattr__, cls.__delattr__
        init = cls.__init__

        @functools.wraps(init)
        def checked_init(self, *args, **kw) -> None:
            init(self, *args, **kw)
            if type(self) is cls:  # once, by the class constructed (an __init__ may call its base's)
                check_init(self)

        cls.__init__ = checked_init

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __post_init__(self) -> None:
        """Normalise the options (subclasses extend this and call ``super().__post_init__()``); checks that must
        hold at every level belong in ``__check_init__``."""
