"""Observation normalisation and reward scaling: wrappers of the vector of E environments, each owning its state.

Elsayed et al. (2024) found normalising observations (running mean and variance) and scaling rewards (by the running
standard deviation of the discounted return) necessary for stable streaming deep RL. Both statistics are over the
batch of the E environments of a run (Welford's algorithm, a batch merged as Chan et al. do), as purejaxrl's
``NormalizeVecObservation`` and ``NormalizeVecReward`` keep them. A vector wrapper is three pure functions of the
E environments' batch, its state apart::

    obs, state = wrapper.init(obs)                  the run's first observations (E, obs_size), nothing seen before
    obs, state = wrapper.reset(state, obs)          every environment begins a new episode with obs (the state kept)
    outcome, state = wrapper.step(state, outcome)   the environments' step (obs, reward, done, final_obs, ...)

``outcome`` is any NamedTuple with those fields (``rtrl.rl.envs.gymnasium_env.Outcome``, or ``rtrl.rl.envs.Step``
of the batch); ``chain(*wrappers)`` composes them, its state the tuple of theirs. The members:

``normalize_observations(clock=0)``
    state: the running ``Stats`` of every observation the agent has acted on. ``init`` / ``reset`` count ``obs``
    and return it normalised; ``step`` normalises ``final_obs`` (meaningful where ``done``) with the statistics
    before the step, the ones the step's own observation was normalised with (the value a truncated episode is
    owed is the torso's step on it), then counts ``obs`` (the next episode's first where ``done``: a final
    observation is never counted) and returns it normalised with the statistics that include it::

        stats_t = merge(stats_{t-1}, obs_t);   x_t = (obs_t - mean_t) / sqrt(var_t + 1e-8)

    except its last ``clock`` columns, passed as they are (the time input: ``rtrl.rl.envs.extra_inputs``; counted
    in the statistics all the same, so their shape is the observation's).

    The statistics start from a prior (``stats_init``): one pseudo-sample at mean 0 that carries variance 1, as
    streamlet's ``NormalizeObservationWrapper`` (Farr et al.'s) starts them.

``scale_rewards(gamma)``
    state: ``ScaleState``, the running ``Stats`` of the discounted returns and each environment's discounted return
    ``R`` with whether its episode has ended. ``step``::

        R_t = gamma * R_{t-1} + r_t   (R_t = r_t where the previous step ended the episode, or after ``reset``)
        stats_t = merge(stats_{t-1}, R_t);   the reward r_t / sqrt(var_t + 1e-8)

    (purejaxrl's ``NormalizeVecReward`` restarts ``R`` at the reward of the step that ends an episode; here that
    reward is the episode's last.) ``init`` and ``reset`` mark every episode ended. The returns' statistics start
    from the same prior as the observations': without it the first step's variance is 0 (one return, or E equal
    ones) and its reward arrives multiplied by 1e4, a TD error that one intentional step turns into parameters in the
    hundreds (Hopper, the anchor's agent). Farr et al.'s reward wrapper takes variance 1 until it has two returns,
    then their sample variance: the two differ in the first steps only, as the prior's weight 1 / (n + 1) fades.

Why wrappers of the vector, with their state apart and not inside the environment (purejaxrl keeps it in the
environment's state): a Gymnasium environment is stepped on the host, where its state is Python, while the agent
and the statistics run on the device. Both loops of ``rtrl.rl.loop`` build the batch's ``Outcome`` (the jitted one
from the vmapped ``Env.step``, the host one from the transfer) and hand it to one jitted function (``_observe``),
which applies the wrappers; their state is a field of ``RLState`` and checkpoints with it. So one code path serves
both, per-environment wrappers (``ExtraInputs``) stay where they are, and the agent acts on what it is given.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

EPS = 1e-8


# -- running statistics ------------------------------------------------------------------------------------------

class Stats(NamedTuple):
    count: jax.Array  # scalar
    mean: jax.Array
    m2: jax.Array  # sum of squared deviations from the mean


def stats_init(shape: tuple[int, ...], dtype) -> Stats:
    """The prior: one pseudo-sample at mean 0 carrying variance 1, so that no early step divides by a deviation
    near 0 (the first observation would normalise to 0, the first reward be scaled by 1 / sqrt(1e-8)); its weight
    in the statistics after n samples is 1 / (n + 1)."""
    return Stats(jnp.ones((), dtype), jnp.zeros(shape, dtype), jnp.ones(shape, dtype))


def merged(stats: Stats, batch: jax.Array) -> Stats:
    """``stats`` after the samples ``batch`` (leading axis: samples), merged as Chan et al. merge two batches."""
    n = batch.shape[0]
    mean_b = batch.mean(axis=0)
    m2_b = ((batch - mean_b) ** 2).sum(axis=0)
    count = stats.count + n
    delta = mean_b - stats.mean
    mean = stats.mean + delta * n / count
    m2 = stats.m2 + m2_b + delta**2 * stats.count * n / count
    return Stats(count, mean, m2)


def variance(stats: Stats) -> jax.Array:
    """The population variance of the samples counted, the prior's pseudo-sample among them."""
    return stats.m2 / stats.count


def standardized(stats: Stats, x: jax.Array, clock: int = 0) -> jax.Array:
    """``x`` standardised by ``stats``, its last ``clock`` columns as they are."""
    z = (x - stats.mean) / jnp.sqrt(variance(stats) + EPS)
    return jnp.concatenate([z[..., :-clock], x[..., -clock:]], axis=-1) if clock else z


# -- the wrappers ------------------------------------------------------------------------------------------------

class VecWrapper(NamedTuple):
    """A wrapper of the vector of environments (see the module docstring)."""

    init: Callable[[jax.Array], tuple[jax.Array, Any]]
    reset: Callable[[Any, jax.Array], tuple[jax.Array, Any]]
    step: Callable[[Any, Any], tuple[Any, Any]]


def normalize_observations(clock: int = 0) -> VecWrapper:
    """Observations normalised by the running mean and variance of those acted on, their last ``clock`` columns as
    they are (see the module docstring)."""

    def reset(stats, obs):
        stats = merged(stats, obs)
        return standardized(stats, obs, clock), stats

    def init(obs):
        return reset(stats_init(obs.shape[1:], obs.dtype), obs)

    def step(stats, outcome):
        final_obs = standardized(stats, outcome.final_obs, clock)
        obs, stats = reset(stats, outcome.obs)
        return outcome._replace(obs=obs, final_obs=final_obs), stats

    return VecWrapper(init, reset, step)


class ScaleState(NamedTuple):
    returns: Stats  # of the discounted returns R, over the environments and the steps
    discounted: jax.Array  # (E,) R of the episode under way, or of the one that just ended
    ended: jax.Array  # (E,) bool: its episode has ended (the next reward begins a new R)


def scale_rewards(gamma: float) -> VecWrapper:
    """Rewards divided by the running deviation of the discounted return (see the module docstring)."""

    def init(obs):
        E = obs.shape[0]
        return obs, ScaleState(stats_init((), obs.dtype), jnp.zeros((E,), obs.dtype), jnp.ones((E,), bool))

    def reset(state, obs):
        return obs, state._replace(ended=jnp.ones_like(state.ended))

    def step(state, outcome):
        discounted = gamma * jnp.where(state.ended, 0.0, state.discounted) + outcome.reward
        returns = merged(state.returns, discounted)
        scaled = outcome.reward / jnp.sqrt(variance(returns) + EPS)
        return outcome._replace(reward=scaled), ScaleState(returns, discounted, jnp.asarray(outcome.done))

    return VecWrapper(init, reset, step)


def chain(*wrappers: VecWrapper) -> VecWrapper:
    """The wrappers applied in order, the first innermost; the state is the tuple of theirs (``()`` for none)."""

    def init(obs):
        states = []
        for w in wrappers:
            obs, state = w.init(obs)
            states.append(state)
        return obs, tuple(states)

    def through(name, states, x):  # ``x`` through each wrapper's ``reset`` or ``step``, with its own state
        new = []
        for w, state in zip(wrappers, states, strict=True):
            x, state = getattr(w, name)(state, x)
            new.append(state)
        return x, tuple(new)

    return VecWrapper(init, functools.partial(through, "reset"), functools.partial(through, "step"))
