"""``rtrl train`` and ``rtrl resume``: a run folder trained with a progress bar, and its summary."""

from __future__ import annotations

import argparse
import sys

from rtrl.cli.argtypes import positive_int
from rtrl.cli.options import add_config_arguments, config_from_args
from rtrl.cli.usage import UsageError
from rtrl.training.run import Run, read_metrics
from rtrl.training.trainer import Diverged


def fmt(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def train_run(run: Run, quiet: bool = False) -> int:
    """Train with a progress bar; the exit status (1 when the run diverged, 130 when interrupted)."""
    from tqdm import tqdm

    config, task = run.config, run.trainer.task
    print(
        f"{run.path}: {task.name} ({task.metric_name}, chance {task.chance:.3g}) | {config.cell} "
        f"hidden {config.hidden} | {config.method}, update every {config.update_every} | "
        f"batch {config.batch}, {config.steps} steps",
        flush=True,
    )
    bars = []  # made at the first evaluation, so that a run that cannot start shows only its error

    def bar():
        if not bars:
            bars.append(tqdm(total=config.steps, unit="step", disable=quiet, dynamic_ncols=True, mininterval=0.5))
        return bars[0]

    def on_eval(state, record):
        bar().n = record["step"]
        bar().set_postfix_str(f"loss {fmt(record['loss'])} {task.metric_name} {fmt(record['metric'])}")
        bar().refresh()

    try:
        run.train(on_eval=on_eval, on_chunk=lambda state, n: bar().update(n))
    except Diverged as e:
        print(f"rtrl: error: {e}; run stopped. The last good checkpoint (step {run.last_checkpoint_step()}) is "
              f"kept in {run.path}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"interrupted; continue from step {run.last_checkpoint_step()} with: rtrl resume {run.path}")
        return 130
    finally:
        for b in bars:
            b.close()
    summarise(run)
    return 0


def summarise(run: Run) -> None:
    records = read_metrics(run.path)
    task = run.trainer.task
    first, last = records[0], records[-1]
    extra = ", ".join(f"{k} {fmt(v)}" for k, v in last.items() if k not in ("step", "loss", "metric", "wall_s"))
    print(
        f"{task.metric_name}: {fmt(first['metric'])} at step {first['step']} -> {fmt(last['metric'])} at step "
        f"{last['step']} (chance {task.chance:.3g}; {extra}) in {last['wall_s']:.1f} s"
    )
    print(f"plot: {run.path / 'curve.png'}")


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    p.add_argument("--out", required=True, help="the run folder, e.g. runs/NAME")
    p.add_argument("--overwrite", action="store_true", help="replace a different run already in --out")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def cmd_train(args) -> int:
    run = Run.create(args.out, config_from_args(args), overwrite=args.overwrite)
    return train_run(run, args.quiet)


def add_resume_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="a run folder written by `rtrl train`")
    p.add_argument("--steps", type=positive_int, help="a new total step budget (default: the run's own)")
    p.add_argument("--devices", type=positive_int, metavar="N",
                   help="continue on N devices (default: the run's own; docs/devices.md)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def cmd_resume(args) -> int:
    return train_run(Run.open(args.run, steps=args.steps, devices=args.devices), args.quiet)


__all__ = ["UsageError", "add_resume_arguments", "add_train_arguments", "cmd_resume", "cmd_train", "train_run"]
