"""The command's usage errors and parser (``rtrl.usage``), under the run layer's name, where its modules and the
commands above it import them."""

from __future__ import annotations

from rtrl.usage import NEGATIVE_NUMBER, Once, Parser, UsageError

__all__ = ["NEGATIVE_NUMBER", "Once", "Parser", "UsageError"]
