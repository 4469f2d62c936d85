"""Files in and out: the one rule of where a command may write (``check_output_file``), atomic writes (write a
temporary file beside the target, flush it to disk, then ``os.replace`` it: a crash or an exception at any point
leaves either the old file or the new one, never a half-written file), and the one reader of JSON text from outside
(``parse_json``: a run's config.json and records, a checkpoint's meta, a results ledger's lines)."""

from __future__ import annotations

import contextlib
import errno
import json
import math
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
    if path.is_dir() and not path.is_symlink():  # os.replace would fail naming the temporary file, not the path
        raise IsADirectoryError(errno.EISDIR, "a folder is there, not a file", str(path))
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


# -- where rtrl may write: one rule for every file a command writes (a video, a results page, an exported graph,
# a run folder's own files) --------------------------------------------------------------------------------------
def not_plain(path: str | os.PathLike) -> str | None:
    """Why an existing ``path`` is not a plain file of its own, in a few words (``"is a symbolic link (to x)"``,
    ``"is a folder"``, ``"is not a regular file (a named pipe or a device)"``); ``None`` for a regular file or a
    path where nothing is. A link is one even where it dangles: written through, it would change (or make) a file
    somewhere else."""
    path = Path(path)
    if path.is_symlink():
        return f"is a symbolic link (to {os.readlink(path)})"
    if path.is_dir():
        return "is a folder"
    if path.exists() and not path.is_file():
        return "is not a regular file (a named pipe or a device)"
    return None


def check_output_file(path, option: str, overwrite: bool | None = False,
                      ours: Callable[[Path], bool] | None = None) -> Path:
    """``path`` as a ``Path`` if a command may write a file there, else ``ValueError`` naming ``option`` (nothing is
    made or opened but ``path`` itself, read by ``ours``): a non-empty path; not a symbolic link (never written
    through nor replaced, even dangling), a folder or a device; in a folder (or where one can be made, not under a
    file); and, if it exists, replaced only with ``overwrite`` or where ``ours(path)`` says it is this command's own
    earlier output (``overwrite=None``: the command has no such option)."""
    if not isinstance(path, str | os.PathLike) or not os.fspath(path):
        raise ValueError(f"{option} must name a file, got {path!r}")
    path = Path(path)
    why = not_plain(path)
    if why:
        remedy = "name the file to write" if why == "is a folder" else "name a file of its own"
        raise ValueError(f"{option} {path} {why}; {remedy} (nothing was written)")
    above = next(p for p in Path(os.path.abspath(path)).parents if p.exists() or p == p.parent)
    if not above.is_dir():
        raise ValueError(f"{option} {path}: {above} is a file, not a folder; nothing was written")
    if path.exists() and not overwrite and not (ours is not None and ours(path)):
        remedy = "choose another file" + (", or replace it with --overwrite" if overwrite is not None else "")
        raise ValueError(f"{option} {path} exists{'' if ours is None else ' and is not what this command writes'}; "
                         f"{remedy} (nothing was written)")
    return path


# -- JSON text from outside: one door ------------------------------------------------------------------------------
class NotStrict(ValueError):
    """A ``NaN`` or ``Infinity`` in JSON text."""


def reject_constant(name: str):
    raise NotStrict(name)


def unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """An object's pairs as a dict, a key given twice refused (``json.loads`` would keep the last silently)."""
    data = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"the key {key!r} is given twice")
        data[key] = value
    return data


def non_finite_fields(value, where: str = "") -> list[str]:
    """The dotted names of the ``NaN`` / infinite numbers in parsed JSON (``["lr"]``, ``["task.scale"]``)."""
    if isinstance(value, dict):
        return [f for k, v in value.items() for f in non_finite_fields(v, f"{where}.{k}" if where else str(k))]
    if isinstance(value, list):
        return [f for i, v in enumerate(value) for f in non_finite_fields(v, f"{where}[{i}]")]
    return [where or "the value"] if isinstance(value, float) and not math.isfinite(value) else []


def parse_json(text: str):
    """Strict JSON text from outside as one value, else ``ValueError`` saying what is wrong in a few words: a UTF-8
    byte-order mark (an editor's, not a torn write), ``NaN`` or ``Infinity`` (naming the fields that hold them), a key
    given twice (naming it), nesting deeper than Python reads (not a ``RecursionError``), or text that is not
    JSON (``json.JSONDecodeError``, a ``ValueError``)."""
    if text.startswith("\ufeff"):
        raise ValueError("it starts with a UTF-8 byte-order mark (an editor's), which JSON does not allow; save it "
                         "without one")
    try:
        return json.loads(text, parse_constant=reject_constant, object_pairs_hook=unique_keys)
    except NotStrict:
        fields = non_finite_fields(json.loads(text))
        raise ValueError(f"{', '.join(fields)} {'is' if len(fields) == 1 else 'are'} NaN or infinite, which strict "
                         "JSON does not allow") from None
    except RecursionError:
        raise ValueError("its values nest too deeply to be read (lists or objects within each other thousands of "
                         "levels deep)") from None
