"""``python -m rtrl.rl.results --out DIR [--tables NAME ...] [--seeds S] [--jobs N]``: the rows of docs/rl-results.md's
results tables, each a preset (``rtrl.rl.presets``), over several seeds, ``N`` runs at a time (each in its own
process). A row on a jitted environment runs its ``S`` seeds in one call under ``jax.vmap`` (``rtrl rl --seeds``:
one compilation, the seeds' records split apart afterwards, each with its own return and episode count and the
shared figures); a row on a host environment (``gymnasium:ID``) runs seed by seed.

Writes ``DIR/runs.jsonl`` (one line per run: preset, seed, its records) as runs finish, and ``DIR/results.md``: per
row, the final return (mean of the last two records' returns, then mean and spread over seeds), the peak return
(the best record's: far above the final one, the run collapsed), the wall time at
which the return first reached the table's target, and the mean fidelity cosines. Runs already in
``DIR/runs.jsonl`` are kept and not run again, so an interrupted table resumes where it stopped.

Ctrl-C (``rtrl.interrupts``): while rows run, the command stops its workers and ends within a moment, with one line
and exit status 130 (the workers ignore it and end with the command); a finished row is in runs.jsonl before its
line is printed, and a Ctrl-C while it is written is acted on once it is in.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import multiprocessing
import os
import statistics
import sys

from rtrl import interrupts, ledger, provenance
from rtrl.files import atomic_write_text
from rtrl.rl.config import RLConfig
from rtrl.rl.envs.registry import is_gymnasium
from rtrl.rl.loop import mean_return, train
from rtrl.rl.presets import PRESETS, ROWS, TABLES, preset_name


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
        config = RLConfig(**{**setting.options, "method": "tbptt"})  # the setting, its TBPTT row's window read
        lines += [f"### `{name}`: {setting.what}", "",
                  f"{config.env} {dict(config.env_args)}, {config.steps} steps x {config.envs} environments, "
                  f"`{config.cell}` {config.hidden}, tbptt window {config.truncation}"
                  + ("." if is_gymnasium(config.env) else "; a row's seeds run in one call under `jax.vmap`, so its "
                     "wall times are the call's, all seeds together."), "",
                  f"| preset | method | final return | solved (final > 0.5) | peak return | wall s to {setting.target} "
                  "(runs reaching it) | cos value | cos policy | wall s |", "|---|---|---|---|---|---|---|---|---|"]
        for preset in (preset_name(name, method) for method in setting.methods):
            rs = [r for r in runs if r["preset"] == preset]
            if not rs:  # a row of the table not run (yet): shown, so the table says what it lacks
                lines.append(f"| `{preset}` | {ROWS[preset][1]} | not run | - | - | - | - | - | - |")
                continue
            finals = [mean_return(r["records"], last=2) for r in rs]
            reach = [first_reaching(r["records"], setting.target) for r in rs]
            cos = {k: [mean_of(x.get(k) for x in r["records"]) for r in rs] for k in ("cos_value", "cos_policy")}
            peaks = [max((x["return"] for x in r["records"] if x["return"] is not None), default=None) for r in rs]
            solved = sum(f > 0.5 for f in finals)  # Farr et al.'s criterion for MemoryChain
            lines.append(f"| `{preset}` | {ROWS[preset][1]} | {spread(finals)} | {solved}/{len(rs)} "
                         f"| {spread(peaks)} | {spread(reach)} "
                         f"({sum(x is not None for x in reach)}/{len(rs)}) | {spread(cos['cos_value'])} | "
                         f"{spread(cos['cos_policy'])} | {spread([r['records'][-1]['wall_s'] for r in rs])} |")
        seeds = len({r["seed"] for r in runs if ROWS[r["preset"]][0] == name})
        # the command that runs the rows shown, and only those (rows not run would be run by a bare --tables)
        ran = [m for m in setting.methods if any(r["preset"] == preset_name(name, m) for r in runs)]
        rows = "" if ran == list(setting.methods) else f" --rows {' '.join(ran)}"
        lines += ["", provenance.line(f"rtrl results rl --out {out} --tables {name}{rows} --seeds {seeds}", at), ""]
    return "\n".join(lines)


def run_records(preset: str, seeds: tuple[int, ...]) -> list[list[dict]]:
    """The records of ``preset`` run from each of ``seeds`` (consecutive where there are several: one call under
    ``jax.vmap``), one list per seed."""
    options = {**PRESETS[preset].options, "seed": seeds[0], "seeds": len(seeds)}
    records = train(RLConfig(**options))[1]
    return split_seeds(records) if len(seeds) > 1 else [records]


def split_seeds(records: list[dict]) -> list[list[dict]]:
    """One run's records of several seeds (``return_per_seed``, ``episodes_per_seed``) as each seed's records: its
    own return and episode count, the figures shared by the seeds (the step, the wall time, the means) as they are."""
    count = len(records[0]["return_per_seed"])
    shared = [{k: v for k, v in r.items() if k not in ("return_per_seed", "episodes_per_seed")} for r in records]
    return [[{**rec, "return": r["return_per_seed"][i], "episodes": r["episodes_per_seed"][i]}
             for rec, r in zip(shared, records, strict=True)] for i in range(count)]


def jobs_of(preset: str, seeds: list[int]) -> list[tuple[str, tuple[int, ...]]]:
    """The calls that run ``seeds`` of ``preset``: consecutive seeds in one call on a jitted environment, one
    call a seed on a host one (``gymnasium:ID``)."""
    if is_gymnasium(PRESETS[preset].options["env"]):
        return [(preset, (seed,)) for seed in seeds]
    groups = []
    for seed in seeds:
        if groups and groups[-1][-1] == seed - 1:
            groups[-1].append(seed)
        else:
            groups.append([seed])
    return [(preset, tuple(group)) for group in groups]


def in_table_order(runs: list[dict]) -> list[dict]:
    """``runs`` ordered as the presets are (then by seed), whatever order they finished in."""
    order = {name: i for i, name in enumerate(PRESETS)}
    return sorted(runs, key=lambda r: (order[r["preset"]], r["seed"]))


FIELDS = {"preset": ledger.text, "seed": ledger.whole, "records": ledger.records}  # a line of runs.jsonl


def read_runs(path: str) -> list[dict]:
    """The runs already in ``path`` (a runs.jsonl), every line checked (``rtrl.ledger.read``): one run a preset
    and seed, of a preset that exists."""
    return ledger.read(path, FIELDS, key=lambda r: (r["preset"], r["seed"]),
                       known=lambda r: None if r["preset"] in PRESETS else f"unknown preset {r['preset']!r}")


def main(argv=None, prog: str = "python -m rtrl.rl.results", parser_class=argparse.ArgumentParser) -> int:
    """The tables' command (``rtrl results rl``); ``parser_class`` makes its parser; the exit status (130: stopped
    by a Ctrl-C, every finished row kept)."""
    parser = parser_class(prog=prog, description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES),
                        help="the tables whose rows to run (default: all)")
    parser.add_argument("--rows", nargs="+", metavar="METHOD",
                        help="only these rows of each table, by method (e.g. rtrl memoryless; default: all)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time, each in its own process (default 1)")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        parser.error(f"--seeds and --jobs must be positive integers, got {args.seeds} and {args.jobs}")
    ledger.make_folder(args.out)  # a file, '' or a dangling link: one LedgerError
    with ledger.locked(args.out):  # a second command on the same folder is refused, not raced
        return write_tables(args, parser)


def finishing(futures):
    """``futures`` as each finishes, with ``interrupts.poll()`` every 0.1 s meanwhile: a Ctrl-C while rows run is
    acted on here, in this thread, within 0.1 s."""
    waiting = set(futures)
    while waiting:
        done, waiting = concurrent.futures.wait(waiting, timeout=0.1,
                                                return_when=concurrent.futures.FIRST_COMPLETED)
        interrupts.poll()
        yield from done


def write_tables(args, parser) -> int:
    """Run the rows ``args`` asks for that ``args.out``'s runs.jsonl lacks, writing it and results.md as each
    finishes; the exit status."""
    at = provenance.commit()  # the code the runs are measured on: read once, before the first
    runs_path = os.path.join(args.out, ledger.NAME)
    runs = read_runs(runs_path)
    done = {(r["preset"], r["seed"]) for r in runs}
    methods = {m for t in args.tables for m in TABLES[t].methods}
    if args.rows is not None and not set(args.rows) <= methods:
        parser.error(f"--rows must name rows of the tables chosen ({', '.join(sorted(methods))}), got "
                     f"{' '.join(args.rows)}")
    todo = [job for p in PRESETS if ROWS[p][0] in args.tables and (args.rows is None or ROWS[p][1] in args.rows)
            for job in jobs_of(p, [seed for seed in range(args.seeds) if (p, seed) not in done])]
    # spawn, not fork: a forked child would inherit jax's threads. Each worker ignores Ctrl-C and ends with this
    # process (interrupts.install, in a spawned process): this one stops them.
    pool = concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=interrupts.install)
    futures = {}
    try:
        # A Ctrl-C while rows run: acted on by finishing's poll, within 0.1 s, so that this process ends through
        # the pool's clean-up (ended at once, it would leave the pool's semaphores to multiprocessing's resource
        # tracker, which prints a warning).
        with interrupts.deferred(quiet=True):
            futures = {pool.submit(run_records, *job): job for job in todo}
            for future in finishing(futures):
                (preset, seeds), per_seed = futures[future], future.result()
                runs = in_table_order([*runs, *({"preset": preset, "seed": seed, "records": records}
                                                for seed, records in zip(seeds, per_seed, strict=True))])
                finals = " ".join(f"{mean_return(records, last=2):.3f}" for records in per_seed)
                line = (f"{json.dumps({'preset': preset, 'seeds': list(seeds)})} final {finals} wall "
                        f"{per_seed[0][-1]['wall_s']:.0f}s")
                if not ledger.keep(runs_path, runs, line,
                                   [(os.path.join(args.out, "results.md"), table(runs, args.out, at))]):
                    return interrupts.STATUS  # a Ctrl-C while the row was written: it is in, and nothing after it
    except KeyboardInterrupt:
        print("rtrl: interrupted", file=sys.stderr, flush=True)
        return interrupts.STATUS
    finally:
        if any(not future.done() for future in futures):  # leaving early: no row runs on that nobody will keep
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.kill()
        pool.shutdown(wait=True, cancel_futures=True)
    atomic_write_text(os.path.join(args.out, "results.md"), table(in_table_order(runs), args.out, at))
    return 0


if __name__ == "__main__":
    interrupts.install()  # Ctrl-C: see the module's docstring
    raise SystemExit(ledger.entry(main))  # a damaged ledger or a bad --out: one line, as rtrl results
