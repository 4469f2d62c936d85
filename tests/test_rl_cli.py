"""``rtrl rl``: the run folder of ``rtrl train`` for the online actor-critic (config.json, metrics.jsonl, checkpoint,
curve.png), bit-exact resume after a stop, divergence, bad input, presets, ``rtrl list`` and ``rtrl plot``. Tiny
runs on the built-in T-maze (the bad options are rows of tests/test_cli_bad_input.py)."""

import dataclasses
import json
import pathlib
import re

import jax
import numpy as np
import pytest

from rtrl.cells import GRU
from rtrl.cli import main, parser
from rtrl.rl.assemble import assemble as rl_assemble
from rtrl.rl.config import RLConfig
from rtrl.rl.envs import ENVS
from rtrl.rl.loop import HEALTH, train
from rtrl.rl.presets import LONG_RUNS, PRESETS, ROW_OPTIONS, ROWS, TABLES
from rtrl.run import checkpoint
from rtrl.run.folder import CHECKPOINT, METRICS, read_config, read_metrics
from rtrl.run.options import config_from_args, options_table
from test_cli_bad_input import copy_run, edit_config, refused, remove

ROOT = pathlib.Path(__file__).resolve().parents[1]
TINY = "--env tmaze --env-arg length=2 --hidden 4 --envs 2 --record-every 20 --lam 0.5 --seed 3 --quiet"
CONFIG = RLConfig(env="tmaze", env_args={"length": 2}, hidden=4, envs=2, record_every=20, lam=0.5, seed=3)


def rl(*words) -> int:
    return main(["rl", *TINY.split(), *map(str, words)])


def without_wall(records):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in records]


def saved(path):
    """Every leaf of the run's checkpoint by its tree path, and the checkpoint's meta."""
    return checkpoint.read(path / CHECKPOINT)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished run of 100 steps (records at 20, 40, ..., 100), for the module."""
    path = tmp_path_factory.mktemp("rl") / "run"
    assert rl("--steps", 100, "--out", path) == 0
    return path


def test_rl_writes_the_run_folder_of_rtrl_train(finished):
    assert {p.name for p in finished.iterdir()} == {"config.json", "metrics.jsonl", "checkpoint.npz", "curve.png",
                                                    ".lock"}
    config = read_config(finished)
    assert config == dataclasses.replace(CONFIG, steps=100)
    assert json.loads((finished / "config.json").read_text())["env_args"] == {"length": 2}
    records = read_metrics(finished)
    assert [r["step"] for r in records] == [20, 40, 60, 80, 100]
    assert all(set(r) == {"step", "return", "episodes", "wall_s", *HEALTH} for r in records)
    assert all(r["episodes"] > 0 and -1 <= r["return"] <= 1 for r in records)
    assert [r["wall_s"] for r in records] == sorted(r["wall_s"] for r in records)
    state, expected = train(config)  # the same run in memory: the same records and the same final state
    assert without_wall(records) == without_wall(expected)
    arrays, meta = saved(finished)
    assert meta == {"step": 100, "wall_s": records[-1]["wall_s"]}
    named = checkpoint.named_leaves(state)
    assert set(arrays) == {name for name, _ in named}
    assert all(np.array_equal(arrays[name], jax.random.key_data(a) if checkpoint.is_key(a) else a)
               for name, a in named)
    assert (finished / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_stopped_run_resumes_to_the_uninterrupted_run_bit_for_bit(tmp_path, finished, capsys, monkeypatch):
    """Stopped by its budget off a record boundary (step 30), then by Ctrl-C between the metrics line of step 60 and
    its checkpoint; each resumption continues from the last checkpoint."""
    out = tmp_path / "run"
    assert rl("--steps", 30, "--out", out) == 0
    save = checkpoint.save

    def interrupted(path, tree, meta=None):
        if meta["step"] == 60:
            raise KeyboardInterrupt
        save(path, tree, meta)

    monkeypatch.setattr(checkpoint, "save", interrupted)
    assert main(["resume", str(out), "--steps", "100", "--quiet"]) == 130
    assert "continue from step 40 with: rtrl resume" in capsys.readouterr().out
    assert [r["step"] for r in read_metrics(out)] == [20, 30, 40, 60]  # the line of step 60 is past the checkpoint
    monkeypatch.setattr(checkpoint, "save", save)
    assert main(["resume", str(out), "--quiet"]) == 0

    records, whole = read_metrics(out), read_metrics(finished)
    assert [r["step"] for r in records] == [20, 30, 40, 60, 80, 100]
    # a record covers the steps since the previous one: all but those of steps 30 and 40 are the whole run's
    assert without_wall(records[:1] + records[3:]) == without_wall(whole[:1] + whole[2:])
    assert [r["wall_s"] for r in records] == sorted(r["wall_s"] for r in records)  # time spent before counts
    (arrays, meta), (reference, _) = saved(out), saved(finished)
    assert meta["step"] == 100 and arrays.keys() == reference.keys()
    assert all(np.array_equal(arrays[name], reference[name]) for name in reference), \
        [name for name in reference if not np.array_equal(arrays[name], reference[name])]


def test_a_diverging_run_exits_1_and_keeps_the_last_good_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    assert rl("--optimizer", "sgd", "--no-clip", "--lr", "1e6", "--record-every", 5, "--steps", 100,
              "--out", out) == 1
    err = capsys.readouterr().err
    match = re.search(r"rtrl: error: a parameter became (nan|-?inf) at step (\d+); run stopped. The last good "
                      r"checkpoint \(step (\d+)\) is kept", err)
    assert match and "Traceback" not in err, err
    diverged, kept = int(match.group(2)), int(match.group(3))
    records = read_metrics(out)
    assert 0 < kept < diverged and records[-1]["step"] == kept
    arrays, meta = saved(out)
    assert meta["step"] == kept and int(arrays[".step"]) == kept
    assert all(np.isfinite(a).all() for name, a in arrays.items() if name.startswith(".params"))
    assert (out / "curve.png").is_file()


def test_options_are_the_fields_of_rlconfig_and_a_preset_gives_the_rest():
    assert config_from_args(parser().parse_args(["rl", "--out", "x"]), RLConfig, PRESETS) == RLConfig()
    # every option given, in two runs (an option one algorithm or step rule reads is refused under another)
    argv = ("rl --env tmaze --env-arg length=3 --env-arg max_steps=9 --cell rtrl.cells:Elman --cell-arg "
            "activation=relu --hidden 5 --head-hidden 6 --method tbptt --truncation 3 --envs 4 --devices 2 "
            "--steps 7 --gamma 0.9 --lam 0 --entropy 0.5 --value-coef 2 --optimizer obgd "
            "--lr 0.5 --kappa 3 --extra-inputs --no-normalize-obs --no-scale-rewards --update-every 2 "
            "--record-every 4 --health-every 3 --seed 11 --seeds 2 --dtype float64 --fidelity-every 6 --out x").split()
    ac = RLConfig(env="tmaze", env_args={"length": 3, "max_steps": 9}, cell="rtrl.cells:Elman",
                  cell_args={"activation": "relu"}, hidden=5, head_hidden=6, method="tbptt",
                  truncation=3, envs=4, devices=2, steps=7, gamma=0.9, lam=0.0, entropy=0.5, value_coef=2.0,
                  optimizer="obgd", lr=0.5, kappa=3.0, extra_inputs=True, normalize_obs=False,
                  scale_rewards=False, update_every=2, health_every=3, record_every=4, seed=11, seeds=2,
                  dtype="float64", fidelity_every=6)
    assert config_from_args(parser().parse_args(argv), RLConfig, PRESETS) == ac
    argv = ("rl --algorithm qrc --epsilon 0.2 --explore-steps 5 --h-lr 0.01 --h-beta 0.5 --optimizer sgd --no-clip "
            "--out x").split()
    qrc = RLConfig(algorithm="qrc", epsilon=0.2, explore_steps=5, h_lr=0.01, h_beta=0.5, optimizer="sgd", clip=None)
    assert config_from_args(parser().parse_args(argv), RLConfig, PRESETS) == qrc
    argv = ("rl --optimizer intentional --lr 0.05 --critic-lr 0.5 --split-torso --init-std 0.5 --state-std "
            "--std-map softplus --entropy-sign td --encoder-blocks 2 --encoder-width 16 --head-init sparse "
            "--out x").split()
    split = RLConfig(optimizer="intentional", lr=0.05, critic_lr=0.5, split_torso=True, init_std=0.5, state_std=True,
                     std_map="softplus", entropy_sign="td", encoder_blocks=2, encoder_width=16, head_init="sparse")
    assert config_from_args(parser().parse_args(argv), RLConfig, PRESETS) == split
    networks = RLConfig(critic_network=True, td_refresh=True)  # split_torso's alternative (the agent refuses both)
    argv = "rl --critic-network --td-refresh --out x".split()
    assert config_from_args(parser().parse_args(argv), RLConfig, PRESETS) == networks
    # every option above is not a default
    assert {f.name: any(getattr(c, f.name) != getattr(RLConfig(), f.name) for c in (ac, qrc, split, networks))
            for f in dataclasses.fields(RLConfig)} == {f.name: f.name != "env" for f in dataclasses.fields(RLConfig)}
    argv = "rl --fidelity-every 5 --out x".split()
    assert config_from_args(parser().parse_args(argv), RLConfig, PRESETS) == RLConfig(fidelity_every=5)
    argv = "rl --preset memory-chain --hidden 8 --env-arg max_steps_in_episode=30 --method uoro --out x".split()
    config = config_from_args(parser().parse_args(argv), RLConfig, PRESETS)
    assert config == RLConfig(**{**PRESETS["memory-chain"].options, "hidden": 8, "method": "uoro",
                                 "env_args": {"memory_length": 20, "max_steps_in_episode": 30}})


def test_cell_takes_a_name_or_an_import_path_as_rtrl_train_does():
    config = RLConfig(env="tmaze", cell="rtrl.cells:GRU", hidden=3)
    gru = rl_assemble(RLConfig(env="tmaze", cell="gru", hidden=3)).agent.torso.cell
    assert rl_assemble(config).agent.torso.cell == gru == GRU(3, 3)
    assert RLConfig.from_dict(json.loads(json.dumps(config.to_dict())), complete=True) == config


def test_a_config_json_written_before_head_hidden_reads_with_its_default():
    """Round 5 added ``head_hidden``: a folder's config.json without it is a run of linear heads, not "a file not
    written by rtrl rl" (what it was told); a file lacking an older option is still refused."""
    written = RLConfig(env="tmaze", cell="elman", hidden=3).to_dict()
    del written["head_hidden"]
    assert RLConfig.from_dict(written, complete=True).head_hidden == 0
    del written["gamma"]
    with pytest.raises(ValueError, match=re.escape("lacks options ['gamma']")):
        RLConfig.from_dict(written, complete=True)


def test_a_config_json_written_before_split_torso_and_init_std_reads_with_their_defaults():
    """Round 6 added ``split_torso`` and ``init_std``: a run folder from before them (this round's own hopper-p runs
    included) is a run of shared heads and a starting spread of 1, and loads as one."""
    written = RLConfig(env="pendulum-p", cell="mingru", hidden=4).to_dict()
    del written["split_torso"], written["init_std"]
    config = RLConfig.from_dict(written, complete=True)
    assert (config.split_torso, config.init_std) == (False, 1.0)


def test_presets_exist_and_every_row_of_the_results_tables_is_one():
    assert {"cartpole-masked", "memory-chain"} <= set(PRESETS)
    for name, preset in PRESETS.items():
        config = RLConfig(**preset.options)  # valid (this builds the gymnax environment)
        table, row = ROWS[name]  # a method, or a variant of rtrl (memoryless: on a feed-forward torso)
        assert config.method == (ROW_OPTIONS[row]["method"] if row in ROW_OPTIONS else TABLES[table].exact
                                 if row == "rtrl" else row)
        assert (config.fidelity_every > 0) == (table not in LONG_RUNS)
        assert (config.cell == "feedforward") == (row == "memoryless")
    # the RL results pages (rl-results.md, and rl-control.md for continuous control): every table, each row a preset
    results = "\n".join((ROOT / "docs" / page).read_text() for page in ("rl-results.md", "rl-control.md"))
    rows = re.findall(r"^\| `([\w-]+)` \| ([\w-]+) \|", results, re.M)
    assert sorted(name for name, _ in rows) == sorted(PRESETS), "the tables' rows are not the presets"
    assert all(ROWS[name][1] == method for name, method in rows)
    for table in TABLES:
        assert f"### `{table}`" in results, table


def test_rtrl_list_shows_the_environments_and_the_rl_presets(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    envs = out[out.index("environments (rtrl rl):"):]
    envs = envs[:envs.index("\ncells:")].splitlines()[1:]
    named = [line for line in out.splitlines() if line.startswith("  ") and not line.startswith("   ")]  # not wraps
    forms = ["gymnasium:ID", "popgym:<Task><Easy|Medium|Hard>"]  # the forms any Gymnasium or POPGym name takes
    assert sorted(line.split()[0] for line in envs if line in named) == sorted([*ENVS, *forms])
    presets = out[out.index("presets (rtrl rl --preset NAME):"):].splitlines()[1:]
    presets = [line.split()[0] for line in presets if line in named]
    assert presets[:len(PRESETS)] == list(PRESETS)


def test_rtrl_plot_draws_an_rl_run(finished, tmp_path, capsys):
    out = tmp_path / "curves.png"
    assert main(["plot", str(finished), str(finished), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and capsys.readouterr().out.strip() == str(out)


def test_docs_cli_md_holds_the_current_rl_options_table():
    assert options_table(RLConfig) in (ROOT / "docs" / "cli.md").read_text(), \
        "regenerate the rtrl rl table in docs/cli.md from options_table(RLConfig)"


# -- an RL run folder's damaged files, and the other kind in --out (the setups of test_cli_bad_input) ------------
RL_RUN_DAMAGED = [
    ("resume {run}", edit_config(env_args={"corridor": 3}), "no option 'corridor'"),
    ("resume {run}", edit_config(method="bptt"), "needs whole episodes"),
    ("resume {run}", edit_config(gamma=2), "gamma must be a number in [0, 1]"),
    ("resume {run}", edit_config(env_args=[1]), "env_args must be an object of options"),
    ("resume {run}", edit_config(hidden=5), "the model expects"),
    ("resume {run}", edit_config(extra=1), "unknown options"),
    ("resume {run}", remove(CHECKPOINT), "checkpoint.npz is missing"),
    ("resume {run}", remove(METRICS), "no record of step 100"),
    ("train --out {run}", copy_run, "different run (differs in kind)"),
    ("rl {tiny} --hidden 5 --out {run}", copy_run, "different run (differs in hidden)"),
]


@pytest.mark.parametrize("command, setup, word", RL_RUN_DAMAGED,
                         ids=[f"{c} [{s.__name__}]" for c, s, _ in RL_RUN_DAMAGED])
def test_a_damaged_rl_run_is_refused_and_left_as_it_was(tmp_path, finished, capsys, command, setup, word):
    setup(tmp_path, finished)
    refused(tmp_path, capsys, command.format(run=tmp_path / "run", tiny=TINY).split(), 2, word)
