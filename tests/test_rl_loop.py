"""``rtrl.rl.train``'s callbacks: the order of the trainer's (``rtrl.driver``'s), state first, at every record; the
health figures' sampling and the record of steps where no episode ended, on the scripted case of
tests/test_rl_rules.py."""

import jax
import numpy as np
import pytest

from rtrl.rl import RLConfig, train
from rtrl.rl.loop import RLState, record, seeds_record
from test_rl_rules import BASE, REWARDS, STEPS, Oracle, Scripted, scripted_run


def test_on_record_gets_the_state_then_the_record_at_each_record():
    seen = []
    config = RLConfig(env="tmaze", hidden=2, envs=2, steps=4, record_every=2, fidelity_every=0)
    state, records = train(config, on_record=lambda state, record: seen.append((state, record)))
    assert [type(s) for s, _ in seen] == [RLState, RLState]
    assert [r for _, r in seen] == records and [r["step"] for r in records] == [2, 4]
    assert int(seen[-1][0].step) == int(state.step) == 4


def scripted_steps(health_every: int):
    """The scripted case of tests/test_rl_rules.py (two environments, five steps; environment 0's episode ends at
    steps 2 and 5, environment 1's at step 4) with ``health_every``: the state after each step, and the oracle's
    value estimates, TD errors, parameter norms (before the step's update) and rewards, step by step."""
    config = RLConfig(**{**BASE, "health_every": health_every})
    run, state = scripted_run(config, Scripted())
    oracle = Oracle(config, state.params)
    states, values, norms, taken = [], [], [], []
    for _ in range(STEPS):
        norms.append(np.sqrt(sum((np.asarray(a) ** 2).sum() for a in jax.tree.leaves(oracle.p))))
        state = run.advance(state, 1)
        taken.append(np.asarray(state.env_state.env.taken))
        oracle.advance(taken[-1])
        states.append(state)
        values.append(oracle.values)
    return states, np.array(values), np.array(oracle.deltas), np.array(norms), taken


def test_health_is_sampled_at_steps_0_k_2k_from_the_first():
    """``health_every = K``: the figures of steps 0, K, 2K, ... only, each the step's mean over the environments;
    the record their mean (td_rms the root of the mean square; step 0 has no TD error). K = 2 over five steps:
    steps 0, 2, 4; K = 3: steps 0, 3. Against the oracle's value estimates, TD errors and parameter norms. [guards:
    sampled at ``(step + 1) % K == 0`` (steps K - 1, 2K - 1, ...) or from step 1; the mean over the steps, not the
    samples]"""
    for K, sampled in ((2, [0, 2, 4]), (3, [0, 3]), (1, [0, 1, 2, 3, 4])):
        states, values, deltas, norms, _ = scripted_steps(K)
        rec = record(states[-1])
        assert int(states[-1].tally.steps) == len(sampled)
        assert rec["value_scale"] == pytest.approx(np.abs(values[sampled]).mean(), rel=1e-10), K
        assert rec["td_rms"] == pytest.approx(np.sqrt((deltas[sampled] ** 2).mean()), rel=1e-10), K
        assert rec["param_norm"] == pytest.approx(norms[sampled].mean(), rel=1e-10), K
        # the steps tell the offsets apart
        assert abs(np.abs(values[sampled]).mean() - np.abs(values[[s + 1 for s in sampled if s + 1 < 5]]).mean()) \
            > 1e-6


def test_a_record_with_no_episode_ended_has_return_none():
    """After step 1 no episode has ended: the record's ``return`` is None (not 0, not NaN) and ``episodes`` 0; after
    step 2 environment 0's first episode (two steps) has: its return, the sum of its two rewards (the scripted
    rewards by action, plus 0.25 at its second step). Of several seeds where none ended, ``return`` is None too,
    each seed's listed as None. [guards: ``return`` 0.0 or NaN where no episode ended]"""
    states, _, _, _, taken = scripted_steps(16)
    first = record(states[0])
    assert first["return"] is None and first["episodes"] == 0 and first["step"] == 1
    second = record(states[1])
    assert second["episodes"] == 1 and second["step"] == 2
    assert second["return"] == np.float32(REWARDS[taken[0][0]]) + np.float32(REWARDS[taken[1][0]] + 0.25)
    both = seeds_record([first, first])
    assert both["return"] is None and both["return_per_seed"] == [None, None] and both["episodes"] == 0
    mixed = seeds_record([first, second])
    assert mixed["return"] == second["return"] and mixed["return_per_seed"] == [None, second["return"]]


@pytest.mark.parametrize("seeds", [1, 2])
def test_another_chunk_length_compiles_nothing_new(seeds):
    """The chunk length is traced (a while loop), not a static scan length: runs of one configuration with other
    record_every values, and so other chunk lengths (and a resume off a record boundary), run one compiled
    program. [``static_argnums=1`` on the chunk length: a program per length, 3 here]"""
    from rtrl.rl.loop import runner

    config = RLConfig(env="tmaze", hidden=3, envs=2, steps=12, record_every=4, seeds=seeds)
    run = runner(config)
    train(config)
    for every in (5, 7):
        train(RLConfig(env="tmaze", hidden=3, envs=2, steps=12, record_every=every, seeds=seeds))
    assert runner(config) is run and run._compiled._cache_size() == 1
