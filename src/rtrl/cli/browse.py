"""``rtrl plot`` (overlaid learning curves of run folders of either kind), ``rtrl list`` (tasks, environments, cells,
methods, presets) and ``rtrl inspect`` (what ``auto`` finds in a cell)."""

from __future__ import annotations

import argparse
import importlib
import inspect
import shutil
import sys
import textwrap
from pathlib import Path

from rtrl.run import argtypes
from rtrl.run.folder import read_curve
from rtrl.run.usage import UsageError


def add_plot_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--out", required=True, type=argtypes.path,
                   help="the plot to write: a .png, .pdf or .svg file (its folder must exist)")


def cmd_plot(args) -> int:
    from rtrl.run.plot import check_plot_out, plot_curves

    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: {out.parent} is not an existing folder")
    try:
        check_plot_out(out)
    except ValueError as e:
        raise UsageError(str(e)) from None
    # read from the files alone: a run folder's configuration is never assembled here, so nothing it names is imported
    curves = [read_curve(path) for path in args.runs]
    curves = [curve._replace(label=f"{Path(path).name}: {curve.label}") for path, curve in zip(args.runs, curves,
                                                                                                strict=True)]
    plot_curves(curves, out)
    print(out)
    return 0


def first_paragraph(obj) -> str:
    """The first paragraph of ``obj``'s docstring (else its module's) on one line: whole sentences, never a cut, with
    the docstring's RST literal quotes (````name````) dropped."""
    doc = inspect.getdoc(obj) or sys.modules[obj.__module__].__doc__ or ""
    return " ".join(doc.strip().split("\n\n")[0].split()).replace("``", "")


def method_summary(method) -> str:
    """A method's line in ``rtrl list methods``: the ``summary`` its class defines where it does (``SnAp``: one for
    each ``n``, as ``snap1`` and ``snap2`` are registered; not a subclass's, ``EProp``), else its class's first
    paragraph."""
    own = vars(type(method)).get("summary")
    return own.__get__(method) if own is not None else first_paragraph(type(method))


WIDTH = 22  # of the name column of `rtrl list`
SECTIONS = ("tasks", "environments", "cells", "presets", "methods", "algorithms")
ALIASES = {"envs": "environments", "env": "environments", "task": "tasks", "cell": "cells", "preset": "presets",
           "method": "methods", "algorithm": "algorithms"}  # what a SECTION may also be called


def entry(name: str, text: str) -> str:
    """``name`` and ``text`` as rows of `rtrl list`: the text wrapped to the terminal, aligned after the name."""
    width = max(shutil.get_terminal_size().columns, WIDTH + 40)
    indent = " " * (WIDTH + 3)
    long = len(name) > WIDTH  # a name wider than its column (an import path) gets a line of its own
    return (f"  {name}\n" if long else "") + textwrap.fill(
        text, width, initial_indent=indent if long else f"  {name:{WIDTH}s} ", subsequent_indent=indent,
        break_long_words=False, break_on_hyphens=False)


def path_cells(presets) -> dict[str, object]:
    """The cells that presets name by import path (``lru_network``: a factory, not a registered cell), by path."""
    paths = sorted({preset.options["cell"] for preset in presets.values() if ":" in preset.options.get("cell", "")})
    return {path: getattr(importlib.import_module(path.partition(":")[0]), path.partition(":")[2]) for path in paths}


def listing() -> dict[str, list[tuple[str, str]]]:
    """What `rtrl list` shows: ``(heading, [(name, text), ...])`` by section. A cell is named as ``--cell`` takes
    it (a factory that presets use by its import path: by that path)."""
    from rtrl.cells import CELLS
    from rtrl.methods import REGISTRY
    from rtrl.rl.algorithms import ALGORITHMS
    from rtrl.rl.envs import ENVS
    from rtrl.rl.envs.popgym import LEVELS
    from rtrl.rl.envs.popgym import TASKS as POPGYM_TASKS
    from rtrl.rl.presets import PRESETS as RL_PRESETS
    from rtrl.rl.transforms import STEP_RULES
    from rtrl.training.presets import PRESETS
    from rtrl.training.tasks import TASKS

    def kind(method) -> str:
        return ("online" if method.online else "whole windows") + (", exact" if method.exact else ", approximate")

    return {
        "tasks": [("tasks:", [(name, cls().describe()) for name, cls in TASKS.items()])],
        "environments": [("environments (rtrl rl):", [(name, first_paragraph(make)) for name, make in ENVS.items()]
                           + [(f"popgym:<Task><{'|'.join(LEVELS)}>",
                               f"POPGym's tasks in JAX (e.g. popgym:RepeatFirstEasy), Task one of "
                               f"{', '.join(POPGYM_TASKS)}; popgym's observations, rewards and episode lengths"),
                              ("gymnasium:ID", "any registered Gymnasium environment (e.g. gymnasium:CartPole-v1, "
                               "gymnasium:popgym-RepeatFirstEasy-v0), stepped on the host; --env-arg K=V: "
                               "gymnasium.make's keywords and the environment's own (the gymnasium extra)")])],
        "cells": [("cells:", [(name, first_paragraph(cls)) for name, cls in CELLS.items()]
                   + [(path, first_paragraph(factory)) for path, factory in path_cells(PRESETS).items()])],
        "presets": [(f"presets ({command} --preset NAME):", [(name, p.summary) for name, p in presets.items()])
                    for command, presets in (("rtrl train", PRESETS), ("rtrl rl", RL_PRESETS))],
        "methods": [("methods:", [(name, f"[{kind(make())}] {method_summary(make())}")
                                  for name, make in REGISTRY.items()])],
        "algorithms": [("algorithms (rtrl rl --algorithm NAME):",
                        [(name, f"{first_paragraph(cls)} {algorithm_options(name)}")
                         for name, cls in ALGORITHMS.items()]),
                       ("update rules (rtrl rl --optimizer NAME):", list(STEP_RULES.items()))],
    }


def algorithm_options(name: str) -> str:
    """``Options: --flag (default), ...`` of algorithm ``name`` (``rtrl.rl.algorithms.options_of``), those only a
    Box action space's agent reads said apart."""
    from rtrl.config import defaults
    from rtrl.rl.algorithms import ALGORITHMS, options_of
    from rtrl.rl.config import RLConfig

    default = defaults(RLConfig)

    def listed(names) -> str:
        return ", ".join(f"--{n.replace('_', '-')} ({default[n]})" for n in names)

    box = [n for n in options_of(name) if n not in ALGORITHMS[name].options]
    return f"Options: {listed(ALGORITHMS[name].options)}" + (f"; on a Box action space also {listed(box)}" if box
                                                             else "") + "."


def add_list_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sections", nargs="*", metavar="SECTION",
                   help=f"only these sections: {', '.join(SECTIONS)} (default: all; envs for environments); "
                        "`rtrl list presets NAME ...`: every option those presets set")
    p.add_argument("--grep", metavar="TEXT", help="only the rows whose name or description holds TEXT (any case)")


def presets_by_name() -> dict[str, tuple[str, type, object]]:
    """Every preset by name: the command that takes it, its configuration class and the preset
    (``rtrl.config.Preset``)."""
    from rtrl.rl.config import RLConfig
    from rtrl.rl.presets import PRESETS as RL_PRESETS
    from rtrl.training.config import RunConfig
    from rtrl.training.presets import PRESETS

    return {name: (command, cls, preset)
            for command, cls, presets in (("rtrl train", RunConfig, PRESETS), ("rtrl rl", RLConfig, RL_PRESETS))
            for name, preset in presets.items()}


def show_presets(names: list[str]) -> None:
    """Each preset named: its command, its summary and every option it sets, one a line as the command line takes
    it (``--task-arg max_length=5``, ``--no-clip``)."""
    import dataclasses

    from rtrl.config import defaults
    from rtrl.run.options import flag_of

    presets = presets_by_name()
    for name in names:
        command, cls, preset = presets[name]
        fields = {f.name: f for f in dataclasses.fields(cls)}
        print(f"{name} ({command} --preset {name}): {preset.summary}")
        for key, value in preset.options.items():
            flag = flag_of(fields[key]) if key in fields else "--" + key.replace("_", "-")
            if isinstance(value, dict | tuple) and key in fields and flag != "--" + key.replace("_", "-"):
                lines = [f"{flag} {k}={v}" for k, v in dict(value).items()]  # options: one flag each
            elif isinstance(value, bool):
                lines = [flag if value else "--no-" + flag[2:]]
            elif value is None:  # --no-NAME where the default is a value; else the default itself (unset)
                lines = [f"--no-{flag[2:]}" if defaults(cls).get(key) is not None else f"{flag} (its default)"]
            else:
                lines = [f"{flag} {getattr(value, 'name', value)}"]
            for line in lines:
                print(f"  {line}")
        print(f"  (every other option: its default, `{command} --help`)")


def cmd_list(args) -> int:
    sections = [ALIASES.get(s, s) for s in getattr(args, "sections", None) or SECTIONS]
    named = [s for s in sections if s not in SECTIONS]
    if named and "presets" in sections and set(named) <= set(presets_by_name()):
        show_presets(named)
        return 0
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise UsageError(f"SECTION must be among {', '.join(SECTIONS)} (or `presets NAME ...` with names from `rtrl "
                         f"list presets`), got {', '.join(map(repr, unknown))}")
    grep = (getattr(args, "grep", None) or "").lower()
    found = False
    for section, groups in listing().items():
        if section not in sections:
            continue
        for heading, rows in groups:
            rows = [(n, t) for n, t in rows if grep in n.lower() or grep in t.lower()]
            if rows:
                found = True
                print(heading)
                for name, text in rows:
                    print(entry(name, text))
    if not found:
        raise UsageError(f"nothing in {', '.join(sections)} matches --grep {args.grep!r}")
    return 0


def add_inspect_arguments(p: argparse.ArgumentParser) -> None:
    from rtrl.run.argtypes import positive_int

    p.add_argument("--cell", required=True, help="a cell from `rtrl list`, or an import path, e.g. flax.linen:GRUCell")
    p.add_argument("--cell-arg", action="append", metavar="KEY=VALUE", help="a cell option (repeatable)")
    p.add_argument("--input", type=positive_int, default=3, help="input size (default %(default)s)")
    p.add_argument("--hidden", type=positive_int, default=8, help="hidden size (default %(default)s)")


def cmd_inspect(args) -> int:
    import rtrl
    from rtrl.cells.lookup import make_cell
    from rtrl.run.options import parse_options

    try:
        cell = make_cell(args.cell, parse_options(args.cell_arg, "--cell-arg"), args.input, args.hidden)
    except ValueError as e:
        raise UsageError(str(e)) from None
    print(rtrl.inspect(cell))
    return 0
