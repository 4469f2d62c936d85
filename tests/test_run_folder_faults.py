"""Fault injection on run folders, one test per promise (docs/reliability.md):

* each record's metrics line is written before its checkpoint (the exact sequence of write boundaries);
* a kill at every write boundary in turn (before, in the middle of and after each metrics line; before and after
  each atomic rename, the temporary file then left behind), an interrupt inside an interval, or a real
  ``kill -9`` resumes to exactly the uninterrupted run, and leaves no temporary file behind;
* damaging any file of a finished run folder (truncated to nothing, to half, by one byte) is either recovered
  (the resumed run equals the uninterrupted one) or reported with nothing changed; never a silent loss;
* a second writer is refused while the folder is locked;
* divergence of a held-out metric stops the run at that step, keeping only finite, strict-JSON records.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from rtrl import files
from rtrl.cli import main
from rtrl.rl import RLConfig
from rtrl.run import checkpoint
from rtrl.run import folder as runs
from rtrl.run.folder import CHECKPOINT, METRICS, Run, RunError, read_metrics
from rtrl.training.assemble import assemble
from rtrl.training.config import RunConfig
from rtrl.training.trainer import Diverged

TINY = {"task": "copy", "task_args": {"max_length": 2}, "cell": "elman", "hidden": 3, "method": "closed_form",
        "batch": 2, "lr": 0.05, "eval_every": 4, "eval_size": 8, "steps": 16}


class Killed(BaseException):
    """What a crash looks like from inside: nothing after it runs (but the OS releases the lock)."""


@pytest.fixture(scope="module")
def trainer():
    """One trainer for the module: every run here has the same configuration, so they share its compilations."""
    return assemble(RunConfig.from_dict(TINY)).trainer()


@pytest.fixture(scope="module")
def whole(tmp_path_factory, trainer):
    """The uninterrupted run: its records and its final state."""
    path = tmp_path_factory.mktemp("whole") / "run"
    final = Run.create(path, TINY, trainer=trainer).train()
    return without_wall_time(read_metrics(path)), final, path


def without_wall_time(records):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in records]


def same_state(a, b) -> bool:
    def data(x):
        return np.asarray(jax.random.key_data(x) if checkpoint.is_key(x) else x)

    return all(np.array_equal(data(x), data(y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def assert_resumes_to_the_whole_run(path, trainer, whole):
    records, final, _ = whole
    state = Run.open(path, trainer=trainer).train()
    assert without_wall_time(read_metrics(path)) == records
    assert same_state(state, final)
    restored, meta = checkpoint.load(path / CHECKPOINT, final)
    assert meta["step"] == 16 and same_state(restored, final)
    assert not list(path.glob(".*.tmp")), "a temporary file was left behind"
    for line in (path / METRICS).read_text().splitlines():  # strict JSON only
        json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} in metrics.jsonl"))


# -- crash points: every write boundary, one at a time -------------------------------------------------------------
class Crash:
    """Counts the write boundaries a run passes and kills it (``Killed``) at boundary number ``at`` (``None``:
    never). Once killed, nothing more touches the disk, as after a real kill: no clean-up of temporary files
    (``atomic_write``'s ``unlink``), no plot written in a ``finally``."""

    def __init__(self, at=None):
        self.at, self.seen, self.dead = at, [], False

    def boundary(self, name: str) -> None:
        if self.dead:
            raise Killed
        self.seen.append(name)
        if len(self.seen) - 1 == self.at:
            self.dead = True
            raise Killed

    def patch(self, monkeypatch) -> None:
        """Boundaries: before, in the middle of and after each metrics line (``Run.record``'s append); before
        and after each rename of an atomic write (checkpoint, metrics rewritten, config, plot), its temporary
        file then written in full."""
        crash = self

        class Line:
            def __init__(self, file):
                self.file = file

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.file.close()

            def write(self, text):
                crash.boundary("metrics line begins")
                self.file.write(text[: len(text) // 2])
                self.file.flush()
                crash.boundary("metrics line half written")
                self.file.write(text[len(text) // 2:])
                self.file.flush()
                crash.boundary("metrics line written")

            def __getattr__(self, name):
                return getattr(self.file, name)

        class Disk:  # rtrl.files' view of ``os``
            def __getattr__(self, name):
                return getattr(os, name)

            def replace(self, source, target):
                crash.boundary(f"{os.path.basename(target)} about to be renamed")
                os.replace(source, target)
                crash.boundary(f"{os.path.basename(target)} renamed")

            def unlink(self, path):
                if not crash.dead:
                    os.unlink(path)

        monkeypatch.setattr(runs, "open", lambda *args, **kw: Line(open(*args, **kw)), raising=False)
        monkeypatch.setattr(files, "os", Disk())


@pytest.fixture
def quick_plots(monkeypatch):
    """``curve.png`` written (atomically, as the plot is) without drawing it: the crash tests pass through every
    boundary of a run many times, and matplotlib would be most of their cost."""
    monkeypatch.setattr(runs, "plot_curves", lambda curves, out, title="": files.atomic_write_text(out, title))


def write_order(steps):
    """The boundaries an uninterrupted run passes: at each evaluation its metrics line, then its checkpoint;
    the plot at the end."""
    per_record = ["metrics line begins", "metrics line half written", "metrics line written",
                  f"{CHECKPOINT} about to be renamed", f"{CHECKPOINT} renamed"]
    return per_record * len(steps) + ["curve.png about to be renamed", "curve.png renamed"]


@pytest.fixture(scope="module")
def boundaries(tmp_path_factory, trainer):
    path = tmp_path_factory.mktemp("counted") / "run"
    run = Run.create(path, TINY, trainer=trainer)
    crash = Crash()
    with pytest.MonkeyPatch.context() as patch:
        crash.patch(patch)
        run.train()
    return crash.seen


STEPS = [0, 4, 8, 12, 16]  # TINY's evaluations
CRASH_POINTS = [pytest.param(at, id=f"{at}:{name}") for at, name in enumerate(write_order(STEPS))]


def test_each_record_is_written_before_its_checkpoint(boundaries):
    assert boundaries == write_order(STEPS)


@pytest.mark.parametrize("at", CRASH_POINTS)
def test_a_crash_at_any_write_resumes_to_the_uninterrupted_run(tmp_path, trainer, whole, at, quick_plots):
    """A kill at every write boundary in turn (before, in the middle of and after each metrics line; before and
    after each rename: the checkpoint's, the plot's), then a resume: the records and the final state are the
    uninterrupted run's, and no temporary file is left. Mutations of rtrl/run/folder.py tried by hand, each
    killed: the checkpoint saved before the metrics line (``Run.record``'s two writes swapped); a torn line not
    rewritten on resume (``or self.torn()`` dropped); records past the checkpoint kept (``<=`` -> any step); no
    orphan clean-up in ``locked``."""
    path = tmp_path / "run"
    run = Run.create(path, TINY, trainer=trainer)
    with pytest.MonkeyPatch.context() as patch:
        Crash(at).patch(patch)
        with pytest.raises(Killed):
            run.train()
    assert_resumes_to_the_whole_run(path, trainer, whole)


@pytest.mark.parametrize("second", [0, 1, 2], ids=["before its rename", "after its rename", "at the next line"])
def test_a_resume_killed_while_it_repairs_a_torn_line_resumes_again(tmp_path, trainer, whole, second, quick_plots):
    """Killed half-way through the step-8 line; the resume rewrites metrics.jsonl without it (atomically) and is
    killed before or after that rename, or at its first line; a second resume still equals the uninterrupted
    run."""
    torn = write_order(STEPS).index("metrics line half written", 10)  # step 8's
    path = tmp_path / "run"
    Run.create(path, TINY, trainer=trainer)
    for crash in (Crash(torn), Crash(second)):
        with pytest.MonkeyPatch.context() as patch:
            crash.patch(patch)
            with pytest.raises(Killed):
                Run.open(path, trainer=trainer).train()
    assert crash.seen == [f"{METRICS} about to be renamed", f"{METRICS} renamed", "metrics line begins"][: second + 1]
    assert_resumes_to_the_whole_run(path, trainer, whole)


def test_an_interrupt_between_evaluations_resumes_to_the_uninterrupted_run(tmp_path, trainer, whole):
    path = tmp_path / "run"
    run = Run.create(path, TINY, trainer=trainer)

    def interrupt(state, n):
        if int(state.step) == 12:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run.train(on_chunk=interrupt)
    assert_resumes_to_the_whole_run(path, trainer, whole)


def test_kill_9_while_training_then_resume_is_the_uninterrupted_run(tmp_path, trainer):
    """A real SIGKILL of `rtrl train` (no finally, no atexit) after a few checkpoints, then a resume."""
    config = {**TINY, "steps": 200}
    path = tmp_path / "run"
    args = ["train", "--task", "copy", "--task-arg", "max_length=2", "--cell", "elman", "--hidden", "3", "--method",
            "closed_form", "--batch", "2", "--lr", "0.05", "--eval-every", "4", "--eval-size", "8", "--steps", "200",
            "--quiet", "--out", str(path)]
    env = {**os.environ, "JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "cpu"}
    process = subprocess.Popen([sys.executable, "-m", "rtrl", *args], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if (path / METRICS).exists() and (path / METRICS).read_text().count("\n") >= 5:
                break
            time.sleep(0.01)
        assert process.poll() is None, "the run finished before it could be killed"
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    killed_at = runs.Run.open(path).last_checkpoint_step()
    assert killed_at is not None and killed_at < 200
    Run.open(path, trainer=trainer).train()  # the lock died with the process
    resumed = without_wall_time(read_metrics(path))
    reference = tmp_path / "whole"
    Run.create(reference, config, trainer=trainer).train()
    assert resumed == without_wall_time(read_metrics(reference))
    assert not list(path.glob(".*.tmp"))


def damaged(name, keep):
    return lambda data: data[: keep(len(data))]


DAMAGE = [(name, keep) for name in ("config.json", "metrics.jsonl", "checkpoint.npz", "curve.png")
          for keep in ("nothing", "half", "all but the last byte")]
KEEP = {"nothing": lambda n: 0, "half": lambda n: n // 2, "all but the last byte": lambda n: n - 1}


@pytest.mark.parametrize("name, keep", DAMAGE, ids=[f"{n}:{k}" for n, k in DAMAGE])
def test_a_damaged_file_is_recovered_or_reported_never_lost(tmp_path, trainer, whole, name, keep):
    """Stop a run at step 8, truncate one of its files, resume: either the resumed run is the uninterrupted
    one, or a one-line error names the file and every file is as it was."""
    path = tmp_path / "run"
    run = Run.create(path, {**TINY, "steps": 8}, trainer=trainer)
    run.train()
    file = path / name
    file.write_bytes(file.read_bytes()[: KEEP[keep](file.stat().st_size)])
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    try:
        Run.open(path, steps=16, trainer=trainer).train()
    except (RunError, checkpoint.CheckpointError) as e:
        assert name in str(e) or (name == METRICS and "no record" in str(e)), e
        assert {p.name: p.read_bytes() for p in path.iterdir()} == before, "a failed resume changed the folder"
        return
    records, final, _ = whole
    assert without_wall_time(read_metrics(path)) == records


def test_a_second_writer_is_refused_while_the_folder_is_locked(tmp_path, capsys, trainer):
    path = tmp_path / "run"
    first = Run.create(path, {**TINY, "steps": 4}, trainer=trainer)
    first.train()
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    with first.locked():  # as a process that is writing the folder
        assert main(["resume", str(path), "--steps", "8", "--quiet"]) == 2
        assert "in use by another process" in capsys.readouterr().err
        with pytest.raises(RunError, match="in use"):
            Run.create(path, {**TINY, "steps": 8}, overwrite=True)
        with pytest.raises(RunError, match="in use"):
            Run.open(path, trainer=trainer).train()
        assert {p.name: p.read_bytes() for p in path.iterdir()} == before
    Run.open(path, steps=8, trainer=trainer).train()  # once released, it continues
    assert [r["step"] for r in read_metrics(path)] == [0, 4, 8]


def test_a_non_finite_held_out_metric_stops_the_run_and_keeps_only_finite_records(tmp_path, monkeypatch, trainer):
    evaluate, step = trainer.evaluate, [0]
    monkeypatch.setattr(trainer, "evaluate", lambda params: {**evaluate(params), "metric": float("nan")}
                        if step[0] >= 8 else evaluate(params))  # undone after this test
    path = tmp_path / "run"
    run = Run.create(path, TINY, trainer=trainer)
    with pytest.raises(Diverged, match="the held-out metric became nan at step 8") as info:
        run.train(on_chunk=lambda state, n: step.__setitem__(0, int(state.step)))
    assert info.value.step == 8
    assert [r["step"] for r in read_metrics(path)] == [0, 4]
    assert run.last_checkpoint_step() == 4
    for line in (path / METRICS).read_text().splitlines():
        json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} in metrics.jsonl"))
    assert (path / "curve.png").is_file()


def test_overwrite_is_the_only_way_to_replace_a_run(tmp_path, trainer):
    path = tmp_path / "run"
    Run.create(path, {**TINY, "steps": 4}, trainer=trainer).train()
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    with pytest.raises(RunError, match="different run"):
        Run.create(path, {**TINY, "hidden": 4})
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before
    replaced = Run.create(path, {**TINY, "hidden": 4}, overwrite=True)
    assert replaced.config.hidden == 4 and sorted(p.name for p in path.iterdir()) == [".lock", "config.json"]
    shutil.rmtree(path)


# -- the same for an RL run folder (records every record_every steps, none at step 0) ----------------------------
RL_TINY = RLConfig(env="tmaze", env_args=(("length", 2),), hidden=3, envs=2, steps=12, record_every=4,
                   dtype="float64")


@pytest.fixture(scope="module")
def rl_whole(tmp_path_factory):
    """The uninterrupted RL run's records and final state, and the write boundaries it passed."""
    path = tmp_path_factory.mktemp("rl_whole") / "run"
    run, crash = Run.create(path, RL_TINY), Crash()
    with pytest.MonkeyPatch.context() as patch:
        crash.patch(patch)
        final = run.train()
    return without_wall_time(read_metrics(path)), final, crash.seen


@pytest.mark.parametrize("at", range(len(write_order([4, 8, 12]))))
def test_a_crash_at_any_write_of_an_rl_run_resumes_to_the_uninterrupted_run(tmp_path, rl_whole, at, quick_plots):
    """As above, for ``rtrl rl``'s folder. Its first record (at ``record_every``) is written before any checkpoint
    exists, so a kill between the two left a folder that ``load`` refused as one whose checkpoint was lost (found
    by this test; ``Run.load`` now writes that one record again)."""
    records, final, seen = rl_whole
    assert seen == write_order([4, 8, 12])
    path = tmp_path / "run"
    run = Run.create(path, RL_TINY)
    with pytest.MonkeyPatch.context() as patch:
        Crash(at).patch(patch)
        with pytest.raises(Killed):
            run.train()
    state = Run.open(path).train()
    assert without_wall_time(read_metrics(path)) == records and same_state(state, final)
    assert checkpoint.read_meta(path / CHECKPOINT)["step"] == 12 and not list(path.glob(".*.tmp"))
