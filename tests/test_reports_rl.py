"""``rtrl results rl``'s kind (``rtrl.reports.rl``) through the results runner: table order whatever order runs
finish in, resuming from runs.jsonl, the jobs it makes, and the figures it prints (final return, first wall time
at the target, spread)."""

import argparse
import contextlib
import json

import pytest

from inline_pool import ctrl_c_while_written, run_inline
from rtrl.reports import results, rl
from rtrl.rl.presets import PRESETS, ROWS, TABLES


def main(argv):
    return results.main("rl", argv)


def record(step, ret, wall):
    return {"step": step, "return": ret, "wall_s": wall, "cos_value": 1.0, "cos_policy": 0.5}


def line_of(table, row, seed, records):
    """A ledger line of ``table``'s row ``row`` run from ``seed``, with the preset's options."""
    return {"kind": "rl", "table": table, "row": row, "seed": seed, "options": rl.options(table, row),
            "records": records}


def read_runs(path) -> list[dict]:
    return results.read_lines(str(path), rl.KIND)


def test_the_tables_rows_follow_the_presets_order_whatever_order_they_finished_in():
    methods = TABLES["popgym-repeat-first"].methods
    finished = [line_of("popgym-repeat-first", m, s, [record(1, 0.5, 1.0)]) for m in reversed(methods) for s in (1, 0)]
    text = rl.table(finished, argparse.Namespace(out="DIR"), "abc1234")
    names = [p for p in PRESETS if ROWS[p][0] == "popgym-repeat-first"]
    assert [line.split("|")[1].strip(" `") for line in text.splitlines() if line.startswith("| `")] == names


def test_a_table_whose_runs_are_all_recorded_resumes_without_running_any(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "play", lambda job: pytest.fail(f"ran {job}"))
    run_inline(monkeypatch)
    names = [p for p in PRESETS if ROWS[p][0] == "memory-chain-128"]
    runs = [line_of("memory-chain-128", ROWS[p][1], s, [record(10, 0.1 * s, 5.0), record(20, 0.2 * s, 9.0)])
            for p in reversed(names) for s in range(2)]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    main(["--out", str(tmp_path), "--tables", "memory-chain-128", "--seeds", "2"])
    kept = read_runs(tmp_path)
    assert kept == runs
    text = (tmp_path / "results.md").read_text()
    assert [line.split("|")[1].strip(" `") for line in text.splitlines() if line.startswith("| `")] == names
    # seeds 0 and 1: finals (mean of the last two returns) 0 and 0.15
    # final, solved (final > 0.5: neither), then peak (seed 0: 0.0, seed 1: 0.2)
    assert "| 0.075 ± 0.11 | 0/2 | 0.1 ± 0.14 |" in text
    assert f"`rtrl results rl --out {tmp_path} --tables memory-chain-128 --seeds 2` at" in text  # every row: no --rows
    # the table opens with its protocol card, generated from the rows' options: two seeds, MemoryChain's own env
    page = text.splitlines()
    assert page[0].startswith("### `memory-chain-128`") and page[2].startswith("**Protocol** (generated from")
    config = rl.options("memory-chain-128", "rtrl")
    assert "- seeds: 2" in page and f"- discount: {config['gamma']:g}" in page
    assert f"- frames: {config['steps'] * config['envs']:,} per seed ({config['steps']:,} steps x {config['envs']} " \
           "environments)" in page


def test_a_row_whose_preset_changed_runs_anew(tmp_path, monkeypatch):
    """A line whose options are not the preset's any more (its steps changed) is run again, and replaced."""
    ran = []
    monkeypatch.setattr(results, "play", lambda job: ran.append((job.row, job.seeds)) or [
        [record(10, 0.5, 1.0), record(20, 0.5, 2.0)] for _ in job.seeds])
    run_inline(monkeypatch)
    old = {**line_of("memory-chain-16", "memoryless", 0, [record(1, 0.0, 1.0)])}
    old["options"] = {**old["options"], "steps": old["options"]["steps"] + 1}
    fresh = line_of("memory-chain-16", "memoryless", 1, [record(1, 0.0, 1.0)])
    (tmp_path / "runs.jsonl").write_text(json.dumps(old) + "\n" + json.dumps(fresh) + "\n")
    main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "memoryless", "--seeds", "2"])
    assert ran == [("memoryless", (0,))]
    assert [(r["seed"], r["options"] == rl.options("memory-chain-16", "memoryless")) for r in read_runs(tmp_path)] == [
        (1, True), (0, True)]


@pytest.mark.parametrize("flag", ["--jobs", "--seeds"])
def test_a_count_below_one_is_refused_by_name(tmp_path, flag, capsys):
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path), flag, "0"])
    assert flag in capsys.readouterr().err


def test_a_table_without_the_fidelity_check_shows_no_cosines():
    runs = [line_of("memory-chain-40-long", "rtrl", 0,
                    [{"step": 1, "return": 0.5, "wall_s": 2.0}, {"step": 2, "return": 0.9, "wall_s": 3.0}])]
    lines = rl.table(runs, argparse.Namespace(out="DIR")).splitlines()
    row = next(line for line in lines if line.startswith("| `memory-chain-40-long`"))
    assert row.split("|")[3:10] == [" 0.7 ± 0 ", " 1/1 ", " 0.9 ± 0 ", " 3 ± 0 (1/1) ", " - ", " - ", " 3 ± 0 "]
    # the table's other rows, not run, are shown as such
    assert [line.split("|")[1:4] for line in lines if "not run" in line] == [
        [" `memory-chain-40-long-raw-obs` ", " raw-obs ", " not run "],
        [" `memory-chain-40-long-small-lr` ", " small-lr ", " not run "]]


def test_missing_seeds_of_a_jitted_row_run_as_consecutive_groups_and_a_host_row_seed_by_seed(monkeypatch):
    jitted = "memory-chain-128"
    wanted = rl.options(jitted, "rtrl")
    done = {(jitted, "rtrl", s): wanted for s in (3, 5)}
    args = argparse.Namespace(tables=[jitted], rows=["rtrl"], seeds=8)
    assert [(j.table, j.row, j.seeds) for j in rl.jobs(args, done)] == [
        (jitted, "rtrl", (0, 1, 2)), (jitted, "rtrl", (4,)), (jitted, "rtrl", (6, 7))]
    assert all(j.options == wanted for j in rl.jobs(args, done))
    assert rl.jobs(argparse.Namespace(tables=[jitted], rows=["rtrl"], seeds=2),
                   {(jitted, "rtrl", s): wanted for s in (0, 1)}) == []
    monkeypatch.setitem(rl.PRESETS, jitted, PRESETS[jitted]._replace(
        options={**PRESETS[jitted].options, "env": "gymnasium:CartPole-v1", "env_args": {}}))
    assert [j.seeds for j in rl.jobs(argparse.Namespace(tables=[jitted], rows=["rtrl"], seeds=2), {})] == [(0,), (1,)]


def test_rows_choose_the_methods_run_and_an_unknown_row_is_refused_by_name(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(results, "play", lambda job: ran.append((job.table, job.row, job.seeds)) or [
        [record(10, 0.5, 1.0), record(20, 0.5, 2.0)] for _ in job.seeds])
    run_inline(monkeypatch)  # the stand-in: not picklable
    main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "memoryless", "--seeds", "2"])
    assert ran == [("memory-chain-16", "memoryless", (0, 1))]
    # the table's provenance line reruns the rows it shows, and only those [without --rows it would run them all]
    assert "`rtrl results rl --out " + str(tmp_path) + " --tables memory-chain-16 --rows memoryless --seeds 2` at" in (
        tmp_path / "results.md").read_text()
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "snap1"])
    assert "--rows" in capsys.readouterr().err


def finished(job):
    """A stand-in for ``results.play``: two records of return 0.5 for each seed."""
    return [[record(10, 0.5, 1.0), record(20, 0.5, 2.0)] for _ in job.seeds]


def test_a_finished_row_is_in_runs_jsonl_before_its_line_is_printed(tmp_path, monkeypatch):
    """When a row's line appears, the row is in runs.jsonl already, so a Ctrl-C on seeing it cannot lose it [the line
    printed before the write, as it was: the row is missing when its line is printed]."""
    monkeypatch.setattr(results, "play", finished)
    run_inline(monkeypatch)
    seen = []

    class Probe:  # stdout: which rows runs.jsonl holds as each line begins to be printed
        line, rows = "", []

        def write(self, text):
            if not self.line:
                path = tmp_path / "runs.jsonl"
                self.rows = read_runs(tmp_path) if path.exists() else []
            self.line += text
            if self.line.endswith("\n"):
                seen.append((self.line, self.rows))
                self.line = ""

        def flush(self):
            pass

    monkeypatch.setattr("sys.stdout", Probe())
    status = main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "memoryless",
                   "--seeds", "2"])
    (line, rows), = [(line, rows) for line, rows in seen if "final" in line]
    assert json.loads(line.split(" final")[0]) == {"table": "memory-chain-16", "row": "memoryless", "seeds": [0, 1]}
    assert [(r["table"], r["row"], r["seed"]) for r in rows] == [("memory-chain-16", "memoryless", 0),
                                                                 ("memory-chain-16", "memoryless", 1)]
    assert status == 0


def test_a_ctrl_c_while_a_finished_row_is_written_stops_once_it_is_in(tmp_path, monkeypatch, capsys):
    """A Ctrl-C arriving while a finished row is written (as the watcher thread delivers it, ``on_interrupt``): the
    row is in runs.jsonl and its line printed, no other row is kept, exit status 130 with one line saying where the
    rows are [the write outside ``interrupts.deferred``: the process ends with the row unwritten; the ``poll`` left
    out: the Ctrl-C is swallowed and the next row is written]."""
    monkeypatch.setattr(results, "play", finished)
    run_inline(monkeypatch)
    ctrl_c_while_written(monkeypatch)
    status = main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "memoryless", "rtrl",
                   "--seeds", "1"])
    assert status == 130
    rows = [json.loads(line)["row"] for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    out, err = capsys.readouterr()
    assert len(rows) == 1 and [json.loads(line.split(" final")[0])["row"] for line in out.splitlines()] == rows
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

    def interrupted(job):
        interrupts.on_interrupt()
        return finished(job)

    monkeypatch.setattr(results, "play", interrupted)
    run_inline(monkeypatch)
    status = main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "memoryless",
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
                assert line.startswith('{"table": "memory-chain-16", "row": "rtrl", "seeds": [0]} final'), line
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
    assert text.endswith("\n") and [json.loads(line)["row"] for line in text.splitlines()] == ["rtrl"]
    status, out, err = interrupted(kill=True)
    assert status == -signal.SIGKILL and "Traceback" not in err and out == "", (status, out, err)  # resumed
    assert (out_dir / "runs.jsonl").read_text() == text


def test_a_row_that_diverges_is_said_left_out_and_the_others_go_on(tmp_path, monkeypatch, capsys):
    """A job whose run stops (``Diverged``, as a worker sends it back) is one line naming the row, its seeds and
    why, and is not in the ledger; the next row runs and is kept; exit 1. [the ``except Stopped`` removed: the
    command ends in a traceback and the second row never runs]"""
    from rtrl.driver import Diverged

    def play(job):
        if job.row == "rtrl":
            raise Diverged(120, float("nan"), "a parameter")
        return [[record(10, 0.5, 1.0), record(20, 0.5, 2.0)] for _ in job.seeds]

    monkeypatch.setattr(results, "play", play)
    run_inline(monkeypatch)
    assert main(["--out", str(tmp_path), "--tables", "memory-chain-16", "--rows", "rtrl", "memoryless",
                 "--seeds", "2"]) == 1
    err = capsys.readouterr().err
    assert "memory-chain-16 rtrl (seeds 0, 1) stopped: a parameter became nan at step 120; not kept" in err
    kept = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert [(line["row"], line["seed"]) for line in kept] == [("memoryless", 0), ("memoryless", 1)]


@pytest.mark.parametrize("error", ["stopped", "diverged", "option"])
def test_the_runs_exceptions_cross_a_process_pool_whole(error):
    """What a worker raises reaches the runner through pickle: each of rtrl's exceptions with arguments comes back
    as itself, message and fields. [``__reduce__`` removed: unpickling calls the class with the message alone, a
    TypeError, and the pool breaks]"""
    import pickle

    from rtrl.config import OptionError
    from rtrl.driver import Diverged, Stopped

    made = {"stopped": Stopped("the environment failed", 7), "diverged": Diverged(9, float("inf"), "the loss"),
            "option": OptionError("lr must be positive", "lr")}[error]
    back = pickle.loads(pickle.dumps(made))
    assert type(back) is type(made) and str(back) == str(made)
    assert vars(back) == vars(made)
