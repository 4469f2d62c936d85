"""RunConfig is the one definition of a run: the CLI's options, config.json and resume derive from it."""

import dataclasses
import json
import pathlib
import re

import pytest

from rtrl.cli import parser
from rtrl.run.options import config_from_args, options_table
from rtrl.training.assemble import assemble
from rtrl.training.config import RunConfig

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def test_every_field_is_an_option_of_rtrl_train_and_the_defaults_agree():
    args = parser().parse_args(["train", "--out", "x"])
    assert config_from_args(args) == RunConfig()
    flags = {a for action in parser()._subparsers._group_actions[0].choices["train"]._actions
             for a in action.option_strings}
    for field in dataclasses.fields(RunConfig):
        assert "--" + field.name.removesuffix("_args").replace("_", "-") in flags or \
            "--" + field.name.removesuffix("s").replace("_", "-") in flags, field.name


def test_options_given_on_the_command_line_reach_the_config():
    argv = ("train --task recall --task-arg delay=3 --task-arg episode_length=12 --cell elman --cell-arg "
            "activation=relu --hidden 5 --method tbptt --method-arg truncation=4 --batch 3 --update-every 6 "
            "--optimizer sgd --lr 0.5 --no-clip --steps 7 --eval-every 6 --eval-size 9 --seed 11 --out x").split()
    config = config_from_args(parser().parse_args(argv))
    assert config == RunConfig(task="recall", task_args={"delay": 3, "episode_length": 12}, cell="elman",
                               cell_args={"activation": "relu"}, hidden=5, method="tbptt",
                               method_args={"truncation": 4}, batch=3, update_every=6, optimizer="sgd", lr=0.5,
                               clip=None, steps=7, eval_every=6, eval_size=9, seed=11)
    stagger = config_from_args(parser().parse_args("train --stagger --out x".split()))
    assert stagger.stagger is True


def test_config_json_round_trips():
    config = assemble(RunConfig(task="adding", hidden=7, clip=None, method_args={}, seed=2**32 - 1)).config
    text = json.dumps(config.to_dict())
    assert RunConfig.from_dict(json.loads(text), complete=True) == config


@pytest.mark.parametrize("data, message", [
    ({}, "lacks options"),
    ([], "must be a JSON object"),
    ({"hidden": 0}, "hidden must be a positive integer, got 0"),
    ({"hidden": True}, "hidden must be a positive integer"),
    ({"lr": float("inf")}, "lr must be a positive finite number"),
    ({"clip": -1}, "clip must be a positive finite number or null, got -1"),
    ({"seed": 2**64}, "seed must be an integer from 0 to 2**32 - 1"),
    ({"stagger": 1}, "stagger must be true or false"),
    ({"task_args": [1]}, "task_args must be an object of options"),
    ({"nope": 1}, "unknown options ['nope']"),
])
def test_a_bad_configuration_names_the_option_and_where_it_came_from(data, message):
    complete = data == {}
    with pytest.raises(ValueError) as info:
        RunConfig.from_dict(data, where="runs/x/config.json", complete=complete)
    assert message in str(info.value) and "runs/x/config.json" in str(info.value)


@pytest.mark.parametrize("data, message", [
    ({"task": "copy", "task_args": {"max_length": 0}}, "max_length must be a positive integer"),
    ({"method": "bptt", "stagger": True}, "stagger needs a trace method"),
    ({"cell": "elman", "cell_args": {"nope": 1}}, "cell 'elman' has no option ['nope']"),
])
def test_a_configuration_is_plain_data_and_its_assembly_names_what_it_cannot_build(data, message):
    """Construction checks each field alone and builds nothing; what the values name is built by ``assemble``,
    whose error names the option (mutation: ``assemble`` skipping the stagger check: the second row passes)."""
    config = RunConfig.from_dict(data)
    with pytest.raises(ValueError, match=re.escape(message)):
        assemble(config)


def test_docs_cli_md_holds_the_current_options_table():
    assert options_table() in DOCS.read_text(), "regenerate the table in docs/cli.md from options_table()"
