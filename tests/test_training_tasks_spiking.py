"""The neuromorphic tasks (evidence accumulation, store-recall, random manifolds): each rule on a tiny case
worked out by hand, and generated episodes checked against the rule read back from their inputs."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.training.tasks import TASKS, Evidence, EvidencePoisson, Manifolds, StoreRecall
from rtrl.training.tasks.evidence import evidence_episode
from rtrl.training.tasks.evidence_poisson import evidence_rates, evidence_sides
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


def paper_rates(sides, cues=7, cue_steps=100, spacing=150, length=2250, recall=150, channels=10, f0=0.04):
    """The spike probabilities of one trial, written out as the official code's ``generate_click_task_data`` loops
    (NumPy): cue k lights group ``sides[k]`` over ``[d + k spacing, d + k spacing + cue_steps)``, d = spacing -
    cue_steps; the recall group over the last ``recall`` steps; the background group at f0 / 4 throughout."""
    p = np.zeros((length, 4 * channels))
    d = spacing - cue_steps
    for k in range(cues):
        c = sides[k]
        p[d + k * spacing: d + k * spacing + cue_steps, c * channels:(c + 1) * channels] = f0
    p[-recall:, 2 * channels:3 * channels] = f0
    p[:, 3 * channels:] = f0 / 4
    return p


def test_poisson_evidence_rates_are_the_papers_layout():
    """The default layout (40 channels, 7 cues of 100 ms spaced 150 ms, 2,250 ms, recall window 150 ms) and a small
    one, against the official code's loops. [Mutations tried by hand: the first cue at step 0 (no initial
    silence), the background at f0: caught.]"""
    sides = np.array([1, 0, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(evidence_rates(jnp.asarray(sides), EvidencePoisson()), paper_rates(sides))
    small = EvidencePoisson(cues=3, cue_steps=2, spacing=3, episode_length=14, recall_steps=2, channels=2, rate=0.5)
    np.testing.assert_array_equal(evidence_rates(jnp.array([0, 1, 0]), small),
                                  paper_rates([0, 1, 0], 3, 2, 3, 14, 2, 2, 0.5))


def test_poisson_evidence_sides_are_a_mixture_of_binomials_and_the_label_is_fair():
    """The number of right cues of 20,000 draws against 0.5 Bin(7, 0.3) + 0.5 Bin(7, 0.7), each count within 4.5
    standard errors; so the label (more right cues) has probability 1/2, the documented chance level."""
    n = 20000
    sides = np.asarray(jax.vmap(lambda u: evidence_sides(u, 0.3))(jax.random.uniform(jax.random.PRNGKey(1), (n, 8))))
    counts = np.bincount(sides.sum(axis=1), minlength=8) / n
    k = np.arange(8)
    binom = np.array([math.comb(7, i) for i in k])
    expected = 0.5 * binom * (0.3 ** k * 0.7 ** (7 - k) + 0.7 ** k * 0.3 ** (7 - k))
    assert np.all(np.abs(counts - expected) <= 4.5 * np.sqrt(expected * (1 - expected) / n)), (counts, expected)
    assert expected[4:].sum() == pytest.approx(0.5) and EvidencePoisson().chance == 0.5


def test_poisson_evidence_episodes_follow_the_layout_and_the_majority():
    """Generated episodes: each cue's side read back from which group fired in its window; spikes only where the
    layout gives a rate, at that rate (pooled counts within 4.5 standard errors); the label the majority of the
    sides read back; the recall window the scored steps."""
    task = EvidencePoisson()
    eps = episodes(task, 4)
    spikes, cells = np.zeros(2), np.zeros(2)  # cue/recall channels at f0, background at f0 / 4
    for ep in eps:
        xs = np.asarray(ep.xs)
        assert xs.shape == (2250, 40) and set(np.unique(xs)) <= {0.0, 1.0}
        windows = [xs[50 + 150 * k: 150 + 150 * k, :20].reshape(100, 2, 10).sum(axis=(0, 2)) for k in range(7)]
        assert all(min(w) == 0 < max(w) for w in windows)
        sides = [int(np.argmax(w)) for w in windows]
        rates = paper_rates(sides)
        assert not xs[rates == 0].any()
        for i, f in enumerate((0.04, 0.01)):
            spikes[i] += xs[rates == f].sum()
            cells[i] += (rates == f).sum()
        assert set(np.asarray(ep.targets).tolist()) == {int(sum(sides) > 3)}
        np.testing.assert_array_equal(ep.weights, np.arange(2250) >= 2100)
    for i, f in enumerate((0.04, 0.01)):
        assert abs(spikes[i] / cells[i] - f) <= 4.5 * np.sqrt(f * (1 - f) / cells[i]), (i, spikes[i] / cells[i])


@pytest.mark.parametrize(("option", "value", "message"), [
    ("cues", 6, "cues must be odd"), ("rate", 1.5, "rate must be in"), ("side_probability", 0.7, "side_probability"),
    ("cue_steps", 200, "cue_steps must be at most spacing"), ("episode_length", 1199, "episode_length must leave room"),
    ("channels", 0, "channels")])
def test_poisson_evidence_refuses_bad_options(option, value, message):
    with pytest.raises(ValueError, match=message):
        EvidencePoisson(**{option: value})
