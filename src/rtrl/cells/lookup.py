"""Cells by name: a registered one (``rtrl.cells.CELLS``) or any other by its import path ``module.path:Name``, as a
configuration names them (``--cell``), and which import paths a run folder may name.

A run folder can come from anyone and anyone can edit it, so what its ``config.json`` says about itself is never
enough to run the code it names: an import path there must be a cell class of ``rtrl.cells``, Flax or Equinox, or
one the user allowed (``allowed_imports``: ``--cell`` or ``--allow-import`` on this command line, or the
``RTRL_ALLOW_IMPORT`` environment variable).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterable

from rtrl.cells import CELLS
from rtrl.cells.adapters import CellError, from_import_path, is_trusted, split_import_path
from rtrl.config import Invalid, OptionError, make

ALLOW_IMPORT = "RTRL_ALLOW_IMPORT"  # environment variable: import paths allowed in run folders, comma-separated
_allowed = contextvars.ContextVar("allowed", default=frozenset())  # import paths given on this command line


def cell_name(value):
    """A registered cell's name, or the import path ``module.path:Name`` of any other (a Flax or Equinox cell,
    an rtrl cell class, or a factory of either: ``rtrl.cells.adapters.from_import_path``); a configuration's
    check."""
    if isinstance(value, str) and (value in CELLS or ":" in value):
        return value
    raise Invalid(f"one of {sorted(CELLS)} or an import path module.path:Name (e.g. flax.linen:GRUCell)")


def make_cell(name: str, args: dict, input_size: int, hidden_size: int):
    """The cell a run names: a registered one, or any other by its import path ``module.path:Name``; an
    ``OptionError`` naming the option that is wrong."""
    if ":" in name:
        taken = sorted({"input_size", "hidden_size"} & set(args))
        if taken:
            raise OptionError(f"cell {name!r} has no option {taken}: its sizes are the task's input size and "
                              "hidden", "cell_args")
        try:
            return from_import_path(name, input_size=input_size, hidden_size=hidden_size, **args)
        except CellError as e:
            raise OptionError(str(e), e.option) from None
    return make("cell", CELLS, name, args, exclude=("input_size", "hidden_size"), positional=(input_size, hidden_size))


@contextlib.contextmanager
def allowed_imports(paths: Iterable[str]):
    """Within the block, run folders may name the cells of ``paths`` (import paths the user gave on the command
    line: ``--cell``, ``--allow-import``)."""
    token = _allowed.set(_allowed.get() | {p for p in paths if isinstance(p, str) and ":" in p})
    try:
        yield
    finally:
        _allowed.reset(token)


def importable(path: str) -> bool:
    """Whether a run folder's ``config.json`` may name the cell ``path``: a cell class of ``rtrl.cells`` or of
    Flax's or Equinox's own modules, or a path the user allowed in this process (``allowed_imports``, or the
    ``RTRL_ALLOW_IMPORT`` environment variable)."""
    given = _allowed.get() | {p.strip() for p in os.environ.get(ALLOW_IMPORT, "").split(",")}
    return path in given or is_trusted(path)


def check_importable(path: str, where: str) -> None:
    """A ``ValueError`` saying how to allow ``path`` unless ``importable``; nothing is imported unless trusted."""
    split_import_path(path)
    if not importable(path):
        raise ValueError(f"{where} names the cell {path!r}, which is neither a registered cell nor a cell class of "
                         f"rtrl, Flax or Equinox: importing it runs its code. If you trust it, pass --allow-import "
                         f"{path} (rtrl resume), or set {ALLOW_IMPORT}={path}")


def check_file_cell(value, where: str) -> None:
    """What a file may say of a configuration's ``cell``: a name, or an import path that is ``importable``."""
    if isinstance(value, str) and ":" in value:
        check_importable(value, where)
