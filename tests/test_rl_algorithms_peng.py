"""Peng's Q(lambda) (``rtrl rl --algorithm peng``: rtrl.rl.algorithms.peng.PengQAgent) through the whole loop, step
by step, against a NumPy oracle on the scripted case of tests/test_rl_rules.py, and end to end.

Two environments, five steps, an Elman torso of 2 units and a head of 3 action values, epsilon-greedy at 0.5 after
the first step, lambda 0.8; seed 2 draws greedy and non-greedy actions in mid-episode. The oracle (``PengOracle``:
tests/test_rl_algorithms.py's ``QOracle``, a NumPy Q(lambda) written from the formulas, with Peng's two differences
written here from Peng and Williams' lambda-return) guards:

* the TD target ``r + gamma * [(1 - lambda) max_a Q(s', a) + lambda Q(s', a')]``: the backward view of
  ``G_t = r_t + gamma [(1 - lambda) max_a Q(s_{t+1}, a) + lambda G_{t+1}]``, neither Q(lambda)'s ``max_a Q(s', a)``
  nor SARSA's ``Q(s', a')``; no bootstrap at a termination, ``max_a Q(s_T, a)`` owed at a truncation;
* no Watkins cut: the traces cut after an episode's end only, though the non-greedy actions are flagged as such.

Mutations of rtrl/rl/algorithms/peng.py tried, each killed: the target ``max_a Q`` (Q(lambda)'s); the target
``Q(s', a')`` (SARSA's); the weights swapped (``lam max + (1 - lam) Q(s', a')``); the Watkins cut kept.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from rtrl.cli import main
from rtrl.rl.algorithms.peng import PengQAgent
from rtrl.rl.config import RLConfig
from test_rl_algorithms import Q_BASE, QOracle, Truncating, scripted_episodes, steps_against
from test_rl_rules import STEPS, Scripted, scripted_run

PENG_BASE = {**Q_BASE, "algorithm": "peng"}


class PengOracle(QOracle):
    watkins = False

    def target(self, q, action):
        lam = self.c.lam
        return (1 - lam) * np.max(q) + lam * q[action]


@pytest.mark.parametrize("optimizer", ["sgd", "obgd"])
@pytest.mark.parametrize("env", [Scripted(), Truncating()], ids=["terminating", "truncating"])
def test_every_step_is_the_written_out_peng_q_lambda_update(optimizer, env):
    config = RLConfig(**{**PENG_BASE, "optimizer": optimizer, "lr": 0.3 if optimizer == "sgd" else 1.0})
    assert config.lam == 0.8
    run, state = scripted_run(config, env, seed=2, agent=PengQAgent)
    oracle = PengOracle(config, state.params, isinstance(env, Truncating))
    # the non-greedy actions are flagged (as Q(lambda)'s), and cut nothing
    ends, truncations = steps_against(run, state, oracle,
                                      lambda state, t: np.array_equal(state.pending.exploratory, oracle.explored))
    assert (ends, truncations) == scripted_episodes(isinstance(env, Truncating))
    # the case holds what it guards: a non-greedy action in mid-episode (Watkins would cut there, Peng does not),
    # and a greedy one; TD errors non-zero
    explored = np.array(oracle.explored_seen[:-1])
    fresh = np.array(ends[:-1])
    assert (explored & ~fresh).any() and (~explored & ~fresh).any(), (explored, fresh)
    assert np.count_nonzero(np.concatenate(oracle.deltas)) >= 2 * (STEPS - 1)


def test_rtrl_rl_peng_runs_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["rl", "--algorithm", "peng", "--env", "tmaze", "--hidden", "4", "--envs", "2", "--steps", "40",
                 "--record-every", "20", "--explore-steps", "20", "--quiet", "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["algorithm"] == "peng"
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "step" in r][-1] == 40
    assert main(["list", "algorithms"]) == 0
    assert "Peng's Q(lambda)" in capsys.readouterr().out
