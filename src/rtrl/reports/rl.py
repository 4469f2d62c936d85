"""``rtrl results rl --out DIR [--tables NAME ...] [--rows METHOD ...] [--seeds S] [--jobs N]``: docs/rl-results.md's
tables, each row a preset (``rtrl.rl.presets``) over seeds, run by the results runner (``rtrl.reports.results``: the
ledger, resuming, Ctrl-C). A row on a jitted environment runs its seeds in one call under ``jax.vmap`` (``rtrl rl
--seeds``: one compilation, the seeds' records split apart afterwards, each with its own return and episode count
and the shared figures); a row on a host environment (``gymnasium:ID``) runs seed by seed.

Writes ``DIR/results.md``: per table its protocol card (``rtrl.reports.protocol``), then per row the final return
(``rtrl.reports.scoring``: then mean and spread over seeds), the seeds solved (final above 0.5, MemoryChain's
criterion), the peak return (the best record's: far above the final one, the run collapsed), the wall time at which
the return first reached the table's target, and the mean fidelity cosines; under it the line that reruns it.
"""

from __future__ import annotations

import json

from rtrl import provenance
from rtrl.reports import protocol, scoring
from rtrl.reports.kind import Job, Kind, consecutive, job_line
from rtrl.rl.config import RLConfig
from rtrl.rl.envs.registry import is_gymnasium
from rtrl.rl.loop import train
from rtrl.rl.presets import PRESETS, ROWS, TABLES, preset_name


def options(table: str, row: str) -> dict:
    """What the row runs, as its ledger line keeps it: the preset's complete options, JSON's types, no seed."""
    config = RLConfig(**PRESETS[preset_name(table, row)].options).to_dict()
    return json.loads(json.dumps({k: v for k, v in config.items() if k not in ("seed", "seeds")}))


def same(stored: dict, wanted: dict) -> bool:
    """Whether ``stored`` options (runs.jsonl) are ``wanted``, read as ``config.json`` is (``RLConfig.from_dict``:
    options its run never read, written before they were refused, at their defaults)."""
    try:
        config = RLConfig.from_dict({**stored, "seed": 0, "seeds": 1}, complete=True).to_dict()
    except ValueError:  # options this version refuses: run the row anew
        return False
    return json.loads(json.dumps({k: v for k, v in config.items() if k not in ("seed", "seeds")})) == wanted


def anchor_of(config) -> dict | None:
    """The anchor a table's runs compare with: Farr et al.'s POPGym suite for a POPGym task, their MuJoCo -P
    tasks for a MuJoCo one; none for the others."""
    env = protocol.option(config, "env")
    if env.startswith(("popgym:", "gymnasium:popgym-")):  # rtrl's port, or popgym's own Gymnasium environments
        return protocol.ANCHORS["popgym"]
    name = env.partition(":")[2].partition("-")[0]
    return protocol.ANCHORS["mujoco"] if name in protocol.ANCHORS["mujoco"]["environments"] else None


def card(lines: list[dict]) -> str:
    """The protocol card of one table's lines: each row's configuration, with the seeds it ran."""
    rows = {}
    for line in lines:
        rows.setdefault(line["row"], {**line["options"], "seeds": 0})["seeds"] += 1
    configs = list(rows.values())
    return protocol.protocol_card(configs, anchor_of(configs[0]))


def table(lines: list[dict], args, at: str | None = None) -> str:
    """The results tables of the ledger's ``lines`` (read from ``args.out``), each opened by its protocol card and
    followed by its provenance line (``at``: the commit; read from the checkout when None)."""
    lines = [line for line in lines if line["table"] in TABLES]
    out = args.out
    text = []
    for name in [t for t in TABLES if any(line["table"] == t for line in lines)]:
        setting = TABLES[name]
        ran = [line for line in lines if line["table"] == name]
        config = RLConfig(**{**setting.options, "method": "tbptt"})  # the setting, its TBPTT row's window read
        text += [f"### `{name}`: {setting.what}", "", card(ran),
                 f"{config.env} {dict(config.env_args)}, {config.steps} steps x {config.envs} environments, "
                 f"`{config.cell}` {config.hidden}, tbptt window {config.truncation}"
                 + ("." if is_gymnasium(config.env) else "; a row's seeds run in one call under `jax.vmap`, so its "
                    "wall times are the call's, all seeds together."), "",
                 f"| preset | method | final return | solved (final > 0.5) | peak return | wall s to {setting.target} "
                 "(runs reaching it) | cos value | cos policy | wall s |", "|---|---|---|---|---|---|---|---|---|"]
        for method in setting.methods:
            preset = preset_name(name, method)
            rs = sorted((line for line in ran if line["row"] == method), key=lambda line: line["seed"])
            if not rs:  # a row of the table not run (yet): shown, so the table says what it lacks
                text.append(f"| `{preset}` | {method} | not run | - | - | - | - | - | - |")
                continue
            records = [r["records"] for r in rs]
            finals = [scoring.final_return(r) for r in records]
            reach = [scoring.first_reaching(r, setting.target) for r in records]
            cos = {k: [scoring.mean_of(x.get(k) for x in r) for r in records] for k in ("cos_value", "cos_policy")}
            solved = sum(f is not None and f > 0.5 for f in finals)  # Farr et al.'s criterion for MemoryChain
            text.append(f"| `{preset}` | {method} | {scoring.spread(finals)} | {solved}/{len(rs)} "
                        f"| {scoring.spread([scoring.peak_return(r) for r in records])} | {scoring.spread(reach)} "
                        f"({sum(x is not None for x in reach)}/{len(rs)}) | {scoring.spread(cos['cos_value'])} | "
                        f"{scoring.spread(cos['cos_policy'])} | {scoring.spread([r[-1]['wall_s'] for r in records])} |")
        seeds = len({line["seed"] for line in ran})
        # the command that runs the rows shown, and only those (rows not run would be run by a bare --tables)
        shown = [m for m in setting.methods if any(line["row"] == m for line in ran)]
        rows = "" if shown == list(setting.methods) else f" --rows {' '.join(shown)}"
        text += ["", provenance.line(f"rtrl results rl --out {out} --tables {name}{rows} --seeds {seeds}", at), ""]
    return "\n".join(text)


def jobs(args, done: dict) -> list[Job]:
    """The calls that run the rows ``args`` asks for, less those ``done`` with the same options: consecutive seeds
    in one call on a jitted environment, one call a seed on a host one (``gymnasium:ID``)."""
    todo = []
    for name, method in ROWS.values():
        if name not in args.tables or (args.rows is not None and method not in args.rows):
            continue
        wanted = options(name, method)
        missing = [s for s in range(args.seeds) if (name, method, s) not in done
                   or not same(done[(name, method, s)], wanted)]
        groups = [(s,) for s in missing] if is_gymnasium(wanted["env"]) else consecutive(missing)
        todo += [Job("rl", name, method, group, wanted) for group in groups]
    return todo


def play(job: Job) -> list[list[dict]]:
    """Each seed's records of the preset ``job`` names, run from its seeds in one call."""
    records = train(RLConfig(**{**job.options, "seed": job.seeds[0], "seeds": len(job.seeds)}), quiet=True)[1]
    return scoring.split_seeds(records)


def said(job: Job, per_seed: list[list[dict]]) -> str:
    return f"{job_line(job, [scoring.final_return(r) for r in per_seed])} wall {per_seed[0][-1]['wall_s']:.0f}s"


def known(line: dict) -> str | None:
    """What is wrong with a line of a table or row that is not in ``rtrl.rl.presets``, or ``None``."""
    if line["table"] not in TABLES:
        return f"unknown table {line['table']!r}"
    if line["row"] not in TABLES[line["table"]].methods:
        return f"unknown row {line['row']!r} of the table {line['table']!r}"
    return None


def add_options(parser) -> None:
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES),
                        help="the tables whose rows to run (default: all)")
    parser.add_argument("--rows", nargs="+", metavar="METHOD",
                        help="only these rows of each table, by method (e.g. rtrl memoryless; default: all)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per row (default 3)")


def check(args, parser) -> None:
    if args.seeds < 1:
        parser.error(f"--seeds must be a positive integer, got {args.seeds}")
    methods = {m for t in args.tables for m in TABLES[t].methods}
    if args.rows is not None and not set(args.rows) <= methods:
        parser.error(f"--rows must name rows of the tables chosen ({', '.join(sorted(methods))}), got "
                     f"{' '.join(args.rows)}")


KIND = Kind("rl", "docs/rl-results.md's tables: each row an rtrl rl preset, over seeds", "results.md",
            add_options, check, jobs, play, said, table, known, same)
