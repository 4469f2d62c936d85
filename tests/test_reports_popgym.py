"""rtrl.reports.popgym: the POPGym suite's task table (the normalisation on hand-checked cases), its rows, its table,
and resumable runs of a tiny suite through the results runner."""

from __future__ import annotations

import argparse
import json

import jax
import numpy as np
import pytest

from inline_pool import ctrl_c_while_written, run_inline
from rtrl.reports import popgym, results
from rtrl.reports.popgym import TASKS, normalised
from rtrl.reports.scoring import final_return, final_returns
from rtrl.rl import make
from rtrl.rl.envs.popgym import LEVELS, NORMALISATION
from rtrl.rl.envs.popgym import TASKS as POPGYM_TASKS


def main(argv):
    return results.main("popgym", argv)


def ledger_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def scored(task: str, row: str, finals: list[float]) -> list[dict]:
    """Ledger lines of (task, row) whose seeds' final returns are ``finals`` (one record each)."""
    return [{"kind": "popgym", "table": task, "row": row, "seed": seed, "options": popgym.stored(task, row, 4),
             "records": [{"step": 4, "return": value, "wall_s": 1.0}]} for seed, value in enumerate(finals)]


ARGS = argparse.Namespace(prog="rtrl results popgym", out="runs/s", tasks=["RepeatFirst"], rows=["rtrl"], seeds=2,
                          seed=0, steps=4)


def play(task: str, right: bool) -> float:
    """The return of one RepeatFirstEasy episode answering the first card's suit always (or never)."""
    env = make(f"popgym:{task}")
    obs, state = env.reset(jax.random.key(3))
    first = int(np.argmax(np.asarray(obs)))
    action = first if right else (first + 1) % 4
    total, done, key = 0.0, False, jax.random.key(4)
    while not done:
        key, k = jax.random.split(key)
        step = env.step(k, state, action)
        total, done, state = total + float(step.reward), bool(step.done), step.state
    return total


def test_the_bounds_are_the_returns_of_the_best_and_the_worst_episode():
    low, high = NORMALISATION["RepeatFirst"]
    assert play("RepeatFirstEasy", right=True) == pytest.approx(high, abs=1e-5)
    assert play("RepeatFirstEasy", right=False) == pytest.approx(low, abs=1e-5)
    assert normalised("RepeatFirst", low) == 0.0 and normalised("RepeatFirst", high) == 1.0
    assert normalised("PositionOnlyCartPole", 0.25) == 0.25  # CartPole's returns lie in [0, 1]


# (task, return, its score on Farr et al.'s scale), by hand from their scripts/plot_popgym.py's ends
FARR_SCALE = [
    ("RepeatPrevious", 0.0, 0.5),
    ("HigherLower", 0.507, 1.0),  # the optimal return, below 1
    ("HigherLower", 0.0, 1 / 1.507),
    ("Concentration", 0.0, 1 / 1.816),
    ("MultiarmedBandit", 0.824, 1.0),
    ("Battleship", -64 / 52, 0.0),  # the lowest return, below -1
    ("Battleship", 0.0, (64 / 52) / (1 + 64 / 52)),
    ("MineSweeper", -13 / 24 - 4 / 7, 0.0),
    ("MineSweeper", 1.0, 1.0),
    ("NoisyPositionOnlyCartPole", 0.5, 0.5),
]


@pytest.mark.parametrize("task, value, score", FARR_SCALE)
def test_scores_are_on_farr_et_al_s_scale(task, value, score):
    assert normalised(task, value) == pytest.approx(score, rel=1e-12, abs=1e-12)


def test_the_scale_covers_every_task_by_the_suite_s_names_and_refuses_others():
    assert set(NORMALISATION) == set(POPGYM_TASKS) == set(TASKS) and len(TASKS) == 11
    # the one task table: each task's levels, its scale, and the anchor's figures where they report the task
    assert all(t.levels == LEVELS and t.normalisation == NORMALISATION[name] for name, t in TASKS.items())
    assert TASKS["RepeatPrevious"].anchor == (0.99, 0.81) and TASKS["Battleship"].anchor is None
    with pytest.raises(ValueError, match="task must be one of .* got 'RepeatFirstEasy'"):
        normalised("RepeatFirstEasy", 0.0)


def test_a_suite_resumes_and_reruns_only_what_changed(tmp_path, capsys, monkeypatch):
    run_inline(monkeypatch)
    args = ["--out", str(tmp_path), "--tasks", "MultiarmedBandit", "--rows", "memoryless", "--seeds", "2",
            "--steps", "4"]
    main(args)
    runs = ledger_lines(tmp_path / "runs.jsonl")
    assert [(r["kind"], r["table"], r["row"], r["seed"]) for r in runs] == [
        ("popgym", "MultiarmedBandit", "memoryless", 0), ("popgym", "MultiarmedBandit", "memoryless", 1)]
    assert all(r["options"] == popgym.stored("MultiarmedBandit", "memoryless", 4) for r in runs)
    assert "seed" not in runs[0]["options"] and runs[0]["options"]["env"] == "popgym:MultiarmedBanditEasy"
    suite = (tmp_path / "suite.md").read_text()
    assert "MultiarmedBanditEasy" in suite
    # the page opens with the card of the agent that ran, against Farr et al.'s POPGym protocol
    assert suite.startswith("**Protocol** (generated from the configurations that ran; anchor: Farr et al. 2026, "
                            "POPGym Easy)")
    assert "- seeds: 2 (anchor: 10)" in suite and "- frames: 64 per seed (4 steps x 16 environments)" in suite
    # each seed's records: one a step at 4 steps, its own return; the seed's final return from its last two
    assert all([p["step"] for p in r["records"]] == [1, 2, 3, 4] for r in runs)
    assert [final_return(r["records"]) for r in runs] == final_returns(
        [{"return": 0.0, "return_per_seed": [a["return"], b["return"]]}
         for a, b in zip(runs[0]["records"], runs[1]["records"], strict=True)])
    err = capsys.readouterr().err
    assert [line.split(",")[0].strip() for line in err.splitlines() if "step" in line] == [
        f"MultiarmedBanditEasy memoryless: step {n} of 4" for n in (1, 2, 3, 4)]
    main(args)  # resumed: nothing left to run
    assert capsys.readouterr().out == ""
    main([*args[:-1], "5"])  # another budget: run anew, the old lines replaced
    assert "MultiarmedBanditEasy memoryless" in capsys.readouterr().out
    runs = ledger_lines(tmp_path / "runs.jsonl")
    assert [(r["seed"], r["options"]["steps"]) for r in runs] == [(0, 5), (1, 5)]
    main([*args[:-3], "1", "--steps", "5"])  # fewer seeds of the same row: already there, nothing runs
    assert capsys.readouterr().out == "" and ledger_lines(tmp_path / "runs.jsonl") == runs
    main([*args[:-3], "1", "--steps", "4"])  # seed 0 at the first budget: its line replaced, seed 1's of 5 steps gone
    assert [(r["seed"], r["options"]["steps"]) for r in ledger_lines(tmp_path / "runs.jsonl")] == [(0, 4)]


def test_the_q_row_is_intentional_q_on_the_suites_torso_and_runs(tmp_path, monkeypatch):
    """The row ``q``: the suite agent's torso, inputs and budget under the memory-chain-L-q presets' algorithm
    (intentional Q(lambda): eta 0.5, gamma 0.99, lambda 0.8), epsilon decaying over the first tenth of the run, and
    no option only the actor-critic reads (the config would refuse it)."""
    from rtrl.rl.config import RLConfig

    opts = popgym.options("RepeatPrevious", "q", 1000, 3, 2)
    rtrl = popgym.options("RepeatPrevious", "rtrl", 1000, 3, 2)
    assert (opts["algorithm"], opts["optimizer"], opts["lr"], opts["gamma"], opts["lam"]) == (
        "q", "intentional", 0.5, 0.99, 0.8)
    assert opts["explore_steps"] == 100 and "entropy" not in opts
    same = ("cell", "hidden", "head_hidden", "envs", "extra_inputs", "env", "steps", "record_every", "seed", "seeds",
            "method")
    assert {k: opts[k] for k in same} == {k: rtrl[k] for k in same}
    assert RLConfig(**opts).algorithm == "q"
    run_inline(monkeypatch)
    main(["--out", str(tmp_path), "--tasks", "RepeatPrevious", "--rows", "q", "--seeds", "2", "--steps", "4"])
    runs = ledger_lines(tmp_path / "runs.jsonl")
    assert [(r["row"], r["seed"], len(r["records"]), r["options"]["algorithm"]) for r in runs] == [
        ("q", 0, 4, "q"), ("q", 1, 4, "q")]
    assert "q IQM" in (tmp_path / "suite.md").read_text()


def test_the_uniform_row_is_written_and_resumed_like_the_agents_rows(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(popgym, "FIXED_STEPS", 60)  # HigherLower: 51 steps an episode
    run_inline(monkeypatch)
    args = ["--out", str(tmp_path), "--tasks", "HigherLower", "--rows", "uniform", "--seeds", "3"]
    main(args)
    runs = ledger_lines(tmp_path / "runs.jsonl")
    assert [(r["row"], r["seed"], r["options"]["policy"], r["options"]["steps"], len(r["records"])) for r in runs] == [
        ("uniform", s, "uniform", 60, 1) for s in range(3)]
    assert all(r["records"][0]["step"] == 60 and -1.0 <= r["records"][0]["return"] <= 0.507 for r in runs)
    assert "uniform IQM" in (tmp_path / "suite.md").read_text()
    capsys.readouterr()
    main(args)  # resumed: nothing left to run
    assert capsys.readouterr().out == ""


def test_the_sweep_row_plays_its_own_policy_beside_the_uniform_one(tmp_path, monkeypatch):
    """``--rows uniform sweep`` on Battleship: each row its own policy in the ledger, the sweep (every cell once)
    far above the uniform policy, and neither named best (no agent learned). [the row's policy read as uniform]"""
    monkeypatch.setattr(popgym, "FIXED_STEPS", 130)  # two Battleship episodes of at most 64 steps
    run_inline(monkeypatch)
    main(["--out", str(tmp_path), "--tasks", "Battleship", "--rows", "uniform", "sweep", "--seeds", "1"])
    runs = {r["row"]: r for r in ledger_lines(tmp_path / "runs.jsonl")}
    assert {row: r["options"]["policy"] for row, r in runs.items()} == {"uniform": "uniform", "sweep": "sweep"}
    assert runs["sweep"]["records"][0]["return"] > runs["uniform"]["records"][0]["return"] + 0.3
    assert "| BattleshipEasy |" in (text := (tmp_path / "suite.md").read_text()) and "| - | - | - |" in text


def test_the_tables_columns_follow_the_rows_order_whatever_ran_first():
    runs = [line for r in ("uniform", "memoryless", "rtrl") for line in scored("RepeatFirst", r, [0.0, 1.0])]
    runs += scored("CountRecall", "tbptt", [0.5])
    head = next(line for line in popgym.table(runs, ARGS, at="abc1234").splitlines() if line.startswith("| task"))
    assert head.startswith("| task | rtrl IQM [95% CI] | tbptt IQM [95% CI] | memoryless IQM [95% CI] | uniform IQM")


def test_a_ctrl_c_while_a_finished_row_is_written_stops_once_it_is_in(tmp_path, monkeypatch, capsys):
    """A Ctrl-C arriving while a finished row is written (as the watcher thread delivers it, ``on_interrupt``):
    the row is in runs.jsonl, the next row (run already: the stand-in pool runs each job as it is submitted) is not
    kept, exit status 130 with one line saying where the rows are [the write outside ``interrupts.deferred``: the
    process ends with the row unwritten; the ``poll`` left out: the Ctrl-C is swallowed and the next row is
    written]."""
    ran = []
    monkeypatch.setattr(results, "play", lambda job: ran.append(job.row) or [
        [{"step": 4, "return": 0.5, "wall_s": 1.0}] for _ in job.seeds])
    run_inline(monkeypatch)
    ctrl_c_while_written(monkeypatch)
    status = main(["--out", str(tmp_path), "--tasks", "RepeatPrevious", "--rows", "uniform", "memoryless",
                   "--seeds", "1", "--steps", "4"])
    assert status == 130 and ran == ["uniform", "memoryless"]
    assert [json.loads(line)["row"] for line in (tmp_path / "runs.jsonl").read_text().splitlines()] == ["uniform"]
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (f"rtrl: interrupted; {tmp_path / 'runs.jsonl'} holds every row finished "
                                            "(the same command resumes)")


@pytest.mark.slow
def test_a_ctrl_c_mid_row_ends_the_suite_at_once_and_it_resumes(tmp_path):
    """``rtrl results popgym`` sent SIGINT while its second row runs in its worker (the first row's line printed): it
    ends within seconds, exit status 130, the one line "rtrl: interrupted", no traceback; runs.jsonl holds the first
    row, every line whole JSON; the lock went with the process, so the same suite runs again at once and finds the
    row done [``interrupts.install`` left out: Python's KeyboardInterrupt, a traceback and status 1, and this
    fails]."""
    import os
    import signal
    import subprocess
    import sys
    import time

    src = os.path.join(os.path.dirname(__file__), "..", "src")
    env = {**os.environ, "PYTHONPATH": src, "JAX_PLATFORMS": "cpu"}
    args = [sys.executable, "-m", "rtrl", "results", "popgym", "--out", str(tmp_path), "--tasks", "RepeatPrevious",
            "--seeds", "1", "--steps", "20000", "--rows", "uniform"]
    suite_run = subprocess.Popen([*args, "memoryless"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
    try:
        line = suite_run.stdout.readline()
        assert line.startswith("RepeatPreviousEasy uniform: normalised"), line
        # the memoryless row runs: its first record's progress line (a readiness signal, not a clock: a Ctrl-C
        # still inside the first row's writing is a different, later stop)
        running = suite_run.stderr.readline()
        assert running.startswith("  RepeatPreviousEasy memoryless: step 2,000 of 20,000"), running
        sent = time.monotonic()
        suite_run.send_signal(signal.SIGINT)
        out, err = suite_run.communicate(timeout=15)
        assert time.monotonic() - sent < 5
    finally:
        suite_run.kill()
    lines = err.strip().splitlines()  # the row's later progress lines may come before the signal is acted on
    assert suite_run.returncode == 130 and lines[-1] == "rtrl: interrupted" and out == "", (out, err)
    assert all(line.startswith("  RepeatPreviousEasy memoryless: step ") for line in lines[:-1]), err
    text = (tmp_path / "runs.jsonl").read_text()
    assert text.endswith("\n") and [json.loads(line)["row"] for line in text.splitlines()] == ["uniform"]
    assert not list(tmp_path.glob(".*.tmp"))
    again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout == "", (again.stdout, again.stderr)  # resumed: the row is done
    assert (tmp_path / "runs.jsonl").read_text() == text


def test_the_best_column_names_the_learning_row_of_the_highest_iqm():
    """Hand-checked on RepeatFirst's [-1, 1] scale (normalised (v + 1) / 2): rtrl's IQM 0.75 and small-lr's 0.9
    beat memoryless's 0.5; uniform's 1.0 is no learning row and is never named; on CountRecall a tie of rtrl
    and small-lr names rtrl, the first in ROWS's order. [guards: the uniform row counted; the last of equals kept;
    a task with no learning row given a name]"""
    runs = [*scored("RepeatFirst", "rtrl", [0.5, 0.5]), *scored("RepeatFirst", "small-lr", [0.8, 0.8]),
            *scored("RepeatFirst", "memoryless", [0.0]), *scored("RepeatFirst", "uniform", [1.0]),
            *scored("CountRecall", "small-lr", [0.2]), *scored("CountRecall", "rtrl", [0.2]),
            *scored("HigherLower", "uniform", [0.1])]
    page = popgym.table(runs, ARGS, at="abc1234").splitlines()
    lines = page[next(i for i, line in enumerate(page) if line.startswith("| task")):]
    head = [c.strip() for c in lines[0].split("|")]
    best = head.index("best")
    named = {cells[1]: cells[best] for cells in ([c.strip() for c in line.split("|")] for line in lines[2:5])}
    assert named == {"RepeatFirstEasy": "small-lr", "CountRecallEasy": "rtrl", "HigherLowerEasy": "-"}
    assert len(lines[1].split("|")) == len(lines[0].split("|"))  # the rule has one cell per column


@pytest.mark.parametrize("small_row, row", [("small-lr", "rtrl"), ("memoryless-small-lr", "memoryless")])
def test_the_small_lr_rows_differ_from_their_agents_in_adams_step_alone(small_row, row):
    """``small-lr`` and ``memoryless-small-lr`` differ from ``rtrl`` and ``memoryless`` in Adam's step alone (3e-4
    against the suite's 1e-3), so a pair of them measures the step and the other pair memory."""
    small = popgym.options("Concentration", small_row, 1000, 0, 5)
    agent = popgym.options("Concentration", row, 1000, 0, 5)
    assert (small["lr"], agent["lr"]) == (3e-4, 1e-3)
    assert {k: v for k, v in small.items() if k != "lr"} == {k: v for k, v in agent.items() if k != "lr"}


def test_rows_found_finished_together_come_in_the_order_they_were_submitted():
    """Five futures already finished, submitted in a known order: ``finishing`` yields them in that order (a set's
    order made which row the ledger held first, and the Ctrl-C-while-written test, change from run to run)."""
    import concurrent.futures

    futures = {}
    for row in ("uniform", "memoryless", "rtrl", "tbptt", "q"):
        future = concurrent.futures.Future()
        future.set_result(row)
        futures[future] = row
    assert [futures[f] for f in results.finishing(futures)] == ["uniform", "memoryless", "rtrl", "tbptt", "q"]
