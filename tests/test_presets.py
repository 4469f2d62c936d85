"""Presets: named run configurations that rtrl train runs, with options beside them overriding theirs."""

import json

import pytest

from rtrl.cells import LRU, Network
from rtrl.cli import main
from rtrl.methods import LayerLocal
from rtrl.training.config import RunConfig
from rtrl.training.presets import PRESETS


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_is_a_valid_run_configuration(name):
    task, cell, method = RunConfig(**PRESETS[name].options).parts()
    assert task.name == PRESETS[name].options["task"]


def test_copy20_is_online_rtrl_on_patterns_of_up_to_20_bits():
    config = RunConfig(**PRESETS["copy20"].options).resolved()
    task, cell, method = config.parts()
    assert task.max_length == 20 and config.update_every == 1
    assert isinstance(cell, Network) and all(isinstance(layer, LRU) for layer in cell.layers)
    assert method == LayerLocal(inner="closed_form")


def test_rtrl_train_runs_a_preset_and_options_override_it(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--preset", "copy5", "--hidden", "4", "--batch", "2", "--steps", "4", "--eval-every", "2",
                 "--eval-size", "4", "--task-arg", "max_length=2", "--out", str(out), "--quiet"]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["cell"] == "elman" and config["method"] == "closed_form" and config["lr"] == 3e-3  # the preset's
    assert config["hidden"] == 4 and config["task_args"] == {"max_length": 2} and config["steps"] == 4  # given
    capsys.readouterr()
    assert main(["list"]) == 0
    assert "copy20" in capsys.readouterr().out


def test_an_unknown_preset_exits_2(tmp_path, capsys):
    assert main(["train", "--preset", "copy99", "--out", str(tmp_path / "run")]) == 2
    assert "copy99" in capsys.readouterr().err
