"""``python -m rtrl.rl.suite --out DIR [--tasks ...] [--rows ...] [--seeds 5] [--steps S]``: the POPGym Easy suite of
Farr et al. (2026) on the jitted ports, each task's rows (exact RTRL, TBPTT(K), the memoryless agent; the row ``q``:
exact RTRL under intentional Q(lambda); ``small-lr``: exact RTRL at Adam's 3e-4, ``memoryless-small-lr`` the
memoryless agent there) over seeds run in one call under
``jax.vmap`` (``rtrl rl --seeds``), scored as they score it, beside the uniform random policy's score (the row
``uniform``: what no learning reaches, ``uniform_returns``), each task's best learning row named.

Scoring: a seed's final return is the mean of its last two records' returns; it is normalised so that 0 is the
lowest episodic return the task allows and 1 the optimal one, on Farr et al.'s own scale
(``rtrl.rl.envs.popgym.NORMALISATION``: the optimal returns of HigherLower, Concentration and MultiarmedBandit below
1, the lowest of Battleship and MineSweeper below -1, the CartPoles' 0); a row's figure is the interquartile mean
(IQM) over its seeds with a 95% bootstrap interval (``iqm``, ``bootstrap``), beside Farr et al.'s streaming agent
with exact RTRL and PPO with the same RTU torso where they report the task (``FARR``).

Writes ``DIR/runs.jsonl`` (one line per task and row: the seeds' final returns, the options; an agent's row its
``curve`` too, each record's step and seeds' returns) as each finishes, and ``DIR/suite.md`` (the table); each
record prints a line on stderr as it comes. A (task, row) already in ``DIR/runs.jsonl`` with the same seeds and
options is not run again, so an interrupted suite resumes where it stopped; one whose options changed is run anew.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from rtrl import interrupts, ledger, provenance
from rtrl.config import MAX_SEED
from rtrl.devices import check_memory
from rtrl.files import atomic_write_text
from rtrl.rl.assemble import assemble
from rtrl.rl.config import RLConfig
from rtrl.rl.envs import make
from rtrl.rl.envs.popgym import NORMALISATION, normalise
from rtrl.rl.loop import train
from rtrl.rl.presets import POPGYM, POPGYM_STREAMING, ROW_OPTIONS, WINDOW, learned_by

TASKS = tuple(NORMALISATION)  # the eleven tasks of Farr et al.'s POPGym Easy suite
# Farr et al. 2026 (arXiv 2605.24709), normalised IQM at 10M frames: (streaming agent with exact RTRL, PPO-RTU)
FARR = {"RepeatPrevious": (0.99, 0.81), "RepeatFirst": (0.48, 0.31), "CountRecall": (0.23, 0.10),
        "Concentration": (0.42, 0.78), "MultiarmedBandit": (0.63, 0.81)}
# The rows: exact RTRL with the suite's agent, the rolling TBPTT window, no recurrence at all, no learning (the
# uniform random policy, played by ``uniform_returns``, not by an agent), and exact RTRL under intentional Q(lambda)
# (``q``: the memory-chain-L-q presets' algorithm, ``rtrl.rl.presets.learned_by``), and exact RTRL at Adam's step
# of the POPGym tables (``small-lr``: 3e-4 where the suite's agent takes 1e-3; on Concentration at 10M frames the
# agent at 1e-3 peaks near 0.54 and falls back, at 3e-4 it climbs to 0.67: docs/rl-results.md), and the memoryless
# agent at that step (``memoryless-small-lr``: so that memory and step size are measured apart).
ROWS = {"rtrl": {"method": "auto"}, "tbptt": {"method": "tbptt", "truncation": WINDOW},
        "memoryless": ROW_OPTIONS["memoryless"],
        "uniform": None, "q": {"method": "auto", "algorithm": "q"}, "small-lr": {"method": "auto", "lr": POPGYM["lr"]},
        "memoryless-small-lr": {**ROW_OPTIONS["memoryless"], "lr": POPGYM["lr"]}}
UNIFORM_STEPS, UNIFORM_ENVS = 2_000, 64  # per seed: 128,000 steps, at least 600 episodes of every task
# The suite's agent: the popgym-repeat-* presets' (the streaming agent with its heads' tanh layer).
AGENT = {k: v for k, v in POPGYM_STREAMING.items() if k not in ("steps", "record_every", "fidelity_every")}


def options(task: str, row: str, steps: int, seed: int, seeds: int) -> dict:
    """The ``RLConfig`` options of one (task, row): the suite's agent on ``popgym:<task>Easy``, ten records; of the
    uniform row, what ``uniform_returns`` plays."""
    if ROWS[row] is None:
        return {"env": f"popgym:{task}Easy", "policy": "uniform", "steps": UNIFORM_STEPS, "envs": UNIFORM_ENVS,
                "seed": seed, "seeds": seeds}
    agent = {**AGENT, **ROWS[row]}
    if agent.get("algorithm", "ac") != "ac":
        agent = learned_by(agent["algorithm"], agent, steps)
    return {**agent, "env": f"popgym:{task}Easy", "steps": steps, "record_every": max(1, steps // 10),
            "fidelity_every": 0, "seed": seed, "seeds": seeds}


def uniform_returns(env, seeds: list[int], steps: int = UNIFORM_STEPS, envs: int = UNIFORM_ENVS) -> list[float]:
    """Each seed's mean return of the episodes a uniform random policy ends in ``steps`` steps of ``envs``
    environments of ``env`` (a jitted environment or its name; every seed under one ``vmap``): the level an agent
    that learned nothing stays at, and that learning should leave behind."""
    env = make(env) if isinstance(env, str) else env

    def play(seed):
        k_reset, key = jax.random.split(jax.random.PRNGKey(seed))
        state = jax.vmap(env.reset)(jax.random.split(k_reset, envs))[1]

        def one(carry, _):
            state, key, total, episodes = carry
            key, k_act, k_env = jax.random.split(key, 3)
            action = jax.random.randint(k_act, (envs,), 0, env.num_actions)
            step = jax.vmap(env.step)(jax.random.split(k_env, envs), state, action)
            return (step.state, key, total + jnp.where(step.done, step.state.last_return, 0.0).sum(),
                    episodes + step.done.sum(dtype=jnp.int32)), None

        zero = jnp.zeros((), jnp.float32)
        (_, _, total, episodes), _ = jax.lax.scan(one, (state, key, zero, jnp.zeros((), jnp.int32)), None, steps)
        return total, episodes

    totals, episodes = jax.jit(jax.vmap(play))(jnp.asarray(seeds, jnp.uint32))
    if int(episodes.min()) == 0:
        raise ValueError(f"steps must let every seed end an episode of {env.name} ({envs} environments), got {steps}")
    return [float(t) / int(n) for t, n in zip(totals, episodes, strict=True)]


def seed_returns(record: dict) -> list[float | None]:
    """Each seed's return in a record (one seed's record holds only ``return``; ``None``: no episode ended)."""
    return record.get("return_per_seed", [record["return"]])


def final_returns(records: list[dict]) -> list[float | None]:
    """Each seed's final return: the mean of its last two records' returns (those where episodes ended)."""
    per_seed = list(zip(*(seed_returns(r) for r in records[-2:]), strict=True))
    return [float(np.mean(known)) if (known := [v for v in seed if v is not None]) else None for seed in per_seed]


def normalised(task: str, value: float) -> float:
    """``value`` on Farr et al.'s scale of ``task`` (``rtrl.rl.envs.popgym.normalise``)."""
    return normalise(task, value)


def iqm(values) -> float:
    """The interquartile mean: the mean of the values between the 25th and 75th percentiles, the outer quarters
    cut with fractional weights where the count is not a multiple of four (rliable's definition)."""
    values = np.sort(np.asarray(values, float))
    n = len(values)
    if n == 0:
        raise ValueError("iqm of no values")
    # weight of each order statistic: its share of the interval [n/4, 3n/4]
    edges = np.arange(n + 1, dtype=float)
    weights = np.clip(np.minimum(edges[1:], 0.75 * n) - np.maximum(edges[:-1], 0.25 * n), 0.0, None)
    return float(weights @ values / weights.sum())


def bootstrap(values, reps: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval of the IQM, the seeds resampled with replacement."""
    values = np.asarray(values, float)
    rng = np.random.default_rng(seed)
    draws = [iqm(rng.choice(values, len(values))) for _ in range(reps)]
    return float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))


def table(runs: list[dict], command: str = "python -m rtrl.rl.suite --out DIR", at: str | None = None) -> str:
    """The suite's table of ``runs``, then its provenance line (``command``; ``at``: the commit, read from the
    checkout when None). The column ``best`` names each task's learning row of the highest IQM (the first in
    ``ROWS``'s order on a tie; the uniform row learns nothing and is never named)."""
    rows = [row for row in ROWS if any(r["row"] == row for r in runs)]  # the columns in ROWS's order
    head = " | ".join(f"{row} IQM [95% CI]" for row in rows)
    lines = [f"| task | {head} | best | Farr streaming RTRL | Farr PPO-RTU |", "|---" * (len(rows) + 4) + "|"]
    for task in dict.fromkeys(r["task"] for r in runs):
        cells, best = [], {}
        for row in rows:
            run = next((r for r in runs if r["task"] == task and r["row"] == row), None)
            scores = [normalised(task, v) for v in (run["finals"] if run else []) if v is not None]
            if not scores:
                cells.append("-")
                continue
            (low, high), score = bootstrap(scores), iqm(scores)
            cells.append(f"{score:.2f} [{low:.2f}, {high:.2f}] ({len(scores)})")
            if ROWS[row] is not None:
                best[row] = score
        named = max(best, key=best.get) if best else "-"  # max keeps the first of equals
        farr = FARR.get(task, ("-", "-"))
        lines.append(f"| {task}Easy | {' | '.join(cells)} | {named} | {farr[0]} | {farr[1]} |")
    return "\n".join(lines) + "\n\n" + provenance.line(command, at) + "\n"


def curve_point(record: dict) -> dict:
    """A record as the row's ``curve`` keeps it: the step and each seed's return (``None``: no episode ended)."""
    return {"step": record["step"], "returns": seed_returns(record)}


def progress(task: str, row: str, steps: int):
    """``on_record`` for ``train``: a line on stderr per record (a 10M-frame row runs for hours on a CPU)."""

    def on_record(state, record):
        scores = [normalised(task, v) for v in seed_returns(record) if v is not None]
        score = f"normalised IQM {iqm(scores):.3f}" if scores else "no episode ended yet"
        print(f"  {task}Easy {row}: step {record['step']:,} of {steps:,}, {score}, {record['wall_s']:.0f} s",
              file=sys.stderr, flush=True)

    return on_record


def run_row(task: str, row: str, steps: int, seed: int, seeds: int) -> dict:
    """One (task, row) over ``seeds`` seeds in one call: its options, the seeds' final returns, the wall time, and
    for an agent's row its ``curve`` (every record's step and seeds' returns: ``curve_point``)."""
    opts = options(task, row, steps, seed, seeds)
    if ROWS[row] is None:
        start = time.perf_counter()
        finals = uniform_returns(opts["env"], list(range(seed, seed + seeds)), opts["steps"], opts["envs"])
        return {"task": task, "row": row, "options": opts, "finals": finals, "wall_s": time.perf_counter() - start}
    config = RLConfig(**opts)
    records = train(config, on_record=progress(task, row, steps))[1]
    return {"task": task, "row": row, "options": config.to_dict(), "finals": final_returns(records),
            "wall_s": records[-1]["wall_s"], "curve": [curve_point(r) for r in records]}


def same_options(stored: dict, wanted: dict, uniform: bool) -> bool:
    """Whether a row's ``stored`` options (``runs.jsonl``) are ``wanted``; an agent's read as ``config.json`` is
    (``RLConfig.from_dict``: options its run never read, written before they were refused, at their defaults)."""
    if not uniform:
        try:
            stored = json.loads(json.dumps(RLConfig.from_dict(stored, complete=True).to_dict()))
        except ValueError:  # options this version refuses: run the row anew
            return False
    return stored == wanted


FIELDS = {"task": ledger.text, "row": ledger.text, "options": ledger.a_dict, "finals": ledger.numbers_or_none,
          "wall_s": ledger.number}  # a line of runs.jsonl (``rtrl.ledger``)


def unknown(run: dict) -> str | None:
    """What is wrong with a well-formed line of runs.jsonl that this suite does not know, or ``None``."""
    if run["task"] not in TASKS:
        return f"unknown task {run['task']!r}; the suite's tasks are {', '.join(TASKS)}"
    if run["row"] not in ROWS:
        return f"unknown row {run['row']!r}; the suite's rows are {', '.join(ROWS)}"
    return None


def read_suite(out: str) -> list[dict]:
    """The rows already in ``out``'s runs.jsonl, every line checked (``rtrl.ledger.read``)."""
    return ledger.read(os.path.join(out, ledger.NAME), FIELDS, key=lambda r: (r["task"], r["row"]), known=unknown)


def check_size(args) -> None:
    """A ``ValueError`` before anything runs when a row of the agent cannot fit in memory with ``args.seeds``
    seeds side by side (``RLAssembly.memory_needed``; the uniform row holds far less: only environments)."""
    opts = options(args.tasks[0], "rtrl", args.steps, args.seed, args.seeds)
    check_memory(assemble(RLConfig(**opts)).memory_needed(), smaller="--seeds")


def main(argv=None, prog: str = "python -m rtrl.rl.suite", parser_class=argparse.ArgumentParser) -> int:
    """The suite's command (``rtrl results popgym``): ``parser_class`` makes its parser (the ``rtrl`` command's own
    reports a problem in one line); the exit status (130: stopped by a Ctrl-C, every finished row kept)."""
    parser = parser_class(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the folder of runs.jsonl and suite.md (resumed if there)")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS, metavar="TASK",
                        help=f"POPGym tasks, each at its Easy level (default: all: {', '.join(TASKS)})")
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS), help="default: all")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per row, run under one vmap (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--steps", type=int, default=POPGYM_STREAMING["steps"],
                        help=f"steps per environment (default {POPGYM_STREAMING['steps']:,}: "
                             f"{POPGYM_STREAMING['envs']} environments)")
    args = parser.parse_args(argv)
    for name in ("seeds", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be a positive integer, got {getattr(args, name)}")
    if not 0 <= args.seed <= MAX_SEED - args.seeds + 1:
        parser.error(f"--seed must be from 0 to 2**32 - seeds = {MAX_SEED - args.seeds + 1} (the seeds run are "
                     f"seed .. seed + seeds - 1), got {args.seed}")
    try:
        check_size(args)
    except ValueError as e:
        parser.error(str(e))
    ledger.make_folder(args.out)  # a file, '' or a dangling link: one LedgerError
    runs_path = os.path.join(args.out, ledger.NAME)
    command = (f"{prog} --out {args.out} --tasks {' '.join(args.tasks)} --rows {' '.join(args.rows)} "
               f"--seeds {args.seeds} --seed {args.seed} --steps {args.steps}")
    at = provenance.commit()  # the code the rows are measured on: read once, before the first
    with ledger.locked(args.out):  # a second suite on the same folder is refused, not raced
        runs = read_suite(args.out)
        for task in args.tasks:
            for row in args.rows:
                opts = options(task, row, args.steps, args.seed, args.seeds)
                wanted = json.loads(json.dumps(opts if ROWS[row] is None else RLConfig(**opts).to_dict()))
                if any(r["task"] == task and r["row"] == row and same_options(r["options"], wanted,
                                                                              ROWS[row] is None) for r in runs):
                    continue
                run = run_row(task, row, args.steps, args.seed, args.seeds)  # a Ctrl-C here: ended at once
                runs = [r for r in runs if (r["task"], r["row"]) != (task, row)] + [run]
                scores = [f"{normalised(task, v):.2f}" if v is not None else "-" for v in run["finals"]]
                line = f"{task}Easy {row}: normalised {' '.join(scores)}, {run['wall_s']:.0f} s"
                # a finished row is written before its line is printed and before a Ctrl-C is acted on
                if not ledger.keep(runs_path, runs, line, [(os.path.join(args.out, "suite.md"),
                                                            table(runs, command, at))]):
                    return interrupts.STATUS
        atomic_write_text(os.path.join(args.out, "suite.md"), table(runs, command, at))
    return 0


if __name__ == "__main__":
    # Ctrl-C (rtrl.interrupts): while a row runs, the process ends at once with one line and exit status 130 (the
    # rows finished before it are in runs.jsonl, written atomically, and the lock goes with the process); while a
    # finished row is written, it stops once the row is in.
    interrupts.install()
    raise SystemExit(ledger.entry(main))  # a damaged ledger or a bad --out: one line, as rtrl results
