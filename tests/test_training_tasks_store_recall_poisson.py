"""The LSNN tutorial's store-recall (``store_recall_poisson``): the sentence rule and the input layout on a sentence
worked out by hand, the sentences' distribution against a NumPy copy of the tutorial's generator (its walk,
rejection and ``validity_test``, written here from ``tutorial_storerecall_utils.py``), and generated trials read
back from their spikes.

Mutations tried by hand (each fails a test here): the stored value taken from the store's own symbol instead of the
next one (the hand case); the inversion applied to the store's symbol (the hand case); no rejection of sentences
without a final recall (the validity and distribution test); the walk's probability ``1 / delay`` for
``1 / (1 + delay)`` (the distribution at delay 2; at the tutorial's 6, 1/6 against 1/7 is too close to tell).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.training.tasks import TASKS, StoreRecallPoisson
from rtrl.training.tasks.store_recall_poisson import RECALL, STORE, symbol_gates, walk_symbols

S, R = STORE, RECALL


def test_gates_and_targets_of_a_sentence_by_hand():
    """Sentence 0 S 1 0 R 1 S 0 R 0 1 1, the first store's next value inverted, the second's not. The store shows
    the value after it (1, then 0); the symbol after the first store shows the inverse (0); the recalls ask for 1
    and 0."""
    symbols = jnp.array([0, S, 1, 0, R, 1, S, 0, R, 0, 1, 1])
    flips = jnp.array([False, True, True, False, False, True, False, True, False, False, False, True])
    gates, kept = symbol_gates(symbols, flips)
    np.testing.assert_array_equal(np.asarray(gates).T, [
        [1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0],   # value 0
        [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1],   # value 1
        [0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0],   # store
        [0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]])  # recall
    assert int(kept[4]) == 1 and int(kept[8]) == 0


def test_the_walk_and_its_validity_by_hand():
    """p = 0.5; digits' coins 0.1 (-> 1) and 0.9 (-> 0) alternating; the walk's uniforms put a store at symbol 1, a
    recall at 3: valid. A recall right after the store, or no recall after the last store: invalid."""
    coins = jnp.array([0.1, 0.9] * 3)
    sym, ok = walk_symbols(jnp.concatenate([coins, jnp.array([0.9, 0.2, 0.9, 0.3, 0.9, 0.9])]), 0.5)
    np.testing.assert_array_equal(sym, [1, S, 1, R, 1, 0])
    assert bool(ok)
    assert not bool(walk_symbols(jnp.concatenate([coins, jnp.array([0.9, 0.2, 0.3, 0.9, 0.9, 0.9])]), 0.5)[1])
    assert not bool(walk_symbols(jnp.concatenate([coins, jnp.array([0.9, 0.2, 0.9, 0.3, 0.2, 0.9])]), 0.5)[1])


def tutorial_sentence(rng, length, p):
    """A NumPy copy of the tutorial's ``generate_input_with_prob`` for one sentence (its ``validity_test`` in
    full), with ``last_signal`` carried across rejected tries as there."""
    last = R
    while True:
        seq = rng.choice([0, 1], size=length)
        for t in range(length):
            if last == R and rng.random() < p:
                seq[t], last = S, S
            elif last == S and rng.random() < p:
                seq[t], last = R, R
        if tutorial_valid(seq):
            return seq


def tutorial_valid(seq):
    if not ((seq == R).any() and (seq == S).any() and (seq < S).any()):
        return False
    if np.argmax(seq == R) < np.argmax(seq == S) or -np.argmax(seq[::-1] == R) < -np.argmax(seq[::-1] == S):
        return False
    stores, recalls = np.where(seq == S)[0], np.where(seq == R)[0]
    if any(t == seq.size - 1 or seq[t + 1] in (R, S) for t in stores):
        return False
    if any(not ((a < stores) & (stores < b)).any() for a, b in zip(recalls[:-1], recalls[1:], strict=False)):
        return False
    return not any(not ((a < recalls) & (recalls < b)).any() for a, b in zip(stores[:-1], stores[1:], strict=False))


@pytest.mark.parametrize("delay", [6, 2])
def test_sentences_are_valid_and_distributed_as_the_tutorials(delay):
    """2,000 sentences of ours and 2,000 of the tutorial's generator (12 symbols, the tutorial's delay 6, and 2):
    every one of ours passes the tutorial's validity test; the mean number of stores and of symbols between a store
    and its recall agree within 4 standard errors."""
    task = StoreRecallPoisson(delay=delay)
    ours = np.asarray(jax.jit(jax.vmap(lambda k: task.sentence(k)[0]))(jax.random.split(jax.random.PRNGKey(1), 2000)))
    rng = np.random.default_rng(0)
    theirs = np.array([tutorial_sentence(rng, 12, 1 / (1 + delay)) for _ in range(2000)])
    assert all(tutorial_valid(s) for s in ours)

    def stats(sentences):
        stores = (sentences == S).sum(1)
        delays = [r - s for seq in sentences for s, r in zip(np.where(seq == S)[0], np.where(seq == R)[0],
                                                              strict=True)]
        return stores, np.array(delays, float)

    for a, b in zip(stats(ours), stats(theirs), strict=True):
        se = np.sqrt(a.var() / a.size + b.var() / b.size)
        assert abs(a.mean() - b.mean()) < 4 * se, (a.mean(), b.mean())


def test_generated_trials_read_back_from_their_spikes():
    """Small trials (4 channels a group, 50 steps a symbol, rate 0.5): each group spikes during a symbol exactly
    where its gate is on (read back from the spike counts), the recall symbols are the scored steps, and the target
    there is the value shown during the last store."""
    task = StoreRecallPoisson(symbol_steps=50, channels=4, rate=0.5)
    eps = jax.jit(jax.vmap(task.episode))(jax.random.split(jax.random.PRNGKey(2), 4))
    for b in range(4):
        xs = np.asarray(eps.xs[b]).reshape(12, 50, 4, 4).sum(axis=(1, 3))  # (symbol, group) spike counts
        on = xs > 0
        assert (on[:, :2].sum(1) <= 1).all()  # one value at a time
        assert (on[:, 2] | on[:, 3] | on[:, :2].any(1)).all()  # every symbol shows something
        weights = np.asarray(eps.weights[b]).reshape(12, 50)
        np.testing.assert_array_equal(weights[:, 0], on[:, 3])
        np.testing.assert_array_equal(weights, np.repeat(on[:, 3:4], 50, axis=1))
        kept = None
        for c in range(12):
            if on[c, 2]:
                kept = int(np.argmax(on[c, :2]))
            if on[c, 3]:
                assert (np.asarray(eps.targets[b]).reshape(12, 50)[c] == kept).all()


def test_registered_with_the_tutorials_sizes_and_bad_options_refused():
    task = TASKS["store_recall_poisson"]()
    assert (task.input_size, task.length, task.output_size, task.chance) == (100, 2400, 2, 0.5)
    for option, value in (("rate", 1.5), ("delay", 0.0), ("symbols", 2), ("channels", 0)):
        with pytest.raises(ValueError, match=option):
            StoreRecallPoisson(**{option: value})


def test_the_delay_is_at_most_ten_times_the_symbols():
    """``delay <= 10 * symbols``: 30 with 3 symbols and 120 with the tutorial's 12 are accepted (the bound itself), a
    hair above refused naming the bound (a sentence with a store and its recall too rare to draw). [guards: the
    bound itself refused (``>=``); the bound of another multiple]"""
    assert StoreRecallPoisson(symbols=3, delay=30.0).delay == 30.0
    assert StoreRecallPoisson(delay=120.0).delay == 120.0
    for symbols, delay in ((3, 30.001), (12, 121.0)):
        with pytest.raises(ValueError, match=rf"delay must be at most 10 x symbols = {10 * symbols} \("):
            StoreRecallPoisson(symbols=symbols, delay=delay)
