"""``td_refresh``: the pending step's estimate is evaluated again after the update its step made (from the carry
the step began with), so that the TD error reads both of its values at the current parameters; off, the estimate as
it was acted on."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from rtrl.rl import RLConfig
from rtrl.rl.loop import OnlineActorCritic


def pending_and_reevaluated(td_refresh: bool, **options):
    """After a few steps of a small run in float64: the pending estimate of one more step, and the value of that
    step's input evaluated by the agent's forward pass at the parameters before and after its update."""
    config = RLConfig(**{"env": "tmaze", "hidden": 4, "envs": 2, "dtype": "float64", "lr": 0.02,
                         "td_refresh": td_refresh, "seed": 1, **options})
    run = OnlineActorCritic(config)
    state = run.advance(run.init(1), 5)
    after = run.advance(state, 1)
    value = jax.vmap(run.agent.value, in_axes=(None, 0, 0))
    return (np.asarray(after.pending.value), np.asarray(value(state.params, state.memory, state.obs)),
            np.asarray(value(after.params, state.memory, state.obs)))


@pytest.mark.parametrize("options", [{}, {"optimizer": "intentional", "lr": 0.5, "critic_lr": 0.5}])
def test_the_pending_estimate_is_the_value_at_the_parameters_the_update_left(options):
    """With ``td_refresh`` the pending estimate is the value at the parameters after the step's update, from the
    carry the step began with; without it, the value at the parameters it was acted on. Under one trace of both
    gradients (Adam) and the split intentional step. [guards: the refresh skipped, evaluated before the update, or
    from the carry after the step]"""
    stale, before, after = pending_and_reevaluated(False, **options)
    np.testing.assert_allclose(stale, before, rtol=1e-12)
    fresh, before, after = pending_and_reevaluated(True, **options)
    assert np.abs(after - before).min() > 1e-6  # the update moved the estimate: the case tests something
    np.testing.assert_allclose(fresh, after, rtol=1e-12)
