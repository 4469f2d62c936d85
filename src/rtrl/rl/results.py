"""``python -m rtrl.rl.results --out DIR``: the presets under every method, several seeds, one run at a time.

Writes ``DIR/runs.jsonl`` (one line per run: preset, method, seed, its records) as runs finish, and
``DIR/results.md``: per preset and method, the final return (mean of the last two records' returns, then mean and
spread over seeds), the wall time at which the return first reached the target, and the mean fidelity cosines.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics

from rtrl.files import atomic_write_text
from rtrl.rl.loop import PRESETS, mean_return, train

METHODS = ("rtrl", "tbptt", "snap1", "eprop", "uoro")
TARGETS = {"cartpole-masked": 400.0, "memory-chain": 0.8, "memory-chain-40": 0.8}
FIDELITY_EVERY = 250


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
    for preset in dict.fromkeys(r["preset"] for r in runs):
        config = PRESETS[preset]
        lines += [f"### `{preset}` ({config.env} {dict(config.env_args)}, {config.steps} steps x {config.envs} "
                  f"environments, `{config.cell}` {config.hidden}, tbptt window {config.truncation})", "",
                  f"| method | final return | wall s to {TARGETS[preset]} (runs reaching it) | cos value | "
                  "cos policy | wall s |", "|---|---|---|---|---|---|"]
        for method in dict.fromkeys(r["method"] for r in runs if r["preset"] == preset):
            rs = [r for r in runs if r["preset"] == preset and r["method"] == method]
            finals = [mean_return(r["records"], last=2) for r in rs]
            reach = [first_reaching(r["records"], TARGETS[preset]) for r in rs]
            cos = {k: [statistics.mean(x[k] for x in r["records"] if k in x) for r in rs] for k in
                   ("cos_value", "cos_policy")}
            lines.append(f"| {method} | {spread(finals)} | {spread(reach)} ({sum(x is not None for x in reach)}"
                         f"/{len(rs)}) | {spread(cos['cos_value'])} | {spread(cos['cos_policy'])} | "
                         f"{spread([r['records'][-1]['wall_s'] for r in rs])} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.rl.results", description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    runs = []
    for preset in args.presets:
        for method in args.methods:
            for seed in range(args.seeds):
                config = dataclasses.replace(PRESETS[preset], method=method, seed=seed, fidelity_every=FIDELITY_EVERY)
                records = train(config)[1]
                runs.append({"preset": preset, "method": method, "seed": seed, "records": records})
                print(json.dumps({k: v for k, v in runs[-1].items() if k != "records"}),
                      f"final {mean_return(records, last=2):.3f} wall {records[-1]['wall_s']:.0f}s", flush=True)
                atomic_write_text(os.path.join(args.out, "runs.jsonl"), "".join(json.dumps(r) + "\n" for r in runs))
                atomic_write_text(os.path.join(args.out, "results.md"), table(runs))


if __name__ == "__main__":
    main()
