"""``rtrl train`` and ``rtrl resume``: a run folder trained with a progress bar, and its summary (``train_run`` serves
every kind of run folder: ``rtrl rl``'s too)."""

from __future__ import annotations

import argparse
import sys

from rtrl.cli.argtypes import positive_int
from rtrl.cli.options import add_config_arguments, config_from_args
from rtrl.cli.usage import UsageError
from rtrl.training.run import Run
from rtrl.training.trainer import Diverged


def train_run(run: Run, quiet: bool = False) -> int:
    """Train with a progress bar; the exit status (1 when the run diverged, 130 when interrupted)."""
    from tqdm import tqdm

    print(f"{run.path}: {run.describe()}", flush=True)
    bars = []  # made at the first record, so that a run that cannot start shows only its error

    def bar():
        if not bars:
            bars.append(tqdm(total=run.config.steps, initial=run.last_checkpoint_step() or 0, unit="step",
                             disable=quiet, dynamic_ncols=True, mininterval=0.5))
        return bars[0]

    def on_record(state, record):
        bar().n = record["step"]
        bar().set_postfix_str(run.status(record))
        bar().refresh()

    try:
        run.train(on_eval=on_record, on_chunk=lambda state, n: bar().update(n))
    except Diverged as e:
        step = run.last_checkpoint_step()
        kept = (f"The last good checkpoint (step {step}) is kept in {run.path}" if step is not None else
                f"It diverged before its first record: {run.path} holds no checkpoint")
        print(f"rtrl: error: {e}; run stopped. {kept}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"interrupted; continue from step {run.last_checkpoint_step() or 0} with: rtrl resume {run.path}")
        return 130
    finally:
        for b in bars:
            b.close()
    print(run.summary())
    print(f"plot: {run.path / 'curve.png'}")
    return 0


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """What every command writing a run folder takes besides the configuration."""
    p.add_argument("--out", required=True, help="the run folder, e.g. runs/NAME")
    p.add_argument("--overwrite", action="store_true", help="replace a different run already in --out")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    add_run_arguments(p)


def cmd_train(args) -> int:
    run = Run.create(args.out, config_from_args(args), overwrite=args.overwrite)
    return train_run(run, args.quiet)


def add_resume_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="a run folder written by `rtrl train` or `rtrl rl`")
    p.add_argument("--steps", type=positive_int, help="a new total step budget (default: the run's own)")
    p.add_argument("--devices", type=positive_int, metavar="N",
                   help="continue on N devices (default: the run's own; docs/devices.md)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def cmd_resume(args) -> int:
    return train_run(Run.open(args.run, steps=args.steps, devices=args.devices), args.quiet)


__all__ = ["UsageError", "add_resume_arguments", "add_run_arguments", "add_train_arguments", "cmd_resume",
           "cmd_train", "train_run"]
