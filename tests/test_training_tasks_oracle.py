"""Task generators against their documented formulas, re-derived here in NumPy from the module docstrings.

Each oracle takes the same uniform draws the task documents (one ``jax.random.uniform`` call per episode) and
builds the episode from the docstring's table with plain loops; nothing is shared with the generator but the
draws. Sizes are odd on purpose (odd halves, odd lengths), and a sweep over many keys checks that every position
a uniform draw can take (the first and the last included) is reached, so an off-by-one in a range is caught.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.training.tasks import Adding, Copy, Recall

KEYS = 600


def draws(key, n):
    return np.asarray(jax.random.uniform(key, (n,), jnp.float64))


def index_below(u, n):
    """The docstrings' "uniform on 0 .. n-1" from one uniform: floor(u n), and n - 1 for u that rounds up to 1."""
    return min(int(np.floor(u * n)), n - 1)


def copy_oracle(L, u):
    l, bits = 1 + index_below(u[0], L), (u[1:] < 0.5).astype(float)
    T = 2 * L + 1
    xs, ys, ws = np.zeros((T, 3)), np.zeros((T, 1)), np.zeros(T)
    for t in range(T):
        if t < l:
            xs[t] = [bits[t], 1 - bits[t], 0]
        elif t == l:
            xs[t] = [0, 0, 1]
        elif t <= 2 * l:
            ys[t, 0], ws[t] = bits[t - l - 1], 1
    return xs, ys, ws, l


def adding_oracle(T, u):
    half = T // 2
    first, second = index_below(u[T], half), half + index_below(u[T + 1], T - half)
    xs = np.zeros((T, 2))
    xs[:, 0] = u[:T]
    xs[[first, second], 1] = 1
    ys, ws = np.zeros((T, 1)), np.zeros(T)
    ys[T - 1, 0], ws[T - 1] = u[first] + u[second], 1
    return xs, ys, ws, (first, second)


def recall_oracle(delay, T, u):
    bits = (u < 0.5).astype(float)
    xs = (2 * bits - 1)[:, None]
    ys, ws = np.zeros((T, 1)), np.zeros(T)
    for t in range(delay, T):
        ys[t, 0], ws[t] = bits[t - delay], 1
    return xs, ys, ws


def assert_episode(got, xs, ys, ws):
    np.testing.assert_array_equal(np.asarray(got.xs), xs)
    np.testing.assert_array_equal(np.asarray(got.targets), ys)
    np.testing.assert_array_equal(np.asarray(got.weights), ws)


def episodes(task, n=KEYS):
    keys = jax.random.split(jax.random.PRNGKey(3), n)
    return keys, jax.jit(jax.vmap(task.episode))(keys)


@pytest.mark.parametrize("L", [1, 5])
def test_copy_matches_its_table_and_reaches_every_length(L):
    task = Copy(max_length=L)
    keys, batch = episodes(task)
    lengths = set()
    for i in range(0, KEYS, 7):
        xs, ys, ws, l = copy_oracle(L, draws(keys[i], L + 1))
        assert_episode(jax.tree.map(lambda a, i=i: a[i], batch), xs, ys, ws)
    for i in range(KEYS):
        lengths.add(copy_oracle(L, draws(keys[i], L + 1))[3])
    assert lengths == set(range(1, L + 1))
    # the generator's own lengths: one recalled bit per shown bit
    assert set(np.asarray(batch.weights.sum(axis=1)).astype(int)) == lengths


@pytest.mark.parametrize("T", [2, 11])
def test_adding_matches_its_formula_and_marks_every_position_of_each_half(T):
    task = Adding(sequence_length=T)
    keys, batch = episodes(task)
    for i in range(0, KEYS, 11):
        xs, ys, ws, _ = adding_oracle(T, draws(keys[i], T + 2))
        assert_episode(jax.tree.map(lambda a, i=i: a[i], batch), xs, ys, ws)
    marks = np.asarray(batch.xs[..., 1])
    assert (marks.sum(axis=1) == 2).all()
    half = T // 2
    firsts, seconds = marks[:, :half].argmax(axis=1), half + marks[:, half:].argmax(axis=1)
    assert set(firsts) == set(range(half)) and set(seconds) == set(range(half, T))


@pytest.mark.parametrize(("delay", "T"), [(1, 2), (3, 9)])
def test_recall_matches_its_formula(delay, T):
    task = Recall(delay=delay, episode_length=T)
    keys, batch = episodes(task, 40)
    for i in range(40):
        xs, ys, ws = recall_oracle(delay, T, draws(keys[i], T))
        assert_episode(jax.tree.map(lambda a, i=i: a[i], batch), xs, ys, ws)


def test_index_below_edges_are_the_documented_ones():
    """The hand-checked cases behind the oracle: the last bucket holds u just below 1, the first u = 0."""
    assert [index_below(u, 5) for u in (0.0, 0.1999, 0.2, 0.9999999)] == [0, 0, 1, 4]


def evidence_oracle(sides, cue_steps, gap, delay, decision_steps):
    period = cue_steps + gap
    T = len(sides) * period + delay + decision_steps
    xs, ws = np.zeros((T, 3)), np.zeros(T)
    for i, side in enumerate(sides):
        for k in range(cue_steps):
            xs[i * period + k, side] = 1
    for t in range(T - decision_steps, T):
        xs[t, 2], ws[t] = 1, 1
    majority = int(sum(sides) > len(sides) / 2)
    return xs, np.full(T, majority), ws


@pytest.mark.parametrize(("cues", "cue_steps", "gap", "delay", "decision_steps"), [(1, 1, 1, 1, 1), (5, 2, 3, 4, 3)])
def test_evidence_matches_its_layout(cues, cue_steps, gap, delay, decision_steps):
    from rtrl.training.tasks import Evidence

    task = Evidence(cues=cues, cue_steps=cue_steps, gap=gap, delay=delay, decision_steps=decision_steps)
    keys, batch = episodes(task, 60)
    majorities = set()
    for i in range(60):
        sides = (np.asarray(jax.random.uniform(keys[i], (cues,))) < 0.5).astype(int)
        xs, ys, ws = evidence_oracle(sides, cue_steps, gap, delay, decision_steps)
        assert_episode(jax.tree.map(lambda a, i=i: a[i], batch), xs, ys, ws)
        majorities.add(int(ys[0]))
    assert majorities == {0, 1}


def store_recall_oracle(L, u):
    """The docstring's episode: a value bit a step (u < 0.5: 1), shown as +1 / -1; the store command at one step of
    the first quarter (``index_below(u[L], max(L // 4, 1))``), the recall at one step of the second half
    (``L // 2 + index_below(u[L + 1], L - L // 2)``); the target at the recall step the bit stored, only that step
    scored."""
    bits = (u[:L] < 0.5).astype(float)
    store, recall = index_below(u[L], max(L // 4, 1)), L // 2 + index_below(u[L + 1], L - L // 2)
    xs = np.zeros((L, 3))
    xs[:, 0] = 2 * bits - 1
    xs[store, 1] = xs[recall, 2] = 1
    ws = np.zeros(L)
    ws[recall] = 1
    return xs, np.full((L, 1), bits[store]), ws, (store, recall)


@pytest.mark.parametrize("L", [4, 13])
def test_store_recall_matches_its_formula_and_reaches_every_store_and_recall_step(L):
    """Odd and even lengths: each episode against the oracle, and over the keys every step of the first quarter is
    a store step and every step of the second half (the last included) a recall step, no other. [guards: the
    recall drawn from ``half`` steps (the last never asked at odd lengths), from the first quarter on, or without
    the offset ``half``; the store drawn from the first half]"""
    from rtrl.training.tasks import StoreRecall

    task = StoreRecall(episode_length=L)
    keys, batch = episodes(task, 300)
    stores, recalls = set(), set()
    for i in range(300):
        xs, ys, ws, (store, recall) = store_recall_oracle(L, draws(keys[i], L + 2))
        assert_episode(jax.tree.map(lambda a, i=i: a[i], batch), xs, ys, ws)
        stores.add(store)
        recalls.add(recall)
    assert stores == set(range(max(L // 4, 1))) and recalls == set(range(L // 2, L))


def manifold_oracle(task, u):
    """The docstring's episode: class ``index_below(u[0], classes)`` at position ``alpha = u[1]``, channel ``i``
    firing once at step ``floor(pattern_steps * sigmoid(f_ci(alpha)))``, ``f_ci(alpha) = b_ci + sum_k a_cik
    cos(pi k alpha + phi_cik) / k`` (k = 1 .. 4), the curves' ``a``, ``b`` (standard normal) and ``phi`` (uniform on
    [0, 2 pi)) drawn from ``manifold_seed`` as documented; then the silent answer steps, every step's target the
    class, only the answer steps scored."""
    C, N, P, A = task.classes, task.channels, task.pattern_steps, task.answer_steps
    k_a, k_b, k_phi = jax.random.split(jax.random.PRNGKey(task.manifold_seed), 3)
    a = np.asarray(jax.random.normal(k_a, (C, N, 4)))
    b = np.asarray(jax.random.normal(k_b, (C, N)))
    phi = np.asarray(jax.random.uniform(k_phi, (C, N, 4), maxval=2 * np.pi))
    label, alpha = index_below(u[0], C), u[1]
    xs = np.zeros((P + A, N))
    for i in range(N):
        f = b[label, i] + sum(a[label, i, k - 1] * np.cos(np.pi * k * alpha + phi[label, i, k - 1]) / k
                              for k in range(1, 5))
        xs[index_below(1 / (1 + np.exp(-f)), P), i] = 1
    ws = np.zeros(P + A)
    ws[P:] = 1
    return xs, np.full(P + A, label), ws


def test_manifolds_match_their_formula():
    """Each episode's spike times against the oracle's, for a few classes and seeds of the curves. [guards: the
    harmonics without their 1/k, the phase outside the cosine, the class's curve read from another class]"""
    from rtrl.training.tasks import Manifolds

    for task in (Manifolds(classes=3, channels=6, pattern_steps=40, answer_steps=2),
                 Manifolds(classes=2, channels=4, pattern_steps=25, answer_steps=1, manifold_seed=5)):
        keys, batch = episodes(task, 40)
        for i in range(40):
            xs, ys, ws = manifold_oracle(task, draws(keys[i], 2))
            assert_episode(jax.tree.map(lambda a, i=i: a[i], batch), xs, ys, ws)
