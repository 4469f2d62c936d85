"""``python -m rtrl.rl.results --out DIR [--tables NAME ...] [--jobs N]``: the rows of docs/rl.md's results tables,
each a preset (``rtrl.rl.presets``), over several seeds, ``N`` runs at a time (each in its own process).

Writes ``DIR/runs.jsonl`` (one line per run: preset, seed, its records) as runs finish, and ``DIR/results.md``: per
row, the final return (mean of the last two records' returns, then mean and spread over seeds), the peak return
(the best record's: far above the final one, the run collapsed), the wall time at
which the return first reached the table's target, and the mean fidelity cosines. Runs already in
``DIR/runs.jsonl`` are kept and not run again, so an interrupted table resumes where it stopped.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import multiprocessing
import os
import statistics

from rtrl import provenance
from rtrl.files import atomic_write_text
from rtrl.rl.config import RLConfig
from rtrl.rl.loop import mean_return, train
from rtrl.rl.presets import PRESETS, ROWS, TABLES


def first_reaching(records: list[dict], target: float) -> float | None:
    return next((r["wall_s"] for r in records if r["return"] is not None and r["return"] >= target), None)


def spread(values: list[float]) -> str:
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.3g} ± {sd:.2g}"


def mean_of(values) -> float | None:
    """The mean of the values that are there (None where none is: a run without the fidelity check)."""
    values = [v for v in values if v is not None]
    return statistics.mean(values) if values else None


def table(runs: list[dict], out: str = "DIR", at: str | None = None) -> str:
    """The results tables of ``runs`` (read from ``out``), each followed by its provenance line (``at``: the commit;
    read from the checkout when None)."""
    lines = []
    for name in dict.fromkeys(ROWS[r["preset"]][0] for r in runs):
        setting = TABLES[name]
        config = RLConfig(**setting.options)
        lines += [f"### `{name}`: {setting.what}", "",
                  f"{config.env} {dict(config.env_args)}, {config.steps} steps x {config.envs} environments, "
                  f"`{config.cell}` {config.hidden}, tbptt window {config.truncation}.", "",
                  f"| preset | method | final return | peak return | wall s to {setting.target} (runs reaching it) | "
                  "cos value | cos policy | wall s |", "|---|---|---|---|---|---|---|---|"]
        for preset in dict.fromkeys(r["preset"] for r in runs if ROWS[r["preset"]][0] == name):
            rs = [r for r in runs if r["preset"] == preset]
            finals = [mean_return(r["records"], last=2) for r in rs]
            reach = [first_reaching(r["records"], setting.target) for r in rs]
            cos = {k: [mean_of(x.get(k) for x in r["records"]) for r in rs] for k in ("cos_value", "cos_policy")}
            peaks = [max((x["return"] for x in r["records"] if x["return"] is not None), default=None) for r in rs]
            lines.append(f"| `{preset}` | {ROWS[preset][1]} | {spread(finals)} | {spread(peaks)} | {spread(reach)} "
                         f"({sum(x is not None for x in reach)}/{len(rs)}) | {spread(cos['cos_value'])} | "
                         f"{spread(cos['cos_policy'])} | {spread([r['records'][-1]['wall_s'] for r in rs])} |")
        seeds = len({r["seed"] for r in runs if ROWS[r["preset"]][0] == name})
        lines += ["", provenance.line(f"python -m rtrl.rl.results --out {out} --tables {name} --seeds {seeds}", at), ""]
    return "\n".join(lines)


def run_records(preset: str, seed: int) -> list[dict]:
    """The records of ``preset`` run from ``seed``."""
    return train(RLConfig(**{**PRESETS[preset].options, "seed": seed}))[1]


def in_table_order(runs: list[dict]) -> list[dict]:
    """``runs`` ordered as the presets are (then by seed), whatever order they finished in."""
    order = {name: i for i, name in enumerate(PRESETS)}
    return sorted(runs, key=lambda r: (order[r["preset"]], r["seed"]))


def read_runs(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.rl.results", description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES),
                        help="the tables whose rows to run (default: all)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time, each in its own process (default 1)")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        parser.error(f"--seeds and --jobs must be positive integers, got {args.seeds} and {args.jobs}")
    os.makedirs(args.out, exist_ok=True)
    at = provenance.commit()  # the code the runs are measured on: read once, before the first
    runs_path = os.path.join(args.out, "runs.jsonl")
    runs = read_runs(runs_path)
    done = {(r["preset"], r["seed"]) for r in runs}
    todo = [(p, seed) for p in PRESETS if ROWS[p][0] in args.tables for seed in range(args.seeds)
            if (p, seed) not in done]
    # spawn, not fork: a forked child would inherit jax's threads
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(run_records, *job): job for job in todo}
        for future in concurrent.futures.as_completed(futures):
            (preset, seed), records = futures[future], future.result()
            runs = in_table_order([*runs, {"preset": preset, "seed": seed, "records": records}])
            print(json.dumps({"preset": preset, "seed": seed}),
                  f"final {mean_return(records, last=2):.3f} wall {records[-1]['wall_s']:.0f}s", flush=True)
            atomic_write_text(runs_path, "".join(json.dumps(r) + "\n" for r in runs))
            atomic_write_text(os.path.join(args.out, "results.md"), table(runs, args.out, at))
    atomic_write_text(os.path.join(args.out, "results.md"), table(in_table_order(runs), args.out, at))


if __name__ == "__main__":
    main()
