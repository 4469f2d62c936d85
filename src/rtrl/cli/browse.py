"""``rtrl plot`` (overlaid learning curves of run folders) and ``rtrl list`` (tasks, cells, methods)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rtrl.cli.usage import UsageError
from rtrl.training.run import read_config, read_metrics


def add_plot_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--out", required=True, help="the PNG to write (its folder must exist)")


def cmd_plot(args) -> int:
    from rtrl.reports.plot import Curve, plot_curves

    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: {out.parent} is not an existing folder")
    curves = []
    for path in args.runs:
        config = read_config(path)
        records = read_metrics(path)
        if not records:
            raise UsageError(f"{path} has no metrics yet")
        task, _, _ = config.parts()
        curves.append(Curve(f"{Path(path).name}: {config.label()}", records, task.metric_name, task.chance))
    plot_curves(curves, out)
    print(out)
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
