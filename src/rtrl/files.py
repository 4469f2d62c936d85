"""Atomic file writes: write a temporary file beside the target, flush it to disk, then ``os.replace`` it.

A crash or an exception at any point leaves either the old file or the new one, never a half-written file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def naming(path: str | os.PathLike):
    """An ``OSError`` in the block that names no file is raised again naming ``path`` (a full disk: ``write`` and
    ``fsync`` say only "No space left on device")."""
    try:
        yield
    except OSError as e:
        if e.filename is None and e.errno is not None:
            raise OSError(e.errno, e.strerror or str(e), str(path)) from None
        raise


def atomic_write(path: str | os.PathLike, write: Callable[[IO], None], binary: bool = True) -> None:
    """Call ``write(file)`` on a temporary file, then move it onto ``path`` (an ``OSError`` names ``path``)."""
    path = Path(path)
    with naming(path):
        _atomic_write(path, write, binary)


def _atomic_write(path: Path, write: Callable[[IO], None], binary: bool) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes it private; give it an ordinary file's mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write(path, lambda f: f.write(text), binary=False)
