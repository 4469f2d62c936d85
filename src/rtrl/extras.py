"""How to install one of rtrl's optional extras (``pyproject.toml``), said the same way wherever a missing package
is named: in a clone (``make run``'s ``.venv``, rtrl installed editable) and where rtrl is installed as a package."""

from __future__ import annotations


def install(extra: str) -> str:
    """``.venv/bin/pip install -e '.[shd]' in a clone of rtrl, pip install 'rtrl[shd]' where rtrl is installed as a
    package`` for ``extra`` ``shd``."""
    return (f".venv/bin/pip install -e '.[{extra}]' in a clone of rtrl, pip install 'rtrl[{extra}]' where rtrl is "
            f"installed as a package")
