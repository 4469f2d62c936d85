"""Cells by name: a registered one (``rtrl.cells.CELLS``) or any other by its import path ``module.path:Name``, as a
configuration names them (``--cell``), and which import paths a run folder may name.

A run folder can come from anyone and anyone can edit it, so what its ``config.json`` says about itself is never
enough to run the code it names: an import path there must be a cell class (or marked factory) of ``rtrl.cells``, a
cell class of Flax or Equinox, or one the user allowed (``rtrl.config``'s rule: ``--cell`` or ``--allow-import`` on
this command line, or the ``RTRL_ALLOW_IMPORT`` environment variable).
"""

from __future__ import annotations

from rtrl.cells import CELLS
from rtrl.cells.adapters import CellError, from_import_path, is_trusted, split_import_path
from rtrl.config import ALLOW_IMPORT, Invalid, OptionError, allowed, allowed_imports, make

__all__ = ["ALLOW_IMPORT", "allowed_imports", "cell_import", "cell_name", "importable", "make_cell"]


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


def importable(path: str) -> bool:
    """Whether a run folder's ``config.json`` may name the cell ``path``: a cell class of ``rtrl.cells`` or of
    Flax's or Equinox's own modules, a cell factory of ``rtrl.cells`` (``rtrl.cells.network:lru_network``), or a path
    the user allowed in this process (``rtrl.config.allowed_imports``, or the ``RTRL_ALLOW_IMPORT`` environment
    variable)."""
    return allowed(path) or is_trusted(path)


def cell_import(value) -> str | None:
    """The import path of a cell named by one that is not rtrl's, Flax's or Equinox's own (the code a run folder
    naming it would run: ``rtrl.config.option``'s ``imports``), else ``None``; a ``ValueError`` for a malformed
    path."""
    if not (isinstance(value, str) and ":" in value):
        return None
    split_import_path(value)
    return None if is_trusted(value) else value
