"""Where a figure came from: the line a command that writes figures into a page puts beside them.

    Measured with `COMMAND` at commit HASH on YYYY-MM-DD.

``COMMAND`` reruns the figures, ``HASH`` is the source tree's git commit (``-dirty`` when it had uncommitted
changes; ``unknown`` outside a git checkout) and the date is UTC. ``PATTERN`` reads the line back; docs/reliability.md
("Every figure says where it came from") says which text of a page counts as a figure and where its line must stand,
and ``tests/test_docs_figures.py`` holds every page of README.md and docs/ to it. ``platform()`` names the JAX
backend and device a run computed on (in a run folder's header, summary and ``config.json``).
"""

from __future__ import annotations

import datetime
import re
import subprocess
from pathlib import Path

PATTERN = re.compile(r"Measured with `(?P<command>[^`]+)` at commit (?P<commit>[0-9a-f]{7,40}(?:-dirty)?) "
                     r"on (?P<date>\d{4}-\d{2}-\d{2})")


def commit(where: str | Path | None = None) -> str:
    """The short git commit of the checkout holding ``where`` (this package's source by default), with ``-dirty``
    when tracked files under ``where`` differ from it (the measured code, not the pages being written); ``unknown``
    when there is no git, no checkout, or ``where`` is not tracked in it (a package installed inside another
    project's repository)."""
    folder = Path(where) if where is not None else Path(__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True,
                              timeout=30).stdout.strip()

    try:
        git("ls-files", "--error-unmatch", str(folder))
        head = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", str(folder))
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("-dirty" if changed else "")


def platform() -> dict[str, str]:
    """Where JAX computes: ``{"backend": ..., "device": ...}``, its default backend (``cpu``, ``gpu``, ``tpu``) and
    the kind of its first device (``cpu``, ``NVIDIA H100 80GB HBM3``), what a run folder's header, summary and
    ``config.json`` name. Imports JAX (and starts its backend) on first use."""
    import jax

    return {"backend": jax.default_backend(), "device": jax.devices()[0].device_kind}


def today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")


def line(command: str, at: str | None = None, on: str | None = None) -> str:
    """``Measured with `command` at commit <at> on <on>.`` (``at``: ``commit()``, ``on``: today, UTC)."""
    if "`" in command or "\n" in command:
        raise ValueError(f"command must be one line without backticks, got {command!r}")
    return f"Measured with `{command}` at commit {commit() if at is None else at} on {today() if on is None else on}."

