"""The ``rtrl`` command: a run folder from ``train``, ``resume``, ``plot``, ``list``; bad input and divergence
exit non-zero with one line and no traceback."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import pytest

from poison import poisoned_adam
from rtrl.cells import CELLS
from rtrl.cells.base import Cell
from rtrl.cli import COMMANDS, main
from rtrl.cli.demo import CONFIG as DEMO
from rtrl.methods import METHODS
from rtrl.run import checkpoint
from rtrl.run import folder as runs
from rtrl.run.folder import read_metrics
from rtrl.training import assemble as assembly
from rtrl.training.assemble import assemble
from rtrl.training.config import RunConfig
from rtrl.training.tasks import TASKS

# the configuration of tests/test_run_checkpoint.py, so that the compiled trainer is shared
TINY = "--task copy --task-arg max_length=2 --cell elman --hidden 3 --method closed_form --batch 2 --lr 0.05 "
TINY += "--eval-every 4 --eval-size 8 --quiet"


def rtrl(*args) -> list[str]:
    return [a for part in args for a in str(part).split()]


def one_line_error(capsys, code, expected):
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtrl") and expected in lines[0], err
    return lines[0]


def test_list_names_every_task_cell_and_method_on_one_line_each(capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for names in (TASKS, CELLS, METHODS):
        for name in names:
            assert sum(line.split()[0] == name for line in lines
                       if line.startswith("  ") and not line.startswith("   ")) == 1, name  # not a wrapped line
    assert {"tasks:", "cells:", "methods:"} <= set(lines)


def test_train_writes_the_run_folder_and_resume_continues_it(tmp_path, capsys):
    out = tmp_path / "a"
    assert main(rtrl("train", TINY, "--steps 8 --out", out)) == 0
    stdout = capsys.readouterr().out
    assert f"plot: {out / 'curve.png'}" in stdout and "token_accuracy" in stdout
    assert {p.name for p in out.iterdir()} == {"config.json", "metrics.jsonl", "checkpoint.npz", "curve.png", ".lock"}
    config = json.loads((out / "config.json").read_text())
    assert config["method"] == "closed_form" and config["update_every"] == 1 and config["steps"] == 8
    records = read_metrics(out)
    assert [r["step"] for r in records] == [0, 4, 8]
    assert all({"step", "loss", "metric", "wall_s"} <= set(r) for r in records)

    assert main(rtrl("resume", out, "--steps 12 --quiet")) == 0
    assert [r["step"] for r in read_metrics(out)] == [0, 4, 8, 12]
    assert json.loads((out / "config.json").read_text())["steps"] == 12

    # the same command again continues the run in place (it is finished: nothing more to do)
    assert main(rtrl("train", TINY, "--steps 12 --out", out)) == 0
    assert [r["step"] for r in read_metrics(out)] == [0, 4, 8, 12]

    assert main(rtrl("plot", out, out, "--out", tmp_path / "cmp.png")) == 0
    assert (tmp_path / "cmp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # a config edited by hand no longer fits the checkpoint: one line, not a traceback
    capsys.readouterr()
    config["hidden"] = 4
    (out / "config.json").write_text(json.dumps(config))
    one_line_error(capsys, main(rtrl("resume", out, "--quiet")), "expects")


@dataclasses.dataclass(frozen=True)
class Untraced(Cell):
    """A cell without hand-derived traces."""

    def init(self, key, dtype=None):
        return {"W": jnp.zeros((self.input_size, self.hidden_size), dtype or jnp.zeros(()).dtype)}

    def step(self, params, carry, x):
        h = jnp.tanh(x @ params["W"] + carry)
        return h, h


@pytest.mark.parametrize(
    "argv, expected",
    [
        ("train --task nope", "argument --task: must be one of"),
        ("train --cell nope", "argument --cell: must be one of"),
        ("train --method nope", "argument --method: must be one of"),
        ("train --cell untraced --method closed_form", "needs hand-derived traces"),
        ("train --hidden -3", "argument --hidden: must be a positive integer"),
        ("train --batch 0", "argument --batch"),
        ("train --steps -5", "argument --steps"),
        ("train --lr -1", "argument --lr"),
        ("train --task-arg max_length=-1", "max_length must be a positive integer"),
        ("train --task-arg length", "expects KEY=VALUE"),
        ("train --task-arg nope=1", "has no option ['nope']"),
        ("train --method bptt --stagger", "stagger needs a trace method"),
        ("train --optimizer adagrad", "argument --optimizer: must be one of"),
    ],
)
def test_bad_train_input_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, argv, expected):
    monkeypatch.setitem(CELLS, "untraced", Untraced)
    out = tmp_path / "run"
    code = main(rtrl(argv, "--out", out, "--quiet"))
    one_line_error(capsys, code, expected)
    assert not out.exists()


def test_an_out_holding_a_different_run_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    runs.Run.create(out, {"task": "recall", "hidden": 4, "task_args": {"delay": 2, "episode_length": 4}})
    recall = "--task recall --task-arg delay=2 --task-arg episode_length=4"
    code = main(rtrl("train", recall, "--hidden 5 --quiet --out", out))
    one_line_error(capsys, code, "holds a different run (differs in hidden)")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    code = main(rtrl("train --quiet --out", tmp_path / "other"))
    one_line_error(capsys, code, "is not a run folder")


@pytest.mark.parametrize(
    "argv, expected",
    [
        ("resume {tmp}/missing", "holds no run"),
        ("plot {tmp}/missing --out {tmp}/x.png", "holds no run"),
        ("bogus", "invalid choice"),
        ("", "required"),
    ],
)
def test_other_bad_input_is_one_line(tmp_path, capsys, argv, expected):
    one_line_error(capsys, main(rtrl(argv.format(tmp=tmp_path))), expected)


def test_budgets_round_up_to_whole_updates():
    config = assemble(RunConfig(update_every=3, steps=10, eval_every=4)).config
    assert (config.steps, config.eval_every) == (12, 6)
    config = assemble(RunConfig(method="bptt", task="copy", task_args={"max_length": 2}, steps=11)).config
    assert config.update_every == 5 and config.steps == 15  # bptt: windows of whole episodes


def test_the_demo_is_exact_online_rtrl_of_the_element_wise_lstm():
    _, cell, method = assemble(DEMO)[1:]
    assert method.online and method.exact and DEMO.update_every == 1 and cell.name == "ELSTM"


def test_subcommands_are_a_table():
    assert {"train", "resume", "plot", "list", "demo"} <= set(COMMANDS)


def test_a_diverging_run_stops_naming_the_step_and_keeps_the_last_good_checkpoint(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(assembly, "make_optimizer", lambda name, lr, clip: poisoned_adam(at_update=6))
    out = tmp_path / "run"
    code = main(rtrl("train", TINY, "--seed 1 --steps 12 --out", out))
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert "the training loss became nan at step 7" in err and "last good checkpoint (step 4)" in err
    assert [r["step"] for r in read_metrics(out)] == [0, 4]
    template = jax.tree.map(jnp.zeros_like, assemble(runs.read_config(out)).trainer().init())
    state, meta = checkpoint.load(out / "checkpoint.npz", template)
    assert meta["step"] == 4 and int(state.step) == 4
    assert all(bool(jnp.isfinite(a).all()) for a in jax.tree.leaves(state.params))
    assert (out / "curve.png").is_file()


@pytest.mark.parametrize("module", ["rtrl", "rtrl.cli"])  # the README's `python -m rtrl`, the Makefile's rtrl.cli
def test_python_dash_m_runs_the_command(module):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", module, "bench", "--frobnicate"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "unrecognized arguments: --frobnicate" in done.stderr
    assert "Traceback" not in done.stderr


def test_redirected_output_is_one_line_per_record_and_no_bar(tmp_path, capsys, monkeypatch):
    """Standard error not a terminal (pytest's capture, like a log file): no tqdm redraws (carriage returns), one
    ``step N: ...`` line per record on standard output; on a terminal, the bar and no such lines; --quiet neither."""
    quiet_free = TINY.replace(" --quiet", "")
    assert main(rtrl("train", quiet_free, "--steps 8 --out", tmp_path / "a")) == 0
    captured = capsys.readouterr()
    assert "\r" not in captured.err
    assert [line.split(":")[0] for line in captured.out.splitlines() if line.startswith("step ")] == \
        ["step 0", "step 4", "step 8"]
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    assert main(rtrl("train", quiet_free, "--steps 8 --out", tmp_path / "b")) == 0
    captured = capsys.readouterr()
    assert "\r" in captured.err and not any(line.startswith("step ") for line in captured.out.splitlines())
    assert main(rtrl("train", TINY, "--steps 8 --out", tmp_path / "c")) == 0
    captured = capsys.readouterr()
    assert "\r" not in captured.err and not any(line.startswith("step ") for line in captured.out.splitlines())
