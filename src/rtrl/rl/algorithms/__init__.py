"""The online-RL algorithms ``rtrl rl --algorithm NAME`` selects (``ALGORITHMS``, one module each).

An algorithm is an agent class (``rtrl.rl.agent.RecurrentAgent``), built by ``rtrl.rl.assemble`` as
``cls(cell, num_actions, method, truncation, head_hidden).configure(config)``; its value gives:

* ``init(key, dtype)``: the parameters (the torso's under ``"torso"``);
* ``act(params, memory, x, key, greedy=False) -> (action, memory')``: one environment, no gradient (an
  evaluation, a rollout);
* what learning reads, for all E environments of the loop (``rtrl.rl.loop``, the same for every algorithm):
  ``stepped`` (the action, the estimate whose TD error the next step finds, what the previous step's TD target
  bootstraps from, the gradient that enters the eligibility traces, an ascent added to every update, whether the
  action cuts the traces), ``learn`` (from them and the previous step, the update rule's extra arguments: the TD
  error, ``td_error``, and where the traces are cut), ``bootstrap`` (what a truncated episode's target owes, of its
  last observation) and ``correction`` (a member of the update rule's optax chain that corrects the TD ascent, or
  None);
* ``options``: the ``RLConfig`` options only it reads (``RLConfig`` refuses them under another algorithm).

The update rule is the optax chain of ``rtrl.rl.transforms`` (the traces, the TD ascent, the step-size rule), the
intentional update among its step-size rules (``--optimizer intentional``, under ``ac`` and ``q`` alike).

* ``ac``: stream AC(lambda), ``rtrl.rl.agent.ActorCritic``.
* ``q``: stream Q(lambda) with Watkins' cuts, ``rtrl.rl.algorithms.q.QAgent``.
* ``qrc``: QRC(lambda), Q(lambda) with gradient corrections, ``rtrl.rl.algorithms.qrc.QRCAgent``.
* ``sarsa``: SARSA(lambda), ``rtrl.rl.algorithms.sarsa.SarsaAgent`` (docs/rl.md, "Write an algorithm").
"""

from __future__ import annotations

from rtrl.rl.agent import ActorCritic
from rtrl.rl.algorithms.q import QAgent, epsilon, greedy_entropy
from rtrl.rl.algorithms.qrc import QRCAgent
from rtrl.rl.algorithms.sarsa import SarsaAgent

ALGORITHMS = {"ac": ActorCritic, "q": QAgent, "qrc": QRCAgent, "sarsa": SarsaAgent}

__all__ = ["ALGORITHMS", "QAgent", "QRCAgent", "SarsaAgent", "epsilon", "greedy_entropy"]
