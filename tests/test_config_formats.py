"""Run folders of every released format load: a ``config.json`` written by an older rtrl, typed out here by hand
(not derived from today's ``to_dict``), reads back with each newer option at the default that reproduces what the
older run did (``rtrl.config.ADDED_KEYS``); an option that every format has is still required."""

from __future__ import annotations

import json
import re

import pytest

from rtrl.config import ADDED_KEYS
from rtrl.rl.config import RLConfig
from rtrl.training.config import RunConfig

# an RL run's config.json as each release wrote it, newest first (the platform keys beside the options)
# the anchor's agent on Hopper as a run folder held it before --td-refresh (the options it never read left out)
RL_BEFORE_TD_REFRESH = {
    "env": "gymnasium:Hopper-v4", "env_args": {"actions": "clip", "mask": "P"}, "algorithm": "ac", "cell": "rtu",
    "cell_args": {"output_map": "concat", "r_max": 0.999, "r_min": 0.0}, "hidden": 384, "method": "auto",
    "head_hidden": 0, "envs": 1, "steps": 2000000, "gamma": 0.99, "lam": 0.99, "head_init": "sparse",
    "encoder_blocks": 2, "encoder_width": 128, "split_torso": False, "critic_network": True,
    "init_std": 0.6931471805599453, "state_std": True, "std_map": "softplus", "entropy": 0.01, "entropy_sign": "td",
    "value_coef": 1.0, "optimizer": "intentional", "lr": 0.05, "critic_lr": 0.5, "extra_inputs": ["time"],
    "normalize_obs": True, "scale_rewards": True, "update_every": 1, "health_every": 16, "record_every": 100000,
    "fidelity_every": 100000, "seed": 4, "seeds": 1, "dtype": "float32", "devices": 1, "backend": "cpu",
    "device": "cpu"}
RL_BEFORE_SPLIT_TORSO = {  # --critic-lr, before --split-torso, --init-std and --state-std
    "env": "tmaze", "env_args": {}, "algorithm": "ac", "cell": "elman", "cell_args": {}, "hidden": 3,
    "method": "auto", "truncation": 8, "head_hidden": 0, "envs": 2, "steps": 8, "gamma": 0.9, "lam": 0.8,
    "epsilon": 0.01, "explore_steps": 10000, "h_lr": 1e-05, "h_beta": 1.0, "entropy": 0.01, "value_coef": 1.0,
    "optimizer": "adam", "lr": 0.001, "critic_lr": None, "kappa": 2.0, "clip": 1.0, "extra_inputs": False,
    "normalize_obs": True, "scale_rewards": True, "update_every": 1, "health_every": 16, "record_every": 4,
    "fidelity_every": 0, "seed": 0, "seeds": 1, "dtype": "float32", "devices": 1, "backend": "cpu", "device": "cpu"}
# --split-torso, --init-std and --state-std, before the anchor's agent options (--entropy-sign, --encoder-blocks, ...)
RL_BEFORE_ANCHOR_AGENT = {**RL_BEFORE_SPLIT_TORSO, "split_torso": False, "init_std": 1.0, "state_std": False,
                          "extra_inputs": []}
RL_BEFORE_CRITIC_LR = {k: v for k, v in RL_BEFORE_SPLIT_TORSO.items() if k != "critic_lr"}
RL_BEFORE_HEAD_HIDDEN = {k: v for k, v in RL_BEFORE_CRITIC_LR.items() if k != "head_hidden"}
RL_FIRST = {  # the first RLConfig: one algorithm (ac), one seed, no extra inputs, no health samples
    "env": "tmaze", "env_args": {}, "cell": "elman", "cell_args": {}, "hidden": 3, "method": "auto",
    "truncation": 8, "envs": 2, "steps": 8, "gamma": 0.9, "lam": 0.8, "entropy": 0.01, "value_coef": 1.0,
    "optimizer": "adam", "lr": 0.001, "kappa": 2.0, "clip": 1.0, "normalize_obs": True, "scale_rewards": True,
    "update_every": 1, "record_every": 4, "fidelity_every": 0, "seed": 0, "dtype": "float32", "devices": 1}
TRAIN_FIRST = {  # RunConfig before --devices, --trace-dtype and the readout's decay and rate penalty
    "task": "copy", "task_args": {}, "cell": "elman", "cell_args": {}, "hidden": 4, "method": "auto",
    "method_args": {}, "batch": 2, "update_every": None, "optimizer": "adam", "lr": 0.001, "clip": 1.0, "steps": 8,
    "eval_every": None, "eval_size": 4, "stagger": False, "seed": 0}


@pytest.mark.parametrize("written", [RL_BEFORE_ANCHOR_AGENT, RL_BEFORE_SPLIT_TORSO, RL_BEFORE_CRITIC_LR,
                                     RL_BEFORE_HEAD_HIDDEN, RL_FIRST],
                         ids=["before-anchor-agent", "before-split-torso", "before-critic-lr", "before-head-hidden",
                              "first"])
def test_an_rl_config_json_of_each_released_format_reads_with_the_old_behaviour(written):
    data = {k: v for k, v in written.items() if k not in ("backend", "device")}
    config = RLConfig.from_dict(data, complete=True)
    assert (config.gamma, config.hidden, config.record_every) == (0.9, 3, 4)  # what the file says
    assert (config.critic_lr, config.split_torso, config.init_std, config.state_std) == (None, False, 1.0, False)
    assert (config.algorithm, config.seeds, config.head_hidden, config.extra_inputs) == ("ac", 1, 0, ())
    assert (config.entropy_sign, config.encoder_blocks, config.head_init, config.std_map) == ("positive", 0, "glorot",
                                                                                             "exp")
    assert config.td_refresh is False


def test_an_rl_config_json_from_before_td_refresh_reads_as_the_value_acted_on():
    """The anchor's agent as its run folder held it (seed 4 of docs/rl-control.md's table): it read ``V(s_t)`` as
    acted on, so ``td_refresh`` reads back off, and the rest as the file says."""
    data = {k: v for k, v in RL_BEFORE_TD_REFRESH.items() if k not in ("backend", "device")}
    config = RLConfig.from_dict(data, complete=True)
    assert config.td_refresh is False
    assert (config.critic_network, config.entropy_sign, config.lr, config.seed) == (True, "td", 0.05, 4)


def test_a_training_config_json_of_the_first_format_reads_with_the_old_behaviour():
    config = RunConfig.from_dict(TRAIN_FIRST, complete=True)
    assert (config.hidden, config.batch, config.devices, config.trace_dtype) == (4, 2, 1, None)
    assert (config.readout_decay, config.rate_weight) == (0.0, 0.0)


@pytest.mark.parametrize("option", ["gamma", "lr", "env"])
def test_an_option_every_format_has_is_still_required(option):
    data = {k: v for k, v in RL_FIRST.items() if k != option}
    with pytest.raises(ValueError, match=re.escape(f"lacks options ['{option}']")):
        RLConfig.from_dict(data, complete=True)
    assert option not in ADDED_KEYS


def test_an_rl_run_folder_written_before_critic_lr_loads_evaluates_and_resumes(tmp_path, capsys):
    """The whole folder, not only its config: a run trained now whose config.json is then replaced by the older
    format's (the same run: every option it lacks is at its default) is loaded, scored and resumed."""
    import rtrl
    from rtrl.cli import main

    out = tmp_path / "run"
    assert main(["rl", "--env", "tmaze", "--cell", "elman", "--hidden", "3", "--envs", "2", "--steps", "8",
                 "--gamma", "0.9", "--record-every", "4", "--quiet", "--out", str(out)]) == 0
    (out / "config.json").write_text(json.dumps(RL_BEFORE_CRITIC_LR))
    trained = rtrl.load(out)
    assert trained.step == 8 and trained.config.critic_lr is None
    assert main(["eval", str(out), "--episodes", "2"]) == 0
    assert main(["resume", str(out), "--steps", "12", "--quiet"]) == 0
    assert json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])["step"] == 12
