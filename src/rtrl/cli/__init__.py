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
import importlib
import os
import sys
from collections.abc import Callable

import rtrl
from rtrl import startup
from rtrl.usage import Parser, UsageError


def lazy(path: str) -> Callable:
    """The function ``module:name``, imported when called: a command's module (and the layers it needs) loads only
    when that command is parsed or run, so ``rtrl --help`` and ``rtrl --version`` load none of them."""
    module, _, name = path.partition(":")

    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


@dataclasses.dataclass(frozen=True)
class Command:
    help: str
    add_arguments: Callable
    run: Callable


def command(help: str, module: str, add: str, run: str) -> Command:
    return Command(help, lazy(f"{module}:{add}"), lazy(f"{module}:{run}"))


COMMANDS: dict[str, Command] = {
    "train": command("train a model online on a task, writing a run folder", "rtrl.cli.train",
                     "add_train_arguments", "cmd_train"),
    "rl": command("train a recurrent actor-critic online in an environment, writing a run folder", "rtrl.cli.rl",
                  "add_rl_arguments", "cmd_rl"),
    "resume": command("continue a stopped run from its checkpoint", "rtrl.cli.train", "add_resume_arguments",
                      "cmd_resume"),
    "eval": command("score a trained run on fresh episodes: its task's metric, or its policy's mean return",
                    "rtrl.cli.eval", "add_eval_arguments", "cmd_eval"),
    "plot": command("overlay the learning curves of runs", "rtrl.cli.browse", "add_plot_arguments", "cmd_plot"),
    "list": command("list tasks, environments, cells, methods, presets and RL algorithms (or some: rtrl list "
                    "cells --grep lif)", "rtrl.cli.browse", "add_list_arguments", "cmd_list"),
    "inspect": command("what method auto chooses for a cell, each parameter's role, each method's trace memory",
                       "rtrl.cli.browse", "add_inspect_arguments", "cmd_inspect"),
    "export": command("write the trained cell of a run folder as a NIR graph (spiking cells)", "rtrl.cli.export",
                      "add_export_arguments", "cmd_export"),
    "demo": command("the online-learning demonstration (make run)", "rtrl.cli.demo", "add_demo_arguments",
                    "cmd_demo"),
    "fidelity": command("cosine and relative error of every method's gradient against BPTT (table and plot)",
                        "rtrl.reports.fidelity", "add_arguments", "run"),
    "results": command("regenerate a results table (training, rl or popgym), resuming what is already done",
                       "rtrl.reports.command", "add_arguments", "run"),
    "bench": command("time and memory of the methods against a forward step and BPTT (JSON and plot)",
                     "rtrl.benchmarks.suite", "add_arguments", "run_command"),
}
# the problems a user can fix that the commands' modules raise, each one line and exit status 2 (looked up where its
# module is loaded: an error of a module that was never imported cannot have been raised)
FIXABLE = ("rtrl.run.folder:RunError", "rtrl.run.checkpoint:CheckpointError",
           "rtrl.training.tasks.base:MissingPackage")


def fixable(error: BaseException) -> bool:
    if isinstance(error, startup.EnvironmentProblem):
        return True
    for path in FIXABLE:
        module, _, name = path.partition(":")
        if module in sys.modules and isinstance(error, getattr(sys.modules[module], name)):
            return True
    return False


def named(argv: list[str] | None) -> set[str]:
    """The commands whose options a parser of ``argv`` needs: the one it names (its first word that is not an
    option), none where it names none (``rtrl --help``), every one where there is no ``argv`` (a parser to
    inspect)."""
    if argv is None:
        return set(COMMANDS)
    first = next((word for word in argv if not word.startswith("-")), None)
    return {first} & set(COMMANDS)


def parser(argv: list[str] | None = None) -> Parser:
    """The command's parser; given ``argv``, with the options of the command it names only (``named``)."""
    root = Parser(prog="rtrl", description="Real-time recurrent learning: train, resume, compare and plot runs.")
    root.add_argument("--version", action="version", version=f"rtrl {rtrl.__version__}")
    sub = root.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    wanted = named(argv)
    for name, command in COMMANDS.items():
        p = sub.add_parser(name, help=command.help, description=command.help)
        if name in wanted:
            command.add_arguments(p)
        p.set_defaults(handler=command.run)
    return root


def fail(message: str, prog: str = "rtrl") -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    try:
        args = parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
        lazy("rtrl.cli.train:join_processes")(args)  # --distributed: before JAX starts its devices
        startup.check_backend()  # JAX_PLATFORMS, before a command meets it at its first array
        return args.handler(args)
    except UsageError as e:
        return fail(str(e), e.prog)
    except BrokenPipeError:  # the reader went away (`rtrl list | head -1`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as e:  # a filesystem problem the user can fix: no such folder, read-only, disk full
        where = f"{e.filename}: " if e.filename else ""
        return fail(f"{where}{e.strerror or e}")
    except KeyboardInterrupt:
        print("rtrl: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a problem the user can fix, or out of memory outside a run (a run's own is handled
        if fixable(e):      # where it trains): one line
            return fail(str(e))
        from rtrl.cli.train import one_line, out_of_memory

        if not out_of_memory(e):
            raise
        return fail(f"out of memory: {one_line(e)}; choose smaller sizes")

