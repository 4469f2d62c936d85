"""An RL configuration is plain data: ``cell`` and ``method`` are names (what ``config.json`` can hold); a cell or a
method object of the user's own goes to ``rtrl.rl.assemble(config, cell=..., method=...)``, which builds the agent on
it for that call alone, refuses a name given beside it, and leaves the configuration as it was."""

from __future__ import annotations

import json

import jax
import pytest

import rtrl
from rtrl.config import OptionError
from rtrl.methods import TBPTT
from rtrl.rl import RLConfig, assemble, train

CONFIG = RLConfig(env="tmaze", hidden=4, envs=2, steps=4, record_every=4)  # the T-maze's observation: 3 floats


@pytest.mark.parametrize("options, words", [
    ({"cell": rtrl.cells.Elman(3, 4)}, "cell must be"),
    ({"method": TBPTT(4)}, "method must be one of"),
])
def test_a_configuration_refuses_objects(options, words):
    with pytest.raises(ValueError, match=words):
        RLConfig(**options)


def test_a_cell_object_given_to_assemble_is_the_agent_s_torso_and_the_configuration_stays_plain():
    """[guards: the object dropped for the named default (an Elman of `hidden` 4); the object cached under the
    configuration, so that a later ``assemble(config)`` gets it]"""
    cell = rtrl.cells.GRU(3, 5)
    assembly = assemble(CONFIG, cell=cell)
    assert assembly.agent.torso.cell is cell and assembly.config == CONFIG
    json.dumps(assembly.config.to_dict())  # what a run folder writes
    assert isinstance(assemble(CONFIG).agent.torso.cell, rtrl.cells.Elman)
    records = train(assembly)[1]
    assert records and records[-1]["step"] == 4


def test_a_method_object_given_to_assemble_drives_the_torso():
    """A ``TBPTT(3)`` object: the rolling window of its own 3 steps (``RLConfig.truncation`` is tbptt-by-name's).
    [guards: the configuration's method (auto: exact traces) used instead]"""
    learner = assemble(CONFIG, method=TBPTT(3)).agent.torso.learner
    named = assemble(CONFIG.replace(method="tbptt", truncation=3)).agent.torso.learner
    assert learner.method == named.method and learner.method.truncation == 3
    params = assemble(CONFIG).agent.init(jax.random.PRNGKey(0))["torso"]
    assert jax.tree.structure(learner.init(params)) == jax.tree.structure(named.init(params))


@pytest.mark.parametrize("options, objects, name", [
    ({"cell": "gru"}, {"cell": rtrl.cells.Elman(3, 4)}, "cell"),
    ({"cell_args": {"activation": "relu"}}, {"cell": rtrl.cells.Elman(3, 4)}, "cell_args"),
    ({"method": "rtrl"}, {"method": TBPTT(3)}, "method"),
])
def test_a_name_beside_the_object_that_replaces_it_is_refused_by_name(options, objects, name):
    with pytest.raises(OptionError, match=f"^{name} does nothing here") as error:
        assemble(CONFIG.replace(**options), **objects)
    assert error.value.option == name


@pytest.mark.parametrize("objects, words", [
    ({"cell": "elman"}, "cell must be an rtrl cell"),
    ({"method": "rtrl"}, "method must be a method object"),
])
def test_a_name_where_an_object_belongs_is_a_value_error(objects, words):
    with pytest.raises(ValueError, match=words):
        assemble(CONFIG, **objects)


def test_a_cell_object_that_does_not_read_the_observation_is_refused():
    with pytest.raises(ValueError, match="observation size 3"):
        assemble(CONFIG, cell=rtrl.cells.Elman(4, 4))
