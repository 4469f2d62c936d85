"""SARSA(lambda) (``rtrl rl --algorithm sarsa``: rtrl.rl.algorithms.sarsa.SarsaAgent) through the whole loop, step by
step, against a NumPy oracle on the scripted case of tests/test_rl_rules.py, and end to end.

Two environments, five steps, an Elman torso of 2 units and a head of 3 action values, epsilon-greedy with epsilon
falling from 1 (step 0) by 0.125 a step to 0.5 (step 4); seed 2 draws greedy and non-greedy actions in mid-episode.
The oracle (``SarsaOracle``: tests/test_rl_algorithms.py's ``QOracle`` with SARSA's three differences written here)
guards:

* the TD target ``r + gamma * Q(s', a')``, the value of the action actually taken next (not ``max_a Q(s', a)``), no
  bootstrap at a termination;
* no Watkins cut: the trace is cut after an episode's end only, whatever the action;
* at a truncation the value owed ``(1 - eps) max_a Q(s_T, a) + eps mean_a Q(s_T, a)`` of the episode's last
  observation, ``eps`` the rate of the step after the one that ended it (0.75 after step 1, 0.5 after step 3:
  the truncations fall where the two readings of the step differ).

Mutations of rtrl/rl/algorithms/sarsa.py tried, each killed: the target ``max_a Q``; the exploratory flags kept (a
Watkins cut); the truncation owed ``max_a Q(s_T, a)``; its rate of the step that ended the episode (``step``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from rtrl.cli import main
from rtrl.rl.algorithms import SarsaAgent
from rtrl.rl.config import RLConfig
from test_rl_algorithms import Q_BASE, QOracle, Truncating, scripted_episodes, steps_against
from test_rl_rules import STEPS, Scripted, scripted_run

SARSA_BASE = {**Q_BASE, "algorithm": "sarsa", "explore_steps": 4}


def rate(step):
    """epsilon at ``step``: from 1 linearly to 0.5 over 4 steps (written out)."""
    return 1.0 + min(step / 4, 1.0) * (0.5 - 1.0)


class SarsaOracle(QOracle):
    watkins = False

    def target(self, q, action):
        return q[action]

    def bootstrap(self, q):
        eps = rate(self.step + 1)  # observe runs at the step that ended the episode, before its count moves on
        self.rates.append(eps)
        return (1 - eps) * q.max() + eps * q.mean()

    def __init__(self, config, params, truncating):
        super().__init__(config, params, truncating)
        self.rates = []


@pytest.mark.parametrize("optimizer", ["sgd", "obgd"])
@pytest.mark.parametrize("env", [Scripted(), Truncating()], ids=["terminating", "truncating"])
def test_every_step_is_the_written_out_sarsa_lambda_update(optimizer, env):
    config = RLConfig(**{**SARSA_BASE, "optimizer": optimizer, "lr": 0.3 if optimizer == "sgd" else 1.0})
    run, state = scripted_run(config, env, seed=2, agent=SarsaAgent)
    oracle = SarsaOracle(config, state.params, isinstance(env, Truncating))
    # no action cuts the traces
    ends, truncations = steps_against(run, state, oracle,
                                      lambda state, t: not np.asarray(state.pending.exploratory).any())
    truncating = isinstance(env, Truncating)
    assert (ends, truncations) == scripted_episodes(truncating)
    # the case holds what it guards: a non-greedy action in mid-episode (Q(lambda) would cut there, SARSA does not)
    # and a greedy one, the truncations owed at two different rates, TD errors non-zero
    explored = np.array(oracle.explored_seen[:-1])
    fresh = np.array(ends[:-1])
    assert (explored & ~fresh).any() and (~explored & ~fresh).any(), (explored, fresh)
    assert oracle.rates == ([0.75, 0.5] if truncating else [])
    assert np.count_nonzero(np.concatenate(oracle.deltas)) >= 2 * (STEPS - 1)


def test_rtrl_rl_sarsa_runs_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["rl", "--algorithm", "sarsa", "--env", "tmaze", "--hidden", "4", "--envs", "2", "--steps", "40",
                 "--record-every", "20", "--explore-steps", "20", "--quiet", "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["algorithm"] == "sarsa"
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "step" in r][-1] == 40
