"""``rtrl results training``: for every experiment, cells x methods on the same budget, final metric and wall time.

    rtrl results training [--only EXPERIMENT ...] [--out docs/results.md] [--runs runs/results]

The experiments and their rows are ``rtrl.training.presets.EXPERIMENTS``: every row is a preset (``rtrl train
--preset NAME`` reruns it alone, and the table shows its name). Each row is an ordinary run folder under
``--runs`` (so ``rtrl plot`` can overlay any of them), trained from a fresh start; each experiment's table goes
to stdout and into its own section of ``--out`` (between ``<!-- results:NAME -->`` markers: running some
experiments rewrites only their sections, and the text outside the markers is kept), with one comparison plot
per experiment beside the runs. A row that does not apply, or whose cell is not installed, is reported as skipped
with the reason. Rows run one after another; without ``--only`` every experiment but the long ones runs (each
table's wall time is written under it, with the command, commit and date: ``rtrl.provenance``); the long ones
(minutes a row: deep networks) run when named.

Each row shows a progress bar (on stderr). Ctrl-C stops the command at the next safe point (after a chunk of
steps, between rows) with exit status 130: the tables finished before it are in ``--out``, the table under way is
not written (nothing is rewritten after the Ctrl-C), and the rows' run folders resume with ``rtrl resume``; a
second Ctrl-C stops at once.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rtrl import interrupts, provenance
from rtrl.driver import Diverged
from rtrl.files import atomic_write_text, check_output_file
from rtrl.run.folder import Run, read_metrics
from rtrl.run.plot import Curve, plot_curves
from rtrl.training.presets import EXPERIMENTS, Experiment, Row
from rtrl.training.tasks.base import MissingPackage


def run_row(experiment: Experiment, row: Row, root: Path) -> dict:
    """Train one row (its preset) from scratch; its result line (or the reason it was skipped)."""
    name = experiment.preset_name(row)
    try:
        run = Run.create(root / name, experiment.options(row), overwrite=True)
    except (ValueError, MissingPackage) as e:
        return {"row": row, "name": name, "skipped": str(e)}
    start = time.perf_counter()
    diverged = None
    from tqdm import tqdm

    with tqdm(total=run.config.steps, desc=name, unit="step", leave=False, mininterval=1.0) as bar:
        try:
            run.train(on_eval=lambda state, record: bar.set_postfix_str(run.status(record)),
                      on_chunk=lambda state, n: bar.update(n))
        except Diverged as e:
            diverged = str(e)
    records = read_metrics(run.path)
    return {
        "row": row,
        "name": name,
        "method": run.trainer.method.name,
        "k": run.config.update_every,
        "run": run,
        "metric": records[-1]["metric"],
        "extra": {key: v for key, v in records[-1].items() if key in ("sequence_accuracy", "firing_rate")},
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
        f"held-out episodes ({better} is better; chance {task.chance:.3g}). Rerun a row with "
        f"`rtrl train --preset NAME --out DIR`.",
        "",
        f"| preset | cell | method | update every k | {task.metric_name} | wall s | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        row = r["row"]
        if "skipped" in r:
            lines.append(f"| `{r['name']}` | {row.cell_label} | {row.method} | | skipped | | {r['skipped']} |")
            continue
        metric = f"{r['metric']:.4g}"
        if r["extra"]:
            metric += " (" + ", ".join(f"{k.replace('_', ' ')} {v:.3g}" for k, v in r["extra"].items()) + ")"
        note = row.note + (f"; diverged: {r['diverged']}" if r["diverged"] else "")
        lines.append(f"| `{r['name']}` | {row.cell_label} | {r['method']} | {r['k']} | {metric} | "
                     f"{r['wall_s']:.0f} | {note} |")
    return "\n".join(lines) + "\n"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- results:{name} -->", f"<!-- /results:{name} -->"


def with_section(page: str, name: str, section: str) -> str:
    """``page`` with experiment ``name``'s section replaced by ``section`` (appended where it has none)."""
    begin, end = markers(name)
    block = f"{begin}\n{section.strip()}\n{end}"
    if begin in page and end in page:
        return page[:page.index(begin)] + block + page[page.index(end) + len(end):]
    return page.rstrip("\n") + "\n\n" + block + "\n"


def run_experiment(experiment: Experiment, root: Path) -> str:
    """Every row of ``experiment``, its comparison plot, and its table."""
    results = []
    for row in experiment.rows:
        interrupts.poll()  # a safe point: between rows
        result = run_row(experiment, row, root)
        results.append(result)
        shown = result.get("skipped") or f"{result['metric']:.4g} in {result['wall_s']:.0f} s"
        print(f"{result['name']}: {result.get('method', row.method)} -> {shown}", flush=True)
    ran = [r for r in results if "run" in r]
    if ran:
        task = ran[0]["run"].trainer.task
        curves = [Curve(r["name"], read_metrics(r["run"].path), task.metric_name, task.chance) for r in ran]
        plot_curves(curves, root / f"{experiment.name}.png", experiment.why)
    return table(experiment, results)


def main(argv=None, prog: str = "rtrl results training", parser_class=argparse.ArgumentParser) -> int:
    names = [e.name for e in EXPERIMENTS]
    parser = parser_class(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=names, metavar="EXPERIMENT",
                        help=f"experiments to run, of {names} (default: all but the long ones)")
    parser.add_argument("--out", default="docs/results.md", help="the Markdown page (default %(default)s)")
    parser.add_argument("--runs", default="runs/results", help="where the run folders go (default %(default)s)")
    args = parser.parse_args(argv)
    try:  # before anything runs: a page that is not this command's (a run's config.json, notes) is never replaced
        check_output_file(args.out, "--out", overwrite=None, ours=is_results_page)
    except ValueError as e:
        parser.error(str(e))
    try:
        with interrupts.deferred():
            write_tables(args, prog)
    except KeyboardInterrupt:
        print(f"interrupted: {args.out} holds the tables finished before the Ctrl-C and nothing after it; the "
              f"rows' run folders are in {args.runs}", flush=True)
        return interrupts.STATUS
    return 0


def is_results_page(path: Path) -> bool:
    """Whether the file at ``path`` is a page this command wrote (UTF-8 text holding a table between its markers),
    which it may rewrite."""
    try:
        page = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return page.startswith("# ") and "<!-- results:" in page


def write_tables(args: argparse.Namespace, prog: str = "rtrl results training") -> None:
    """Run the experiments ``args`` names and write each table into ``args.out`` when it is finished, each with
    its provenance line (``prog``: the command that reruns it)."""
    out = Path(args.out)
    at = provenance.commit()  # the code the tables are measured on: read once, before the first row
    for experiment in EXPERIMENTS:
        if (experiment.name not in args.only) if args.only else experiment.long:
            continue
        start = time.perf_counter()
        section = run_experiment(experiment, Path(args.runs))
        section += (f"\n{provenance.line(f'{prog} --only {experiment.name}', at)} "
                    f"Wall time of this table: {time.perf_counter() - start:.0f} s.\n")
        interrupts.poll()  # not written if a Ctrl-C came while it was made
        print(section, flush=True)
        # the page as it stands now, read again: another command's tables written meanwhile are kept beside ours
        page = with_section(out.read_text() if out.exists() else "# Results\n", experiment.name, section)
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out, page)  # after every table: a stopped command keeps the tables it finished
