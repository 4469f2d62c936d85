"""Optional loggers of a run's records (``--log tensorboard``, ``--log wandb``): every record written to
``metrics.jsonl`` is also sent, as scalars, to TensorBoard event files in the run folder (``tensorboardX``: the
``tensorboard`` extra) or to a Weights & Biases run kept in the run folder's ``wandb/`` (the ``wandb`` extra),
offline unless ``WANDB_MODE`` says otherwise (no network by default; ``wandb sync`` uploads it later).

The scalars of a record are its numbers, each under its own name (``loss``, ``metric``, ``return``, ``wall_s``,
...), at the record's ``step``; a list of numbers (per-seed values) is one scalar per entry (``return/0``, ...);
``null`` is left out. A resumed run's TensorBoard file starts past the checkpoint (``purge_step``), so records that a
crash left past it, and that the run writes again, are read back once. ``--overwrite`` removes what the loggers
wrote into the folder (``remove_logged``) with the run's own files, whether or not the new run logs.
"""

from __future__ import annotations

import contextlib
import importlib
import numbers
import os
import shutil
from pathlib import Path

from rtrl.extras import install
from rtrl.run.usage import UsageError

PACKAGES = {"tensorboard": "tensorboardX", "wandb": "wandb"}  # --log NAME -> the package it needs


def scalars(record: dict) -> dict[str, float]:
    """The numbers of a record besides its ``step``, by name (a list's entries as ``name/i``)."""
    out = {}
    for name, value in record.items():
        if name == "step" or isinstance(value, bool):
            continue
        if isinstance(value, numbers.Real):
            out[name] = float(value)
        elif isinstance(value, list | tuple):
            out.update({f"{name}/{i}": float(v) for i, v in enumerate(value)
                        if isinstance(v, numbers.Real) and not isinstance(v, bool)})
    return out


def package(name: str):
    """The package ``--log name`` needs; a ``UsageError`` saying how to install it."""
    if name not in PACKAGES:
        raise UsageError(f"--log must be one of {', '.join(PACKAGES)}, got {name!r}")
    try:
        return importlib.import_module(PACKAGES[name])
    except ImportError:
        raise UsageError(f"--log {name} needs the {PACKAGES[name]} package: {install(name)}") from None


class TensorBoard:
    """Event files in the run folder, beside ``metrics.jsonl`` (``tensorboard --logdir runs/``)."""

    def __init__(self, run, start: int | None):
        # A fresh run purges every older event (an overwritten run's); a resumed one those past its checkpoint.
        purge = 0 if start is None else start + 1
        self.writer = package("tensorboard").SummaryWriter(logdir=str(run.path), purge_step=purge)

    def log(self, record: dict) -> None:
        for name, value in scalars(record).items():
            self.writer.add_scalar(name, value, global_step=record["step"])
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandB:
    """A Weights & Biases run in ``RUN/wandb/``, offline unless ``WANDB_MODE`` is set (then as it says), in the
    project ``WANDB_PROJECT`` (default ``rtrl``), named after the run folder, with the run's configuration."""

    def __init__(self, run, start: int | None):
        wandb = package("wandb")
        check_wandb_folder(run.path)  # again, as the first record is written: nothing outside the run folder
        self.run = wandb.init(project=os.environ.get("WANDB_PROJECT", "rtrl"), name=run.path.name,
                              dir=str(run.path), mode=check_wandb_mode(),
                              config=run.config.to_dict(), settings=wandb.Settings(console="off", silent=True))

    def log(self, record: dict) -> None:
        self.run.log(scalars(record), step=record["step"])

    def close(self) -> None:
        self.run.finish()


LOGGERS = {"tensorboard": TensorBoard, "wandb": WandB}
EVENTS = "events.out.tfevents.*"  # TensorBoard's event files, in the run folder
WANDB, WANDB_NAMES = "wandb", ("offline-run-*", "run-*", "latest-run", "debug.log", "debug-internal.log")


def logged_files(path: str | os.PathLike) -> list[Path]:
    """What the loggers wrote into the run folder ``path``: TensorBoard's event files, and W&B's runs and logs in
    its ``wandb/`` folder (nothing else there, nor a ``wandb`` that is a link: only the loggers' own names)."""
    folder = Path(path)
    found = sorted(folder.glob(EVENTS))
    wandb = folder / WANDB
    if wandb.is_dir() and not wandb.is_symlink():
        found += sorted(f for pattern in WANDB_NAMES for f in wandb.glob(pattern))
    return found


def remove_logged(path: str | os.PathLike) -> None:
    """Remove ``logged_files(path)`` (a link itself, never what it points to), then ``wandb/`` if that left it
    empty."""
    for file in logged_files(path):
        if file.is_dir() and not file.is_symlink():
            shutil.rmtree(file)
        else:
            file.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not there, a link, or holding something of the user's: kept
        (Path(path) / WANDB).rmdir()


WANDB_MODES = ("offline", "online", "disabled", "dryrun")  # what wandb.init's mode takes (dryrun: offline's old name)


def check_wandb_mode(environ=os.environ) -> str:
    """The mode ``--log wandb`` runs in (``WANDB_MODE``, default offline); a ``UsageError`` for one wandb does not
    know, or for ``online`` without an API key (``WANDB_API_KEY``, or a login in ``~/.netrc``), which wandb would
    otherwise ask for at the first record, with the run already writing."""
    mode = environ.get("WANDB_MODE", "offline")
    if mode not in WANDB_MODES:
        raise UsageError(f"WANDB_MODE must be one of {', '.join(WANDB_MODES)} for --log wandb, got {mode!r}")
    if mode == "online" and not environ.get("WANDB_API_KEY"):
        netrc = Path(environ.get("NETRC", Path.home() / ".netrc"))
        if not (netrc.is_file() and "api.wandb.ai" in netrc.read_text(errors="replace")):
            raise UsageError("WANDB_MODE=online needs a W&B API key (WANDB_API_KEY, or `wandb login`); unset "
                             "WANDB_MODE to log offline into the run folder")
    return mode


def check_wandb_folder(run_path: str | os.PathLike) -> Path:
    """``RUN/wandb``, where W&B writes; a ``UsageError`` when it is a link or anything leading out of the run
    folder (W&B would write, and ``--overwrite`` replace, files elsewhere)."""
    run_path = Path(run_path)
    folder = run_path / WANDB
    if folder.is_symlink() or (folder.exists() and not folder.resolve().is_relative_to(run_path.resolve())):
        raise UsageError(f"--log wandb writes into {folder}, which is a link leading out of the run folder (to "
                         f"{folder.resolve()}); remove the link, or log without wandb")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--log wandb writes into {folder}, which is a file, not a folder")
    return folder


def check(names, run_path: str | os.PathLike | None = None) -> None:
    """A ``UsageError`` before anything is written when a logger named is unknown or its package is missing, or,
    for ``wandb``, its mode is not usable or (with the run folder's ``run_path``) its folder leads out of it."""
    for name in names:
        package(name)
    if "wandb" in names:
        check_wandb_mode()
        if run_path is not None:
            check_wandb_folder(run_path)


@contextlib.contextmanager
def opened(run, names):
    """Within the block (around ``run.train``), a function sending a record to each logger of ``names`` (none: it
    does nothing). The loggers are made at the first record, when the run holds its folder's lock (nothing is
    written into a run another process holds), and closed (their files flushed) when the block ends, however."""
    check(names, run.path)
    start = run.last_checkpoint_step() if names else None  # where the run resumes from: what is past it is purged
    with contextlib.ExitStack() as stack:
        loggers = []

        def log(record: dict) -> None:
            if not loggers:
                for name in dict.fromkeys(names):
                    logger = LOGGERS[name](run, start)
                    stack.callback(logger.close)
                    loggers.append(logger)
            for logger in loggers:
                logger.log(record)

        yield log


__all__ = ["LOGGERS", "check", "logged_files", "opened", "remove_logged", "scalars"]
