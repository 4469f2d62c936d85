"""rtrl.rl.envs.normalize: the running statistics and the vector wrappers (observation normalisation, reward scaling)
on tiny hand-checked cases, against NumPy written here from the module docstring's formulas (nothing from rtrl).

Mutants (tools/mutants.toml; `python tools/mutate.py --only ID ...`), each killed by this file:
``normalize-chan-term`` (Chan's merge without the old count in its between-batch term), ``normalize-sample-variance``
(``count - 1``), ``normalize-no-eps``, ``normalize-final-obs-after-step`` (``final_obs`` normalised with the
statistics after the step), ``normalize-final-obs-counted`` (``final_obs`` counted instead of ``obs``),
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
from rtrl.rl.envs.normalize import chain, merged, normalize_observations, scale_rewards, stats_init, variance
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


def test_batches_merged_are_the_statistics_of_every_sample():
    """[1, 3] then [5, 7, 9]: count 5, mean 5, population variance (16 + 4 + 0 + 4 + 16) / 5 = 8 (by hand); then a
    2-D case against np.mean / np.var of the samples concatenated."""
    stats = stats_init((1,), jnp.float64)
    assert float(variance(stats)[0]) == 0.0  # nothing counted: 0, not a division by zero
    stats = merged(stats, jnp.array([[1.0], [3.0]]))
    close(stats.count, 2.0), close(stats.mean, [2.0]), close(variance(stats), [1.0])
    stats = merged(stats, jnp.array([[5.0], [7.0], [9.0]]))
    close(stats.count, 5.0), close(stats.mean, [5.0]), close(variance(stats), [8.0])
    batches = [np.random.default_rng(i).normal(i, 1 + i, (2 + i, 3)) for i in range(3)]
    stats = stats_init((3,), jnp.float64)
    for b in batches:
        stats = merged(stats, jnp.asarray(b))
    seen = np.concatenate(batches)
    close(stats.count, len(seen)), close(stats.mean, seen.mean(0)), close(variance(stats), seen.var(0))


def test_observations_normalised_with_the_statistics_that_count_them_and_final_ones_with_the_step_before():
    """Two environments, observations of two entries. The first: [[1, 10], [3, 10]] -> mean [2, 10], variance
    [1, 0]: [[-1, 0], [1, 0]] / sqrt([1, 0] + EPS) (the constant entry 0, not 0/0). Then steps whose observations
    are counted and normalised with the statistics that include them, while ``final_obs`` (environment 1 ends at the
    first step, environment 0 at the third) is normalised with those before the step and never counted; then a
    ``reset`` (every environment begins an episode: a host restart) counts its observations with the rest."""
    wrapper = normalize_observations()
    first = np.array([[1.0, 10.0], [3.0, 10.0]])
    x, stats = wrapper.init(jnp.asarray(first))
    close(x, [[-1 / np.sqrt(1 + EPS), 0.0], [1 / np.sqrt(1 + EPS), 0.0]])
    steps = [  # (obs, done, final_obs)
        ([[2.0, 11.0], [-4.0, 9.0]], [False, True], [[2.0, 11.0], [50.0, -60.0]]),
        ([[0.5, 12.0], [-3.0, 8.5]], [False, False], [[0.5, 12.0], [-3.0, 8.5]]),
        ([[7.0, 10.0], [-2.0, 8.0]], [True, False], [[-70.0, 30.0], [-2.0, 8.0]]),
    ]
    seen = [first]
    for obs, done, final in steps:
        before = np.concatenate(seen)
        wrapped, stats = wrapper.step(stats, outcome(obs, [0.0, 0.0], done, final))
        seen.append(np.array(obs))
        after = np.concatenate(seen)
        close(wrapped.final_obs, (np.array(final) - before.mean(0)) / np.sqrt(before.var(0) + EPS))
        close(wrapped.obs, (np.array(obs) - after.mean(0)) / np.sqrt(after.var(0) + EPS))
        assert np.array_equal(wrapped.done, done)  # the rest of the outcome passes through
    restart = np.array([[4.0, 4.0], [6.0, 5.0]])
    x, stats = wrapper.reset(stats, jnp.asarray(restart))
    seen.append(restart)
    after = np.concatenate(seen)
    close(stats.count, len(after))
    close(x, (restart - after.mean(0)) / np.sqrt(after.var(0) + EPS))


def test_rewards_scaled_by_the_deviation_of_the_discounted_return_restarted_after_an_episode_end():
    """gamma 0.5, two environments. By hand: rewards [1, 3] -> R [1, 3], variance 1, scaled [1, 3] / sqrt(1 + EPS);
    environment 0's episode ends there. Rewards [2, 1] -> R [2 (restarted), 0.5 * 3 + 1 = 2.5]; the returns seen
    [1, 3, 2, 2.5]: mean 2.125, variance (1.125^2 + 0.875^2 + 0.125^2 + 0.375^2) / 4 = 0.546875. Then steps
    against the NumPy recursion, and a ``reset`` that restarts every return."""
    wrapper = scale_rewards(0.5)
    obs = jnp.zeros((2, 1), jnp.float64)
    same, state = wrapper.init(obs)
    assert same is obs
    wrapped, state = wrapper.step(state, outcome(obs, [1.0, 3.0], [True, False], obs))
    close(wrapped.reward, np.array([1.0, 3.0]) / np.sqrt(1 + EPS))
    wrapped, state = wrapper.step(state, outcome(obs, [2.0, 1.0], [False, False], obs))
    close(wrapped.reward, np.array([2.0, 1.0]) / np.sqrt(0.546875 + EPS))

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
        close(wrapped.reward, np.array(rewards) / np.sqrt(np.var(returns) + EPS))
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
    expected = (first - first.mean(0)) / np.sqrt(first.var(0) + EPS) if normalize_obs else first
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
    close(restarted.wrappers[0].count, 4.0)
    close(restarted.obs, (new - seen.mean(0)) / np.sqrt(seen.var(0) + EPS))
    assert np.array_equal(restarted.wrappers[1].ended, [True, True])
    assert float(restarted.wrappers[1].returns.count) == 6.0
