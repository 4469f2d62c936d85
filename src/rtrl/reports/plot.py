"""Learning curves: the training loss and the task's metric against steps, for one run or several overlaid."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import NamedTuple

from rtrl.files import atomic_write


class Curve(NamedTuple):
    label: str
    records: list[dict]  # metrics.jsonl: step, loss, metric, ...
    metric_name: str
    chance: float | None


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed); imported on first use, as it is slow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig, out: str | os.PathLike, dpi: int = 100) -> None:
    """Write ``fig`` to ``out`` as a PNG, atomically, and free it."""
    try:
        fig.tight_layout()
        atomic_write(out, lambda f: fig.savefig(f, format="png", dpi=dpi))
    finally:
        pyplot().close(fig)


def plot_curves(curves: Sequence[Curve], out: str | os.PathLike, title: str = "") -> None:
    """Two panels (training loss, log scale; held-out metric with each chance level dashed), written atomically."""
    fig, (ax_loss, ax_metric) = pyplot().subplots(1, 2, figsize=(11, 4))
    for i, curve in enumerate(curves):
        colour = f"C{i % 10}"
        trained = [r for r in curve.records if r.get("loss") is not None]
        if trained:
            ax_loss.plot([r["step"] for r in trained], [r["loss"] for r in trained], color=colour, label=curve.label)
        ax_metric.plot(
            [r["step"] for r in curve.records], [r["metric"] for r in curve.records], color=colour, label=curve.label
        )
        if curve.chance is not None:
            ax_metric.axhline(curve.chance, color=colour, linestyle="--", linewidth=0.8)
    ax_loss.set(xlabel="step", ylabel="training loss", yscale="log")
    names = sorted({c.metric_name for c in curves})
    ax_metric.set(xlabel="step", ylabel=" / ".join(names) + " (held out; dashed: chance)")
    for ax in (ax_loss, ax_metric):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    save_png(fig, out)
