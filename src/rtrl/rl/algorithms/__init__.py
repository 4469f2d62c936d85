"""The online-RL algorithms ``rtrl rl --algorithm NAME`` selects (``ALGORITHMS``, one module each).

An algorithm is a value of the contract ``rtrl.rl.algorithm.Algorithm`` (a ``typing.Protocol``), built by
``rtrl.rl.assemble`` as ``cls(cell, num_actions, method, truncation, **options)``, its ``options`` (``RLConfig``
fields) keyword arguments of the same names. No algorithm subclasses another: the pieces they share are plain
functions (``rtrl.rl.agent``: the torso and the heads; ``action_values``: Q's head, epsilon-greedy;
``rtrl.rl.algorithm``: the TD error, the update rule's arguments) that each class names as its methods. Each step
the loop (``rtrl.rl.loop``, the same for every algorithm) hands it the previous step's ``Transition`` (the reward,
terminated, truncated, its ``bootstrap`` of a truncated episode's final observation), and its ``learn`` makes the
TD error and the traces' cut of it.

The update rule is the optax chain of ``rtrl.rl.transforms`` (the traces, the TD ascent, the step-size rule), the
intentional update among its step-size rules (``--optimizer intentional``, under ``ac`` and ``q`` alike).

* ``ac``: stream AC(lambda), ``rtrl.rl.algorithms.ac.ActorCritic`` (on a Box action space
  ``rtrl.rl.algorithms.gaussian.GaussianActorCritic``, ``BOX``).
* ``q``: stream Q(lambda) with Watkins' cuts, ``rtrl.rl.algorithms.q.QAgent``.
* ``qrc``: QRC(lambda), Q(lambda) with gradient corrections, ``rtrl.rl.algorithms.qrc.QRCAgent``.
* ``sarsa``: SARSA(lambda), ``rtrl.rl.algorithms.sarsa.SarsaAgent`` (docs/rl.md, "Write an algorithm").
* ``peng``: Peng's Q(lambda), no Watkins cut, ``rtrl.rl.algorithms.peng.PengQAgent``.
"""

from __future__ import annotations

from rtrl.rl.algorithms.ac import ActorCritic
from rtrl.rl.algorithms.action_values import epsilon, greedy_entropy
from rtrl.rl.algorithms.gaussian import GaussianActorCritic
from rtrl.rl.algorithms.peng import PengQAgent
from rtrl.rl.algorithms.q import QAgent
from rtrl.rl.algorithms.qrc import QRCAgent
from rtrl.rl.algorithms.sarsa import SarsaAgent

ALGORITHMS = {"ac": ActorCritic, "q": QAgent, "qrc": QRCAgent, "sarsa": SarsaAgent, "peng": PengQAgent}
BOX = {"ac": GaussianActorCritic}  # the algorithms of a Box action space, by the same names


def options_of(name: str) -> tuple[str, ...]:
    """The ``RLConfig`` options algorithm ``name`` reads, on either kind of action space."""
    return tuple(dict.fromkeys((*ALGORITHMS[name].options, *(BOX[name].options if name in BOX else ()))))

__all__ = ["ALGORITHMS", "BOX", "ActorCritic", "GaussianActorCritic", "PengQAgent", "QAgent", "QRCAgent", "SarsaAgent",
           "epsilon", "greedy_entropy", "options_of"]
