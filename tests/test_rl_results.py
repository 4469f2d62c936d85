"""The RL results runner's bookkeeping: table order whatever order runs finish in, resuming from runs.jsonl, and
the figures it prints (final return, first wall time at the target, spread)."""

import json

import pytest

from rtrl.rl import results
from rtrl.rl.presets import PRESETS, ROWS


def record(step, ret, wall):
    return {"step": step, "return": ret, "wall_s": wall, "cos_value": 1.0, "cos_policy": 0.5}


def test_first_reaching_is_the_first_record_at_or_above_the_target():
    records = [record(1, None, 1.0), record(2, 0.5, 2.0), record(3, 0.9, 3.0), record(4, 1.0, 4.0)]
    assert results.first_reaching(records, 0.9) == 3.0
    assert results.first_reaching(records, 1.5) is None


def test_spread_is_mean_and_sample_deviation_ignoring_missing():
    assert results.spread([1.0, 3.0, None, float("nan")]) == "2 ± 1.4"
    assert results.spread([2.0]) == "2 ± 0"
    assert results.spread([None]) == "-"


def test_runs_are_put_in_preset_then_seed_order():
    names = [p for p in PRESETS if ROWS[p][0] == "popgym-repeat-first"]
    finished = [{"preset": names[2], "seed": 1}, {"preset": names[0], "seed": 2}, {"preset": names[0], "seed": 0}]
    assert [(r["preset"], r["seed"]) for r in results.in_table_order(finished)] == [
        (names[0], 0), (names[0], 2), (names[2], 1)]


def test_a_table_whose_runs_are_all_recorded_resumes_without_running_any(tmp_path):
    names = [p for p in PRESETS if ROWS[p][0] == "memory-chain-128"]
    runs = [{"preset": p, "seed": s, "records": [record(10, 0.1 * s, 5.0), record(20, 0.2 * s, 9.0)]}
            for p in reversed(names) for s in range(2)]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    results.main(["--out", str(tmp_path), "--tables", "memory-chain-128", "--seeds", "2"])
    kept = results.read_runs(str(tmp_path / "runs.jsonl"))
    assert len(kept) == len(runs)
    text = (tmp_path / "results.md").read_text()
    assert [line.split("|")[1].strip(" `") for line in text.splitlines() if line.startswith("| `")] == names
    # seeds 0 and 1: finals (mean of the last two returns) 0 and 0.15
    # final, solved (final > 0.5: neither), then peak (seed 0: 0.0, seed 1: 0.2)
    assert "| 0.075 ± 0.11 | 0/2 | 0.1 ± 0.14 |" in text


@pytest.mark.parametrize("flag", ["--jobs", "--seeds"])
def test_a_count_below_one_is_refused_by_name(tmp_path, flag, capsys):
    with pytest.raises(SystemExit):
        results.main(["--out", str(tmp_path), flag, "0"])
    assert flag in capsys.readouterr().err


def test_a_table_without_the_fidelity_check_shows_no_cosines():
    runs = [{"preset": "memory-chain-40-long", "seed": 0,
             "records": [{"step": 1, "return": 0.5, "wall_s": 2.0}, {"step": 2, "return": 0.9, "wall_s": 3.0}]}]
    lines = results.table(runs).splitlines()
    row = next(line for line in lines if line.startswith("| `memory-chain-40-long`"))
    assert row.split("|")[3:10] == [" 0.7 ± 0 ", " 1/1 ", " 0.9 ± 0 ", " 3 ± 0 (1/1) ", " - ", " - ", " 3 ± 0 "]
    # the table's other rows, not run, are shown as such
    assert [line.split("|")[1:4] for line in lines if "not run" in line] == [
        [" `memory-chain-40-long-raw-obs` ", " raw-obs ", " not run "],
        [" `memory-chain-40-long-small-lr` ", " small-lr ", " not run "]]


def test_a_vmapped_run_splits_into_each_seeds_records():
    records = [{"step": 10, "return": 0.5, "episodes": 3, "wall_s": 4.0, "entropy": 0.6,
                "return_per_seed": [0.25, None, 0.75], "episodes_per_seed": [1, 0, 2]},
               {"step": 20, "return": 0.0, "episodes": 2, "wall_s": 9.0, "entropy": 0.4,
                "return_per_seed": [-1.0, 1.0, 0.0], "episodes_per_seed": [1, 1, 0]}]
    split = results.split_seeds(records)
    assert split == [
        [{"step": 10, "return": 0.25, "episodes": 1, "wall_s": 4.0, "entropy": 0.6},
         {"step": 20, "return": -1.0, "episodes": 1, "wall_s": 9.0, "entropy": 0.4}],
        [{"step": 10, "return": None, "episodes": 0, "wall_s": 4.0, "entropy": 0.6},
         {"step": 20, "return": 1.0, "episodes": 1, "wall_s": 9.0, "entropy": 0.4}],
        [{"step": 10, "return": 0.75, "episodes": 2, "wall_s": 4.0, "entropy": 0.6},
         {"step": 20, "return": 0.0, "episodes": 0, "wall_s": 9.0, "entropy": 0.4}]]


def test_missing_seeds_of_a_jitted_row_run_as_consecutive_groups_and_a_host_row_seed_by_seed(monkeypatch):
    jitted = "memory-chain-128"
    assert results.jobs_of(jitted, [0, 1, 2, 4, 6, 7]) == [(jitted, (0, 1, 2)), (jitted, (4,)), (jitted, (6, 7))]
    assert results.jobs_of(jitted, []) == []
    monkeypatch.setitem(results.PRESETS, "host-row", PRESETS[jitted]._replace(
        options={**PRESETS[jitted].options, "env": "gymnasium:CartPole-v1"}))
    assert results.jobs_of("host-row", [0, 1]) == [("host-row", (0,)), ("host-row", (1,))]


def test_rows_choose_the_methods_run_and_an_unknown_row_is_refused_by_name(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(results, "run_records", lambda preset, seeds: ran.append((preset, seeds)) or [
        [record(10, 0.5, 1.0), record(20, 0.5, 2.0)] for _ in seeds])

    class Inline:  # the pool, in this process (the stand-in above is not picklable)
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, *args):
            future = results.concurrent.futures.Future()
            future.set_result(fn(*args))
            return future

    monkeypatch.setattr(results.concurrent.futures, "ProcessPoolExecutor", Inline)
    results.main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "memoryless", "--seeds", "2"])
    assert ran == [("memory-chain-16-memoryless", (0, 1))]
    with pytest.raises(SystemExit):
        results.main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "snap1"])
    assert "--rows" in capsys.readouterr().err
