"""The RL results runner's bookkeeping: table order whatever order runs finish in, resuming from runs.jsonl, and
the figures it prints (final return, first wall time at the target, spread)."""

import contextlib
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
    assert f"`rtrl results rl --out {tmp_path} --tables memory-chain-128 --seeds 2` at" in text  # every row: no --rows


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


class Inline:
    """The pool, in this process: each job runs when it is submitted."""

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

    def shutdown(self, wait=True, cancel_futures=False):
        pass


def test_rows_choose_the_methods_run_and_an_unknown_row_is_refused_by_name(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(results, "run_records", lambda preset, seeds: ran.append((preset, seeds)) or [
        [record(10, 0.5, 1.0), record(20, 0.5, 2.0)] for _ in seeds])

    monkeypatch.setattr(results.concurrent.futures, "ProcessPoolExecutor", Inline)  # the stand-in: not picklable
    results.main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "memoryless", "--seeds", "2"])
    assert ran == [("memory-chain-16-memoryless", (0, 1))]
    # the table's provenance line reruns the rows it shows, and only those [without --rows it would run them all]
    assert "`rtrl results rl --out " + str(tmp_path) + " --tables memory-chain-16 --rows memoryless --seeds 2` at" in (
        tmp_path / "results.md").read_text()
    with pytest.raises(SystemExit):
        results.main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "snap1"])
    assert "--rows" in capsys.readouterr().err


def finished(preset, seeds):
    """A stand-in for ``run_records``: two records of return 0.5 for each seed."""
    return [[record(10, 0.5, 1.0), record(20, 0.5, 2.0)] for _ in seeds]


def test_a_finished_row_is_in_runs_jsonl_before_its_line_is_printed(tmp_path, monkeypatch):
    """When a row's line appears, the row is in runs.jsonl already, so a Ctrl-C on seeing it cannot lose it [the line
    printed before the write, as it was: the row is missing when its line is printed]."""
    monkeypatch.setattr(results, "run_records", finished)
    monkeypatch.setattr(results.concurrent.futures, "ProcessPoolExecutor", Inline)
    seen = []

    class Probe:  # stdout: which rows runs.jsonl holds as each line begins to be printed
        line, rows = "", []

        def write(self, text):
            if not self.line:
                path = tmp_path / "runs.jsonl"
                self.rows = results.read_runs(str(path)) if path.exists() else []
            self.line += text
            if self.line.endswith("\n"):
                seen.append((self.line, self.rows))
                self.line = ""

        def flush(self):
            pass

    monkeypatch.setattr("sys.stdout", Probe())
    status = results.main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "memoryless",
                           "--seeds", "2"])
    (line, rows), = [(line, rows) for line, rows in seen if "final" in line]
    assert json.loads(line.split(" final")[0]) == {"preset": "memory-chain-16-memoryless", "seeds": [0, 1]}
    assert [(r["preset"], r["seed"]) for r in rows] == [("memory-chain-16-memoryless", 0),
                                                          ("memory-chain-16-memoryless", 1)]
    assert status == 0


def test_a_ctrl_c_while_a_finished_row_is_written_stops_once_it_is_in(tmp_path, monkeypatch, capsys):
    """A Ctrl-C arriving while a finished row is written (as the watcher thread delivers it, ``on_interrupt``): the
    row is in runs.jsonl and its line printed, no other row is kept, exit status 130 with one line saying where the
    rows are [the write outside ``interrupts.deferred``: the process ends with the row unwritten; the ``poll`` left
    out: the Ctrl-C is swallowed and the next row is written]."""
    from rtrl import interrupts, ledger

    monkeypatch.setattr(interrupts, "quit_now", lambda message: pytest.fail(f"ended at once: {message}"))
    monkeypatch.setattr(results, "run_records", finished)
    monkeypatch.setattr(results.concurrent.futures, "ProcessPoolExecutor", Inline)
    write = ledger.write

    def interrupted_write(path, rows):
        write(path, rows)
        interrupts.on_interrupt()

    monkeypatch.setattr(ledger, "write", interrupted_write)
    status = results.main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "memoryless", "rtrl",
                           "--seeds", "1"])
    assert status == 130
    rows = [json.loads(line)["preset"] for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    out, err = capsys.readouterr()
    assert len(rows) == 1 and [json.loads(line.split(" final")[0])["preset"] for line in out.splitlines()] == rows
    assert err.strip().splitlines()[-1] == (f"rtrl: interrupted; {tmp_path / 'runs.jsonl'} holds every row finished "
                                            "(the same command resumes)")


def test_a_ctrl_c_while_rows_run_ends_the_command_with_one_line_and_keeps_no_row_after_it(tmp_path, monkeypatch,
                                                                                        capfd):
    """A Ctrl-C while a row runs in its worker (as the watcher thread delivers it, ``on_interrupt``): acted on in the
    command's own thread, which stops its workers and ends through its clean-up, exit status 130 and the one line
    "rtrl: interrupted" (said once, by the command; nothing at the Ctrl-C itself), no row finished after it kept
    [the wait on the rows not deferred: ``quit_now``, ended at once, fails; deferred but not quiet: a second line]."""
    from rtrl import interrupts

    monkeypatch.setattr(interrupts, "quit_now", lambda message: pytest.fail(f"ended at once: {message}"))

    def interrupted(preset, seeds):
        interrupts.on_interrupt()
        return finished(preset, seeds)

    monkeypatch.setattr(results, "run_records", interrupted)
    monkeypatch.setattr(results.concurrent.futures, "ProcessPoolExecutor", Inline)
    status = results.main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "memoryless",
                           "--seeds", "1"])
    out, err = capfd.readouterr()
    assert (status, out, err.strip()) == (130, "", "rtrl: interrupted")
    assert not (tmp_path / "runs.jsonl").exists()


# The rtrl command, run from a file named ``rtrl`` (as the console script is, so ``import rtrl`` takes over Ctrl-C in
# the command and in the workers it spawns, which run this file's top level too) with a tiny table: memory-chain-16's
# rtrl row cut to 64 steps without the fidelity check (its compilation, seconds), its memoryless row made 1,000,000
# steps (minutes: the row a Ctrl-C lands in).
TINY_RTRL = '''
import sys
from rtrl.rl import presets
for name, options in (("memory-chain-16", {"steps": 64, "record_every": 32, "fidelity_every": 0}),
                      ("memory-chain-16-memoryless", {"steps": 1_000_000, "record_every": 500_000})):
    presets.PRESETS[name] = presets.PRESETS[name]._replace(options={**presets.PRESETS[name].options, **options})
if __name__ == "__main__":
    from rtrl.cli import main
    raise SystemExit(main(["results", "rl", *sys.argv[1:]]))
'''


def workers_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux's /proc)."""
    import os

    children = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if entry.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            children.append(int(entry))
    return children


def running_jax(pid: int) -> bool:
    """Whether the process ``pid`` has loaded jaxlib (so it has imported rtrl: ``import rtrl`` imports jax)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "jaxlib" in f.read()
    except OSError:
        return False


def pool_workers(pid: int) -> list[int]:
    """The processes ``multiprocessing`` spawned for ``pid``'s pool (its resource tracker left out)."""
    workers = []
    for child in workers_of(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"--multiprocessing-fork" in f.read().split(b"\0"):
                    workers.append(child)
        except OSError:
            continue
    return workers


def ready(workers: list[int]) -> bool:
    """Some workers, each of them running JAX."""
    return bool(workers) and all(map(running_jax, workers))


def gone(pid: int) -> bool:
    """No such process, or one that has ended (a zombie not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.slow
def test_a_ctrl_c_mid_row_ends_the_command_and_its_workers_at_once_and_it_resumes(tmp_path):
    """``rtrl results rl`` sent SIGINT on its process group (a terminal's Ctrl-C: the command and its worker) while
    its second row runs, the first row's line printed: it ends within seconds, its worker with it, exit status 130,
    the one line "rtrl: interrupted", no traceback and no warning (from the worker or multiprocessing's resource
    tracker either); runs.jsonl holds the first row, every line whole JSON. The same command again resumes (the
    first row not rerun: nothing printed) and, killed outright (``kill -9`` of the command alone) while the second
    row runs in its worker, leaves no worker running on [the workers given the command's Ctrl-C handling (the
    ``spawned()`` test of ``interrupts.install`` false): each prints a line of its own, fails; the rows' wait not
    deferred: the command ends at once and the resource tracker warns of leaked semaphores, fails; the workers'
    ``end_with`` left out: the worker runs on after ``kill -9`` and the test times out]."""
    import os
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "bin").mkdir()
    command = tmp_path / "bin" / "rtrl"
    command.write_text(TINY_RTRL)
    env = {**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(__file__), "..", "src"), "JAX_PLATFORMS": "cpu"}
    out_dir = tmp_path / "out"
    args = [sys.executable, str(command), "--out", str(out_dir), "--tables", "memory-chain-16", "--rows",
            "memoryless", "rtrl", "--seeds", "1"]

    def interrupted(kill: bool):
        run = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)  # its own process group, so the test's is not signalled
        try:
            line = ""
            if not kill:
                line = run.stdout.readline()
                assert line.startswith('{"preset": "memory-chain-16", "seeds": [0]} final'), line
            # the pool's workers ready, not a clock: each has imported rtrl (its Ctrl-C ignored: running_jax)
            deadline = time.monotonic() + 60
            while not ready(pool_workers(run.pid)) and time.monotonic() < deadline:
                time.sleep(0.2)
            workers = workers_of(run.pid)
            assert ready(pool_workers(run.pid)), "no worker ready"
            sent = time.monotonic()
            if kill:
                run.kill()
            else:
                os.killpg(run.pid, signal.SIGINT)
            out, err = run.communicate(timeout=20)  # returns once every process holding the pipes has ended
            assert time.monotonic() - sent < 10
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while not all(gone(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(gone(pid) for pid in workers)
        return run.returncode, line + out, err

    status, out, err = interrupted(kill=False)
    assert status == 130 and err.strip() == "rtrl: interrupted", (status, out, err)
    text = (out_dir / "runs.jsonl").read_text()
    assert text.endswith("\n") and [json.loads(line)["preset"] for line in text.splitlines()] == ["memory-chain-16"]
    status, out, err = interrupted(kill=True)
    assert status == -signal.SIGKILL and "Traceback" not in err and out == "", (status, out, err)  # resumed
    assert (out_dir / "runs.jsonl").read_text() == text
