"""``seeds = S``: S seeds of one configuration in one call under jax.vmap; each seed's run is the one-seed run of
that seed, the record's return is the mean over seeds with each seed's beside it, and a run folder resumes."""

import jax
import numpy as np
import pytest

from rtrl.cli import main
from rtrl.rl import RLConfig, train
from rtrl.run.folder import read_metrics

BASE = dict(env="tmaze", env_args=(("length", 2),), hidden=6, envs=3, steps=40, record_every=20, lam=0.8,
            dtype="float64", fidelity_every=0, health_every=1)


def test_each_seed_runs_as_its_own_one_seed_run():
    state, records = train(RLConfig(**BASE, seed=5, seeds=2))
    singles = [train(RLConfig(**BASE, seed=s)) for s in (5, 6)]
    for i, (single_state, single_records) in enumerate(singles):
        np.testing.assert_allclose(state.runs.params["torso"]["W"][i], single_state.params["torso"]["W"], rtol=1e-9)
        for rec, one in zip(records, single_records, strict=True):
            assert rec["return_per_seed"][i] == pytest.approx(one["return"], rel=1e-9)
            assert rec["episodes_per_seed"][i] == one["episodes"]
    for rec, a, b in zip(records, *(r for _, r in singles), strict=True):
        assert rec["step"] == a["step"] == b["step"]
        assert rec["return"] == pytest.approx((a["return"] + b["return"]) / 2, rel=1e-12)
        assert rec["episodes"] == a["episodes"] + b["episodes"]
        assert rec["td_rms"] == pytest.approx((a["td_rms"] + b["td_rms"]) / 2, rel=1e-12)
    assert not np.array_equal(state.runs.params["torso"]["W"][0], state.runs.params["torso"]["W"][1])


def test_resume_of_several_seeds_is_the_uninterrupted_run():
    config = RLConfig(**BASE, seeds=3)
    state, records = train(config)
    half, first = train(RLConfig(**{**BASE, "steps": 20}, seeds=3))
    resumed, rest = train(config, half)
    strip = lambda recs: [{k: v for k, v in r.items() if k != "wall_s"} for r in recs]  # noqa: E731
    assert strip(first + rest) == strip(records)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(resumed), strict=True))


HOST = dict(env="gymnasium:CartPole-v1", hidden=4, envs=2, steps=30, record_every=15, lam=0.8, dtype="float64",
            fidelity_every=0, health_every=1)


def assert_seeds_are_singles(state, records, singles):
    """``state`` / ``records`` of a several-seed run hold, seed by seed, the one-seed runs ``singles``."""
    for i, (single_state, single_records) in enumerate(singles):
        seed_i = jax.tree.map(lambda x, i=i: x[i], state.runs)
        for a, b in zip(jax.tree.leaves(single_state), jax.tree.leaves(seed_i), strict=True):
            if np.issubdtype(np.asarray(a).dtype, np.floating):
                np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
            else:
                assert np.array_equal(a, b)
        for rec, one in zip(records, single_records, strict=True):
            assert rec["episodes_per_seed"][i] == one["episodes"]
            mine = rec["return_per_seed"][i]
            assert mine == one["return"] if one["return"] is None else mine == pytest.approx(one["return"], rel=1e-9)


def test_a_host_environment_runs_several_seeds_each_as_its_one_seed_run():
    """Seeds on a host environment (Gymnasium's CartPole): one vector of S x E environments, the agent's steps under
    one vmap; every leaf of each seed's state (parameters, traces, observation statistics, the environments' reset
    seeds through the first observations) is its one-seed run's. [Mutation, killed: every seed's environments reset
    with the first seed's seeds -> the second seed's observations differ.]"""
    state, records = train(RLConfig(**HOST, seed=7, seeds=2), quiet=True)
    assert_seeds_are_singles(state, records, [train(RLConfig(**HOST, seed=s), quiet=True) for s in (7, 8)])
    assert int(state.step) == 30 and all(r["episodes"] > 0 for r in records)


def test_a_host_run_of_several_seeds_resumed_restarts_each_seed_as_its_one_seed_run_does():
    """A checkpoint of several host seeds, resumed by another run: each seed's environments re-seeded from its own
    key and every episode begun again, as the one-seed run resumed there. [Mutation, killed: the restart reseeding
    every seed from the first seed's key.]"""
    half = {**HOST, "steps": 15}
    first, _ = train(RLConfig(**half, seed=3, seeds=2), quiet=True)
    state, records = train(RLConfig(**HOST, seed=3, seeds=2), first, quiet=True)
    singles = [train(RLConfig(**HOST, seed=s), train(RLConfig(**half, seed=s), quiet=True)[0], quiet=True)
               for s in (3, 4)]
    assert_seeds_are_singles(state, records, singles)
    assert not np.array_equal(state.runs.obs[0], state.runs.obs[1])


def test_cli_seeds_write_per_seed_returns_and_resume(tmp_path):
    out = tmp_path / "run"
    words = ["rl", "--env", "tmaze", "--env-arg", "length=2", "--hidden", "4", "--envs", "2", "--record-every", "20",
             "--seeds", "2", "--quiet", "--out", str(out)]
    assert main([*words, "--steps", "20"]) == 0
    assert main(["resume", str(out), "--steps", "40", "--quiet"]) == 0
    records = read_metrics(out)
    assert [r["step"] for r in records] == [20, 40]
    for r in records:
        assert len(r["return_per_seed"]) == 2 and len(r["episodes_per_seed"]) == 2
        known = [v for v in r["return_per_seed"] if v is not None]
        assert r["return"] == pytest.approx(sum(known) / len(known))


def test_a_record_of_seeds_averages_returns_over_the_seeds_where_episodes_ended():
    """Hand-checked: seed 0 ended 2 episodes (mean return 1.0), seed 1 none yet (return None), seed 2 one (-0.5):
    ``return`` is the mean of 1.0 and -0.5 (not over all three seeds), ``episodes`` their sum, another figure the
    mean over every seed, and the per-seed lists in the seeds' order."""
    from rtrl.rl.loop import seeds_record

    records = [{"step": 10, "return": 1.0, "episodes": 2, "entropy": 1.0},
               {"step": 10, "return": None, "episodes": 0, "entropy": 3.0},
               {"step": 10, "return": -0.5, "episodes": 1, "entropy": 2.0}]
    assert seeds_record(records) == {"step": 10, "return": 0.25, "episodes": 3, "entropy": 2.0,
                                     "return_per_seed": [1.0, None, -0.5], "episodes_per_seed": [2, 0, 1]}


def conditionals(lowered) -> int:
    text = lowered.as_text()
    return text.count("stablehlo.case") + text.count("stablehlo.if")


def test_what_is_due_at_a_step_stays_a_conditional_under_seeds():
    """The fidelity check and the health sample are due at some steps only; under --seeds the step count is shared
    by the seeds, so each stays a conditional taken once a step (a count mapped over the seeds would make it a
    select that computes the BPTT check at every step: 17 minutes without a first record on memory-chain-128)."""
    from rtrl.rl.loop import runner

    options = {**BASE, "fidelity_every": 5, "health_every": 4}
    one, seeds = runner(RLConfig(**options)), runner(RLConfig(**options, seeds=2))
    single = conditionals(jax.jit(one._advance, static_argnums=1).lower(one.init(0), 3))
    several = conditionals(jax.jit(seeds._advance_seeds, static_argnums=1).lower(seeds.init(0), 3))
    # the check, the sample, and the value owed at a truncation; under vmap the last depends on each seed's
    # environments and becomes a select, the two that are due by the step count stay conditionals
    assert (single, several) == (3, 2)


def test_host_seeds_bootstrap_a_truncation_as_their_one_seed_runs_under_a_conditional():
    """Host seeds whose episodes are truncated (CartPole cut at 6 steps): the value a truncation is owed is the
    bootstrap's under a conditional taken once for all seeds (not a select that steps the torso on s_T every
    step), and each seed is still its one-seed run. [Mutations, killed: the condition taken per seed -> a select,
    no conditional in the lowered step; the seeds' condition left False -> their states differ from the one-seed
    runs'.]"""
    from rtrl.rl.loop import Outcome, runner

    cut = {**HOST, "env_args": (("max_episode_steps", 6),)}
    state, records = train(RLConfig(**cut, seed=5, seeds=2), quiet=True)
    assert_seeds_are_singles(state, records, [train(RLConfig(**cut, seed=s), quiet=True) for s in (5, 6)])
    run = runner(RLConfig(**cut, seeds=2))
    acted = run._act_seeds(run.init(0))
    S, E = 2, cut["envs"]
    obs = np.zeros((S, E, 4))
    outcome = Outcome(obs, np.zeros((S, E)), np.zeros((S, E), bool), np.zeros((S, E), bool), obs, np.zeros((S, E)))
    assert conditionals(jax.jit(run._observe_seeds).lower(acted, outcome)) == 1
