"""The same seeds give the same parameters as before the algorithms became values over a transition: a tiny float64
run of each algorithm (and of the actor-critic's variants: the intentional rule with a critic step of its own, a
rolling TBPTT window under ObGD, the Gaussian policy with its spread a head) ends with the parameters whose sum and
absolute sum the code at commit 3132a4e gives, to 1e-12 relative (with the running statistics' prior of f999930
applied to it: the two lines of ``stats_init`` and ``variance`` in its rtrl/rl/envs/normalize.py).

How the figures were produced: ``RUNS`` below run by ``rtrl.rl.train`` at 3132a4e (``git archive 3132a4e src``,
its ``src`` first on ``PYTHONPATH``, ``jax_enable_x64`` on; since f999930 that ``src`` with the prior's two
lines patched in, which gives the same figures as the code since f999930), the final ``state.params`` of each,
``sum(leaf.sum())`` and ``sum(abs(leaf).sum())`` over the leaves. At the commit that made the transition the
algorithm's the whole parameter trees were compared with that run's: equal to the last bit. The step by step checks
against NumPy oracles (tests/test_rl_rules.py, tests/test_rl_algorithms*.py) hold each rule's arithmetic; this one
holds that the reorganisation changed no run, the Gaussian and truncated episodes included (pendulum-p at 7 steps
truncates, memory-chain at 5 steps as well).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from rtrl.rl import RLConfig, train
from rtrl.rl.assemble import assemble
from rtrl.rl.loop import OnlineActorCritic
from test_rl_transforms import frozen_split_chain

BASE = {"hidden": 4, "envs": 3, "steps": 24, "record_every": 24, "dtype": "float64", "seed": 3}
TMAZE = {"env": "tmaze", "env_args": (("length", 2),)}
CHAIN = {"env": "memory-chain", "env_args": (("max_steps_in_episode", 5),), "explore_steps": 10}
RUNS = {
    "ac": {**TMAZE, "entropy": 0.05},
    "ac-split": {**TMAZE, "optimizer": "intentional", "lr": 0.5, "critic_lr": 0.3, "split_torso": True,
                 "head_hidden": 3},
    "ac-tbptt": {**TMAZE, "method": "tbptt", "truncation": 3, "optimizer": "obgd"},
    "gaussian": {"env": "pendulum-p", "env_args": (("max_steps_in_episode", 7),), "cell": "mingru", "init_std": 0.5,
                 "state_std": True, "head_hidden": 3},
    "q": {**CHAIN, "algorithm": "q", "epsilon": 0.2},
    "qrc": {**CHAIN, "algorithm": "qrc", "h_lr": 0.01, "head_hidden": 3},
    "sarsa": {**CHAIN, "algorithm": "sarsa", "optimizer": "intentional", "lr": 0.5},
}
# (sum, absolute sum) of the final parameters at 3132a4e with the statistics' prior
BEFORE = {
    "ac": (-6.000949308079113, 12.215456744679724),
    "ac-split": (-5.972929295931808, 29.12620963858571),
    "ac-tbptt": (-5.978158656866003, 12.23752026420623),
    "gaussian": (-4.2192510132643575, 12.927122908740918),
    "q": (-8.003985457089932, 13.43771215375656),
    "qrc": (-9.502891961165698, 17.748460860295456),
    "sarsa": (-6.718343279486744, 13.345820427235154),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNS))
def test_the_same_seed_gives_the_parameters_of_before(name):
    state, _ = train(RLConfig(**BASE, **RUNS[name]))
    leaves = [np.asarray(leaf) for leaf in jax.tree.leaves(state.params)]
    got = (sum(float(a.sum()) for a in leaves), sum(float(np.abs(a).sum()) for a in leaves))
    np.testing.assert_allclose(got, BEFORE[name], rtol=1e-12)


@pytest.mark.slow
def test_the_split_rule_gives_the_parameters_of_the_three_trace_chain_it_replaced():
    """``--critic-lr`` without the traces of the sum that nothing read: the run ends with every parameter that the
    chain before it (``frozen_split_chain``, put in the same program's place) gives, to 1e-12, and keeps two trace
    sets where that kept three."""
    config = RLConfig(**BASE, **RUNS["ac-split"])
    c = config
    ours, before = OnlineActorCritic(assemble(config)), OnlineActorCritic(assemble(config))
    before.program.optimizer = frozen_split_chain(c.lr, c.critic_lr, c.gamma * c.lam, c.envs)
    start = before.init(c.seed)
    start = start._replace(opt_state=before.program.optimizer.init(start.params))
    new, old = ours.advance(ours.init(c.seed), c.steps), before.advance(start, c.steps)
    assert len(new.traces) == 2 and len(old.traces) == 3
    for a, b in zip(jax.tree.leaves(new.params), jax.tree.leaves(old.params), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-15)
