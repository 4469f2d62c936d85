"""``python -m rtrl.rl.results --out DIR [--tables NAME ...]``: the rows of docs/rl.md's results tables, each a preset
(``rtrl.rl.presets``), over several seeds, one run at a time.

Writes ``DIR/runs.jsonl`` (one line per run: preset, seed, its records) as runs finish, and ``DIR/results.md``: per
row, the final return (mean of the last two records' returns, then mean and spread over seeds), the wall time at
which the return first reached the table's target, and the mean fidelity cosines.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics

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


def table(runs: list[dict]) -> str:
    lines = []
    for name in dict.fromkeys(ROWS[r["preset"]][0] for r in runs):
        setting = TABLES[name]
        config = RLConfig(**setting.options)
        lines += [f"### `{name}`: {setting.what}", "",
                  f"{config.env} {dict(config.env_args)}, {config.steps} steps x {config.envs} environments, "
                  f"`{config.cell}` {config.hidden}, tbptt window {config.truncation}.", "",
                  f"| preset | method | final return | wall s to {setting.target} (runs reaching it) | cos value | "
                  "cos policy | wall s |", "|---|---|---|---|---|---|---|"]
        for preset in dict.fromkeys(r["preset"] for r in runs if ROWS[r["preset"]][0] == name):
            rs = [r for r in runs if r["preset"] == preset]
            finals = [mean_return(r["records"], last=2) for r in rs]
            reach = [first_reaching(r["records"], setting.target) for r in rs]
            cos = {k: [statistics.mean(x[k] for x in r["records"] if k in x) for r in rs] for k in
                   ("cos_value", "cos_policy")}
            lines.append(f"| `{preset}` | {ROWS[preset][1]} | {spread(finals)} | {spread(reach)} "
                         f"({sum(x is not None for x in reach)}/{len(rs)}) | {spread(cos['cos_value'])} | "
                         f"{spread(cos['cos_policy'])} | {spread([r['records'][-1]['wall_s'] for r in rs])} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.rl.results", description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES),
                        help="the tables whose rows to run (default: all)")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    runs = []
    for preset in (p for p in PRESETS if ROWS[p][0] in args.tables):
        for seed in range(args.seeds):
            records = train(RLConfig(**{**PRESETS[preset].options, "seed": seed}))[1]
            runs.append({"preset": preset, "seed": seed, "records": records})
            print(json.dumps({"preset": preset, "seed": seed}),
                  f"final {mean_return(records, last=2):.3f} wall {records[-1]['wall_s']:.0f}s", flush=True)
            atomic_write_text(os.path.join(args.out, "runs.jsonl"), "".join(json.dumps(r) + "\n" for r in runs))
            atomic_write_text(os.path.join(args.out, "results.md"), table(runs))


if __name__ == "__main__":
    main()
