"""RLConfig is strict: an option given (differing from its default) that the run never reads is refused, in one line
naming it; the same option under a run that reads it is accepted. A run folder's config.json written before the
refusal (every option there, inert ones at non-default values) still reads back, those options at their defaults."""

from __future__ import annotations

import pytest

from rtrl.cli import main
from rtrl.rl.config import RLConfig
from rtrl.rl.presets import PRESETS

# (options, the option refused, a fragment of why); each row's option is accepted in ACCEPTED's matching row
REFUSED = [
    ({"epsilon": 0.1}, "epsilon", "algorithm 'ac' does not read it (only q, qrc"),
    ({"explore_steps": 5}, "explore_steps", "algorithm 'ac'"),
    ({"h_lr": 0.1}, "h_lr", "algorithm 'ac' does not read it (only qrc)"),
    ({"h_beta": 0.5}, "h_beta", "algorithm 'ac'"),
    ({"algorithm": "q", "h_lr": 0.1}, "h_lr", "algorithm 'q' does not read it (only qrc)"),
    ({"algorithm": "q", "entropy": 0.0}, "entropy", "algorithm 'q' does not read it (only ac)"),
    ({"algorithm": "qrc", "value_coef": 2.0}, "value_coef", "algorithm 'qrc'"),
    ({"kappa": 3.0}, "kappa", "optimizer 'adam' does not read it (only obgd or adaptive_obgd)"),
    ({"optimizer": "intentional", "kappa": 3.0}, "kappa", "optimizer 'intentional'"),
    ({"optimizer": "obgd", "clip": 0.5}, "clip", "optimizer 'obgd' does not read it (only adam or sgd, or algorithm "
                                                 "qrc)"),
    ({"optimizer": "intentional", "clip": 0.5}, "clip", "optimizer 'intentional'"),
    ({"truncation": 4}, "truncation", "only method tbptt reads it, not 'auto'"),
    ({"method": "rtrl", "truncation": 4}, "truncation", "not 'rtrl'"),
    ({"algorithm": "q", "td_refresh": True}, "td_refresh", "algorithm 'q' does not read it (only ac)"),
]
ACCEPTED = [
    {"algorithm": "q", "epsilon": 0.1},
    {"algorithm": "qrc", "explore_steps": 5},
    {"algorithm": "qrc", "h_lr": 0.1},
    {"algorithm": "qrc", "h_beta": 0.5},
    {"algorithm": "qrc", "h_lr": 0.1},
    {"entropy": 0.0},
    {"value_coef": 2.0},
    {"head_hidden": 8},
    {"algorithm": "q", "head_hidden": 8},
    {"algorithm": "qrc", "head_hidden": 8},
    {"optimizer": "obgd", "kappa": 3.0},
    {"optimizer": "adaptive_obgd", "kappa": 3.0},
    {"optimizer": "sgd", "clip": 0.5},
    {"algorithm": "qrc", "optimizer": "obgd", "clip": 0.5},  # QRC clips its secondary weights' step
    {"method": "tbptt", "truncation": 4},
    {"method": "tbptt", "truncation": 4},
    {"method": "tbptt", "truncation": 6},
    {"td_refresh": True},
]


@pytest.mark.parametrize("options, name, why", REFUSED, ids=[f"{r[1]}-{i}" for i, r in enumerate(REFUSED)])
def test_an_option_the_run_does_not_read_is_refused_by_name(options, name, why):
    with pytest.raises(ValueError) as e:
        RLConfig(**options)
    message = str(e.value)
    assert message.startswith(f"{name} does nothing here: ") and why in message and "\n" not in message, message
    assert e.value.option == name  # the command line names its flag


@pytest.mark.parametrize("options", ACCEPTED)
def test_the_same_option_under_a_run_that_reads_it_is_accepted(options):
    config = RLConfig(**options)
    assert all(getattr(config, k) == v for k, v in options.items())


def test_defaults_and_no_clip_are_never_refused():
    """Given means differing from the default (an older config.json held every option); ``--no-clip`` says what a rule
    without a clip does anyway."""
    RLConfig(algorithm="q", entropy=0.01, value_coef=1.0, kappa=2.0, truncation=8)
    RLConfig(optimizer="obgd", clip=None)
    RLConfig(optimizer="intentional", clip=None)


@pytest.mark.parametrize("lr, ok", [(1.0, True), (0.3, True), (1.5, False)])
def test_intentional_lr_is_a_fraction_of_the_td_error(lr, ok):
    if ok:
        assert RLConfig(optimizer="intentional", lr=lr).lr == lr
    else:
        with pytest.raises(ValueError, match=r"lr must be at most 1 under optimizer 'intentional' \(the fraction eta"):
            RLConfig(optimizer="intentional", lr=lr)
    assert RLConfig(optimizer="sgd", lr=lr).lr == lr  # other rules take any positive step


def test_a_config_json_written_before_the_refusal_reads_back_with_those_options_at_their_defaults():
    written = {**RLConfig(method="auto").to_dict(), "truncation": 32, "epsilon": 0.2, "kappa": 3.0}
    config = RLConfig.from_dict(written, complete=True)
    assert config == RLConfig(method="auto")
    with pytest.raises(ValueError, match="epsilon does nothing here"):  # given by a caller, it is refused
        RLConfig.from_dict(written)


def test_every_preset_is_a_valid_config():
    for preset in PRESETS.values():
        RLConfig(**preset.options)  # raises for an option its row does not read


def test_the_command_line_names_the_flag(capsys, tmp_path):
    assert main(["rl", "--epsilon", "0.2", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --epsilon: epsilon does nothing here: algorithm 'ac'" in err, err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("algorithm", ["q", "qrc"])
def test_the_q_learning_memory_chain_presets(algorithm):
    """``memory-chain-L-q`` (intentional Q(lambda)) and ``memory-chain-L-qrc``: the streaming agent's torso (a
    width-192 minGRU under its exact traces) on MemoryChain at every length, epsilon falling over a tenth of the run."""
    for length in (16, 32, 64, 128, 192, 256):
        options = PRESETS[f"memory-chain-{length}-{algorithm}"].options
        config = RLConfig(**options)
        assert (config.env, dict(config.env_args), config.algorithm) == ("memory-chain", {"memory_length": length},
                                                                         algorithm)
        assert (config.cell, config.hidden, config.method) == ("mingru", 192, "auto")
        assert config.explore_steps == config.steps // 10 and config.epsilon == 0.01
        if algorithm == "q":
            assert (config.optimizer, config.lr, config.gamma, config.lam) == ("intentional", 0.5, 0.99, 0.8)
        for row in ("tbptt", "memoryless"):
            assert RLConfig(**PRESETS[f"memory-chain-{length}-{algorithm}-{row}"].options).algorithm == algorithm


def test_a_run_folder_whose_config_json_holds_unread_options_resumes(tmp_path):
    """A folder written before the refusal (the streaming presets set ``truncation`` 32 under ``auto``) resumes."""
    import json

    out = tmp_path / "run"
    assert main(["rl", "--env", "tmaze", "--hidden", "4", "--envs", "2", "--steps", "10", "--record-every", "10",
                 "--quiet", "--out", str(out)]) == 0
    written = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**written, "truncation": 32, "epsilon": 0.5, "kappa": 3.0}))
    assert main(["resume", str(out), "--steps", "20", "--quiet"]) == 0
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["step"] == 20


def test_a_preset_s_option_left_unread_by_the_options_beside_it_is_dropped():
    """``--preset memory-chain-64 --algorithm q``: the preset's ``entropy`` 0 (the actor-critic's) is not refused
    but dropped; given on the command line, it is refused."""
    from rtrl.cli import parser
    from rtrl.run.options import config_from_args

    args = parser().parse_args(["rl", "--preset", "memory-chain-64", "--algorithm", "q", "--out", "x"])
    config = config_from_args(args, RLConfig, PRESETS)
    assert PRESETS["memory-chain-64"].options["entropy"] == 0.0 and config.entropy == RLConfig().entropy
    assert config.algorithm == "q" and config.hidden == 192  # the rest of the preset kept
    args = parser().parse_args(["rl", "--preset", "memory-chain-64", "--algorithm", "q", "--entropy", "0", "--out",
                                "x"])
    with pytest.raises(Exception, match="argument --entropy: entropy does nothing here: algorithm 'q'"):
        config_from_args(args, RLConfig, PRESETS)


# what each algorithm never reads under adam and method auto, typed out from the algorithms' docs (not derived
# from ``never_read``): config.json leaves these out
Q_NEVER_READS = {"entropy", "value_coef", "split_torso", "critic_network", "init_std", "state_std", "h_lr", "h_beta",
                 "kappa", "critic_lr", "truncation", "entropy_sign", "encoder_blocks", "encoder_width", "head_init",
                 "std_map", "td_refresh"}
NEVER_READS = {
    "ac": {"epsilon", "explore_steps", "h_lr", "h_beta", "kappa", "critic_lr", "truncation"},
    "q": Q_NEVER_READS, "sarsa": Q_NEVER_READS, "peng": Q_NEVER_READS,
    "qrc": Q_NEVER_READS - {"h_lr", "h_beta"},
}


@pytest.mark.parametrize("algorithm", sorted(NEVER_READS))
def test_what_config_json_stores_is_what_the_algorithm_reads_and_reads_back(algorithm):
    config = RLConfig(algorithm=algorithm)
    stored = config.stored()
    assert set(config.to_dict()) - set(stored) == NEVER_READS[algorithm]
    assert RLConfig.from_dict(stored, complete=True) == config


@pytest.mark.parametrize("options, kept", [
    ({"method": "tbptt", "truncation": 4}, "truncation"),
    ({"optimizer": "obgd", "kappa": 3.0}, "kappa"),
    ({"optimizer": "intentional", "lr": 0.5, "critic_lr": 0.3}, "critic_lr"),
])
def test_an_option_that_the_other_options_make_read_is_stored(options, kept):
    config = RLConfig(**options)
    assert config.stored()[kept] == options[kept]
    assert RLConfig.from_dict(config.stored(), complete=True) == config


def test_a_stored_config_lacking_an_option_its_algorithm_reads_is_refused():
    stored = RLConfig(algorithm="ac").stored()  # entropy: in every format, read by ac, left out by q
    del stored["entropy"]
    with pytest.raises(ValueError, match=r"lacks options \['entropy'\]"):
        RLConfig.from_dict(stored, complete=True)


def test_a_q_run_folder_stores_only_what_q_reads_and_loads_and_resumes(tmp_path):
    import json

    import rtrl

    out = tmp_path / "run"
    assert main(["rl", "--algorithm", "q", "--env", "tmaze", "--hidden", "4", "--envs", "2", "--steps", "10",
                 "--record-every", "10", "--explore-steps", "10", "--quiet", "--out", str(out)]) == 0
    written = json.loads((out / "config.json").read_text())
    assert not NEVER_READS["q"] & set(written), written
    assert (written["algorithm"], written["epsilon"], written["explore_steps"]) == ("q", 0.01, 10)
    assert rtrl.load(out).config.entropy == 0.01  # read back at its default
    assert main(["resume", str(out), "--steps", "20", "--quiet"]) == 0
    assert json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])["step"] == 20
