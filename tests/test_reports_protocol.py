"""rtrl.reports.protocol: the protocol card of a results table, generated from the configurations that ran, checked
line by line on tiny hand-made configurations against hand-made anchors (not the package's ``ANCHORS``, so that a
change of those is not what this checks)."""

from __future__ import annotations

import importlib.metadata

import pytest

from rtrl.reports.protocol import ANCHORS, inputs, protocol_card
from rtrl.rl.config import RLConfig

MUJOCO = {"name": "an anchor", "inputs": ("time",), "frames": 2_000_000, "envs": 1, "seeds": 10, "gamma": 0.99,
          "environments": {"Hopper": "Hopper-v4"}}
POPGYM = {"name": "a popgym anchor", "inputs": ("action", "reward"), "frames": 10_000_000, "envs": 1, "seeds": 10,
          "gamma": 0.99, "level": "Easy"}


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def card_lines(configs, anchor, **kw) -> dict[str, str]:
    """The card's items by label (``- label: value``), and its title as ``title``."""
    lines = protocol_card(configs, anchor, **kw).splitlines()
    items = dict(line[2:].split(": ", 1) for line in lines if line.startswith("- "))
    return {"title": lines[0], **items}


def test_each_line_of_a_run_with_sixteen_environments_per_seed():
    config = {"env": "gymnasium:Hopper-v5", "envs": 16, "steps": 125_000, "seeds": 3, "extra_inputs": ("time",),
              "gamma": 0.995, "normalize_obs": True, "scale_rewards": False}
    card = card_lines([config], MUJOCO, score="raw")
    gymnasium = version("gymnasium")
    assert card == {
        "title": "**Protocol** (generated from the configurations that ran; anchor: an anchor)",
        "inputs": "observation + time",  # as the anchor's: nothing beside it
        "frames": "2,000,000 per seed (125,000 steps x 16 environments)",  # 125,000 x 16: the anchor's 2M
        "environments per seed": "16 (anchor: 1)",
        "seeds": "3 (anchor: 10)",
        "discount": "0.995 (anchor: 0.99)",
        "environment": f"Hopper-v5 (gymnasium {gymnasium}) (anchor: Hopper-v4)",
        "observations": "normalised by a running mean and variance",
        "rewards": "raw",
        "score normalisation": "raw",
        "differences from the anchor": "4 (environments per seed, seeds, discount, environment)"}


def test_a_run_with_the_anchors_protocol_has_no_difference_and_rows_that_differ_show_each_value_once():
    same = {"env": "popgym:RepeatFirstEasy", "envs": 1, "steps": 10_000_000, "seeds": 10,
            "extra_inputs": ("reward", "action"), "gamma": 0.99}
    popgym = version("popgym")
    card = card_lines([same, dict(same)], POPGYM)
    assert card["inputs"] == "observation + previous action + previous reward"  # in PARTS's order
    assert card["frames"] == "10,000,000 per seed (10,000,000 steps x 1 environments)"
    assert card["environment"] == f"RepeatFirstEasy (rtrl's JAX port of popgym {popgym})"
    assert card["differences from the anchor"] == "0"
    # a second row with every part and at the Medium level: both values shown, the anchor's beside them
    other = {**same, "extra_inputs": True, "env": "popgym:RepeatFirstMedium", "normalize_obs": False}
    card = card_lines([same, other], POPGYM)
    assert card["inputs"] == ("observation + previous action + previous reward; observation + previous action + "
                              "previous reward + time (anchor: observation + previous action + previous reward)")
    assert card["environment"] == (f"RepeatFirstEasy (rtrl's JAX port of popgym {popgym}); RepeatFirstMedium "
                                   f"(rtrl's JAX port of popgym {popgym}) (anchor: RepeatFirstEasy)")
    assert card["observations"] == "normalised by a running mean and variance; raw"
    assert card["differences from the anchor"] == "2 (inputs, environment)"
    short = card_lines([{**same, "steps": 1000, "envs": 16}], POPGYM)
    assert short["frames"] == "16,000 per seed (1,000 steps x 16 environments) (anchor: 10,000,000 per seed)"
    assert short["differences from the anchor"] == "2 (frames, environments per seed)"


def test_without_an_anchor_the_card_compares_with_nothing_and_reads_a_config_or_its_options():
    config = RLConfig(env="memory-chain", env_args={"memory_length": 20}, envs=4, steps=1000)
    card = card_lines([config], None)
    assert card["title"].endswith("anchor: none (no published protocol for these tasks))")
    assert card["environment"] == "memory-chain (rtrl's own), memory_length=20"
    assert card["frames"] == "4,000 per seed (1,000 steps x 4 environments)"
    assert card["seeds"] == "1" and card["discount"] == "0.99" and card["inputs"] == "observation"
    assert "differences from the anchor" not in card and "(anchor:" not in protocol_card([config], None)
    assert card_lines([config.to_dict()], None) == card  # its options, as a ledger keeps them: the same card
    assert card_lines([{"env": "memory-chain", "env_args": {"memory_length": 20}, "envs": 4, "steps": 1000}],
                      None) == card  # options left out: their defaults


@pytest.mark.parametrize("value, parts", [(False, ()), (True, ("action", "reward", "time")), (("time",), ("time",)),
                                          (["reward", "action"], ("action", "reward")), ("reward", ("reward",))])
def test_the_inputs_accessor_reads_a_bool_or_the_names_of_the_parts(value, parts):
    assert inputs({"extra_inputs": value}) == parts


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="extra_inputs must be a bool or names of"):
        inputs({"extra_inputs": ("actions",)})
    with pytest.raises(ValueError, match="configs must name at least one configuration"):
        protocol_card([], None)


def test_the_anchors_are_farr_et_al_s_protocols():
    """The anchors as the paper states them: MuJoCo -P tasks with the observation and the time, POPGym with the
    previous action and reward; 1 environment a seed, 10 seeds, discount 0.99; 2M and 10M frames."""
    assert (ANCHORS["mujoco"]["inputs"], ANCHORS["mujoco"]["frames"]) == (("time",), 2_000_000)
    assert (ANCHORS["popgym"]["inputs"], ANCHORS["popgym"]["frames"]) == (("action", "reward"), 10_000_000)
    assert all((a["envs"], a["seeds"], a["gamma"]) == (1, 10, 0.99) for a in ANCHORS.values())
    assert ANCHORS["mujoco"]["environments"]["Walker2d"] == "Walker2d-v4"


AGENT = {"cell": "rtu", "hidden": 6, "cell_args": {"output_map": "concat"}, "encoder_blocks": 2, "encoder_width": 4,
         "head_hidden": 0, "state_std": True, "entropy": 0.01, "entropy_sign": "td", "optimizer": "intentional",
         "lr": 0.05, "critic_lr": 0.5}


THEIRS = ("rtu 6 (concatenated output) behind 2 blocks of 4, linear heads (glorot at the start), the spread exp of "
          "a head, entropy 0.01 signed by the TD error, intentional 0.05 (critic 0.5)")


def test_an_anchor_that_names_its_agent_counts_the_agent_a_difference_unless_the_options_match():
    """With ``agent`` in the anchor the card says each row's agent; a row with the anchor's options and its
    memoryless control (a feed-forward torso) differ in nothing; our agent (another torso, no signed entropy) in
    ``agent``, the anchor's shown; ``unmatched`` is listed as it is. [guards: the memoryless row counted as a
    different agent; a cell_args that drops the concatenated output not seen; the entropy's sign not compared]"""
    anchor = {**MUJOCO, "agent": AGENT, "unmatched": ("a", "b")}
    protocol = {"env": "gymnasium:Hopper-v4", "envs": 1, "steps": 2_000_000, "seeds": 10, "extra_inputs": ("time",)}
    theirs = {**protocol, **AGENT, "cell_args": {"output_map": "concat", "r_min": 0.0}}
    control = {**theirs, "cell": "feedforward", "cell_args": {}}
    card = card_lines([theirs, control], anchor)
    assert card["agent"] == (f"{THEIRS}; feedforward 6 behind 2 blocks of 4, linear heads (glorot at the start), "
                             "the spread exp of a head, entropy 0.01 signed by the TD error, intentional 0.05 (critic "
                             "0.5)")
    assert card["differences from the anchor"] == "0"
    assert card["what no option matches"] == "a; b"
    for change in ({"entropy_sign": "positive"}, {"cell_args": {}}, {"encoder_blocks": 1}):
        card = card_lines([{**theirs, **change}], anchor)
        assert card["differences from the anchor"] == "1 (agent)", change
        assert card["agent"].endswith(f"(anchor: {THEIRS})")
    assert "agent" not in card_lines([theirs], MUJOCO)  # an anchor without an agent compares none


@pytest.mark.parametrize("task", ["hopper", "walker2d", "halfcheetah", "ant"])
def test_the_anchor_agent_presets_differ_from_farr_et_al_in_the_seeds_alone(task):
    """The -anchor-agent presets and their memoryless rows, run over the anchor's 10 seeds, differ from
    ``ANCHORS["mujoco"]`` in nothing the card compares; the MuJoCo presets with our agent in the agent, the action
    map (squashed, not clipped) and the environments per seed."""
    from rtrl.rl.presets import PRESETS

    rows = [dict(PRESETS[f"{task}-p-anchor-agent{row}"].options, seeds=10) for row in ("", "-memoryless")]
    assert card_lines(rows, ANCHORS["mujoco"])["differences from the anchor"] == "0"
    assert "what no option matches" not in card_lines(rows, ANCHORS["mujoco"])  # every part of theirs an option
    ours = card_lines([dict(PRESETS[f"{task}-p"].options, seeds=10)], ANCHORS["mujoco"])
    assert ours["differences from the anchor"] == "3 (environments per seed, actions, agent)"
    assert "what no option matches" not in ours  # our agent: its differences are the agent line's
