"""The README's results table: every task, cells x methods on the same budget, final metric and wall time.

    python -m rtrl.reports.results [--only TASK ...] [--out docs/results.md] [--runs runs/results]

Each row is an ordinary run folder under ``--runs`` (so ``rtrl plot`` can overlay any of them), trained from a
fresh start with the budget of its task; the table (Markdown) goes to ``--out`` and to stdout, with one
comparison plot per task beside it. A cell x method pair that does not apply, or whose cell is not installed,
is reported as a skipped row with the reason. Rows run one after another on the CPU; the whole table takes
about a quarter of an hour on two cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from rtrl.cells import CELLS
from rtrl.files import atomic_write_text
from rtrl.reports.plot import Curve, plot_curves
from rtrl.training.run import Run, read_metrics
from rtrl.training.trainer import Diverged


@dataclasses.dataclass(frozen=True)
class Row:
    cell: str
    method: str  # a method name, or "auto": the cell's cheapest exact online method
    update_every: int | None = None  # None: 1 for trace methods, the episode length for bptt (full BPTT)
    note: str = ""
    method_args: tuple[tuple[str, object], ...] = ()


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One task and one budget shared by all its rows."""

    name: str
    why: str
    config: dict  # task, task_args, hidden, batch, lr, steps, eval_every, ...
    rows: tuple[Row, ...]


def exact_online(cells=("elman", "elstm", "iir2", "adaptive_iir2")) -> tuple[Row, ...]:
    """For each cell, its cheapest exact online method: closed-form traces, else diagonal, else dense RTRL."""
    return tuple(Row(cell, "auto") for cell in cells)


FULL_BPTT = "full BPTT: an update per episode"
EPISODE_UPDATES = "exact RTRL updating once per episode: full BPTT's gradient, computed online"

EXPERIMENTS = (
    Experiment(
        "copy",
        "copy a bit pattern of length 1..5 after a go signal (memory up to 6 steps), fully online (k = 1)",
        {"task": "copy", "task_args": {"max_length": 5}, "hidden": 32, "batch": 16, "lr": 3e-3, "steps": 6000},
        exact_online(("elman", "elstm", "iir2", "adaptive_iir2", "gru")) + (Row("elman", "bptt", None, FULL_BPTT),),
    ),
    Experiment(
        "recall",
        "recall the bit from 12 steps ago: RTRL online against truncated BPTT (windows of 6) and full BPTT",
        {
            "task": "recall",
            "task_args": {"delay": 12, "episode_length": 48},
            "hidden": 32,
            "batch": 16,
            "lr": 3e-3,
            "steps": 4800,
        },
        (
            Row("elman", "rtrl", 1, "exact RTRL, dense traces"),
            Row("elman", "closed_form", 1, "exact RTRL, the seed's closed-form traces"),
            Row("elman", "bptt", 6, "truncated BPTT: an update per window of 6 steps < delay"),
            Row("elman", "tbptt", None, "TBPTT(6): chunks of 6 within each episode, an update per episode",
                (("truncation", 6),)),
            Row("elman", "bptt", None, FULL_BPTT),
            Row("elstm", "auto", 1, "exact RTRL"),
            Row("elstm", "bptt", 6, "truncated BPTT: an update per window of 6 steps < delay"),
            Row("elstm", "bptt", None, FULL_BPTT),
            Row("elman", "snap1", 1, "approximate"),
            Row("elman", "eprop", 1, "approximate"),
            Row("elman", "uoro", 1, "approximate"),
        ),
    ),
    Experiment(
        "adding",
        "add the two marked numbers of 20 (memory of ~10 steps; chance 0.167)",
        {"task": "adding", "task_args": {"sequence_length": 20}, "hidden": 32, "batch": 16, "lr": 3e-3,
         "steps": 6000},
        exact_online() + (Row("elman", "bptt", None, FULL_BPTT),),
    ),
    Experiment(
        "sines",
        "generate one of two sums of sines after a one-step cue, for 40 steps",
        {"task": "sines", "hidden": 32, "batch": 16, "lr": 1e-3, "steps": 6000},
        exact_online() + (Row("elman", "bptt", None, FULL_BPTT), Row("elman", "closed_form", 40, EPISODE_UPDATES)),
    ),
    Experiment(
        "mnist1d",
        "classify MNIST-1D digits read one value per step (40 steps; answer at the end); 6000 steps x 32 "
        "streams is 4800 examples, 1.2 passes over the training split",
        {"task": "mnist1d", "hidden": 32, "batch": 32, "lr": 3e-3, "steps": 6000},
        exact_online() + (Row("elman", "bptt", None, FULL_BPTT), Row("elman", "closed_form", 40, EPISODE_UPDATES)),
    ),
)


def cheapest_exact(cell: str) -> str:
    """What ``auto`` resolves to for the cell: closed_form where it has hand-derived traces, else diagonal where its
    step is element-wise, else dense rtrl (judged at several neurons: a single neuron is trivially element-wise)."""
    from rtrl import methods

    return methods.resolve("auto", CELLS[cell](3, 8)).name


def run_row(experiment: Experiment, row: Row, root: Path) -> dict:
    """Train one row from scratch; its result line (or the reason it was skipped)."""
    if row.cell not in CELLS:
        return {"row": row, "skipped": f"cell {row.cell!r} is not installed"}
    method = cheapest_exact(row.cell) if row.method == "auto" else row.method
    config = {**experiment.config, "cell": row.cell, "method": method, "update_every": row.update_every,
              "method_args": dict(row.method_args)}
    options = "".join(f"-{key}{value}" for key, value in row.method_args)
    name = f"{row.cell}-{method}{options}-k{row.update_every or 'default'}"
    try:
        run = Run.create(root / experiment.name / name, config, overwrite=True)
    except ValueError as e:
        return {"row": row, "method": method, "skipped": str(e)}
    start = time.perf_counter()
    diverged = None
    try:
        run.train()
    except Diverged as e:
        diverged = str(e)
    records = read_metrics(run.path)
    return {
        "row": row,
        "method": method,
        "k": run.config.update_every,
        "run": run,
        "metric": records[-1]["metric"],
        "extra": {key: v for key, v in records[-1].items() if key in ("sequence_accuracy",)},
        "steps": records[-1]["step"],
        "wall_s": time.perf_counter() - start,
        "diverged": diverged,
    }


def table(experiment: Experiment, results: list[dict]) -> str:
    first = next((r for r in results if "run" in r), None)
    if first is None:
        return f"### {experiment.name}\n\nno row could run.\n"
    task, config = first["run"].trainer.task, first["run"].config.to_dict()
    better = "higher" if task.higher_is_better else "lower"
    lines = [
        f"### {experiment.name}: {experiment.why}",
        "",
        f"Budget per row: {config['steps']} steps x {config['batch']} streams, hidden {config['hidden']}, "
        f"Adam lr {config['lr']}, clip {config['clip']}. Metric: {task.metric_name} on {config['eval_size']} "
        f"held-out episodes ({better} is better; chance {task.chance:.3g}).",
        "",
        f"| cell | method | update every k | {task.metric_name} | wall s | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        row = r["row"]
        if "skipped" in r:
            lines.append(f"| {row.cell} | {r.get('method', row.method)} | | skipped | | {r['skipped']} |")
            continue
        metric = f"{r['metric']:.4g}"
        if r["extra"]:
            metric += " (" + ", ".join(f"{k.replace('_', ' ')} {v:.3g}" for k, v in r["extra"].items()) + ")"
        note = row.note + (f"; diverged: {r['diverged']}" if r["diverged"] else "")
        lines.append(f"| {row.cell} | {r['method']} | {r['k']} | {metric} | {r['wall_s']:.0f} | {note} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtrl.reports.results", description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="experiments to run (default: all)")
    parser.add_argument("--out", default="docs/results.md", help="the Markdown tables (default %(default)s)")
    parser.add_argument("--runs", default="runs/results", help="where the run folders go (default %(default)s)")
    args = parser.parse_args(argv)
    root = Path(args.runs)
    sections = []
    start = time.perf_counter()
    for experiment in EXPERIMENTS:
        if args.only and experiment.name not in args.only:
            continue
        results = []
        for row in experiment.rows:
            result = run_row(experiment, row, root)
            results.append(result)
            shown = result.get("skipped") or f"{result['metric']:.4g} in {result['wall_s']:.0f} s"
            print(f"{experiment.name}: {row.cell} {result.get('method', row.method)} -> {shown}", flush=True)
        ran = [r for r in results if "run" in r]
        if ran:
            task = ran[0]["run"].trainer.task
            curves = [Curve(r["run"].config.label(), read_metrics(r["run"].path), task.metric_name, task.chance)
                      for r in ran]
            plot_curves(curves, root / f"{experiment.name}.png", experiment.why)
        sections.append(table(experiment, results))
    text = "\n".join(sections) + f"\nTotal wall time: {time.perf_counter() - start:.0f} s.\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
