"""``rtrl results popgym --out DIR [--tasks ...] [--rows ...] [--seeds 5] [--seed 0] [--steps S] [--jobs N]``: the
POPGym Easy suite of Farr et al. (2026) on the jitted ports, run by the results runner (``rtrl.reports.results``:
the ledger, resuming, Ctrl-C). Each task's rows (exact RTRL, TBPTT(K), the memoryless agent; the row ``q``: exact
RTRL under intentional Q(lambda), ``q-rtu`` the same on Farr et al.'s Q-network torso; ``small-lr``: exact RTRL at
Adam's 3e-4, ``memoryless-small-lr`` the memoryless agent there) run their seeds in one call under ``jax.vmap``
(``rtrl rl --seeds``), scored as Farr et al. score them, beside the uniform random policy's score (the row
``uniform``: what no learning reaches; ``sweep``: the previous action plus one, a rule without memory,
``rtrl.rl.fixed``), each task's best learning row named.

Scoring (``rtrl.reports.scoring``): a seed's final return is the mean of its last two records' returns; it is
normalised so that 0 is the lowest episodic return the task allows and 1 the optimal one, on Farr et al.'s own
scale (``TASKS``: ``rtrl.rl.envs.popgym.NORMALISATION``); a row's figure is the interquartile mean (IQM) over its
seeds with a 95% bootstrap interval, beside Farr et al.'s streaming agent with exact RTRL and PPO with the same RTU
torso where they report the task (``TASKS``' ``anchor``).

Writes ``DIR/suite.md``: the protocol card of the agents that ran (``rtrl.reports.protocol``), then the table; each
record of an agent's row prints a line on stderr as it comes.
"""

from __future__ import annotations

import json
import sys
import time
from typing import NamedTuple

from rtrl import provenance
from rtrl.config import MAX_SEED
from rtrl.devices import check_memory
from rtrl.reports import protocol, scoring
from rtrl.reports.kind import Job, Kind, consecutive
from rtrl.rl.assemble import assemble
from rtrl.rl.config import RLConfig
from rtrl.rl.envs.popgym import LEVELS, NORMALISATION, normalise
from rtrl.rl.fixed import FIXED_ENVS, FIXED_STEPS, POLICIES, fixed_returns
from rtrl.rl.loop import train
from rtrl.rl.presets import POPGYM, POPGYM_AGENT, POPGYM_STREAMING, ROW_OPTIONS, WINDOW, learned_by


class Task(NamedTuple):
    """A task of the suite: its levels, the ends of its normalised scale (lowest, optimal episodic return), and the
    anchor's figures at its Easy level (Farr et al. 2026, normalised IQM at 10M frames: their streaming agent with
    exact RTRL, PPO-RTU), ``None`` where they report none."""

    levels: tuple[str, ...]
    normalisation: tuple[float, float]
    anchor: tuple[float, float] | None


# Farr et al. 2026 (arXiv 2605.24709), normalised IQM at 10M frames: (streaming agent with exact RTRL, PPO-RTU)
_ANCHOR = {"RepeatPrevious": (0.99, 0.81), "RepeatFirst": (0.48, 0.31), "CountRecall": (0.23, 0.10),
           "Concentration": (0.42, 0.78), "MultiarmedBandit": (0.63, 0.81)}
# The eleven tasks of Farr et al.'s POPGym Easy suite, the one table of them.
TASKS: dict[str, Task] = {name: Task(LEVELS, scale, _ANCHOR.get(name)) for name, scale in NORMALISATION.items()}
LEVEL = "Easy"  # the suite's level, the anchor's
# The rows: exact RTRL with the suite's agent, the rolling TBPTT window, no recurrence at all, no learning (the
# uniform random policy, played by ``fixed_returns``, not by an agent; ``sweep``, the previous action plus one, is
# another fixed policy: on Battleship it fires at every cell once, with no memory), and exact RTRL under
# intentional Q(lambda) (``q``: the memory-chain-L-q presets' algorithm, ``rtrl.rl.presets.learned_by``), and exact
# RTRL at Adam's step of the POPGym tables (``small-lr``: 3e-4 where the suite's agent takes 1e-3; on Concentration
# at 10M frames the agent at 1e-3 peaks near 0.54 and falls back, at 3e-4 it climbs to 0.67: docs/rl-results.md),
# and the memoryless agent at that step (``memoryless-small-lr``: so that memory and step size are measured apart),
# and intentional Q(lambda) on the torso of Farr et al.'s POPGym Q-network (``q-rtu``: an RTU of 192 complex
# units, 384 outputs, under exact RTRL, the Q head linear on it; on Battleship the minGRU torso of ``q`` diverged to
# NaN; this one's values also ran away, to thousands, but stayed finite: docs/rl-results.md).
ROWS = {"rtrl": {"method": "auto"}, "tbptt": {"method": "tbptt", "truncation": WINDOW},
        "memoryless": ROW_OPTIONS["memoryless"],
        "uniform": None, "sweep": None, "q": {"method": "auto", "algorithm": "q"},
        "small-lr": {"method": "auto", "lr": POPGYM["lr"]},
        "memoryless-small-lr": {**ROW_OPTIONS["memoryless"], "lr": POPGYM["lr"]},
        "q-rtu": {"method": "auto", "algorithm": "q", "cell": "rtu", "hidden": 384, "head_hidden": 0,
                  "cell_args": {"output_map": "concat", "r_min": 0.0, "r_max": 0.999}}}
SCORE = "Farr et al.'s scale: (final return - lowest) / (optimal - lowest), per task"


def env_name(task: str) -> str:
    return f"popgym:{task}{LEVEL}"


def options(task: str, row: str, steps: int, seed: int, seeds: int) -> dict:
    """The ``RLConfig`` options of one (task, row): the suite's agent (``rtrl.rl.presets.POPGYM_AGENT``) on
    ``popgym:<task>Easy``, ten records; of a fixed policy's row (``uniform``, ``sweep``), what ``fixed_returns``
    plays."""
    if ROWS[row] is None:
        return {"env": env_name(task), "policy": row, "steps": FIXED_STEPS, "envs": FIXED_ENVS, "seed": seed,
                "seeds": seeds}
    agent = {**POPGYM_AGENT, **ROWS[row]}
    if agent.get("algorithm", "ac") != "ac":
        agent = learned_by(agent["algorithm"], agent, steps)
    return {**agent, "env": env_name(task), "steps": steps, "record_every": max(1, steps // 10),
            "fidelity_every": 0, "seed": seed, "seeds": seeds}


def stored(task: str, row: str, steps: int) -> dict:
    """What a (task, row) runs, as its ledger lines keep it: an agent's complete options (``RLConfig``), a fixed
    policy's own; JSON's types, no seed."""
    opts = options(task, row, steps, 0, 1)
    if ROWS[row] is not None:
        opts = RLConfig(**opts).to_dict()
    return json.loads(json.dumps({k: v for k, v in opts.items() if k not in ("seed", "seeds")}))


def same(stored_options: dict, wanted: dict) -> bool:
    """Whether a row's stored options are ``wanted``; an agent's read as ``config.json`` is (``RLConfig.from_dict``:
    options its run never read, written before they were refused, at their defaults)."""
    if stored_options.get("policy") in POLICIES or wanted.get("policy") in POLICIES:
        return stored_options == wanted
    try:
        config = RLConfig.from_dict({**stored_options, "seed": 0, "seeds": 1}, complete=True).to_dict()
    except ValueError:  # options this version refuses: run the row anew
        return False
    return json.loads(json.dumps({k: v for k, v in config.items() if k not in ("seed", "seeds")})) == wanted


def normalised(task: str, value: float) -> float:
    """``value`` on Farr et al.'s scale of ``task`` (``rtrl.rl.envs.popgym.normalise``)."""
    return normalise(task, value)


def progress(task: str, row: str, steps: int):
    """``on_record`` for ``train``: a line on stderr per record (a 10M-frame row runs for hours on a CPU)."""

    def on_record(state, record):
        scores = [normalised(task, v) for v in scoring.seed_returns(record) if v is not None]
        score = f"normalised IQM {scoring.iqm(scores):.3f}" if scores else "no episode ended yet"
        print(f"  {task}{LEVEL} {row}: step {record['step']:,} of {steps:,}, {score}, {record['wall_s']:.0f} s",
              file=sys.stderr, flush=True)

    return on_record


def play(job: Job) -> list[list[dict]]:
    """Each seed's records of one (task, row) over ``job.seeds`` in one call; a fixed policy's, one record a seed
    (its mean return over the episodes it ended, at its last step)."""
    opts = {**job.options, "seed": job.seeds[0], "seeds": len(job.seeds)}
    if ROWS[job.row] is None:
        start = time.perf_counter()
        returns = fixed_returns(opts["env"], list(job.seeds), opts["policy"], opts["steps"], opts["envs"])
        wall = time.perf_counter() - start
        return [[{"step": opts["steps"], "return": value, "wall_s": wall}] for value in returns]
    records = train(RLConfig(**opts), on_record=progress(job.table, job.row, opts["steps"]), quiet=True)[1]
    return scoring.split_seeds(records)


def said(job: Job, per_seed: list[list[dict]]) -> str:
    scores = [f"{normalised(job.table, v):.2f}" if v is not None else "-"
              for v in (scoring.final_return(r) for r in per_seed)]
    return f"{job.table}{LEVEL} {job.row}: normalised {' '.join(scores)}, {per_seed[0][-1]['wall_s']:.0f} s"


def command(args) -> str:
    return (f"{args.prog} --out {args.out} --tasks {' '.join(args.tasks)} --rows {' '.join(args.rows)} "
            f"--seeds {args.seeds} --seed {args.seed} --steps {args.steps}")


def finals(lines: list[dict]) -> dict[tuple[str, str], list[float | None]]:
    """Each (task, row)'s seeds' final returns, in seed order."""
    out: dict[tuple[str, str], list] = {}
    for line in sorted(lines, key=lambda line: line["seed"]):
        out.setdefault((line["table"], line["row"]), []).append(scoring.final_return(line["records"]))
    return out


def card(lines: list[dict]) -> str:
    """The protocol card of the agents' rows that ran (a fixed policy's row plays no agent), with the seeds each
    ran."""
    rows = {}
    for line in lines:
        if ROWS[line["row"]] is not None:
            rows.setdefault((line["table"], line["row"]), {**line["options"], "seeds": 0})["seeds"] += 1
    if not rows:
        return "**Protocol**: only fixed policies ran (no agent).\n"
    return protocol.protocol_card(rows.values(), protocol.ANCHORS["popgym"], SCORE)


def table(lines: list[dict], args, at: str | None = None) -> str:
    """The suite's table of the ledger's ``lines``, opened by its protocol card, then its provenance line (the
    command ``args`` gives; ``at``: the commit, read from the checkout when None). The column ``best`` names each
    task's learning row of the highest IQM (the first in ``ROWS``'s order on a tie; a fixed policy's row learns
    nothing and is never named)."""
    return grid(finals(lines), card(lines) if lines else "") + "\n\n" + provenance.line(command(args), at) + "\n"


def grid(scores: dict[tuple[str, str], list], head: str = "") -> str:
    """The table of each (task, row)'s final returns: ``head``, then the rows' normalised IQMs per task."""
    rows = [row for row in ROWS if any(r == row for _, r in scores)]  # the columns in ROWS's order
    columns = " | ".join(f"{row} IQM [95% CI]" for row in rows)
    lines = [f"| task | {columns} | best | Farr streaming RTRL | Farr PPO-RTU |", "|---" * (len(rows) + 4) + "|"]
    for task in dict.fromkeys(t for t, _ in scores):
        cells, best = [], {}
        for row in rows:
            values = [normalised(task, v) for v in scores.get((task, row), []) if v is not None]
            if not values:
                cells.append("-")
                continue
            (low, high), score = scoring.bootstrap(values), scoring.iqm(values)
            cells.append(f"{score:.2f} [{low:.2f}, {high:.2f}] ({len(values)})")
            if ROWS[row] is not None:
                best[row] = score
        named = max(best, key=best.get) if best else "-"  # max keeps the first of equals
        anchor = TASKS[task].anchor or ("-", "-")
        lines.append(f"| {task}{LEVEL} | {' | '.join(cells)} | {named} | {anchor[0]} | {anchor[1]} |")
    return (head + "\n" if head else "") + "\n".join(lines)


def jobs(args, done: dict) -> list[Job]:
    """One call a (task, row) for the seeds ``done`` lacks with the options the command runs (consecutive runs of
    them, each under one ``vmap``)."""
    todo = []
    for task in args.tasks:
        for row in args.rows:
            wanted = stored(task, row, args.steps)
            missing = [s for s in range(args.seed, args.seed + args.seeds)
                       if (task, row, s) not in done or not same(done[(task, row, s)], wanted)]
            todo += [Job("popgym", task, row, group, wanted) for group in consecutive(missing)]
    return todo


def known(line: dict) -> str | None:
    """What is wrong with a well-formed line of runs.jsonl that this suite does not know, or ``None``."""
    if line["table"] not in TASKS:
        return f"unknown task {line['table']!r}; the suite's tasks are {', '.join(TASKS)}"
    if line["row"] not in ROWS:
        return f"unknown row {line['row']!r}; the suite's rows are {', '.join(ROWS)}"
    return None


def add_options(parser) -> None:
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS), metavar="TASK",
                        help=f"POPGym tasks, each at its Easy level (default: all: {', '.join(TASKS)})")
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS), help="default: all")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per row, run under one vmap (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--steps", type=int, default=POPGYM_STREAMING["steps"],
                        help=f"steps per environment (default {POPGYM_STREAMING['steps']:,}: "
                             f"{POPGYM_STREAMING['envs']} environments)")


def check(args, parser) -> None:
    """``parser.error`` on a count below one, seeds past the last, or an agent too big for memory with
    ``--seeds`` seeds side by side (``RLAssembly.memory_needed``; a fixed policy's row holds far less)."""
    for name in ("seeds", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be a positive integer, got {getattr(args, name)}")
    if not 0 <= args.seed <= MAX_SEED - args.seeds + 1:
        parser.error(f"--seed must be from 0 to 2**32 - seeds = {MAX_SEED - args.seeds + 1} (the seeds run are "
                     f"seed .. seed + seeds - 1), got {args.seed}")
    try:
        check_memory(assemble(RLConfig(**options(args.tasks[0], "rtrl", args.steps, args.seed, args.seeds)))
                     .memory_needed(), smaller="--seeds")
    except ValueError as e:
        parser.error(str(e))


KIND = Kind("popgym", "the POPGym Easy suite over seeds, on Farr et al. 2026's normalisation", "suite.md",
            add_options, check, jobs, play, said, table, known, same)
