"""Learning curves: the training loss and the task's metric (an RL run's mean return) against steps, for one run
or several overlaid."""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rtrl.files import atomic_write


class Curve(NamedTuple):
    label: str
    records: list[dict]  # metrics.jsonl: step, loss, metric, ... (an RL run's: step, return, ...)
    metric_name: str
    chance: float | None
    key: str = "metric"  # the records' field plotted against the step (records where it is null are left out)


FORMATS = {".png": b"\x89PNG\r\n\x1a\n", ".pdf": b"%PDF-", ".svg": b"<?xml"}  # what a plot file starts with
RUN_FILES = ("config.json", "metrics.jsonl", "checkpoint.npz", "curve.png", ".lock")  # rtrl.training.run's


def check_plot_out(out: str | os.PathLike) -> None:
    """``ValueError`` unless a plot may be written to ``out``: a path ending in one of ``FORMATS`` (``.png``,
    ``.pdf``, ``.svg``), not a folder, not a file of a run folder (its history, checkpoint or own curve), and if it
    exists, a file of that format already (an earlier plot, replaced)."""
    out = Path(out)
    suffixes = ", ".join(FORMATS)
    if out.is_dir():
        raise ValueError(f"--out {out} is a directory; name a file in it ending in one of {suffixes}")
    magic = FORMATS.get(out.suffix.lower())
    if magic is None:
        raise ValueError(f"--out {out}: a plot is written as PNG, PDF or SVG; name a file ending in one of {suffixes}")
    if out.name in RUN_FILES and (out.parent / "config.json").is_file():
        raise ValueError(f"--out {out} is a file of the run folder {out.parent}, which a plot must not replace; "
                         "name a file outside it")
    if out.exists() and not out.is_file():  # a named pipe or a device: opening it to look would block or read it
        raise ValueError(f"--out {out} exists and is not a regular file, so not an earlier plot; nothing was written "
                         "(name another file)")
    if out.exists():
        with open(out, "rb") as f:
            if f.read(len(magic)) != magic:
                raise ValueError(f"--out {out} exists and is not a {out.suffix[1:].upper()}, so not an earlier plot; "
                                 "nothing was written (name another file, or remove it first)")


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed); imported on first use, as it is slow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, out: str | os.PathLike, dpi: int = 100) -> None:
    """Write ``fig`` to ``out`` atomically, in the format its suffix names (``FORMATS``; PNG otherwise), and free
    it."""
    kind = Path(out).suffix.lower()[1:] if Path(out).suffix.lower() in FORMATS else "png"
    try:
        fig.tight_layout()
        atomic_write(out, lambda f: fig.savefig(f, format=kind, dpi=dpi))
    finally:
        pyplot().close(fig)


def plot_curves(curves: Sequence[Curve], out: str | os.PathLike, title: str = "") -> None:
    """The training loss (log scale; a panel only where some curve has one) and each curve's metric against steps,
    each chance level dashed; written atomically."""
    trained = [[r for r in c.records if r.get("loss") is not None] for c in curves]
    panels = 2 if any(trained) else 1
    fig, axes = pyplot().subplots(1, panels, figsize=(5.5 * panels, 4), squeeze=False)
    ax_metric = axes[0, -1]
    for i, (curve, losses) in enumerate(zip(curves, trained, strict=True)):
        colour = f"C{i % 10}"
        if losses:
            axes[0, 0].plot([r["step"] for r in losses], [r["loss"] for r in losses], color=colour, label=curve.label,
                            marker=marker(losses))
        points = [r for r in curve.records if r.get(curve.key) is not None]
        steps = [r["step"] for r in points]
        ax_metric.plot(steps, [r[curve.key] for r in points], color=colour, label=curve.label, marker=marker(points))
        seeds = per_seed(points, curve.key)
        if seeds is not None:  # a run of several seeds: each seed thin, the band between the lowest and highest
            for values in seeds:
                ax_metric.plot(steps, values, color=colour, linewidth=0.6, alpha=0.4)
            ax_metric.fill_between(steps, np.nanmin(seeds, axis=0), np.nanmax(seeds, axis=0), color=colour,
                                   alpha=0.12, linewidth=0)
        if curve.chance is not None and steps:  # over this curve's steps only: it is this task's chance
            ax_metric.hlines(curve.chance, min(steps), max(steps), color=colour, linestyle="--", linewidth=0.8)
    if not any(r.get(c.key) is not None for c in curves for r in c.records):  # say so, rather than empty axes
        ax_metric.text(0.5, 0.5, f"no {names_of(curves)} recorded yet", ha="center", va="center",
                       transform=ax_metric.transAxes)
    if panels == 2:
        axes[0, 0].set(xlabel="step", ylabel="training loss", yscale="log")
    names = names_of(curves)
    chance = "; dashed: chance" if any(c.chance is not None for c in curves) else ""
    held_out = " (held out" + chance + ")" if any(c.key == "metric" for c in curves) else ""
    ax_metric.set(xlabel="step", ylabel=textwrap.fill(names + held_out, width=36))  # a long label was clipped
    for ax in axes[0]:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:  # wrapped to the figure's width (a long one was clipped at both edges)
        fig.suptitle(textwrap.fill(title, width=int(panels * 5.5 * 10)), fontsize="medium")
    save_figure(fig, out)


def per_seed(points: list[dict], key: str) -> list[list[float]] | None:
    """Each seed's values of a run of several seeds (``rtrl rl --seeds``: ``return_per_seed``), record by record, a
    missing one (no episode ended) carried from the seed's previous record; ``None`` for a run of one."""
    rows = [r.get(f"{key}_per_seed") for r in points]
    if not rows or any(not isinstance(row, list) or len(row) < 2 for row in rows) or len({len(r) for r in rows}) > 1:
        return None
    seeds, last = [], [math.nan] * len(rows[0])
    for row in rows:
        last = [v if v is not None else previous for v, previous in zip(row, last, strict=True)]
        seeds.append(last)
    return [list(values) for values in zip(*seeds, strict=True)]


def names_of(curves: Sequence[Curve]) -> str:
    return " / ".join(sorted({c.metric_name for c in curves}))


def marker(points: list) -> str | None:
    """A dot at each point where a line alone would not show them (a single point draws no line)."""
    return "o" if len(points) <= 1 else None
