"""The bad-input table: every way a user can get a command wrong, the exit status and a word of the one-line
message, and that nothing was created or changed on the way out.

Each row is ``(command, setup, status, word)``: ``setup`` prepares ``{tmp}`` (usually a copy of a trained run
folder, then damaged in one way), ``{run}`` is that folder. Status 2 rows must print exactly one line on stderr,
starting with ``rtrl``, containing ``word``, with no traceback; and every file of the run folder must be byte
for byte what it was (nothing lost, nothing rewritten), and no folder may appear that was not there.
"""

import json
import os
import re
import shutil
import sys

import pytest

from rtrl.cells import CELLS
from rtrl.cli import main
from rtrl.run.folder import Run

TINY = {"task": "copy", "task_args": {"max_length": 2}, "cell": "elman", "hidden": 3, "method": "closed_form",
        "batch": 2, "lr": 0.05, "eval_every": 4, "eval_size": 8, "steps": 8}
TINY_ARGS = ("--task copy --task-arg max_length=2 --cell elman --hidden 3 --method closed_form --batch 2 "
             "--lr 0.05 --eval-every 4 --eval-size 8 --quiet")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A finished run folder (steps 0, 4, 8), trained once for the module."""
    path = tmp_path_factory.mktemp("trained") / "run"
    Run.create(path, TINY).train()
    return path


def snapshot(root):
    """Every file under ``root`` and its bytes (the lock file aside: it is empty and may be created)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".lock"}


# -- setups: (tmp, trained run) -> None --------------------------------------------------------------------------
def nothing(tmp, trained):
    pass


def copy_run(tmp, trained):
    shutil.copytree(trained, tmp / "run")


def edit(name, content):
    def setup(tmp, trained):
        copy_run(tmp, trained)
        (tmp / "run" / name).write_bytes(content if isinstance(content, bytes) else content.encode())

    setup.__name__ = f"{name}={content[:20]!r}"
    return setup


def truncate(name, keep):
    def setup(tmp, trained):
        copy_run(tmp, trained)
        data = (tmp / "run" / name).read_bytes()
        (tmp / "run" / name).write_bytes(data[: keep(len(data))])

    setup.__name__ = f"truncate {name}"
    return setup


def remove(name):
    def setup(tmp, trained):
        copy_run(tmp, trained)
        (tmp / "run" / name).unlink()

    setup.__name__ = f"remove {name}"
    return setup


def edit_config(**changes):
    def setup(tmp, trained):
        copy_run(tmp, trained)
        config = json.loads((tmp / "run" / "config.json").read_text())
        (tmp / "run" / "config.json").write_text(json.dumps({**config, **changes}))

    setup.__name__ = f"config {changes}"
    return setup


def a_file(tmp, trained):
    (tmp / "file").write_text("mine")


def not_a_run(tmp, trained):
    (tmp / "notes").mkdir()
    (tmp / "notes" / "todo.txt").write_text("mine")


def no_metrics_yet(tmp, trained):
    copy_run(tmp, trained)
    for name in ("metrics.jsonl", "checkpoint.npz", "curve.png"):
        (tmp / "run" / name).unlink()


def middle_line_damaged(tmp, trained):
    copy_run(tmp, trained)
    lines = (tmp / "run" / "metrics.jsonl").read_text().splitlines(keepends=True)
    lines[1] = lines[1][:10] + "\n"
    (tmp / "run" / "metrics.jsonl").write_text("".join(lines))


def nan_record(tmp, trained):
    copy_run(tmp, trained)
    lines = (tmp / "run" / "metrics.jsonl").read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"loss": ', '"loss": NaN, "was": ')
    (tmp / "run" / "metrics.jsonl").write_text("".join(lines))


def nan_lr(tmp, trained):
    """config.json's learning rate made NaN (the message once said only that the file was not strict JSON)."""
    copy_run(tmp, trained)
    config = tmp / "run" / "config.json"
    text, n = re.subn(r'"lr": [^,\n]+', '"lr": NaN', config.read_text())
    assert n == 1
    config.write_text(text)


def checkpoint_meta(**changes):
    """The checkpoint's meta changed (its arrays kept): a checkpoint at odds with itself."""
    def setup(tmp, trained):
        import numpy as np

        from rtrl.run import checkpoint

        copy_run(tmp, trained)
        arrays, meta = checkpoint.read(tmp / "run" / "checkpoint.npz")
        with open(tmp / "run" / "checkpoint.npz", "wb") as f:
            np.savez(f, **arrays, meta=np.frombuffer(json.dumps({**meta, **changes}).encode(), np.uint8))

    setup.__name__ = f"checkpoint meta {changes}"
    return setup


def not_a_png(tmp, trained):
    copy_run(tmp, trained)
    (tmp / "notes.png").write_text("mine")
    (tmp / "notes.txt").write_text("mine")


BAD_INPUT = [
    # rtrl train: options
    ("train --task nope --out {tmp}/new", nothing, 2, "--task"),
    ("train --cell nope --out {tmp}/new", nothing, 2, "--cell"),
    ("train --method nope --out {tmp}/new", nothing, 2, "--method"),
    ("train --cell untraced --method closed_form --out {tmp}/new", nothing, 2, "hand-derived traces"),
    ("train --hidden -3 --out {tmp}/new", nothing, 2, "--hidden"),
    ("train --hidden 3.5 --out {tmp}/new", nothing, 2, "positive integer"),
    ("train --batch abc --out {tmp}/new", nothing, 2, "--batch"),
    ("train --steps 0 --out {tmp}/new", nothing, 2, "--steps"),
    ("train --update-every 0 --out {tmp}/new", nothing, 2, "--update-every"),
    ("train --eval-every 0 --out {tmp}/new", nothing, 2, "--eval-every"),
    ("train --eval-size -1 --out {tmp}/new", nothing, 2, "--eval-size"),
    ("train --lr -1 --out {tmp}/new", nothing, 2, "--lr"),
    ("train --lr 0 --out {tmp}/new", nothing, 2, "--lr"),
    ("train --lr inf --out {tmp}/new", nothing, 2, "--lr"),
    ("train --lr nan --out {tmp}/new", nothing, 2, "--lr"),
    ("train --clip 0 --out {tmp}/new", nothing, 2, "--clip"),
    ("train --clip inf --out {tmp}/new", nothing, 2, "--clip"),
    ("train --seed -1 --out {tmp}/new", nothing, 2, "--seed"),
    ("train --seed 18446744073709551616 --out {tmp}/new", nothing, 2, "--seed"),
    ("train --optimizer adagrad --out {tmp}/new", nothing, 2, "--optimizer"),
    ("train --task-arg max_length=-1 --out {tmp}/new", nothing, 2, "max_length"),
    ("train --task-arg max_length=abc --out {tmp}/new", nothing, 2, "max_length"),
    ("train --task-arg length --out {tmp}/new", nothing, 2, "KEY=VALUE"),
    ("train --task-arg nope=1 --out {tmp}/new", nothing, 2, "no option"),
    ("train --cell-arg activation=tahn --out {tmp}/new", nothing, 2, "activation"),
    ("train --cell-arg input_size=4 --out {tmp}/new", nothing, 2, "no option"),
    ("train --method-arg nope=1 --out {tmp}/new", nothing, 2, "no option"),
    ("train --method tbptt --method-arg truncation=0 --out {tmp}/new", nothing, 2, "truncation"),
    ("train --method bptt --stagger --out {tmp}/new", nothing, 2, "stagger"),
    ("train --task sines --task-arg episode_length=1 --out {tmp}/new", nothing, 2, "episode_length"),
    ("train --task mnist1d --task-arg train_size=61 --out {tmp}/new", nothing, 2, "multiple of 10"),
    ("train --frobnicate --out {tmp}/new", nothing, 2, "unrecognized"),
    ("train", nothing, 2, "--out"),
    # rtrl train: where it writes
    ("train {tiny} --out {tmp}/file", a_file, 2, "is a file"),
    ("train {tiny} --out {tmp}/file/run", a_file, 2, "Not a directory"),
    ("train {tiny} --out {tmp}/notes", not_a_run, 2, "not a run folder"),
    ("train {tiny} --hidden 4 --out {run}", copy_run, 2, "different run"),
    ("train {tiny} --out {run}", edit("config.json", "{}"), 2, "lacks options"),
    ("train --task store_recall_poisson --task-arg delay=1e12 --out {tmp}/new", nothing, 2,
     "delay must be at most 10 x symbols = 120"),
    # rtrl results (tests/test_reports_command.py has damaged ledgers and a second writer)
    ("results bogus", nothing, 2, "invalid choice: 'bogus'"),
    ("results popgym --out {tmp}/new --seeds 0", nothing, 2, "--seeds must be a positive integer"),
    ("results popgym --out {tmp}/new --seed -1", nothing, 2, "--seed must be from 0 to"),
    ("results popgym --out {tmp}/new --seeds 3 --seed 4294967294", nothing, 2, "--seed must be from 0 to"),
    ("results popgym --out {tmp}/new --seeds 100000000", nothing, 2, "choose a smaller --seeds"),
    ("results rl --out {tmp}/new --seeds 0", nothing, 2, "--seeds must be a positive integer"),
    ("results training --only nope", nothing, 2, "invalid choice: 'nope'"),
    # rtrl rl: options (tests/test_rl_cli.py has the RL run folder's damaged files)
    ("rl --env nope --out {tmp}/new", nothing, 2, "--env"),
    ("rl --env-arg corridor=3 --out {tmp}/new", nothing, 2, "no option 'corridor'"),
    ("rl --env-arg length=0 --out {tmp}/new", nothing, 2, "length must be a positive integer"),
    ("rl --env-arg length --out {tmp}/new", nothing, 2, "KEY=VALUE"),
    ("rl --env memory-chain --env-arg memory=20 --out {tmp}/new", nothing, 2, "no option 'memory'"),
    ("rl --method bptt --out {tmp}/new", nothing, 2, "needs whole episodes"),
    ("rl --method tbptt --truncation 0 --out {tmp}/new", nothing, 2, "--truncation"),
    ("rl --cell gru --method closed_form --out {tmp}/new", nothing, 2, "hand-derived traces"),
    ("rl --method nope --out {tmp}/new", nothing, 2, "--method"),
    ("rl --cell nope --out {tmp}/new", nothing, 2, "--cell"),
    ("rl --cell os:sep --out {tmp}/new", nothing, 2, "neither a cell class"),
    ("rl --cell-arg nope=1 --out {tmp}/new", nothing, 2, "no option"),
    ("rl --envs 0 --out {tmp}/new", nothing, 2, "--envs"),
    ("rl --envs 2.5 --out {tmp}/new", nothing, 2, "--envs"),
    ("rl --steps -1 --out {tmp}/new", nothing, 2, "--steps"),
    ("rl --gamma 1.5 --out {tmp}/new", nothing, 2, "--gamma"),
    ("rl --lam -0.1 --out {tmp}/new", nothing, 2, "--lam"),
    ("rl --entropy -1 --out {tmp}/new", nothing, 2, "--entropy"),
    ("rl --lr nan --out {tmp}/new", nothing, 2, "--lr"),
    ("rl --kappa 0 --out {tmp}/new", nothing, 2, "--kappa"),
    ("rl --fidelity-every -1 --out {tmp}/new", nothing, 2, "--fidelity-every"),
    ("rl --record-every 0 --out {tmp}/new", nothing, 2, "--record-every"),
    ("rl --optimizer rmsprop --out {tmp}/new", nothing, 2, "--optimizer"),
    ("rl --dtype float16 --out {tmp}/new", nothing, 2, "--dtype"),
    ("rl --seed -1 --out {tmp}/new", nothing, 2, "--seed"),
    ("rl --seeds 3 --seed 4294967294 --out {tmp}/new", nothing, 2, "seed + seeds - 1 must be at most 2**32 - 1"),
    # every seed of the call is counted in the memory needed (10^6 seeds of 16 tmaze environments: ~2,000 GiB)
    ("rl --seeds 1000000 --out {tmp}/new", nothing, 2, "choose a smaller --hidden, --envs, --seeds"),
    ("rl --head-hidden 100000000 --out {tmp}/new", nothing, 2, "GiB of memory"),
    ("rl --preset memory-chain-99 --out {tmp}/new", nothing, 2, "--preset"),
    ("rl --task copy --out {tmp}/new", nothing, 2, "unrecognized"),
    ("rl", nothing, 2, "--out"),
    ("rl --out {run}", copy_run, 2, "different run (differs in kind)"),
    ("rl --out {tmp}/file", a_file, 2, "is a file"),
    # rtrl resume: the run folder's files
    ("resume {tmp}/missing", nothing, 2, "holds no run"),
    ("resume {tmp}/file", a_file, 2, "holds no run"),
    ("resume {run} --steps 0", copy_run, 2, "--steps"),
    ("resume {run}", edit("config.json", "{}"), 2, "lacks options"),
    ("resume {run} --steps 12", edit("config.json", "{}"), 2, "lacks options"),
    ("resume {run}", edit("config.json", "[]"), 2, "JSON object"),
    ("resume {run}", edit("config.json", "\x00garbage{"), 2, "config.json"),
    ("resume {run}", edit("config.json", ""), 2, "not valid JSON"),
    ("resume {run}", truncate("config.json", lambda n: n // 2), 2, "not valid JSON"),
    ("resume {run}", edit_config(lr=float("nan")), 2, "config.json"),
    ("resume {run}", edit_config(hidden="x"), 2, "hidden"),
    ("resume {run}", edit_config(extra=1), 2, "unknown options"),
    ("resume {run}", edit_config(method="nope"), 2, "method"),
    ("resume {run}", edit_config(hidden=4), 2, "the model expects"),
    ("resume {run}", remove("checkpoint.npz"), 2, "checkpoint.npz is missing"),
    ("resume {run}", edit("checkpoint.npz", "garbage"), 2, "damaged"),
    ("resume {run}", truncate("checkpoint.npz", lambda n: n // 2), 2, "damaged"),
    ("resume {run}", truncate("checkpoint.npz", lambda n: n - 1), 2, "damaged"),
    ("resume {run}", truncate("checkpoint.npz", lambda n: 0), 2, "damaged"),
    ("resume {run}", remove("metrics.jsonl"), 2, "no record of step 8"),
    ("resume {run}", truncate("metrics.jsonl", lambda n: 0), 2, "no record of step 8"),
    ("resume {run}", middle_line_damaged, 2, "line 2"),
    ("resume {run}", nan_record, 2, "line 2"),
    ("resume {run}", nan_lr, 2, "lr is NaN or infinite"),
    # rtrl resume: a checkpoint at odds with itself, a budget that goes back (issue 22)
    ("resume {run}", checkpoint_meta(step=4), 2, "is damaged: its state stands at step 8"),
    ("resume {run}", checkpoint_meta(step=-8), 2, "is damaged: its meta step is -8"),
    ("resume {run}", checkpoint_meta(step=8.0), 2, "is damaged"),
    ("resume {run}", checkpoint_meta(wall_s=float("inf")), 2, "wall_s"),
    ("resume {run} --steps 4", copy_run, 2, "--steps 4 is below step 8"),
    # rtrl plot over a run's files or a file that is not an earlier plot (issue 22)
    ("plot {run} --out {run}/metrics.jsonl", copy_run, 2, ".png"),
    ("plot {run} --out {run}/curve.png", copy_run, 2, "a file of the run folder"),
    ("plot {run} --out {tmp}/notes.png", not_a_png, 2, "not a PNG"),
    ("plot {run} --out {tmp}/notes.txt", not_a_png, 2, ".png"),
    # rtrl fidelity and rtrl rl's environment options (issue 22)
    ("fidelity --methods bogus --out {tmp}/new", nothing, 2, "invalid choice: 'bogus'"),
    ("fidelity --out {tmp}/file", a_file, 2, "File exists"),
    ("rl --env memory-chain --env-arg max_steps_in_episode=0 --out {tmp}/new", nothing, 2, "positive integer"),
    ("rl --env memory-chain --env-arg memory_length=2.5 --out {tmp}/new", nothing, 2, "memory_length must be"),
    ("rl --env memory-chain --env-arg memory_length=true --out {tmp}/new", nothing, 2, "memory_length must be"),
    ("rl --env cartpole --env-arg gravity=abc --out {tmp}/new", nothing, 2, "gravity must be a positive finite"),
    ("rl --env cartpole-masked --env-arg tau=-0.1 --out {tmp}/new", nothing, 2, "tau must be a positive"),
    ("rl --env tmaze --env-arg max_steps=0 --out {tmp}/new", nothing, 2, "max_steps must be a positive integer"),
    # rtrl plot
    ("inspect --cell nope", nothing, 2, "unknown cell"),
    ("inspect --cell elstm --cell-arg foo=1", nothing, 2, "no option"),
    ("inspect --cell no.such.module:Cell", nothing, 2, "cannot import"),
    ("inspect --cell elman --hidden 0", nothing, 2, "--hidden"),
    ("train --preset copy99 --out {tmp}/new", nothing, 2, "--preset"),
    ("train --cell os:sep --out {tmp}/new", nothing, 2, "neither a cell class"),
    # rtrl export
    ("export {tmp}/missing --nir {tmp}/x.nir", nothing, 2, "holds no run"),
    ("export {run} --nir {tmp}/x.nir", copy_run, 2, "no NIR counterpart"),
    ("export {run}", copy_run, 2, "--nir"),
    # rtrl eval
    ("eval {tmp}/missing", nothing, 2, "holds no run"),
    ("eval {run} --episodes 0", copy_run, 2, "--episodes"),
    ("eval {run} --seed -1", copy_run, 2, "--seed"),
    ("eval {run} --greedy", copy_run, 2, "--greedy applies to RL runs"),
    ("eval {run} --video {tmp}/films", copy_run, 2, "--video applies to RL runs"),
    ("eval {run} --run-seed 5", copy_run, 2, "--run-seed: seed applies to a run of several seeds"),
    ("eval {run}", truncate("checkpoint.npz", lambda n: n // 2), 2, "checkpoint.npz"),
    ("eval {run}", edit("config.json", "[1]"), 2, "JSON object"),
    ("plot {tmp}/missing --out {tmp}/x.png", nothing, 2, "holds no run"),
    ("plot {run} --out {tmp}/nowhere/x.png", copy_run, 2, "not an existing folder"),
    ("plot {run} --out {tmp}/file/x.png", a_file, 2, "not an existing folder"),
    ("plot {run} --out {tmp}", copy_run, 2, "directory"),
    ("plot {run} --out {tmp}/x.png", no_metrics_yet, 2, "no metrics"),
    ("plot {run} --out {tmp}/x.png", middle_line_damaged, 2, "line 2"),
    ("plot {run} --out {tmp}/x.png", edit("config.json", "[1]"), 2, "JSON object"),
    # rtrl demo
    ("demo --out {run} --steps 8 --quiet", copy_run, 2, "different run"),
    ("demo --steps 0", nothing, 2, "--steps"),
    ("demo --out {tmp}/file", a_file, 2, "is a file"),
    # anything else
    ("bogus", nothing, 2, "invalid choice"),
    ("", nothing, 2, "required"),
    ("resume", nothing, 2, "required"),
    ("bench --frobnicate", nothing, 2, "unrecognized"),
]


@pytest.mark.parametrize("command, setup, status, word", BAD_INPUT,
                         ids=[f"{c} [{getattr(s, '__name__', '')}]" for c, s, _, _ in BAD_INPUT])
def test_bad_input_exits_with_one_line_and_changes_nothing(tmp_path, trained, capsys, monkeypatch, command, setup,
                                                           status, word):
    from test_cli import Untraced

    monkeypatch.setitem(CELLS, "untraced", Untraced)
    monkeypatch.chdir(tmp_path)  # a default --out (the demo's runs/demo) lands here
    setup(tmp_path, trained)
    refused(tmp_path, capsys, command.format(tmp=tmp_path, run=tmp_path / "run", tiny=TINY_ARGS).split(), status,
            word)


def refused(root, capsys, argv, status, word):
    """``main(argv)`` exits with ``status`` and one line naming ``word``, and nothing under ``root`` changed."""
    before = snapshot(root)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == status, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtrl") and word in lines[0], err
    assert snapshot(root) == before  # nothing lost, rewritten or half-created
    assert sorted(p.name for p in root.iterdir()) == sorted({p.split(os.sep)[0] for p in before}), "created"


def test_the_table_covers_every_command():
    from rtrl.cli import COMMANDS

    assert {c.split()[0] for c, *_ in BAD_INPUT if c} >= set(COMMANDS) - {"list", "fidelity"}


def test_a_closed_pipe_ends_the_command_quietly(capfd, monkeypatch):
    """`rtrl list | head -1`: the reader goes away; no traceback, status 0."""
    read, write = os.pipe()
    os.close(read)
    stream = os.fdopen(write, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", stream)
    saved = os.dup(1)
    try:
        os.dup2(write, 1)
        assert main(["list"]) == 0
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    assert "Traceback" not in capfd.readouterr().err


def test_a_missing_optional_package_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "mnist1d.data", None)  # as if `mnist1d` were not installed
    out = tmp_path / "run"
    code = main(f"train --task mnist1d --task-arg train_size=10 --task-arg test_size=10 --hidden 2 --batch 1 "
                f"--steps 1 --quiet --out {out}".split())
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "pip install 'rtrl[mnist1d]' where rtrl is installed" in err
    assert ".venv/bin/pip install -e '.[mnist1d]' in a clone of rtrl" in err  # make run's .venv: the extra, editable
    assert {p.name for p in out.iterdir()} <= {"config.json", ".lock"}  # the run is there, to resume once installed


def test_a_write_that_fails_half_way_leaves_no_folder_behind(tmp_path, capsys, monkeypatch):
    """A read-only or full disk, injected (the tests run as root, for whom permissions do not apply)."""
    import rtrl.run.folder as runs

    def refuse(path, text):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(runs, "atomic_write_text", refuse)
    out = tmp_path / "new" / "deeper" / "run"
    code = main(f"train {TINY_ARGS} --out {out}".split())
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "Permission denied" in err and str(out) in err
    assert list(tmp_path.iterdir()) == []  # the three folders it made are gone again


def test_version_prints_the_installed_version(capsys):
    """`rtrl --version` answered "the following arguments are required: COMMAND" (found by tools/audit.py)."""
    import importlib.metadata

    code = None
    try:
        code = main(["--version"])
    except SystemExit as e:
        code = e.code
    assert code == 0
    assert capsys.readouterr().out == f"rtrl {importlib.metadata.version('rtrl')}\n"


@pytest.mark.parametrize("suffix, magic", [(".pdf", b"%PDF-"), (".svg", b"<?xml"), (".png", b"\x89PNG\r\n\x1a\n")])
def test_plot_writes_the_format_its_out_names_and_replaces_only_a_plot_of_it(tmp_path, trained, capsys, suffix,
                                                                             magic):
    """`rtrl plot --out p.pdf` was refused (only PNG was written); a plot of another format under the name is not
    replaced. [the format taken as PNG whatever the suffix: the PDF and SVG files start with PNG's bytes, fails]"""
    out = tmp_path / f"p{suffix}"
    assert main(["plot", str(trained), "--out", str(out)]) == 0, capsys.readouterr().err
    assert out.read_bytes().startswith(magic)
    assert main(["plot", str(trained), "--out", str(out)]) == 0  # an earlier plot of the same format: replaced
    other = tmp_path / f"q{suffix}"
    other.write_bytes(b"\x89PNG\r\n\x1a\n" if suffix != ".png" else b"%PDF-1.4")
    capsys.readouterr()
    refused(tmp_path, capsys, ["plot", str(trained), "--out", str(other)], 2, f"is not a {suffix[1:].upper()}")
