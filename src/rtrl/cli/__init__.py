"""The ``rtrl`` command: ``train``, ``rl``, ``resume``, ``eval``, ``plot``, ``list``, ``inspect``, ``export``,
``demo``, ``fidelity``, ``results`` and ``bench``.

Each subcommand is an entry of ``COMMANDS``: a help line, a function adding its arguments to a parser and a
function running it (returning the exit status), so a new subcommand is one more entry; each lives in a module
of its own (``train``: train and resume; ``rl``; ``eval``; ``demo``; ``browse``: plot and list; ``export``).
``main`` is where every problem the user can fix becomes one line on stderr and exit status 2 (bad options, unusable run
folders or checkpoints, filesystem errors); a diverging run exits with status 1 after saying at which step and
what became non-finite; an interrupted one with 130 (Ctrl-C: ``rtrl.interrupts``; a bad ``JAX_*`` variable:
``rtrl.startup``). Anything else is a bug, and shows its traceback.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable

import rtrl
from rtrl import startup
from rtrl.cli.browse import (
    add_inspect_arguments,
    add_list_arguments,
    add_plot_arguments,
    cmd_inspect,
    cmd_list,
    cmd_plot,
)
from rtrl.cli.demo import add_demo_arguments, cmd_demo
from rtrl.cli.eval import add_eval_arguments, cmd_eval
from rtrl.cli.export import add_export_arguments, cmd_export
from rtrl.cli.rl import add_rl_arguments, cmd_rl
from rtrl.cli.train import (
    add_resume_arguments,
    add_train_arguments,
    cmd_resume,
    cmd_train,
    join_processes,
    one_line,
    out_of_memory,
)
from rtrl.reports import command as results_command
from rtrl.reports import fidelity
from rtrl.run.checkpoint import CheckpointError
from rtrl.run.folder import RunError
from rtrl.run.usage import Parser, UsageError
from rtrl.training.tasks.base import MissingPackage


def bench_suite():
    """``rtrl.benchmarks.suite``, imported when ``rtrl bench`` is used (it loads every benchmark section)."""
    from rtrl.benchmarks import suite

    return suite


@dataclasses.dataclass(frozen=True)
class Command:
    help: str
    add_arguments: Callable
    run: Callable


COMMANDS: dict[str, Command] = {
    "train": Command("train a model online on a task, writing a run folder", add_train_arguments, cmd_train),
    "rl": Command("train a recurrent actor-critic online in an environment, writing a run folder", add_rl_arguments,
                  cmd_rl),
    "resume": Command("continue a stopped run from its checkpoint", add_resume_arguments, cmd_resume),
    "eval": Command("score a trained run on fresh episodes: its task's metric, or its policy's mean return",
                    add_eval_arguments, cmd_eval),
    "plot": Command("overlay the learning curves of runs", add_plot_arguments, cmd_plot),
    "list": Command("list tasks, environments, cells, methods, presets and RL algorithms (or some: rtrl list "
                    "cells --grep lif)", add_list_arguments, cmd_list),
    "inspect": Command("what method auto chooses for a cell, each parameter's role, each method's trace memory",
                       add_inspect_arguments, cmd_inspect),
    "export": Command("write the trained cell of a run folder as a NIR graph (spiking cells)", add_export_arguments,
                      cmd_export),
    "demo": Command("the online-learning demonstration (make run)", add_demo_arguments, cmd_demo),
    "fidelity": Command("cosine and relative error of every method's gradient against BPTT (table and plot)",
                        fidelity.add_arguments, fidelity.run),
    "results": Command("regenerate a results table (training, rl or popgym), resuming what is already done",
                       results_command.add_arguments, results_command.run),
    "bench": Command("time and memory of the methods against a forward step and BPTT (JSON and plot)",
                     lambda p: bench_suite().add_arguments(p), lambda args: bench_suite().run_command(args)),
}


def parser() -> Parser:
    root = Parser(prog="rtrl", description="Real-time recurrent learning: train, resume, compare and plot runs.")
    root.add_argument("--version", action="version", version=f"rtrl {rtrl.__version__}")
    sub = root.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name, command in COMMANDS.items():
        p = sub.add_parser(name, help=command.help, description=command.help)
        command.add_arguments(p)
        p.set_defaults(handler=command.run)
    return root


def fail(message: str, prog: str = "rtrl") -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        join_processes(args)  # --distributed: before JAX starts its devices
        startup.check_backend()  # JAX_PLATFORMS, before a command meets it at its first array
        return args.handler(args)
    except UsageError as e:
        return fail(str(e), e.prog)
    except (RunError, CheckpointError, MissingPackage, startup.EnvironmentProblem) as e:
        return fail(str(e))
    except BrokenPipeError:  # the reader went away (`rtrl list | head -1`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:  # a filesystem problem the user can fix: no such folder, read-only, disk full
        where = f"{e.filename}: " if e.filename else ""
        return fail(f"{where}{e.strerror or e}")
    except KeyboardInterrupt:
        print("rtrl: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # out of memory outside a run (a run's own is handled where it trains): one line
        if not out_of_memory(e):
            raise
        return fail(f"out of memory: {one_line(e)}; choose smaller sizes")

