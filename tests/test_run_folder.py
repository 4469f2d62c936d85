"""A run folder (``rtrl.run.folder``) as input from outside: what its ``config.json`` may make rtrl import, and its
files that can be redirected or damaged.

The import rule (docs/reliability.md, "What a run folder may name"): no field of a run folder's config.json makes
rtrl import code the user did not name on this command line. The crafted folders below name a module placed in the
working folder (on ``sys.path``, as under ``python -m rtrl``) through every field of both kinds of configuration; the
module leaves a marker file and an environment variable when it is imported, and neither may ever appear.
"""

import dataclasses
import json
import os
import shutil
import sys

import pytest

from rtrl.cli import main
from rtrl.config import ALLOW_IMPORT, allowed_imports
from rtrl.rl.config import RLConfig
from rtrl.run.folder import Run, read_config
from rtrl.training.config import RunConfig

MODULE = "evil_run_folder"  # the module a crafted folder names
TINY = {"task": "copy", "task_args": {"max_length": 2}, "hidden": 3, "batch": 2, "eval_size": 4, "steps": 2,
        "eval_every": 2}
TINY_RL = {"env": "tmaze", "env_args": {"length": 2}, "hidden": 3, "envs": 2, "steps": 4, "record_every": 2}
TINY_GYM = {**TINY_RL, "env": "gymnasium:CartPole-v1", "env_args": {}}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished tiny run of each kind (a train run, an RL run in tmaze, an RL run in Gymnasium's CartPole)."""
    root = tmp_path_factory.mktemp("finished")
    runs = {}
    for name, config in (("train", TINY), ("rl", TINY_RL), ("gym", TINY_GYM)):
        run = Run.create(root / name, config)
        run.train()
        runs[name] = root / name
    return runs


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """The working folder holds ``evil_run_folder.py`` (on ``sys.path``); returns the marker it would make."""
    marker = tmp_path / "IMPORTED"
    (tmp_path / f"{MODULE}.py").write_text(
        f"import os\nopen({str(marker)!r}, 'w').close()\nos.environ['EVIL_RUN_FOLDER'] = '1'\n"
        "import gymnasium\ngymnasium.register('Evil-v0', entry_point='gymnasium.envs.classic_control:CartPoleEnv')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(ALLOW_IMPORT, raising=False)
    monkeypatch.delenv("EVIL_RUN_FOLDER", raising=False)
    yield marker
    sys.modules.pop(MODULE, None)


def never_imported(marker):
    assert not marker.exists() and "EVIL_RUN_FOLDER" not in os.environ and MODULE not in sys.modules


def crafted(tmp_path, run, **changes):
    """A copy of ``run`` whose config.json says ``changes``."""
    folder = tmp_path / f"crafted-{len(list(tmp_path.iterdir()))}"
    shutil.copytree(run, folder)
    data = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**data, **changes}))
    return folder


NAMES = (f"{MODULE}:Thing", f"gymnasium:{MODULE}:Evil-v0")  # an import path; Gymnasium's module:ID form


def string_fields(cls):
    return [f.name for f in dataclasses.fields(cls)]


@pytest.mark.parametrize("kind, cls", [("train", RunConfig), ("rl", RLConfig), ("gym", RLConfig)])
def test_no_field_of_a_run_folder_imports_code_the_user_did_not_name(finished, tmp_path, planted, capsys, kind, cls):
    """Every field of the configuration (those that can name code: cell, env, method, task; and any other, so a
    field added later is covered too), given each way of naming a module: ``rtrl resume`` refuses or runs without
    importing it, ``rtrl plot`` reads the metrics and imports nothing, ``rtrl train/rl --out`` onto the folder reads
    it back without importing it. [``env_import`` returning None: the env rows import the module at resume and plot;
    plot assembling the run: the cell rows import it at plot]"""
    command = ["train", "--task-arg", "max_length=2"] if kind == "train" else ["rl", "--env-arg", "length=2"]
    command += "--hidden 3 --steps 2 --eval-size 4 --quiet".split() if kind == "train" else \
        "--hidden 3 --steps 2 --envs 2 --record-every 2 --quiet".split()
    for field in string_fields(cls):
        for value in NAMES:
            folder = crafted(tmp_path, finished[kind], **{field: value})
            main(["resume", str(folder), "--quiet", "--steps", "8"])
            never_imported(planted)
            main(["plot", str(folder), "--out", str(tmp_path / "p.png")])
            never_imported(planted)
            main([*command, "--out", str(folder)])
            never_imported(planted)
            with pytest.raises(ValueError):
                Run.open(folder)
            never_imported(planted)
    capsys.readouterr()


@pytest.mark.parametrize("field, value", [("cell", f"{MODULE}:Thing"), ("env", f"gymnasium:{MODULE}:Evil-v0")])
def test_a_folder_naming_code_says_how_to_allow_it_and_plots(finished, tmp_path, planted, capsys, field, value):
    """The refusal is one line naming the field and the flag that allows it; ``rtrl plot`` of the same folder works
    (it reads only the metrics). [``check_allowed`` not called for the env: resume exits 0 having imported it]"""
    folder = crafted(tmp_path, finished["train" if field == "cell" else "gym"], **{field: value})
    path = value.removeprefix("gymnasium:")
    assert main(["resume", str(folder), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"--allow-import {path}" in err and field in err and len(err.strip().splitlines()) == 1, err
    assert main(["plot", str(folder), "--out", str(tmp_path / "p.png")]) == 0, capsys.readouterr().err
    assert (tmp_path / "p.png").stat().st_size > 0
    never_imported(planted)


def test_an_environment_the_user_allows_is_imported(finished, tmp_path, planted, capsys, monkeypatch):
    """``--allow-import MODULE:ID`` (or the environment variable, or naming it again with ``rtrl rl --env``) lets the
    folder's ``gymnasium:MODULE:ID`` be made: the module is imported then, and only then. [``allowed`` ignoring the
    command line: exit 2]"""
    folder = crafted(tmp_path, finished["gym"], env=f"gymnasium:{MODULE}:Evil-v0")
    assert main(["resume", str(folder), "--quiet", "--steps", "4", "--allow-import", "other:Thing"]) == 2
    never_imported(planted)
    assert main(["resume", str(folder), "--quiet", "--steps", "6", "--allow-import", f"{MODULE}:Evil-v0"]) == 0, \
        capsys.readouterr().err
    assert planted.exists()
    planted.unlink()
    with allowed_imports([f"{MODULE}:Evil-v0"]):
        assert read_config(folder).env == f"gymnasium:{MODULE}:Evil-v0"
    monkeypatch.setenv(ALLOW_IMPORT, f"x:y, {MODULE}:Evil-v0")
    assert read_config(folder).env == f"gymnasium:{MODULE}:Evil-v0"


def test_runs_of_the_projects_own_factories_resume_and_plot(tmp_path, capsys, monkeypatch):
    """A run of ``rtrl.cells.network:lru_network`` (what the presets copy20, recall50 and mnist1d-deep name) resumes
    and plots with no flag: rtrl's own factory is trusted; another function of rtrl.cells is not. [``is_trusted``
    without ``cell_factory``: resume exits 2]"""
    from rtrl.cells import lookup
    from rtrl.training.presets import PRESETS

    monkeypatch.delenv(ALLOW_IMPORT, raising=False)
    named = {PRESETS[name].options["cell"] for name in ("copy20", "recall50", "mnist1d-deep")}
    assert named == {"rtrl.cells.network:lru_network"}
    assert lookup.importable("rtrl.cells.network:lru_network")
    assert not lookup.importable("rtrl.cells.network:block_name") and not lookup.importable("rtrl.cells:stability")
    run = tmp_path / "net"
    Run.create(run, {**TINY, "cell": "rtrl.cells.network:lru_network", "cell_args": {"depth": 1}, "hidden": 2})
    assert main(["resume", str(run), "--quiet"]) == 0, capsys.readouterr().err
    assert main(["resume", str(run), "--quiet", "--steps", "4"]) == 0, capsys.readouterr().err
    assert main(["plot", str(run), "--out", str(tmp_path / "p.png")]) == 0, capsys.readouterr().err


# -- files that are redirected, damaged or not files --------------------------------------------------------------
def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and not p.is_symlink()}


@pytest.mark.parametrize("name", ["metrics.jsonl", "checkpoint.npz", "config.json"])
def test_a_run_file_that_is_a_link_into_another_run_is_refused(finished, tmp_path, capsys, name):
    """A link is never followed: ``resume`` would have appended this run's history to the other run's
    metrics.jsonl. One line naming the file, exit 2, neither run changed. [``check_own_files`` not called:
    the metrics row resumes and the other run's history grows]"""
    other = crafted(tmp_path, finished["train"])
    run = crafted(tmp_path, finished["train"])
    (run / name).unlink()
    (run / name).symlink_to(other / name)
    before = snapshot(tmp_path)
    for command in (["resume", str(run), "--steps", "8", "--quiet"],
                    ["plot", str(run), "--out", str(tmp_path / "p.png")]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "symbolic link" in err[0] and name in err[0], err
    assert snapshot(tmp_path) == before


def test_a_named_pipe_as_a_checkpoint_or_a_plot_does_not_block(finished, tmp_path, capsys):
    """A FIFO is refused by its type before it is opened (opening one blocks until a writer comes).
    [``check_own_files`` / ``check_plot_out`` opening it: the test hangs]"""
    run = crafted(tmp_path, finished["train"])
    (run / "checkpoint.npz").unlink()
    os.mkfifo(run / "checkpoint.npz")
    assert main(["resume", str(run), "--steps", "8", "--quiet"]) == 2
    assert "checkpoint.npz is not a regular file" in capsys.readouterr().err
    os.mkfifo(tmp_path / "f.png")
    assert main(["plot", str(finished["train"]), "--out", str(tmp_path / "f.png")]) == 2
    assert "f.png exists and is not a regular file" in capsys.readouterr().err


RECORD_ROWS = [
    ('{"step": true, "loss": 1.0, "metric": 0.5, "wall_s": 1.0}', "its step is True"),
    ('{"step": -4, "loss": 1.0, "metric": 0.5, "wall_s": 1.0}', "its step is -4"),
    ('{"step": 2.0, "loss": 1.0, "metric": 0.5, "wall_s": 1.0}', "its step is 2.0"),
    ('{"step": 2, "loss": 1.0, "metric": 0.5, "wall_s": 1.0}', "step 2 does not come after step 2"),
    ('{"step": 1, "loss": 1.0, "metric": 0.5, "wall_s": 1.0}', "step 1 does not come after step 2"),
    ('{"step": 4, "loss": 1.0, "metric": "high", "wall_s": 1.0}', "its metric is 'high'"),
    ('{"step": 4, "loss": 1.0, "metric": [1, 2], "wall_s": 1.0}', "its metric is [1, 2]"),
    ('{"step": 4, "loss": 1.0, "metric": 0.5, "metric_per_seed": [1, "a"]}', "its metric_per_seed is [1, 'a']"),
    ('{"step": 4, "loss": 1.0, "metric": 0.5, "metric_per_seed": 0.5}', "its metric_per_seed is 0.5"),
    ('{"step": 4, "loss": 1.0, "metric": 0.5, "wall_s": false}', "its wall_s is False"),
    ('[4, 1.0]', "not an object"),
]


@pytest.mark.parametrize("line, words", RECORD_ROWS, ids=[w for _, w in RECORD_ROWS])
def test_a_record_a_run_would_not_write_is_named_by_file_and_line(finished, tmp_path, capsys, line, words):
    """Appended after the last record (followed by a newline, so not a torn line): ``resume`` and ``plot`` each
    refuse with one line naming metrics.jsonl, the line and what is wrong; nothing changes. [``check_record``
    accepting bools as steps / not comparing with the step before / not checking values: the rows are accepted,
    and the list-valued metric crashes plot]"""
    run = crafted(tmp_path, finished["train"])
    with open(run / "metrics.jsonl", "a") as f:
        f.write(line + "\n")
    n = len((run / "metrics.jsonl").read_text().splitlines())
    before = snapshot(run)
    for command in (["resume", str(run), "--steps", "8", "--quiet"],
                    ["plot", str(run), "--out", str(tmp_path / "p.png")]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"metrics.jsonl line {n} is damaged" in err[0] and words in err[0], err
    assert snapshot(run) == before


def test_records_out_of_order_are_named_not_taken_for_a_truncated_history(finished, tmp_path, capsys):
    run = crafted(tmp_path, finished["train"])
    lines = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("".join(reversed(lines)))
    assert main(["plot", str(run), "--out", str(tmp_path / "p.png")]) == 2
    assert "line 2 is damaged (its step 0 does not come after step 2" in capsys.readouterr().err


def test_a_full_disk_names_the_file(finished, tmp_path, capsys, monkeypatch):
    """``write`` and ``fsync`` say only "No space left on device": the error names the file being written, in an
    atomic write (checkpoint, config, plot) and in the metrics append, and the command says it in one line.
    [``naming`` removed: the message names no file]"""
    import errno

    from rtrl import files

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    run = tmp_path / "run"
    Run.create(run, TINY)
    monkeypatch.setattr(files.os, "fsync", full)
    with pytest.raises(OSError) as caught:
        files.atomic_write_text(tmp_path / "x.json", "{}")
    assert caught.value.filename == str(tmp_path / "x.json") and not list(tmp_path.glob(".x.json*"))
    assert main(["resume", str(run), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "No space left on device" in err[-1] and str(run) in err[-1], err
