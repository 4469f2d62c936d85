"""The ``rtrl`` command: ``train``, ``resume``, ``plot``, ``list``, ``demo``, ``fidelity`` and ``bench``.

Each subcommand is an entry of ``COMMANDS``: a help line, a function adding its arguments to a parser and a
function running it (returning the exit status), so a new subcommand is one more entry. Bad input exits with
status 2 and a one-line message on stderr; a diverging run exits with status 1 after saying at which step.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path

from rtrl.benchmarks import suite
from rtrl.cli.argtypes import positive_float, positive_int
from rtrl.reports import fidelity
from rtrl.training.run import Run, default_config, read_config, read_metrics


class UsageError(Exception):
    """Bad command-line input: reported as one line, no traceback."""

    def __init__(self, message: str, prog: str = "rtrl"):
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the usage too; one line is enough
        raise UsageError(message, self.prog)


@dataclasses.dataclass(frozen=True)
class Command:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# -- option parsing ---------------------------------------------------------------------------------------
def parse_value(text: str):
    """``KEY=VALUE`` values: JSON when they parse as JSON (numbers, true/false), else the string itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_options(pairs: list[str] | None, flag: str) -> dict:
    options = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag} expects KEY=VALUE, got {pair!r}")
        options[key] = parse_value(value)
    return options


# -- train / resume ---------------------------------------------------------------------------------------
def add_train_arguments(p: argparse.ArgumentParser) -> None:
    d = default_config()
    p.add_argument("--task", default=d["task"], help="a task from `rtrl list` (default %(default)s)")
    p.add_argument("--task-arg", action="append", metavar="KEY=VALUE", help="task option, e.g. max_length=8")
    p.add_argument("--cell", default=d["cell"], help="a cell from `rtrl list` (default %(default)s)")
    p.add_argument("--cell-arg", action="append", metavar="KEY=VALUE", help="cell option, e.g. activation=relu")
    p.add_argument("--method", default=d["method"], help="a method from `rtrl list` (default %(default)s)")
    p.add_argument("--method-arg", action="append", metavar="KEY=VALUE", help="method option")
    p.add_argument("--hidden", type=positive_int, default=d["hidden"], help="hidden size (default %(default)s)")
    p.add_argument("--batch", type=positive_int, default=d["batch"], help="independent streams (default %(default)s)")
    p.add_argument(
        "--steps", type=positive_int, default=d["steps"], help="steps per stream, whole updates (default %(default)s)"
    )
    p.add_argument(
        "--update-every",
        type=positive_int,
        help="k: an optimiser update every k steps (default 1 for trace methods, the episode length for bptt)",
    )
    p.add_argument("--lr", type=positive_float, default=d["lr"], help="learning rate (default %(default)s)")
    p.add_argument("--optimizer", default=d["optimizer"], help="adam or sgd (default %(default)s)")
    p.add_argument("--clip", type=positive_float, default=d["clip"], help="gradient-norm clip (default %(default)s)")
    p.add_argument("--no-clip", action="store_true", help="do not clip gradients")
    p.add_argument("--eval-every", type=positive_int, help="steps between evaluations (default: ~25 per run)")
    p.add_argument("--eval-size", type=positive_int, default=d["eval_size"], help="held-out size (default %(default)s)")
    p.add_argument("--stagger", action="store_true", help="offset the streams' episodes (trace methods only)")
    p.add_argument("--seed", type=int, default=d["seed"], help="seed of parameters and data (default %(default)s)")
    p.add_argument("--out", required=True, help="the run folder, e.g. runs/NAME")
    p.add_argument("--overwrite", action="store_true", help="replace a different run already in --out")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def config_from_args(args: argparse.Namespace) -> dict:
    return {
        "task": args.task,
        "task_args": parse_options(args.task_arg, "--task-arg"),
        "cell": args.cell,
        "cell_args": parse_options(args.cell_arg, "--cell-arg"),
        "hidden": args.hidden,
        "method": args.method,
        "method_args": parse_options(args.method_arg, "--method-arg"),
        "batch": args.batch,
        "update_every": args.update_every,
        "optimizer": args.optimizer,
        "lr": args.lr,
        "clip": None if args.no_clip else args.clip,
        "steps": args.steps,
        "eval_every": args.eval_every,
        "eval_size": args.eval_size,
        "stagger": args.stagger,
        "seed": args.seed,
    }


def fmt(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def train_run(run: Run, quiet: bool = False) -> int:
    """Train with a progress bar; the exit status (1 when the loss diverged)."""
    from tqdm import tqdm

    from rtrl.training.checkpoint import CheckpointError
    from rtrl.training.trainer import Diverged

    config, task = run.config, run.trainer.task
    print(
        f"{run.path}: {task.name} ({task.metric_name}, chance {task.chance:.3g}) | {config['cell']} "
        f"hidden {config['hidden']} | {config['method']}, update every {config['update_every']} | "
        f"batch {config['batch']}, {config['steps']} steps",
        flush=True,
    )
    bar = tqdm(total=config["steps"], unit="step", disable=quiet, dynamic_ncols=True, mininterval=0.5)

    def on_eval(state, record):
        bar.n = record["step"]
        bar.set_postfix_str(f"loss {fmt(record['loss'])} {task.metric_name} {fmt(record['metric'])}")
        bar.refresh()

    try:
        run.train(on_eval=on_eval, on_chunk=lambda state, n: bar.update(n))
    except Diverged as e:
        bar.close()
        kept = run.last_checkpoint_step()
        print(
            f"rtrl: error: {e}; run stopped. The last good checkpoint (step {kept}) is kept in {run.path}",
            file=sys.stderr,
        )
        return 1
    except CheckpointError as e:
        bar.close()
        raise UsageError(f"{e} (was {run.path / 'config.json'} edited?)") from None
    except KeyboardInterrupt:
        bar.close()
        print(f"interrupted; continue from step {run.last_checkpoint_step()} with: rtrl resume {run.path}")
        return 130
    bar.close()
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


def cmd_train(args) -> int:
    try:
        run = Run.create(args.out, config_from_args(args), overwrite=args.overwrite)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return train_run(run, args.quiet)


def cmd_resume(args) -> int:
    try:
        run = Run.open(args.run, steps=args.steps)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return train_run(run, args.quiet)


def add_resume_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="a run folder written by `rtrl train`")
    p.add_argument("--steps", type=positive_int, help="a new total step budget (default: the run's own)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


# -- plot / list ------------------------------------------------------------------------------------------
def add_plot_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--out", required=True, help="the PNG to write")


def cmd_plot(args) -> int:
    from rtrl.reports.plot import Curve, plot_curves
    from rtrl.training.run import label
    from rtrl.training.tasks import TASKS

    curves = []
    for path in args.runs:
        try:
            config = read_config(path)
        except ValueError as e:
            raise UsageError(str(e)) from None
        records = read_metrics(path)
        if not records:
            raise UsageError(f"{path} has no metrics yet")
        task = TASKS[config["task"]](**config["task_args"])
        curves.append(Curve(f"{Path(path).name}: {label(config)}", records, task.metric_name, task.chance))
    plot_curves(curves, args.out)
    print(args.out)
    return 0


def first_line(obj) -> str:
    doc = obj.__doc__ or sys.modules[obj.__module__].__doc__ or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def cmd_list(args) -> int:
    from rtrl.cells import CELLS
    from rtrl.methods import REGISTRY
    from rtrl.training.tasks import TASKS

    print("tasks:")
    for name, cls in TASKS.items():
        print(f"  {name:14s} {cls().describe()}")
    print("cells:")
    for name, cls in CELLS.items():
        print(f"  {name:14s} {first_line(cls)}")
    print("methods:")
    for name, make in REGISTRY.items():
        method = make()
        kind = ("online" if method.online else "whole windows") + (", exact" if method.exact else ", approximate")
        print(f"  {name:14s} [{kind}] {first_line(type(method))}")
    return 0


# -- demo -------------------------------------------------------------------------------------------------
def demo_config() -> dict:
    """The ``make run`` demonstration: exact online RTRL of an element-wise cell (the eLSTM, with its
    closed-form traces) on the copy task, an update after every step; Elman when no element-wise cell exists."""
    from rtrl.cells import CELLS

    config = {"task": "copy", "method": "closed_form", "update_every": 1, "batch": 16}
    if "elstm" in CELLS:
        return {**config, "task_args": {"max_length": 6}, "cell": "elstm", "hidden": 64, "lr": 1e-2, "steps": 30000,
                "eval_every": 1000}
    return {**config, "task_args": {"max_length": 4}, "cell": "elman", "hidden": 32, "lr": 3e-3, "steps": 4000,
            "eval_every": 200}


def add_demo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="runs/demo", help="the run folder (replaced; default %(default)s)")
    p.add_argument("--steps", type=positive_int, help="override the demo's step budget")


def cmd_demo(args) -> int:
    config = demo_config()
    if args.steps:
        config["steps"] = args.steps
    print(
        "Demo: a recurrent network learns to copy bit patterns fully online: exact RTRL, an update after every "
        "step, no back-propagation through time."
    )
    run = Run.create(args.out, config, overwrite=True)
    return train_run(run)


COMMANDS: dict[str, Command] = {
    "train": Command("train a model online on a task, writing a run folder", add_train_arguments, cmd_train),
    "resume": Command("continue a stopped run from its checkpoint", add_resume_arguments, cmd_resume),
    "plot": Command("overlay the learning curves of runs", add_plot_arguments, cmd_plot),
    "list": Command("list tasks, cells and methods", lambda p: None, cmd_list),
    "demo": Command("a half-minute online-learning demonstration (make run)", add_demo_arguments, cmd_demo),
    "fidelity": Command("cosine and relative error of every method's gradient against BPTT (table and plot)",
                        fidelity.add_arguments, fidelity.run),
    "bench": Command("time and memory of the methods against a forward step and BPTT (JSON and plot)",
                     suite.add_arguments, suite.run_command),
}


def parser() -> argparse.ArgumentParser:
    root = Parser(prog="rtrl", description="Real-time recurrent learning: train, resume, compare and plot runs.")
    sub = root.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name, command in COMMANDS.items():
        p = sub.add_parser(name, help=command.help, description=command.help)
        command.add_arguments(p)
        p.set_defaults(handler=command.run)
    return root


def main(argv: list[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        return args.handler(args)
    except UsageError as e:
        print(f"{e.prog}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
