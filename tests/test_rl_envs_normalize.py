"""rtrl.rl.envs.normalize: the running statistics and the vector wrappers (observation normalisation, reward scaling)
on tiny hand-checked cases, against NumPy written here from the module docstring's formulas (nothing from rtrl).

Mutants (tools/mutants.toml; `python tools/mutate.py --only ID ...`), each killed by this file:
``normalize-no-prior`` (the statistics start empty), ``normalize-chan-term`` (Chan's merge without the old count in
its between-batch term), ``normalize-sample-variance`` (``count - 1``), ``normalize-no-eps``,
``normalize-final-obs-after-step`` (``final_obs`` normalised with the statistics after the step),
``normalize-final-obs-counted`` (``final_obs`` counted instead of ``obs``),
``rl-discounted-reset-early`` (the return restarted at the reward that ends the episode: purejaxrl's order),
``scale-reset-keeps-returns``, ``scale-pre-step-statistics`` (the reward scaled by the statistics before the step's
return), ``chain-reversed``, and in rtrl/rl/loop.py ``loop-restart-reinitialises-wrappers`` (a host restart starts
the statistics again); ``loop-wrappers-not-carried`` (the statistics not carried from step to step) is killed by
tests/test_rl_rules.py.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.rl import RLConfig
from rtrl.rl.envs.normalize import Stats, chain, merged, normalize_observations, scale_rewards, stats_init, variance
from rtrl.rl.loop import OnlineActorCritic

EPS = 1e-8


class Outcome(NamedTuple):  # the fields the wrappers read, as the loops' Outcome has them
    obs: jax.Array
    reward: jax.Array
    done: jax.Array
    final_obs: jax.Array


def outcome(obs, reward, done, final_obs):
    return Outcome(jnp.asarray(obs, jnp.float64), jnp.asarray(reward, jnp.float64), jnp.asarray(done),
                   jnp.asarray(final_obs, jnp.float64))


def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-13, atol=1e-15)


def pooled(samples):
    """The mean and variance of ``samples`` (leading axis) with the prior, written from its definition: one more
    sample at 0 that carries variance 1 of its own (population variance over n + 1)."""
    samples = np.asarray(samples, dtype=float)
    everything = np.concatenate([np.zeros((1, *samples.shape[1:])), samples])
    mean = everything.mean(0)
    return mean, (((everything - mean) ** 2).sum(0) + 1) / len(everything)


def test_batches_merged_are_the_statistics_of_every_sample():
    """From nothing counted, [1, 3] then [5, 7, 9]: count 5, mean 5, population variance (16 + 4 + 0 + 4 + 16) / 5
    = 8 (by hand); then a 2-D case against np.mean / np.var of the samples concatenated."""
    empty = lambda n: Stats(jnp.zeros((), jnp.float64), jnp.zeros((n,)), jnp.zeros((n,)))  # noqa: E731
    stats = merged(empty(1), jnp.array([[1.0], [3.0]]))
    close(stats.count, 2.0), close(stats.mean, [2.0]), close(variance(stats), [1.0])
    stats = merged(stats, jnp.array([[5.0], [7.0], [9.0]]))
    close(stats.count, 5.0), close(stats.mean, [5.0]), close(variance(stats), [8.0])
    batches = [np.random.default_rng(i).normal(i, 1 + i, (2 + i, 3)) for i in range(3)]
    stats = empty(3)
    for b in batches:
        stats = merged(stats, jnp.asarray(b))
    seen = np.concatenate(batches)
    close(stats.count, len(seen)), close(stats.mean, seen.mean(0)), close(variance(stats), seen.var(0))


def test_statistics_start_from_one_pseudo_sample_at_zero_with_variance_one():
    """The prior (``stats_init``): before any sample, count 1, mean 0, variance 1. After the one sample [4]: count
    2, mean 2, M2 = 1 + (4 - 0)^2 * 1 * 1 / 2 = 9, variance 4.5 (by hand), where without the prior it would be 0;
    then batches against ``pooled``."""
    stats = stats_init((1,), jnp.float64)
    close(stats.count, 1.0), close(stats.mean, [0.0]), close(variance(stats), [1.0])
    stats = merged(stats, jnp.array([[4.0]]))
    close(stats.count, 2.0), close(stats.mean, [2.0]), close(variance(stats), [4.5])
    batches = [np.random.default_rng(i).normal(i, 1 + i, (1 + i, 2)) for i in range(3)]
    stats = stats_init((2,), jnp.float64)
    for b in batches:
        stats = merged(stats, jnp.asarray(b))
    mean, var = pooled(np.concatenate(batches))
    close(stats.mean, mean), close(variance(stats), var)


def test_observations_normalised_with_the_statistics_that_count_them_and_final_ones_with_the_step_before():
    """Two environments, observations of two entries. The first: [[1, 10], [3, 10]] with the prior -> mean
    [4/3, 20/3], M2 [1 + 2 + 8/3, 1 + 0 + 200/3] over 3 (by hand): the constant entry is not 0/0, and not 0 either. Then
    steps whose observations are counted and normalised with the statistics that include them, while ``final_obs``
    (environment 1 ends at the first step, environment 0 at the third) is normalised with those before the step and
    never counted; then a ``reset`` (every environment begins an episode: a host restart) counts its observations
    with the rest."""
    wrapper = normalize_observations()
    first = np.array([[1.0, 10.0], [3.0, 10.0]])
    x, stats = wrapper.init(jnp.asarray(first))
    mean, var = np.array([4 / 3, 20 / 3]), np.array([17 / 3, 203 / 3]) / 3
    close(x, (first - mean) / np.sqrt(var + EPS))
    steps = [  # (obs, done, final_obs)
        ([[2.0, 11.0], [-4.0, 9.0]], [False, True], [[2.0, 11.0], [50.0, -60.0]]),
        ([[0.5, 12.0], [-3.0, 8.5]], [False, False], [[0.5, 12.0], [-3.0, 8.5]]),
        ([[7.0, 10.0], [-2.0, 8.0]], [True, False], [[-70.0, 30.0], [-2.0, 8.0]]),
    ]
    seen = [first]
    for obs, done, final in steps:
        before = pooled(np.concatenate(seen))
        wrapped, stats = wrapper.step(stats, outcome(obs, [0.0, 0.0], done, final))
        seen.append(np.array(obs))
        after = pooled(np.concatenate(seen))
        close(wrapped.final_obs, (np.array(final) - before[0]) / np.sqrt(before[1] + EPS))
        close(wrapped.obs, (np.array(obs) - after[0]) / np.sqrt(after[1] + EPS))
        assert np.array_equal(wrapped.done, done)  # the rest of the outcome passes through
    restart = np.array([[4.0, 4.0], [6.0, 5.0]])
    x, stats = wrapper.reset(stats, jnp.asarray(restart))
    seen.append(restart)
    after = pooled(np.concatenate(seen))
    close(stats.count, 1 + len(np.concatenate(seen)))
    close(x, (restart - after[0]) / np.sqrt(after[1] + EPS))


def test_a_clock_column_passes_as_it_is_and_is_counted_all_the_same():
    """``normalize_observations(clock=1)``: the last column (the time) is given as it came, in ``obs`` and in
    ``final_obs``, while the other columns are normalised as without it; the statistics count every column (their
    shape the observation's, as a checkpoint holds them). By hand, with the prior: [[1, -0.5], [3, 0.25]] -> the
    first column's mean 4/3 and variance 17/9 ({0, 1, 3} and the prior's 1), the second's mean -1/12; the clock as
    it came. [guards: the clock normalised, the wrong end kept]"""
    wrapper = normalize_observations(clock=1)
    x, stats = wrapper.init(jnp.asarray([[1.0, -0.5], [3.0, 0.25]]))
    close(x, [[(1 - 4 / 3) / np.sqrt(17 / 9 + EPS), -0.5], [(3 - 4 / 3) / np.sqrt(17 / 9 + EPS), 0.25]])
    assert stats.mean.shape == (2,)
    close(stats.mean, [4 / 3, -1 / 12])
    wrapped, stats = wrapper.step(stats, outcome([[2.0, 0.5], [5.0, -0.4]], [0.0, 0.0], [False, True],
                                                 [[2.0, 0.5], [9.0, 0.3]]))
    before = np.sqrt(17 / 9 + EPS)  # the statistics before the step
    close(wrapped.final_obs, [[(2 - 4 / 3) / before, 0.5], [(9 - 4 / 3) / before, 0.3]])
    mean, var = pooled([1.0, 3.0, 2.0, 5.0])
    close(wrapped.obs[:, 0], (np.array([2.0, 5.0]) - mean) / np.sqrt(var + EPS))
    close(wrapped.obs[:, 1], [0.5, -0.4])


def test_a_run_given_the_time_acts_on_it_unnormalised():
    """A run with ``extra_inputs=time`` normalises the observation but not its last entry, the time over the
    episode's limit less 1/2 (-1/2 at every first observation); without the time every entry is normalised.
    [guards: the loop building the normaliser without the clock]"""
    base = dict(env="tmaze", envs=3, dtype="float64", hidden=2, extra_inputs=("time",))
    raw = OnlineActorCritic(RLConfig(**base, normalize_obs=False)).init(5)
    state = OnlineActorCritic(RLConfig(**base)).init(5)
    first = np.asarray(raw.obs)
    close(first[:, -1], [-0.5] * 3)
    close(state.obs[:, -1], first[:, -1])
    mean, var = pooled(first[:, :-1])
    close(state.obs[:, :-1], (first[:, :-1] - mean) / np.sqrt(var + EPS))


def test_rewards_scaled_by_the_deviation_of_the_discounted_return_restarted_after_an_episode_end():
    """gamma 0.5, two environments, the statistics from the prior (a pseudo-return 0 carrying variance 1). By
    hand: rewards [1, 3] -> R [1, 3]; with the prior count 3, mean 4/3, M2 1 + 2 + 2^2 * 2/3 = 17/3, variance 17/9:
    scaled [1, 3] / sqrt(17/9 + EPS); environment 0's episode ends there. Rewards [2, 1] -> R [2 (restarted),
    0.5 * 3 + 1 = 2.5]; with the prior's 0 the returns [0, 1, 3, 2, 2.5]: mean 1.7, variance (1.7^2 + 0.7^2 + 1.3^2
    + 0.3^2 + 0.8^2 + 1) / 5 = 1.36. Then steps against ``pooled`` of the NumPy recursion, and a ``reset`` that
    restarts every return."""
    wrapper = scale_rewards(0.5)
    obs = jnp.zeros((2, 1), jnp.float64)
    same, state = wrapper.init(obs)
    assert same is obs
    wrapped, state = wrapper.step(state, outcome(obs, [1.0, 3.0], [True, False], obs))
    close(wrapped.reward, np.array([1.0, 3.0]) / np.sqrt(17 / 9 + EPS))
    wrapped, state = wrapper.step(state, outcome(obs, [2.0, 1.0], [False, False], obs))
    close(wrapped.reward, np.array([2.0, 1.0]) / np.sqrt(1.36 + EPS))

    R, returns = np.array([2.0, 2.5]), [1.0, 3.0, 2.0, 2.5]
    ended = np.array([False, False])
    script = [([0.5, -1.0], [False, True]), ([2.0, 0.0], [False, False]), ("reset", None),
              ([1.0, 4.0], [True, False]), ([-2.0, 1.5], [False, False])]
    for rewards, done in script:
        if rewards == "reset":
            _, state = wrapper.reset(state, obs)
            ended = np.array([True, True])
            continue
        R = 0.5 * np.where(ended, 0.0, R) + np.array(rewards)
        returns.extend(R)
        wrapped, state = wrapper.step(state, outcome(obs, rewards, done, obs))
        close(wrapped.reward, np.array(rewards) / np.sqrt(pooled(returns)[1] + EPS))
        close(wrapped.obs, obs)
        ended = np.array(done)


def test_chain_applies_its_wrappers_in_order_each_with_its_state():
    """``chain(a, b)`` is ``a`` then ``b``, its state ``(a's, b's)``; ``chain()`` changes nothing and holds ``()``.
    A scaling wrapper (observations times 2) then normalisation is told apart from the reverse order by
    ``final_obs`` (normalised before the scaling's step: the scale does not cancel there)."""
    from rtrl.rl.envs.normalize import VecWrapper

    double = VecWrapper(lambda obs: (2 * obs, ()), lambda s, obs: (2 * obs, s),
                        lambda s, o: (o._replace(obs=2 * o.obs, final_obs=3 * o.final_obs), s))
    norm = normalize_observations()
    both = chain(double, norm)
    first = jnp.array([[1.0, 0.0], [2.0, 1.0]])
    x, (s_double, s_norm) = both.init(first)
    y, alone = norm.init(2 * first)
    close(x, y), close(s_norm.m2, alone.m2)
    assert s_double == ()
    step = outcome([[0.0, 3.0], [1.0, 1.0]], [0.0, 0.0], [True, False], [[1.0, 1.0], [1.0, 1.0]])
    wrapped, _ = both.step((s_double, s_norm), step)
    expected, _ = norm.step(alone, step._replace(obs=2 * step.obs, final_obs=3 * step.final_obs))
    close(wrapped.obs, expected.obs), close(wrapped.final_obs, expected.final_obs)
    nothing = chain()
    x, state = nothing.init(first)
    assert state == () and x is first
    assert nothing.step((), step) == (step, ())


@pytest.mark.parametrize("normalize_obs, scale_rewards", [(True, True), (False, False)])
def test_the_loop_acts_on_the_observations_as_the_options_say(normalize_obs, scale_rewards):
    """``RLConfig``'s options choose the wrappers: the first observation of a run normalised over the batch where
    ``normalize_obs`` (the raw one, from the same seed, otherwise), and the state empty with both off."""
    base = dict(env="tmaze", envs=3, dtype="float64", hidden=2)
    raw = OnlineActorCritic(RLConfig(**base, normalize_obs=False, scale_rewards=False)).init(5)
    run = OnlineActorCritic(RLConfig(**base, normalize_obs=normalize_obs, scale_rewards=scale_rewards))
    state = run.init(5)
    first = np.asarray(raw.obs)
    assert raw.wrappers == ()
    mean, var = pooled(first)
    expected = (first - mean) / np.sqrt(var + EPS) if normalize_obs else first
    close(state.obs, expected)
    assert len(state.wrappers) == normalize_obs + scale_rewards


def test_a_host_restart_counts_its_observations_with_the_rest_and_restarts_the_returns():
    """A host run (Gymnasium's CartPole) restarted (``OnlineActorCritic.restarted``: a checkpoint resumed): the new
    episodes' first observations normalised with the statistics of both batches (not started again), every
    discounted return restarted, the return statistics kept."""
    run = OnlineActorCritic(RLConfig(env="gymnasium:CartPole-v1", envs=2, dtype="float64", hidden=2))
    state = run.init(0)
    vector = run.environments.vector
    first = np.asarray(vector.reset(run.seeds(jax.random.PRNGKey(0)), 0), np.float64)  # any batch will do
    state = state._replace(wrappers=run.wrappers.init(jnp.asarray(first, jnp.float64))[1])
    returns = state.wrappers[1].returns._replace(count=jnp.float64(6.0))
    state = state._replace(wrappers=(state.wrappers[0], state.wrappers[1]._replace(returns=returns,
                                                                                   ended=jnp.zeros(2, bool))))
    restarted = run.environments.restarted(state)
    new = np.asarray(vector.reset(run.seeds(state.key), int(state.step)), np.float64)  # what restarted drew
    seen = np.concatenate([first, new])
    close(restarted.wrappers[0].count, 5.0)  # the prior and four observations
    mean, var = pooled(seen)
    close(restarted.obs, (new - mean) / np.sqrt(var + EPS))
    assert np.array_equal(restarted.wrappers[1].ended, [True, True])
    assert float(restarted.wrappers[1].returns.count) == 6.0
