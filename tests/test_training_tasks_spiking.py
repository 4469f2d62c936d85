"""The neuromorphic tasks (evidence accumulation, store-recall, random manifolds): each rule on a tiny case
worked out by hand, and generated episodes checked against the rule read back from their inputs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.training.tasks import TASKS, Evidence, Manifolds, StoreRecall
from rtrl.training.tasks.evidence import evidence_episode
from rtrl.training.tasks.manifolds import manifold_episode
from rtrl.training.tasks.store_recall import store_recall_episode

KEYS = jax.random.split(jax.random.PRNGKey(0), 16)


def episodes(task, n=16):
    """``n`` generated episodes, one compiled call, as NumPy arrays (one per episode)."""
    eps = jax.tree.map(np.asarray, jax.jit(jax.vmap(task.episode))(KEYS[:n]))
    return [jax.tree.map(lambda a, i=i: a[i], eps) for i in range(n)]


def test_evidence_rule_by_hand():
    """Cues right, left, right (1 step each, 1 step gaps), 2 delay steps, 1 decision step: right has more.
    [Mutation tried by hand: the majority as ``2 * sum > cues`` written ``sum > cues // 2 + 1``: caught.]"""
    ep = evidence_episode(jnp.array([1, 0, 1]), cue_steps=1, gap=1, delay=2, decision_steps=1, dtype=jnp.float32)
    np.testing.assert_array_equal(ep.xs.T, [[0, 0, 1, 0, 0, 0, 0, 0, 0],    # left
                                            [1, 0, 0, 0, 1, 0, 0, 0, 0],    # right
                                            [0, 0, 0, 0, 0, 0, 0, 0, 1]])   # recall
    np.testing.assert_array_equal(ep.targets, [1] * 9)
    np.testing.assert_array_equal(ep.weights, [0] * 8 + [1])
    assert int(evidence_episode(jnp.array([0, 0, 1]), 1, 1, 2, 1, jnp.float32).targets[0]) == 0


def test_evidence_episodes_follow_the_rule():
    task = Evidence()
    for ep in episodes(task):
        left, right = (int(ep.xs[:, c].sum()) // task.cue_steps for c in (0, 1))
        assert left + right == task.cues and ep.xs.shape == (task.length, 3)
        assert set(np.asarray(ep.targets).tolist()) == {int(right > left)}
        assert np.array_equal(ep.weights, ep.xs[:, 2]) and int(ep.weights.sum()) == task.decision_steps


def test_store_recall_rule_by_hand():
    bits = jnp.array([1, 0, 0, 1, 1, 0])
    ep = store_recall_episode(bits, 0, 4, jnp.float32)
    np.testing.assert_array_equal(ep.xs.T, [[1, -1, -1, 1, 1, -1], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0]])
    np.testing.assert_array_equal(ep.weights, [0, 0, 0, 0, 1, 0])
    assert float(ep.targets[4, 0]) == 1.0
    assert float(store_recall_episode(bits, 1, 4, jnp.float32).targets[4, 0]) == 0.0


def test_store_recall_episodes_follow_the_rule():
    task = StoreRecall(episode_length=20)
    for ep in episodes(task):
        store, recall = int(jnp.argmax(ep.xs[:, 1])), int(jnp.argmax(ep.xs[:, 2]))
        assert ep.xs[:, 1].sum() == 1 and ep.xs[:, 2].sum() == 1 and store < 5 and 10 <= recall < 20
        assert float(ep.targets[recall, 0]) == float(ep.xs[store, 0] > 0)
        assert np.array_equal(ep.weights, ep.xs[:, 2])


def test_manifold_rule_by_hand():
    ep = manifold_episode(jnp.array([0, 2]), 1, pattern_steps=3, answer_steps=2, dtype=jnp.float32)
    np.testing.assert_array_equal(ep.xs, [[1, 0], [0, 0], [0, 1], [0, 0], [0, 0]])
    np.testing.assert_array_equal(ep.targets, [1] * 5)
    np.testing.assert_array_equal(ep.weights, [0, 0, 0, 1, 1])


def test_manifold_episodes_are_points_of_fixed_smooth_class_curves():
    """One spike per channel within the pattern; the curves depend on manifold_seed only; a small step along a
    curve moves the spike times by at most a step or so, while the classes differ."""
    task = Manifolds(classes=3, channels=10, pattern_steps=30)
    curve = jax.jit(jax.vmap(task.spike_times, in_axes=(None, 0)))
    for ep in episodes(task, 4):
        assert np.array_equal(ep.xs[: task.pattern_steps].sum(axis=0), np.ones(10)) and ep.xs[30:].sum() == 0
        label = int(ep.targets[0])
        times = np.argmax(ep.xs, axis=0)
        assert np.any(np.all(np.asarray(curve(label, jnp.linspace(0, 1, 2001))) == times, axis=1))
    near = jnp.abs(task.spike_times(0, 0.5) - task.spike_times(0, 0.501))
    assert int(near.max()) <= 1
    assert int(jnp.abs(task.spike_times(0, 0.5) - task.spike_times(1, 0.5)).sum()) > 10
    other = Manifolds(classes=3, channels=10, pattern_steps=30, manifold_seed=1)
    assert not jnp.array_equal(other.spike_times(0, 0.5), task.spike_times(0, 0.5))


def test_registered_and_bad_options_refused():
    assert {"evidence": Evidence, "store_recall": StoreRecall, "manifolds": Manifolds}.items() <= TASKS.items()
    with pytest.raises(ValueError, match="cues"):
        Evidence(cues=4)
    with pytest.raises(ValueError, match="episode_length"):
        StoreRecall(episode_length=3)
    assert Manifolds(classes=5).chance == 0.2 and Manifolds(channels=7).input_size == 7
