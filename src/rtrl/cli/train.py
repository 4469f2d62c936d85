"""``rtrl train`` and ``rtrl resume``: a run folder trained with a progress bar, and its summary (``train_run`` serves
every kind of run folder: ``rtrl rl``'s too)."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

from rtrl.config import allowed_imports
from rtrl.devices import check_memory, check_work, first_process, join
from rtrl.driver import Stopped
from rtrl.run import loggers
from rtrl.run.argtypes import import_path, non_negative_int, path, positive_int
from rtrl.run.folder import CONFIG, FILES, Run, read_metrics, remove_folders
from rtrl.run.options import add_config_arguments, assembled, config_from_args
from rtrl.run.usage import UsageError
from rtrl.training.assemble import assemble


class OutOfMemory(Exception):
    """The run ran out of memory (XLA's ``RESOURCE_EXHAUSTED``, or a ``MemoryError``)."""


def out_of_memory(error: BaseException) -> bool:
    if isinstance(error, MemoryError):
        return True
    text = str(error)
    return type(error).__name__ in ("JaxRuntimeError", "XlaRuntimeError") and (
        "RESOURCE_EXHAUSTED" in text or "Out of memory" in text or "out of memory" in text)


def one_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def fits(assembly) -> None:
    """A ``UsageError`` before anything is written when the run of ``assembly`` cannot fit in this machine's
    memory, or asks for more work than a run may (``rtrl.devices.check_work``)."""
    config = assembly.config
    try:
        check_memory(assembly.memory_needed(), config.devices, config.size_options)
        if hasattr(assembly, "work_needed"):  # and what it will do (an RL run's), not only what it will hold
            check_work(*assembly.work_needed(), smaller=config.size_options)
    except ValueError as e:
        raise UsageError(str(e)) from None


def train_run(run: Run, quiet: bool = False, log=(), fresh: bool = False) -> int:
    """``reported_run``; of a run spanning several processes, only the first one shows and logs it (the others
    print nothing but errors)."""
    if first_process():
        return reported_run(run, quiet, log, fresh)
    with contextlib.redirect_stdout(io.StringIO()):
        return reported_run(run, True, (), fresh)


def reported_run(run: Run, quiet: bool = False, log=(), fresh: bool = False) -> int:
    """Train with a progress bar, each record also sent to the loggers named in ``log`` (``rtrl.run.loggers``);
    the exit status (1 when the run diverged or its environment failed, 130 when interrupted). ``fresh``: this
    command made the run, so a run that stops before its first record is removed again (no folder holding only
    its config.json is left behind). Where standard error is not a terminal (output redirected to a file), there
    is no bar, whose redraws would fill the file with copies of one line: each record is one line on standard
    output instead."""
    import time

    from tqdm import tqdm

    print(f"{run.path}: {run.describe()}", flush=True)
    if note := run.resume_note():
        print(note, flush=True)
    bars = []  # made at the first record, so that a run that cannot start shows only its error
    lines = not quiet and not sys.stderr.isatty()

    def bar():
        if not bars:
            bars.append(tqdm(total=run.config.steps, initial=run.last_checkpoint_step() or 0, unit="step",
                             disable=quiet or lines, dynamic_ncols=True, mininterval=0.5))
        return bars[0]

    def on_record(state, record):
        logged(record)
        if lines:
            print(f"step {record['step']}: {run.status(record)}", flush=True)
        bar().n = record["step"]
        bar().set_postfix_str(run.status(record))
        bar().refresh()

    timed = []  # whether the bar's clock runs: not during the first chunk, which includes compilation

    def on_chunk(state, n):
        if timed:
            bar().update(n)
            return
        timed.append(True)  # the first chunk's steps count, its time does not: rate and time left from here
        b = bar()
        b.n += n
        b.initial = b.last_print_n = b.n
        b.start_t = b.last_print_t = time.time()
        b.refresh()

    try:
        with loggers.opened(run, log) as logged:
            run.train(on_eval=on_record, on_chunk=on_chunk)
    except Stopped as e:
        step = run.last_checkpoint_step()
        if step is not None:
            kept = f"The last good checkpoint (step {step}) is kept in {run.path}"
        elif fresh and not read_metrics(run.path):
            discard(run)
            kept = f"It stopped before its first record, so {run.path} was removed again"
        else:
            kept = f"It stopped before its first record: {run.path} holds no checkpoint"
        print(f"rtrl: error: {e}; run stopped. {kept}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"interrupted; continue from step {run.last_checkpoint_step() or 0} with: rtrl resume {run.path}")
        return 130
    except Exception as e:
        if not out_of_memory(e):
            raise
        raise OutOfMemory(f"out of memory while training ({one_line(e)}); choose smaller sizes (--hidden, --batch, "
                          f"--eval-size, --envs)") from None
    finally:
        for b in bars:
            b.close()
    print(run.summary())
    print(f"plot: {run.path / 'curve.png'}")
    return 0


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """What every command writing a run folder takes besides the configuration."""
    p.add_argument("--out", required=True, type=path, help="the run folder, e.g. runs/NAME")
    p.add_argument("--overwrite", action="store_true", help="replace a different run already in --out")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_log_argument(p)
    add_distributed_arguments(p)


def add_distributed_arguments(p: argparse.ArgumentParser) -> None:
    """A run spanning several processes (hosts): ``--distributed``, ``--coordinator``, ``--processes``,
    ``--process-id`` (``join_processes``)."""
    p.add_argument("--distributed", action="store_true",
                   help="first join the run's other processes (jax.distributed.initialize; the coordinator, the "
                        "count and this process's id from the cluster: SLURM, Open MPI), so that --devices counts "
                        "every process's devices; the first process writes the run folder (docs/devices.md)")
    p.add_argument("--coordinator", metavar="HOST:PORT",
                   help="with --distributed: the first process's address (default: the cluster's, or "
                        "JAX_COORDINATOR_ADDRESS)")
    p.add_argument("--processes", type=positive_int, metavar="P", help="with --distributed: how many processes")
    p.add_argument("--process-id", type=non_negative_int, metavar="I",
                   help="with --distributed: this process's number, 0 to P - 1")


def join_processes(args) -> None:
    """Join the other processes (``rtrl.devices.join``) where ``args`` ask for it, before JAX starts its devices; a
    ``UsageError`` naming the options when they cannot be joined as given."""
    given = {name: getattr(args, name, None) for name in ("coordinator", "processes", "process_id")}
    if not getattr(args, "distributed", False):
        if any(v is not None for v in given.values()):
            flags = ", ".join(f"--{k.replace('_', '-')}" for k, v in given.items() if v is not None)
            raise UsageError(f"{flags}: only with --distributed (a run spanning several processes)")
        return
    try:
        join(given["coordinator"], given["processes"], given["process_id"])
    except (ValueError, TypeError, RuntimeError) as e:
        raise UsageError(f"--distributed: the processes could not be joined ({one_line(e)}); give --coordinator, "
                         "--processes and --process-id, or run under a cluster JAX knows (SLURM, Open MPI)") from None


def add_log_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log", action="append", default=[], choices=tuple(loggers.LOGGERS),
                   help="also log every record to TensorBoard (event files in the run folder) or Weights & Biases "
                        "(RUN/wandb, offline unless WANDB_MODE says otherwise); repeatable; needs the extra "
                        "rtrl[tensorboard] or rtrl[wandb]")


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    add_run_arguments(p)


def start(args, assembly) -> int:
    """``rtrl train`` and ``rtrl rl``: check that the run of ``assembly`` (its parts, built once) fits, create its
    folder and train; a run that runs out of memory before its first checkpoint past step 0 is removed again,
    folders and all (nothing half-made)."""
    fits(assembly)
    loggers.check(args.log, args.out)  # before anything is written
    out = Path(args.out)
    fresh = not (out / CONFIG).exists()
    # may read back the cell this command line names
    run = Run.create(out, assembly.config, overwrite=args.overwrite, assembly=assembly)
    try:
        return train_run(run, args.quiet, args.log, fresh)
    except OutOfMemory as e:
        if fresh and not run.last_checkpoint_step():
            discard(run)
            raise UsageError(f"{e}; nothing was kept") from None
        raise UsageError(f"{e}; {out} is kept at step {run.last_checkpoint_step()}") from None


def discard(run: Run) -> None:
    """Remove a run this command made, under its lock: its files, then the folders ``Run.create`` made (only
    those, and only if empty); of a run spanning several processes, the first one does (it made them)."""
    if not first_process():
        return
    with run.locked():
        for name in FILES:
            with contextlib.suppress(OSError):
                (run.path / name).unlink(missing_ok=True)
        remove_folders(run.made)


def cmd_train(args) -> int:
    return start(args, assembled(assemble, config_from_args(args)))


def add_resume_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="a run folder written by `rtrl train` or `rtrl rl`")
    p.add_argument("--steps", type=positive_int, help="a new total step budget (default: the run's own)")
    p.add_argument("--devices", type=positive_int, metavar="N",
                   help="continue on N devices (default: the run's own; docs/devices.md)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_log_argument(p)
    add_distributed_arguments(p)
    p.add_argument("--allow-import", action="append", default=[], metavar="MODULE:NAME", type=import_path,
                   help="let the run's config.json import this cell (one it names by import path that is not an "
                        "rtrl, Flax or Equinox cell class; only for a run folder you trust; repeatable)")


def cmd_resume(args) -> int:
    with allowed_imports(args.allow_import):
        run = Run.open(args.run, steps=args.steps, devices=args.devices)
        fits(run.assembly)
        loggers.check(args.log, run.path)
        try:
            return train_run(run, args.quiet, args.log)
        except OutOfMemory as e:
            raise UsageError(f"{e}; {run.path} is kept at step {run.last_checkpoint_step()}") from None


__all__ = ["UsageError", "add_resume_arguments", "add_run_arguments", "add_train_arguments", "cmd_resume",
           "cmd_train", "join_processes", "one_line", "out_of_memory", "start", "train_run"]
