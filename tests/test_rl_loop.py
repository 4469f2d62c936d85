"""``rtrl.rl.train``'s callbacks: the order of the trainer's (``rtrl.driver``'s), state first, at every record; the
health figures' sampling and the record of steps where no episode ended, on the scripted case of
tests/test_rl_rules.py."""

import jax
import numpy as np
import pytest

from rtrl.rl import RLConfig, train
from rtrl.rl.assemble import RLAssembly, assemble
from rtrl.rl.loop import TIMINGS, RLState, record, runner, seeds_record
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
    record_every values, and so other chunk lengths (and a resume off a record boundary), another seed, run one
    compiled program, shared by every run of the configuration (``rtrl.rl.loop.program``). [``static_argnums=1`` on
    the chunk length: a program per length, 3 here; a program per run: a compilation per ``train``]"""
    options = {"env": "tmaze", "hidden": 3, "envs": 2, "steps": 12, "seeds": seeds}
    config = RLConfig(**options, record_every=4)
    run = runner(config)
    train(config)
    for every in (5, 7):
        train(RLConfig(**options, record_every=every))
    half, _ = train(RLConfig(**{**options, "steps": 5}, record_every=5, seed=3))
    train(RLConfig(**options, record_every=4, seed=3), half)  # resumed at step 5
    again = runner(config)
    assert again is not run and again.program is run.program and run.compiled._cache_size() == 1


def test_a_run_of_other_parts_under_one_configuration_runs_its_own_parts():
    """``RLAssembly(config, env, agent)`` after a run of ``config`` runs that environment and that agent, not the
    ones the configuration names (a program keyed by the configuration alone hands it the registry's); the
    configuration's own runs still share one program, and so do two runs of the same other parts."""
    config = RLConfig(env="tmaze", hidden=3, envs=2, steps=4, record_every=4, fidelity_every=0)
    registry = assemble(config)
    ours = RLAssembly(config, registry.env, assemble(config.replace(hidden=4)).agent)
    assert runner(config).program is runner(config.replace(steps=8, seed=1)).program
    theirs, mine = runner(config), runner(ours)
    assert mine.program is not theirs.program and mine.agent is ours.agent and theirs.agent is registry.agent
    assert runner(ours).program is mine.program
    state, _ = train(ours)
    assert jax.tree.leaves(state.params["torso"])[0].shape != jax.tree.leaves(train(config)[0].params["torso"])[0].shape


HOST = {"env": "gymnasium:CartPole-v1", "envs": 2, "hidden": 3, "fidelity_every": 0}


def same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def test_interleaved_host_runs_of_one_configuration_step_their_own_environments():
    """Two runs of one host configuration (Gymnasium's CartPole) in one process, stepped in turn, each end where it
    would alone: each run has its own environments, while the compiled program is one. [a runner shared by the runs
    (a module-level cache of runners): the second run's ``init`` resets the first's environments, whose next step
    re-seeds them, silently]"""
    config = RLConfig(**HOST, steps=12, record_every=4)

    def alone(seed):
        run = runner(config)
        state = run.init(seed)
        for _ in range(3):
            state = run.advance(state, 4)
        return state

    a, b = runner(config), runner(config)
    assert a.environments.vector is not b.environments.vector and a.program is b.program
    first, second = a.init(0), b.init(1)
    for _ in range(3):
        first, second = a.advance(first, 4), b.advance(second, 4)
    assert same(first, alone(0)) and same(second, alone(1))
    assert a.host_calls.observe_act._cache_size() == 1


def test_a_host_run_trained_inside_another_leaves_it_as_it_would_be_alone():
    """``train`` of a host configuration with, at each record, a whole other run of the same configuration trained
    (another seed): its records (the timings and wall_s aside) and final state are those of the run alone, and so are
    the other's. [a runner shared by the two: the inner run re-seeds the outer's environments at each record]"""
    config, other = RLConfig(**HOST, steps=60, record_every=20), RLConfig(**HOST, steps=20, record_every=10, seed=1)

    def untimed(records):
        return [{k: v for k, v in r.items() if k not in (*TIMINGS, "wall_s")} for r in records]

    inner = []
    state, records = train(config, on_record=lambda state, rec: inner.append(train(other)))
    alone, alone_records = train(config)
    assert same(state, alone) and untimed(records) == untimed(alone_records)
    assert any(r["episodes"] for r in records)  # episodes ended: the environments were stepped, not just begun
    other_state, other_records = train(other)
    assert len(inner) == len(records)
    assert all(same(s, other_state) and untimed(r) == untimed(other_records) for s, r in inner)


def test_train_given_the_run_continues_its_host_environments():
    """``train(config, state, run=run)`` with the run that returned ``state`` continues its environments: a host run
    of 40 steps in two calls ends where one call of 40 does; without the run (a new one) the environments are
    re-seeded at step 20 (``OnlineActorCritic.restarted``), and the run differs."""
    run = runner(RLConfig(**HOST, steps=20, record_every=20))
    half, _ = train(RLConfig(**HOST, steps=20, record_every=20), run=run)
    whole, _ = train(RLConfig(**HOST, steps=40, record_every=20))
    assert same(train(RLConfig(**HOST, steps=40, record_every=20), half, run=run)[0], whole)
    assert not same(train(RLConfig(**HOST, steps=40, record_every=20), half)[0], whole)
