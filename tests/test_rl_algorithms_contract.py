"""The algorithms as values (``rtrl.rl.algorithms``, ``rtrl.rl.algorithm``): none subclasses another, each is an
``Algorithm`` (the declared contract), each option it names is an ``RLConfig`` option taken as a keyword argument
of the same name with the configuration's default, and ``rtrl list algorithms`` shows each with its options."""

from __future__ import annotations

import inspect
import itertools

import pytest

from rtrl.cells import Elman
from rtrl.cli import main
from rtrl.config import defaults
from rtrl.rl.algorithm import Algorithm
from rtrl.rl.algorithms import ALGORITHMS, BOX
from rtrl.rl.config import RLConfig

CLASSES = list(dict.fromkeys([*ALGORITHMS.values(), *BOX.values()]))


def test_no_algorithm_subclasses_another():
    """Every pair of the registries' classes (the Box one too): neither is a subclass of the other, and none has a
    base but ``object`` (the shared pieces are functions, the torso a member)."""
    assert {"ac", "q", "qrc", "sarsa"} <= set(ALGORITHMS) and len(CLASSES) == len(ALGORITHMS) + len(BOX)
    for a, b in itertools.permutations(CLASSES, 2):
        assert not issubclass(a, b), (a, b)
    assert [cls.__bases__ for cls in CLASSES] == [(object,)] * len(CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_each_algorithm_is_of_the_contract_and_takes_its_options_by_name(cls):
    agent = cls(Elman(2, 4), 3)
    assert isinstance(agent, Algorithm)
    parameters = inspect.signature(cls).parameters
    default = defaults(RLConfig)
    for name in cls.options:
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert parameters[name].default == default[name], name  # cls(cell, A) is RLConfig()'s algorithm


def test_an_algorithm_without_a_member_of_the_contract_is_not_one():
    class Half:
        def init(self, key, dtype=None):
            return {}

    assert not isinstance(Half(), Algorithm)


def test_rtrl_list_algorithms_shows_each_with_its_options(capsys):
    assert main(["list", "algorithms"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for name, cls in ALGORITHMS.items():
        row = text.split(f" {name} ", 1)[1]
        for option in cls.options:
            assert f"--{option.replace('_', '-')} (" in row.split(". Options: ", 1)[1], (name, option)
    assert "on a Box action space also --init-std (1.0), --state-std (False)" in text
