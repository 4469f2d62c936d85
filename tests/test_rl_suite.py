"""rtrl.rl.suite: the POPGym suite's scoring (IQM, its bootstrap interval, the normalisation) on hand-checked cases,
and one resumable run of a tiny suite."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.rl import make, suite
from rtrl.rl.envs.base import Env, EpisodeStats
from rtrl.rl.envs.popgym import NORMALISATION
from rtrl.rl.envs.popgym import TASKS as POPGYM_TASKS
from rtrl.rl.suite import TASKS, bootstrap, final_returns, iqm, main, normalised, uniform_returns


def test_iqm_is_the_mean_of_the_middle_half_with_fractional_ends():
    assert iqm([4, 1, 3, 2]) == pytest.approx(2.5)  # the middle two
    # five values: the interval [1.25, 3.75] of order statistics weights them 0, .75, 1, .75, 0
    assert iqm([100, 2, 1, 4, 3]) == pytest.approx((0.75 * 2 + 3 + 0.75 * 4) / 2.5)
    assert iqm([7.0]) == 7.0
    with pytest.raises(ValueError, match="no values"):
        iqm([])


def test_the_bootstrap_interval_brackets_the_iqm_and_is_a_point_for_equal_seeds():
    low, high = bootstrap([0.2, 0.4, 0.5, 0.9, 1.0])
    assert low <= iqm([0.2, 0.4, 0.5, 0.9, 1.0]) <= high and low >= 0.2 and high <= 1.0
    assert bootstrap([0.3] * 5) == pytest.approx((0.3, 0.3))


def exact_iqm_distribution(values):
    """Every resample of ``values`` with replacement (n ** n, equally likely) and its IQM (rliable's, written out
    here: the order statistics weighted by their share of [n/4, 3n/4]): the bootstrap's exact distribution, sorted."""
    values = np.asarray(values, float)
    n = len(values)
    shares = [max(0.0, min(i + 1, 0.75 * n) - max(i, 0.25 * n)) for i in range(n)]
    grid = np.stack(np.meshgrid(*[values] * n, indexing="ij"), -1).reshape(-1, n)
    return np.sort(np.sort(grid, axis=1) @ np.asarray(shares) / sum(shares))


def test_the_bootstrap_interval_is_the_resampled_iqms_2_5_and_97_5_percentiles():
    """By hand, two seeds 0 and 1: the resamples (0, 0), (0, 1), (1, 0), (1, 1) have IQMs 0, 0.5, 0.5, 1, so about
    a quarter of the 2,000 draws are 0 and a quarter 1: the interval is exactly [0, 1], not a point. Five seeds:
    against the exact distribution of the resampled IQM (all 3,125 resamples), the interval's ends lie at its 2.5th
    and 97.5th percentiles, within the draws' sampling error (a 2.5% quantile of 2,000 draws has a standard error
    of 0.35% in probability; 1.5% allowed), and it is wider than a point. [guards: the seeds drawn without
    replacement (every resample the same seeds: every interval collapses to the IQM); the 25th and 75th
    percentiles]"""
    assert bootstrap([0.0, 1.0]) == (0.0, 1.0)
    assert bootstrap([1.0, 0.0], reps=4000, seed=3) == (0.0, 1.0)
    values = [0.2, 0.4, 0.5, 0.9, 1.0]
    exact = exact_iqm_distribution(values)
    assert exact.size == 5 ** 5 and exact[0] == pytest.approx(0.2) and exact[-1] == pytest.approx(1.0)
    low, high = bootstrap(values)
    below_low, upto_low = np.mean(exact < low), np.mean(exact <= low)
    below_high, upto_high = np.mean(exact < high), np.mean(exact <= high)
    assert below_low <= 0.025 + 0.015 and upto_low >= 0.025 - 0.015, (low, below_low, upto_low)
    assert below_high <= 0.975 + 0.015 and upto_high >= 0.975 - 0.015, (high, below_high, upto_high)
    assert high - low > 0.2


def test_final_returns_are_each_seeds_mean_of_its_last_two_records():
    records = [{"return": 0.0, "return_per_seed": [0.0, 9.0]},
               {"return": 0.5, "return_per_seed": [0.2, None]},
               {"return": 0.5, "return_per_seed": [0.4, 0.6]}]
    assert final_returns(records) == pytest.approx([0.3, 0.6])  # seed 1: None left out, not counted as 0
    assert final_returns([{"return": None}, {"return": 1.0}]) == [1.0]  # one seed: no per-seed list


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
    with pytest.raises(ValueError, match="task must be one of .* got 'RepeatFirstEasy'"):
        normalised("RepeatFirstEasy", 0.0)


def test_a_suite_resumes_and_reruns_only_what_changed(tmp_path, capsys):
    args = ["--out", str(tmp_path), "--tasks", "MultiarmedBandit", "--rows", "memoryless", "--seeds", "2",
            "--steps", "4"]
    main(args)
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 1 and len(runs[0]["finals"]) == 2 and runs[0]["options"]["extra_inputs"] is True
    assert "MultiarmedBanditEasy" in (tmp_path / "suite.md").read_text()
    # the curve: one point a record (every step at 4 steps), each seed's return; the finals are its last two's means
    curve = runs[0]["curve"]
    assert [p["step"] for p in curve] == [1, 2, 3, 4] and all(len(p["returns"]) == 2 for p in curve)
    assert runs[0]["finals"] == final_returns([{"return": 0.0, "return_per_seed": p["returns"]} for p in curve])
    err = capsys.readouterr().err
    assert [line.split(",")[0].strip() for line in err.splitlines() if "step" in line] == [
        f"MultiarmedBanditEasy memoryless: step {n} of 4" for n in (1, 2, 3, 4)]
    main(args)  # resumed: nothing left to run
    assert capsys.readouterr().out == ""
    main([*args[:-1], "5"])  # another budget: run anew, the old line replaced
    assert "MultiarmedBanditEasy memoryless" in capsys.readouterr().out
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 1 and runs[0]["options"]["steps"] == 5


def test_the_q_row_is_intentional_q_on_the_suites_torso_and_runs(tmp_path):
    """The row ``q``: the suite agent's torso, inputs and budget under the memory-chain-L-q presets' algorithm
    (intentional Q(lambda): eta 0.5, gamma 0.99, lambda 0.8), epsilon decaying over the first tenth of the run, and
    no option only the actor-critic reads (the config would refuse it)."""
    from rtrl.rl.config import RLConfig

    opts = suite.options("RepeatPrevious", "q", 1000, 3, 2)
    rtrl = suite.options("RepeatPrevious", "rtrl", 1000, 3, 2)
    assert (opts["algorithm"], opts["optimizer"], opts["lr"], opts["gamma"], opts["lam"]) == (
        "q", "intentional", 0.5, 0.99, 0.8)
    assert opts["explore_steps"] == 100 and "entropy" not in opts
    same = ("cell", "hidden", "head_hidden", "envs", "extra_inputs", "env", "steps", "record_every", "seed", "seeds",
            "method")
    assert {k: opts[k] for k in same} == {k: rtrl[k] for k in same}
    assert RLConfig(**opts).algorithm == "q"
    main(["--out", str(tmp_path), "--tasks", "RepeatPrevious", "--rows", "q", "--seeds", "2", "--steps", "4"])
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert [(r["row"], len(r["finals"]), r["options"]["algorithm"]) for r in runs] == [("q", 2, "q")]
    assert "q IQM" in (tmp_path / "suite.md").read_text()


class TwoSteps(Env):
    """Episodes of two steps: the first rewards the action (0, 1 or 2), the second 10."""

    obs_size = 1
    num_actions = 3
    max_steps = 2

    def reset(self, key):
        return jnp.zeros((1,)), jnp.zeros((), jnp.int32)

    def transition(self, key, t, action):
        reward = jnp.where(t == 0, action, 10).astype(jnp.float32)
        return jnp.zeros((1,)), t + 1, reward, t == 1, jnp.array(False)


def test_the_uniform_policys_return_is_the_mean_over_the_episodes_it_ended():
    """Hand-checked: on TwoSteps the uniform policy's episodes return 10 + a, a uniform in {0, 1, 2}: 11 on
    average; RepeatPrevious's scored steps pay +c or -c for one suit in four: -0.5 (0.25 normalised). [guards
    (each mutation checked): every step's ``last_return`` summed, not only where an episode ended; one action
    for every environment (10 or 12, not 11)]"""
    values = uniform_returns(EpisodeStats(TwoSteps()), [0, 1, 2], steps=301, envs=64)  # 150 episodes and a half
    assert len(values) == 3 and all(abs(v - 11.0) < 0.15 for v in values), values  # 9,600 episodes: se 0.01
    assert len(set(values)) == 3  # each seed its own draws
    assert all(abs(v + 0.5) < 0.02 for v in uniform_returns("popgym:RepeatPreviousEasy", [0, 1])), "RepeatPrevious"
    with pytest.raises(ValueError, match="steps must let every seed end an episode of TwoSteps"):
        uniform_returns(EpisodeStats(TwoSteps()), [0], steps=1, envs=2)  # no episode ended: no mean to give


def test_the_uniform_row_is_written_and_resumed_like_the_agents_rows(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(suite, "UNIFORM_STEPS", 60)  # HigherLower: 51 steps an episode
    args = ["--out", str(tmp_path), "--tasks", "HigherLower", "--rows", "uniform", "--seeds", "3"]
    main(args)
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert [(r["row"], r["options"]["policy"], r["options"]["steps"], len(r["finals"])) for r in runs] == [
        ("uniform", "uniform", 60, 3)]
    assert "uniform IQM" in (tmp_path / "suite.md").read_text()
    capsys.readouterr()
    main(args)  # resumed: nothing left to run
    assert capsys.readouterr().out == ""


def test_the_tables_columns_follow_the_rows_order_whatever_ran_first():
    runs = [{"task": "RepeatFirst", "row": r, "finals": [0.0, 1.0]} for r in ("uniform", "memoryless", "rtrl")]
    runs.append({"task": "CountRecall", "row": "tbptt", "finals": [0.5]})
    head = suite.table(runs, at="abc1234").splitlines()[0]
    assert head.startswith("| task | rtrl IQM [95% CI] | tbptt IQM [95% CI] | memoryless IQM [95% CI] | uniform IQM")


def test_a_ctrl_c_while_a_finished_row_is_written_stops_once_it_is_in(tmp_path, monkeypatch, capsys):
    """A Ctrl-C arriving while a finished row is written (as the watcher thread delivers it, ``on_interrupt``):
    the row is in runs.jsonl, the next row is not started, exit status 130 with one line saying where the rows
    are [the write outside ``interrupts.deferred``: the process ends with the row unwritten; the ``poll`` left
    out: the Ctrl-C is swallowed and the next row runs]."""
    from rtrl import interrupts, ledger

    monkeypatch.setattr(interrupts, "quit_now", lambda message: pytest.fail(f"ended at once: {message}"))
    ran = []
    monkeypatch.setattr(suite, "run_row", lambda task, row, *_: ran.append(row) or {
        "task": task, "row": row, "options": suite.options(task, row, 4, 0, 1), "finals": [0.5], "wall_s": 1.0})
    write = ledger.write

    def interrupted_write(path, rows):
        write(path, rows)
        interrupts.on_interrupt()

    monkeypatch.setattr(ledger, "write", interrupted_write)
    status = main(["--out", str(tmp_path), "--tasks", "RepeatPrevious", "--rows", "uniform", "memoryless",
                   "--seeds", "1", "--steps", "4"])
    assert status == 130 and ran == ["uniform"]
    assert [json.loads(line)["row"] for line in (tmp_path / "runs.jsonl").read_text().splitlines()] == ["uniform"]
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (f"rtrl: interrupted; {tmp_path / 'runs.jsonl'} holds every row finished "
                                            "(the same command resumes)")


@pytest.mark.slow
def test_a_ctrl_c_mid_row_ends_the_suite_at_once_and_it_resumes(tmp_path):
    """``python -m rtrl.rl.suite`` sent SIGINT while its second row runs (the first row's line printed): it ends
    within seconds, exit status 130, the one line "rtrl: interrupted", no traceback; runs.jsonl holds the first row,
    every line whole JSON; the lock went with the process, so the same suite runs again at once and finds the row
    done [``interrupts.install`` left out: Python's KeyboardInterrupt, a traceback and status 1, and this fails]."""
    import os
    import signal
    import subprocess
    import sys
    import time

    src = os.path.join(os.path.dirname(__file__), "..", "src")
    env = {**os.environ, "PYTHONPATH": src, "JAX_PLATFORMS": "cpu"}
    args = [sys.executable, "-m", "rtrl.rl.suite", "--out", str(tmp_path), "--tasks", "RepeatPrevious", "--seeds",
            "1", "--steps", "20000", "--rows", "uniform"]
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
    assert suite_run.returncode == 130 and err.strip() == "rtrl: interrupted" and out == "", (out, err)
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
    runs = [{"task": "RepeatFirst", "row": "rtrl", "finals": [0.5, 0.5]},
            {"task": "RepeatFirst", "row": "small-lr", "finals": [0.8, 0.8]},
            {"task": "RepeatFirst", "row": "memoryless", "finals": [0.0]},
            {"task": "RepeatFirst", "row": "uniform", "finals": [1.0]},
            {"task": "CountRecall", "row": "small-lr", "finals": [0.2]},
            {"task": "CountRecall", "row": "rtrl", "finals": [0.2]},
            {"task": "HigherLower", "row": "uniform", "finals": [0.1]}]
    lines = suite.table(runs, at="abc1234").splitlines()
    head = [c.strip() for c in lines[0].split("|")]
    best = head.index("best")
    named = {cells[1]: cells[best] for cells in ([c.strip() for c in line.split("|")] for line in lines[2:5])}
    assert named == {"RepeatFirstEasy": "small-lr", "CountRecallEasy": "rtrl", "HigherLowerEasy": "-"}
    assert len(lines[1].split("|")) == len(lines[0].split("|"))  # the rule has one cell per column


@pytest.mark.parametrize("small_row, row", [("small-lr", "rtrl"), ("memoryless-small-lr", "memoryless")])
def test_the_small_lr_rows_differ_from_their_agents_in_adams_step_alone(small_row, row):
    """``small-lr`` and ``memoryless-small-lr`` differ from ``rtrl`` and ``memoryless`` in Adam's step alone (3e-4
    against the suite's 1e-3), so a pair of them measures the step and the other pair memory."""
    small = suite.options("Concentration", small_row, 1000, 0, 5)
    agent = suite.options("Concentration", row, 1000, 0, 5)
    assert (small["lr"], agent["lr"]) == (3e-4, 1e-3)
    assert {k: v for k, v in small.items() if k != "lr"} == {k: v for k, v in agent.items() if k != "lr"}
