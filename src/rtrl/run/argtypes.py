"""Command-line argument types shared by the ``rtrl`` command and the benchmark scripts."""

from __future__ import annotations

import argparse

from rtrl.checks import MAX_COUNT, positive_int_expected


def positive_int(text: str) -> int:
    value = int(text)
    expected = positive_int_expected(value)
    if expected:
        raise argparse.ArgumentTypeError(f"must be {expected}, got {text}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number, 0 or more, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def size3(text: str) -> tuple[int, int, int]:
    """``DxNxB``: input size, hidden size, batch."""
    try:
        D, N, B = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a size is DxNxB (three positive integers), got {text!r}") from None
    if min(D, N, B) < 1 or max(D, N, B) > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"a size is DxNxB (three positive integers), got {text!r}")
    return D, N, B


def path(text: str) -> str:
    """A file or folder path: not empty (``--out ''`` would otherwise mean the current folder, or fail with an
    operating-system message that does not say which option)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must be a path, got an empty one ({text!r})")
    return text


def import_path(text: str) -> str:
    """``module.path:Name``."""
    module, sep, name = text.partition(":")
    if not (sep and module and name):
        raise argparse.ArgumentTypeError(f"must be an import path module.path:Name, got {text!r}")
    return text
