"""A results folder's ledger: ``runs.jsonl``, one JSON object a line for each finished row of a results table.

Every runner that makes a table (``rtrl results rl``, ``rtrl results popgym``) reads its ledger with ``read``, which
checks every line before anything runs: a torn or garbage line, a line that is not an object, a missing field, a
value of the wrong kind, a key given twice, a folder where the file belongs: one ``LedgerError`` naming the file,
the line and the field. Writers hold ``locked(folder)`` for the whole command, so a second command on the same
folder is refused at once instead of both finishing and the ledger keeping only the last writer's rows; they
rewrite the ledger whole and atomically (``rtrl.files``), so a stopped command leaves the rows it finished, and
``keep`` writes a finished row before its line is printed and before a Ctrl-C is acted on.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import filelock

from rtrl import interrupts
from rtrl.files import atomic_write_text, parse_json

NAME = "runs.jsonl"
LOCK = ".runs.lock"


class LedgerError(ValueError):
    """A ledger that cannot be read as it is, or a folder another command is writing: one line for a person."""


def number(value) -> bool:
    """A finite int or float (not a bool, not NaN)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def numbers_or_none(value) -> bool:
    """A list of finite numbers or ``None`` (a seed that ended no episode)."""
    return isinstance(value, list) and all(v is None or number(v) for v in value)


def text(value) -> bool:
    return isinstance(value, str)


def whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def a_dict(value) -> bool:
    return isinstance(value, dict)


def a_list(value) -> bool:
    return isinstance(value, list)


def records(value) -> bool:
    """A run's records (``rtrl rl``'s metrics): a non-empty list of objects, each with a whole ``step``, a finite
    ``wall_s`` and a ``return`` (a finite number, or ``None`` where no episode ended), every other value a finite
    number, ``None`` or a list of them (a run of several seeds' ``*_per_seed``)."""
    def record(r) -> bool:
        return (isinstance(r, dict) and whole(r.get("step")) and number(r.get("wall_s")) and "return" in r
                and all(v is None or number(v) or numbers_or_none(v) for v in r.values()))
    return isinstance(value, list) and bool(value) and all(record(r) for r in value)


KINDS = {number: "a finite number", numbers_or_none: "a list of finite numbers (or null)", text: "a string",
         whole: "an integer", a_dict: "an object", a_list: "a list",
         records: "a non-empty list of records (objects with a whole step, a finite wall_s and a return)"}


def read(path: str | os.PathLike, fields: dict[str, Callable[[Any], bool]],
         key: Callable[[dict], Any] | None = None, known: Callable[[dict], str | None] | None = None) -> list[dict]:
    """The rows of the ledger at ``path`` (none where it does not exist), each checked: ``fields`` maps each field a
    row must have to its check (one of ``KINDS``' functions); ``key(row)`` is what no two rows may share;
    ``known(row)`` returns what is wrong with a row whose fields are all well formed (an unknown task, say), or
    ``None``. ``LedgerError`` naming the file, the line and the field otherwise."""
    path = Path(path)
    if not path.exists():
        return []
    if not path.is_file():
        raise LedgerError(f"{path}: expected a file of results (one JSON object a line), found a folder or another "
                          "kind of file")
    rows, seen = [], {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}, line {lineno}"
            try:
                row = parse_json(line)  # rtrl.files: the one reader of JSON text from outside
            except json.JSONDecodeError as e:
                raise LedgerError(f"{where}: not a JSON object ({e.msg}); the line is damaged (a torn write or an "
                                  "edit): remove it to run that row again") from None
            except ValueError as e:  # a NaN, a key given twice, a byte-order mark, nesting: named as such
                raise LedgerError(f"{where}: {e}; not a result (remove the line to run that row again)") from None
            if not isinstance(row, dict):
                raise LedgerError(f"{where}: expected a JSON object, got {type(row).__name__}")
            for field, check in fields.items():
                if field not in row:
                    raise LedgerError(f"{where}: the field {field!r} is missing")
                if not check(row[field]):
                    raise LedgerError(f"{where}: the field {field!r} must be {KINDS.get(check, check.__name__)}, got "
                                      f"{row[field]!r:.80}")
            if known is not None and (problem := known(row)):
                raise LedgerError(f"{where}: {problem}")
            if key is not None:
                k = key(row)
                if k in seen:
                    raise LedgerError(f"{where}: repeats the row of line {seen[k]} ({k}); remove one of them")
                seen[k] = lineno
            rows.append(row)
    return rows


def write(path: str | os.PathLike, rows: list[dict]) -> None:
    """The ledger at ``path`` rewritten whole, atomically, with ``rows``; a row holding a non-finite number is a bug
    of the writer, refused (``ValueError``), never written for a later reader to print as a result."""
    atomic_write_text(path, "".join(json.dumps(row, allow_nan=False) + "\n" for row in rows))


def keep(path: str | os.PathLike, rows: list[dict], line: str, also: Iterable[tuple[str, str]] = ()) -> bool:
    """Write the ledger at ``path`` with ``rows`` (a finished row among them) and each ``(file, text)`` of ``also``
    (atomically), then print ``line``, the row's: a Ctrl-C meanwhile is acted on once they are in (``rtrl.interrupts``),
    so a row whose line was seen is never lost. False where one came, said in one line on stderr: the caller stops
    there, exit status ``interrupts.STATUS``."""
    try:
        with interrupts.deferred():
            write(path, rows)
            for file, text in also:
                atomic_write_text(file, text)
            print(line, flush=True)
            interrupts.poll()
    except KeyboardInterrupt:
        print(f"rtrl: interrupted; {path} holds every row finished (the same command resumes)", file=sys.stderr,
              flush=True)
        return False
    return True


def make_folder(folder) -> Path:
    """``folder`` (a runner's ``--out``) made with its parents, if it may hold a results table's files: a non-empty
    path, neither a file nor a link to nothing; else ``LedgerError`` saying so, nothing made."""
    if not isinstance(folder, str | os.PathLike) or not os.fspath(folder):
        raise LedgerError(f"--out must name a folder for the results, got {folder!r}")
    path = Path(folder)
    if path.is_symlink() and not path.exists():
        raise LedgerError(f"--out {folder} is a symbolic link to {os.readlink(path)}, which does not exist; name a "
                          "folder")
    above = next(p for p in (path, *Path(os.path.abspath(path)).parents) if p.exists() or p == p.parent)
    if not above.is_dir():
        raise LedgerError(f"--out {folder}: {above} is a file, not a folder; name a folder for the results")
    path.mkdir(parents=True, exist_ok=True)
    return path


def entry(main: Callable[[], int | None]) -> int:
    """A runner's ``python -m`` entry: ``main()``'s exit status, a ``LedgerError`` (a damaged ledger, a busy or bad
    folder) one line on stderr and exit status 2, as the ``rtrl results`` front end says it."""
    try:
        status = main()
    except LedgerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0 if status is None else status


@contextlib.contextmanager
def locked(folder: str | os.PathLike) -> Iterator[None]:
    """Hold ``folder``'s ledger lock for the block; ``LedgerError`` at once where another command holds it."""
    lock = filelock.FileLock(str(Path(folder) / LOCK), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise LedgerError(f"{folder}: another command is writing these results (its lock {LOCK} is held); wait "
                          "for it to finish, or give another --out") from None
    try:
        yield
    finally:
        lock.release()
