"""Run folders under races, early kills and Ctrl-C, and the checks that keep a folder's history true
(docs/reliability.md):

* two writers creating one new folder: the one that loses removes nothing of the winner's (in-process
  interleavings at the two moments that matter: `flock` locks of two open files conflict within a process);
* a kill after the step-0 checkpoint, before the first interval: the resumed history has one step-0 record;
* a checkpoint whose step leaf and meta disagree, or holding a NaN, is refused; a non-finite state is never
  checkpointed (so the checkpoint kept on divergence is a good one);
* ``rtrl rl --dtype float64`` runs in float64 (its checkpoint's parameters are float64);
* Ctrl-C in the real command at start-up, while compiling, and twice while training: exit 130, one line, no
  traceback or crash, and the folder resumes.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import filelock
import jax
import numpy as np
import pytest

from rtrl.cli import main
from rtrl.run import checkpoint
from rtrl.run import folder as runs
from rtrl.run.folder import CHECKPOINT, CONFIG, LOCK, Run, RunError, read_metrics
from rtrl.training.assemble import assemble
from rtrl.training.config import RunConfig
from rtrl.training.trainer import Diverged

SRC = str(Path(__file__).resolve().parents[1] / "src")
TINY = {"task": "copy", "task_args": {"max_length": 2}, "cell": "elman", "hidden": 3, "method": "closed_form",
        "batch": 2, "lr": 0.05, "eval_every": 4, "eval_size": 8, "steps": 8}
TINY_ARGS = ("train --task copy --task-arg max_length=2 --cell elman --hidden 3 --method closed_form --batch 2 "
             "--lr 0.05 --eval-every 4 --eval-size 8 --steps 8 --quiet")


class Killed(BaseException):
    """A crash, seen from inside: nothing after it runs."""


@pytest.fixture(scope="module")
def trainer():
    return assemble(RunConfig.from_dict(TINY)).trainer()


def steps_of(path):
    return [r["step"] for r in read_metrics(path)]


# -- two writers, one new folder ------------------------------------------------------------------------------
def another_process_wins_after_our_mkdir(monkeypatch, path, config, hold=True):
    """Right after this process made the folder, another one takes its lock and writes its run there (a lock
    object of its own: ``flock`` locks of two open files conflict within one process as across two), and holds
    the lock on or lets it go."""
    made_folders, theirs = runs.made_folders, filelock.FileLock(str(path / LOCK), timeout=0)

    def made_then_overtaken(folder):
        made = made_folders(folder)
        theirs.acquire()
        (folder / CONFIG).write_text(json.dumps(assemble(RunConfig.from_dict(config)).config.to_dict()))
        if not hold:
            theirs.release()
        return made

    monkeypatch.setattr(runs, "made_folders", made_then_overtaken)
    return theirs


def test_the_writer_that_loses_the_lock_removes_nothing_of_the_winners(tmp_path, monkeypatch):
    """The loser made the folder (its mkdir came first) but the winner locked it first: the loser is refused and
    the winner's folder, lock and config stay [the old clean-up, which removed every folder it had found missing
    and the lock file in it whatever happened: the folder and the winner's lock are gone and this fails]."""
    path = tmp_path / "new" / "run"
    theirs = another_process_wins_after_our_mkdir(monkeypatch, path, TINY)
    try:
        with pytest.raises(RunError, match="in use by another process"):
            Run.create(path, TINY)
        assert (path / LOCK).is_file() and (path / CONFIG).is_file() and theirs.is_locked
    finally:
        theirs.release()


def test_a_different_run_written_between_the_check_and_the_lock_is_not_replaced(tmp_path, monkeypatch):
    """Another process made a different run in the folder after this one looked and before it locked: this one
    is refused as for any different run, and removes neither that run nor its folder [`check_target` only before
    the lock, as the old `create` did: the other run's config.json is silently replaced and this fails]."""
    path = tmp_path / "run"
    # it wrote its config and let go, as `rtrl train` does between creating and training
    another_process_wins_after_our_mkdir(monkeypatch, path, {**TINY, "hidden": 5}, hold=False)
    with pytest.raises(RunError, match="different run"):
        Run.create(path, TINY)
    assert json.loads((path / CONFIG).read_text())["hidden"] == 5


# -- a kill after the step-0 checkpoint --------------------------------------------------------------------------
def test_a_kill_after_the_step_0_checkpoint_resumes_with_one_step_0_record(tmp_path, monkeypatch, trainer):
    """Killed right after the step-0 checkpoint is written, before the first interval ends [`load` keeping the
    step-0 record it then writes again: the history reads 0, 0, 4, 8 and this fails]."""
    whole = tmp_path / "whole"
    Run.create(whole, TINY, trainer=trainer).train()
    path = tmp_path / "run"
    save = checkpoint.save

    def save_then_killed(file, tree, meta=None):
        save(file, tree, meta)
        if meta["step"] == 0:
            raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(checkpoint, "save", save_then_killed)
        with pytest.raises(Killed):
            Run.create(path, TINY, trainer=trainer).train()
    assert steps_of(path) == [0] and checkpoint.read_meta(path / CHECKPOINT)["step"] == 0
    Run.open(path, trainer=trainer).train()
    strip = [{k: v for k, v in r.items() if k != "wall_s"} for r in read_metrics(path)]
    assert strip == [{k: v for k, v in r.items() if k != "wall_s"} for r in read_metrics(whole)]


# -- checkpoints that contradict themselves, and non-finite states ------------------------------------------------
def rewritten(file, change):
    arrays, meta = checkpoint.read(file)
    arrays, meta = change(arrays, meta)
    with open(file, "wb") as f:
        np.savez(f, **arrays, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8))


@pytest.fixture(scope="module")
def finished(tmp_path_factory, trainer):
    path = tmp_path_factory.mktemp("finished") / "run"
    Run.create(path, TINY, trainer=trainer).train()
    return path


@pytest.mark.parametrize("change, word", [
    (lambda a, m: (a, {**m, "step": 4}), "its state stands at step 8 but its meta says step 4"),
    (lambda a, m: ({**a, ".step": np.asarray(-4, a[".step"].dtype)}, m), "stands at step -4"),
    (lambda a, m: (a, {**m, "step": -4}), "meta step is -4"),
    (lambda a, m: (a, {**m, "step": "8"}), "meta step is '8'"),
    (lambda a, m: (a, {k: v for k, v in m.items() if k != "wall_s"}), "meta wall_s"),
    (lambda a, m: ({**a, ".params['readout']['b']": np.full_like(a[".params['readout']['b']"], np.nan)}, m),
     "holds nan in .params['readout']['b']"),
], ids=["meta behind the leaf", "negative leaf", "negative meta", "meta step a string", "no wall_s", "a NaN"])
def test_a_checkpoint_at_odds_with_itself_is_refused_and_nothing_changes(tmp_path, finished, capsys, change, word):
    """[`checked_meta` not called: the first five fail (the first two retrain from step 4 or -4 and rewrite the
    history); the NaN case is held by `Run.load`'s non-finite check]."""
    import shutil

    path = tmp_path / "run"
    shutil.copytree(finished, path)
    rewritten(path / CHECKPOINT, change)
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    assert main(["resume", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert str(path / CHECKPOINT) in err and word in err and "Traceback" not in err, err
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before


def test_a_non_finite_state_is_never_checkpointed(tmp_path, trainer):
    """Parameters finite, a trace not: `record` raises `Diverged` naming the leaf and writes nothing, so the
    checkpoint kept is the previous, finite one [the check removed from `Run.record`: the infinite trace is
    checkpointed and this fails]."""
    path = tmp_path / "run"
    run = Run.create(path, {**TINY, "steps": 4}, trainer=trainer)
    run.train()
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    state = trainer.init()
    leaf = jax.tree.leaves(state.memory)[-1]
    bad = state._replace(memory=jax.tree.unflatten(jax.tree.structure(state.memory),
                                                   [*jax.tree.leaves(state.memory)[:-1], leaf + np.inf]))
    with pytest.raises(Diverged, match=r"the state's \.memory.* became inf at step 8"):
        run.record(bad, {"step": 8, "loss": 0.5, "metric": 0.5, "wall_s": 1.0})
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before


# -- rtrl rl --dtype float64 -----------------------------------------------------------------------------------
def test_rl_dtype_float64_runs_in_float64(tmp_path, monkeypatch):
    """In a process without JAX's 64-bit mode (as the command starts), `--dtype float64` used to record float64
    and run in float32 [`RLRun.build` without enabling x64: the checkpoint's parameters are float32 and this
    fails]; the library refuses it rather than run in float32."""
    from rtrl.rl.config import RLConfig
    from rtrl.rl.loop import OnlineActorCritic

    config = RLConfig(env="tmaze", env_args={"length": 2}, hidden=3, envs=2, steps=4, record_every=4, dtype="float64")
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ValueError, match="64-bit mode"):
            OnlineActorCritic(config)
        out = tmp_path / "run"
        code = main(["rl", "--env", "tmaze", "--env-arg", "length=2", "--hidden", "3", "--envs", "2", "--steps", "4",
                     "--record-every", "4", "--dtype", "float64", "--quiet", "--out", str(out)])
        assert code == 0
    finally:
        jax.config.update("jax_enable_x64", True)  # the suite's setting (conftest.py)
    arrays, _ = checkpoint.read(out / CHECKPOINT)
    params = {name: a for name, a in arrays.items() if name.startswith(".params")}
    assert params and all(a.dtype == np.float64 for a in params.values()), {n: a.dtype for n, a in params.items()}


# -- Ctrl-C in the real command -------------------------------------------------------------------------------
IMPORT_TIME = "import time:"  # the first words of each line ``python -X importtime`` writes on stderr


def command(out, *python_options):
    """`python -m rtrl train` (a bptt run, the audit's case) that runs until interrupted; ``python_options``: the
    interpreter's own (``-X importtime``)."""
    env = {**os.environ, "PYTHONPATH": SRC, "JAX_PLATFORMS": "cpu", "JAX_ENABLE_X64": "1"}  # x64: as this process
    argv = [sys.executable, *python_options, "-m", "rtrl", *TINY_ARGS.replace("closed_form", "bptt").split(),
            "--steps", "1000000", "--out", str(out)]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def importing_with_handler(process):
    """Wait until ``process`` (started with ``-X importtime``) is importing with the command's Ctrl-C handling in
    force: ``import rtrl`` imports ``rtrl.interrupts``, calls ``interrupts.install()`` and only then imports JAX
    (``rtrl.startup.check``), so a module whose import ends after rtrl.interrupts' does (the next line) is
    imported with the handler installed and JAX still loading. A readiness signal from the process, not a clock
    (a signal sent on a clock lands before the handler on a busy machine: a KeyboardInterrupt traceback)."""
    for line in process.stderr:
        assert line.startswith(IMPORT_TIME), line
        if line.rstrip().endswith(" rtrl.interrupts"):
            line = process.stderr.readline()
            assert line.startswith(IMPORT_TIME), line  # still importing
            return
    raise AssertionError("rtrl.interrupts was never imported")


def wait_for(condition, timeout=120.0):
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def finished_with_130(process, err_read=""):
    """The rest of ``process``'s output once it has ended (``err_read``: its stderr read so far, then the rest;
    ``-X importtime``'s lines left out)."""
    out, err = process.communicate(timeout=120)
    err = "".join(line for line in (err_read + err).splitlines(keepends=True) if not line.startswith(IMPORT_TIME))
    assert process.returncode == 130, (process.returncode, out, err)  # -11 was the segfault
    assert "Traceback" not in err and "Error" not in err, err
    return out, err


def resumes(path, trainer):
    """The interrupted run continues two records past its checkpoint, each record once."""
    every = json.loads((path / CONFIG).read_text())["eval_every"]
    done = checkpoint.read_meta(path / CHECKPOINT)["step"] if (path / CHECKPOINT).exists() else 0
    Run.open(path, steps=done + 2 * every, trainer=trainer).train()
    assert steps_of(path) == list(range(0, done + 2 * every + 1, every))


def test_ctrl_c_at_start_up_while_compiling_and_while_training(tmp_path):
    """Three commands side by side: interrupted while importing (exit 130, the one line "rtrl: interrupted",
    nothing written), twice at once as it starts to compile, and once while training (it stops at the next safe
    point, after a chunk of steps); the two run folders then resume [Python's own SIGINT handling restored
    (`interrupts.install` a no-op): the start-up case exits 1 with an ImportError traceback from jaxlib's
    initialisation and this fails]."""
    early = command(tmp_path / "early", "-X", "importtime")
    compiling, training = (command(tmp_path / name) for name in ("compiling", "training"))
    importing_with_handler(early)
    early.send_signal(signal.SIGINT)
    _, err = finished_with_130(early)  # read at once: its stderr (a line per module) never fills the pipe
    assert err.strip() == "rtrl: interrupted" and not (tmp_path / "early").exists()
    assert compiling.stdout.readline().startswith(str(tmp_path / "compiling"))  # built; compiling from here on
    compiling.send_signal(signal.SIGINT)
    acted = ""  # the first acted on: ended (end of file) or its line said, which opens with a blank line; read whole
    while not acted.strip():  # lines (communicate reads the pipe itself, past what readline has buffered)
        line = compiling.stderr.readline()
        acted += line
        if not line:
            break
    compiling.send_signal(signal.SIGINT)  # (a no-op once it has ended)
    wait_for(lambda: len(steps_of(tmp_path / "training")) >= 2)
    training.send_signal(signal.SIGINT)

    out, err = finished_with_130(compiling, acted)
    assert "rtrl: interrupted" in err or "stopped at once" in err, (out, err)
    out, err = finished_with_130(training)
    assert "stopping after the current steps" in err and "continue from step" in out, (out, err)
    trainer = assemble(RunConfig.from_dict(json.loads((tmp_path / "training" / CONFIG).read_text()))).trainer()
    for name in ("compiling", "training"):  # one trainer: both runs are one configuration
        resumes(tmp_path / name, trainer)


def test_the_second_ctrl_c_is_never_swallowed(monkeypatch):
    """What each Ctrl-C does, as the watcher thread calls it [`on_interrupt` ignoring a Ctrl-C while one is
    pending: the second one is swallowed and this fails; `poll` not clearing the flag: a later block stops at
    once and this fails]."""
    from rtrl import interrupts

    class Quit(BaseException):
        pass

    def quit_now(message):
        raise Quit(message)

    monkeypatch.setattr(interrupts, "quit_now", quit_now)
    with pytest.raises(Quit, match="^interrupted$"):
        interrupts.on_interrupt()  # outside a deferred block: at once
    with interrupts.deferred():
        interrupts.poll()  # nothing pending
        interrupts.on_interrupt()
        with pytest.raises(KeyboardInterrupt):
            interrupts.poll()
        interrupts.poll()  # it was cleared
        interrupts.on_interrupt()
        with pytest.raises(Quit, match="interrupted again"):
            interrupts.on_interrupt()
    with interrupts.deferred():
        interrupts.poll()  # a block that begins after an interrupted one is not interrupted
