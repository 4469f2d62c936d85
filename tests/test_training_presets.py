"""Presets: named run configurations that rtrl train runs, with options beside them overriding theirs."""

import json
import math

import pytest

from rtrl.cells import LRU, Network
from rtrl.cli import main
from rtrl.methods import LayerLocal
from rtrl.reports.training import with_section
from rtrl.training.assemble import assemble
from rtrl.training.config import RunConfig
from rtrl.training.presets import EXPERIMENTS, PRESETS


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_is_a_valid_run_configuration(name):
    task, cell, method = assemble(RunConfig(**PRESETS[name].options))[1:]
    assert task.name == PRESETS[name].options["task"]


def test_copy20_is_online_rtrl_on_patterns_of_up_to_20_bits():
    config, task, cell, method = assemble(RunConfig(**PRESETS["copy20"].options))
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


def test_every_row_of_the_results_tables_is_a_preset_and_the_table_names_it():
    for experiment in EXPERIMENTS:
        for row in experiment.rows:
            name = experiment.preset_name(row)
            assert PRESETS[name].options == experiment.options(row)
    assert len(PRESETS) == sum(len(e.rows) for e in EXPERIMENTS)  # no two rows share a name
    config = assemble(RunConfig(**PRESETS["recall50/lru_network-bptt-k10"].options)).config
    assert config.update_every == 10 and config.task_args["delay"] == 50 and config.method == "bptt"


def test_a_results_section_is_replaced_in_place_and_the_text_around_it_kept():
    page = "# Results\n\nintro\n"
    page = with_section(page, "copy", "table A")
    page = with_section(page, "recall", "table B")
    page = page.replace("\n<!-- results:recall", "\nReading of copy.\n\n<!-- results:recall")
    page = with_section(page, "copy", "table A2\n")
    assert page.startswith("# Results\n\nintro\n") and page.index("table A2") < page.index("Reading of copy.")
    assert "table A\n" not in page and page.count("table B") == 1 and page.count("<!-- results:copy -->") == 1


@pytest.mark.parametrize("task", ["evidence", "store_recall", "manifolds"])
def test_each_spiking_task_has_exact_rtrl_eprop_and_bptt_on_a_recurrent_spiking_cell(task):
    experiment = next(e for e in EXPERIMENTS if e.name == task)
    assert experiment.config["task"] == task and not experiment.long
    assert [(row.method, row.update_every) for row in experiment.rows] == [("auto", 1), ("eprop", 1), ("bptt", None)]
    for row in experiment.rows:
        cell = assemble(RunConfig(**{**experiment.options(row), "hidden": 4}))[2]
        assert cell.name in ("LIF", "ALIF") and cell.recurrent  # memory beyond the membrane's time constant


def test_a_spiking_row_trains(tmp_path):
    """A smoke run of one spiking row (two steps): the preset is a run the trainer takes end to end."""
    out = tmp_path / "run"
    assert main(["train", "--preset", "store_recall/alif-eprop", "--hidden",
                 "4", "--batch", "2", "--steps", "2", "--eval-every", "2", "--eval-size", "4", "--out", str(out),
                 "--quiet"]) == 0
    assert json.loads((out / "config.json").read_text())["method"] == "eprop"


def test_the_eprop_paper_evidence_presets_are_its_network_and_task():
    """``evidence-eprop-paper/alif-{rtrl,eprop,bptt}``: the official code's 100 neurons (50 LIF, 50 ALIF; tau_m 20
    ms, tau_a 2,000 ms at 1 ms a step; threshold 0.6; beta 1.7 (1 - rho) / (1 - leak); its triangle
    pseudo-derivative; 5 ms refractory), 40 Poisson inputs, trials of 2,250 steps, batches of 64, one update per
    batch; the regulariser weighed against the task's loss as the paper weighs it."""
    methods = {}
    for method in ("rtrl", "eprop", "bptt"):
        config, task, cell, _ = assemble(RunConfig(**PRESETS[f"evidence-eprop-paper/alif-{method}"].options))
        assert (task.name, task.input_size, task.length, task.recall_steps) == ("evidence_poisson", 40, 2250, 150)
        assert (cell.name, cell.hidden_size, cell.lif_neurons, cell.recurrent) == ("ALIF", 100, 50, True)
        assert cell.leak == pytest.approx(0.951229, abs=1e-6) and cell.adaptation_decay == pytest.approx(0.9995)
        assert cell.adaptation == pytest.approx(1.7 * 0.0005 / 0.04877, rel=1e-3) and cell.threshold == 0.6
        assert (cell.surrogate, cell.surrogate_scale, cell.surrogate_height) == ("triangle", 1 / 0.6, 0.5)
        assert cell.refractory == 5
        assert config.batch == 64 and config.lr == 5e-3 and config.steps == 2000 * 2250
        assert config.readout_decay == pytest.approx(0.951229, abs=1e-6)  # tau_out 20 ms
        # reg_f 1 at 10 Hz against the cross-entropy averaged over the recall window: 150 against its sum here
        assert (config.rate_weight, config.rate_target) == (1.0 * task.recall_steps, 0.01)
        methods[method] = (config.method, config.update_every)
    assert methods == {"rtrl": ("auto", 2250), "eprop": ("eprop", 2250), "bptt": ("bptt", 2250)}  # bptt: the episode


def test_the_store_recall_presets_are_the_lsnn_tutorials_task_and_readout():
    """``store-recall-eprop-paper/alif-{rtrl,eprop,bptt}``: 100 inputs, 12 symbols of 200 ms, delay 6; 100 neurons of
    which 40 adapt (tau_a 1,200 ms), 3 ms refractory; the readout filtered with tau_out 20 ms, the regulariser 0.01
    at 10 Hz; batches of 128, one update per trial."""
    methods = {}
    for method in ("rtrl", "eprop", "bptt"):
        config, task, cell, _ = assemble(RunConfig(**PRESETS[f"store-recall-eprop-paper/alif-{method}"].options))
        assert (task.name, task.input_size, task.length, task.delay) == ("store_recall_poisson", 100, 2400, 6.0)
        assert (cell.hidden_size, cell.lif_neurons, cell.refractory) == (100, 60, 3)
        assert cell.adaptation_decay == pytest.approx(math.exp(-1 / 1200))
        assert config.readout_decay == pytest.approx(math.exp(-1 / 20))
        assert (config.rate_weight, config.rate_target, config.batch, config.lr) == (0.01, 0.01, 128, 0.01)
        methods[method] = (config.method, config.update_every)
    assert methods == {"rtrl": ("auto", 2400), "eprop": ("eprop", 2400), "bptt": ("bptt", 2400)}
