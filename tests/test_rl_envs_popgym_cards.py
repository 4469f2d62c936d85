"""The card games of POPGym in JAX (rtrl.rl.envs.popgym: RepeatPrevious, RepeatFirst, CountRecall, Autoencode,
HigherLower) against popgym itself, step by step over 1,000 steps of random actions (tests/popgym_check.py), at
every level; and each game's rules on a hand-worked deck.

popgym deals from the end of its shuffled ``deck.idx``; the port's deck is the cards in the order dealt, so popgym's
deck is injected as ``idx[::-1]``. Mutations tried by hand, each caught: RepeatPrevious's target one card later
(``t - k + 1``); RepeatFirst rewarding the card in hand; CountRecall counting before the new value is dealt;
Autoencode's playback in dealing order; HigherLower with the ranks' comparison reversed; every episode one step
short; the next deck's swap drawn from below its position only (Sattolo's shuffle).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from popgym_check import agree
from rtrl.rl.envs.popgym import Autoencode, CountRecall, HigherLower, RepeatFirst, RepeatPrevious
from rtrl.rl.envs.popgym import cards as C


def deck_of(gym) -> jax.Array:
    """popgym's shuffled deck in the order it deals it."""
    return jnp.asarray(gym.deck.idx[::-1].copy(), jnp.int32)


def dealt(env, gym):
    """The port's state after popgym's reset: its deck, one card dealt."""
    state = env.start(deck_of(gym))
    return env.observe(state), state


def count_recall(env, gym):
    values = jnp.asarray(gym.value_deck.idx[::-1].copy(), jnp.int32)
    queries = jnp.asarray(gym.query_deck.idx[::-1].copy(), jnp.int32)
    state = env.start(values, queries)
    return env.observe(state), state


@pytest.mark.parametrize("level", ["Easy", "Medium", "Hard"])
@pytest.mark.parametrize("task, inject", [("RepeatPrevious", dealt), ("RepeatFirst", dealt),
                                          ("CountRecall", count_recall), ("Autoencode", dealt),
                                          ("HigherLower", dealt)])
def test_agrees_with_popgym_step_by_step(task, inject, level):
    lengths = agree(task + level, inject, steps=1000 if level == "Easy" else 400)
    env_steps = {"RepeatPrevious": (51, 103, 155), "RepeatFirst": (51, 415, 831), "CountRecall": (51, 103, 207),
                 "Autoencode": (103, 207, 311), "HigherLower": (51, 103, 155)}[task]
    assert set(lengths) == {env_steps[["Easy", "Medium", "Hard"].index(level)]}


def run(env, deck, actions, state_of=None):
    """The port stepped through ``actions`` from ``deck``: (observations' argmax, rewards, dones)."""
    state = state_of(deck) if state_of else env.start(jnp.asarray(deck, jnp.int32))
    out, step = [], jax.jit(env.transition)
    for a in actions:
        obs, state, reward, done, truncated = step(jax.random.key(0), state, a)
        assert not truncated
        out.append((np.asarray(obs), float(reward), bool(done)))
    return out


DECK = np.arange(52)  # suits 0 1 2 3 0 1 ..., colours 0 1 0 1 ..., ranks 0 0 0 0 1 1 1 1 ...


def test_repeat_previous_rules():
    """k = 4: steps 1-3 reward 0; step t >= 4 asks for the suit of card t - 4 (here (t - 4) % 4); 51 steps."""
    env = RepeatPrevious()
    obs0 = env.observe(env.start(jnp.asarray(DECK)))
    assert np.array_equal(obs0, [1, 0, 0, 0])
    actions = [3, 3, 3, 0, 0, 2] + [(t - 4) % 4 for t in range(7, 52)]
    out = run(env, DECK, actions)
    assert [r for _, r, _ in out[:6]] == [0, 0, 0, np.float32(1 / 48), np.float32(-1 / 48), np.float32(1 / 48)]
    assert all(r == np.float32(1 / 48) for _, r, _ in out[6:])
    assert [np.argmax(o) for o, _, _ in out[:5]] == [1, 2, 3, 0, 1]  # card t's suit after step t
    assert [d for _, _, d in out] == [False] * 50 + [True]


def test_repeat_first_rules():
    """Every step asks for the first card's suit (0 here), reward +-1/51; the new card is shown; 51 steps."""
    out = run(RepeatFirst(), DECK, [0, 1, 0] + [0] * 48)
    assert [r for _, r, _ in out[:3]] == [np.float32(1 / 51), np.float32(-1 / 51), np.float32(1 / 51)]
    assert [np.argmax(o) for o, _, _ in out[:3]] == [1, 2, 3]
    assert [d for _, _, d in out] == [False] * 50 + [True]


def test_count_recall_rules():
    """Colours: values 0 1 0 1 ..., queries all colour 0 (even cards): after the reset 1 value of colour 0 was
    dealt, so the answer is 1; after step 1 (value colour 1) still 1; after step 2 (colour 0) 2."""
    env = CountRecall()
    queries = np.arange(0, 104, 2) % 52
    out = run(env, DECK, [1, 1, 2, 0], lambda d: env.start(jnp.asarray(d), jnp.asarray(queries)))
    assert [r for _, r, _ in out] == [np.float32(1 / 51)] * 3 + [np.float32(-1 / 51)]
    assert [list(o) for o, _, _ in out[:2]] == [[0, 1, 1, 0], [1, 0, 1, 0]]  # (value colour, query colour) one-hots
    assert env.num_actions == 27


def test_autoencode_rules():
    """51 watching steps (reward 0; the card shown, ``watching`` 1, then 0 on the last card), then 52 playing steps
    back from the last card (card 51, suit 3) to the first (suit 0), observation (0, 0); 103 steps in all."""
    plays = [(51 - j) % 4 for j in range(52)]
    plays[1] = 0  # one wrong answer: card 50's suit is 2
    out = run(Autoencode(), DECK, [1] * 51 + plays)
    assert [r for _, r, _ in out[:51]] == [0.0] * 51
    assert list(out[0][0]) == [0, 1, 0, 1, 0, 0] and list(out[50][0]) == [1, 0, 0, 0, 0, 1]
    assert [r for _, r, _ in out[51:54]] == [np.float32(1 / 52), np.float32(-1 / 52), np.float32(1 / 52)]
    assert all(list(o) == [1, 0, 1, 0, 0, 0] for o, _, _ in out[51:])
    assert [d for _, _, d in out] == [False] * 102 + [True]


def test_higher_lower_rules():
    """Ranks 0 0 0 0 1 1 ...: steps 1-3 push (reward 0), step 4 goes up: higher (0) wins 1/52, lower (1) loses."""
    out = run(HigherLower(), DECK, [0, 1, 0, 0])
    assert [r for _, r, _ in out] == [0.0, 0.0, 0.0, np.float32(1 / 52)]
    assert np.argmax(out[3][0]) == 1
    assert run(HigherLower(), DECK[::-1], [1, 0, 1, 0])[3][1] == np.float32(-1 / 52)  # 12 12 12 12 11: down


def test_the_next_deck_is_shuffled_a_swap_a_step():
    """Only the first reset shuffles a whole deck; each step shuffles the next episode's deck one Fisher-Yates swap
    further, and the automatic reset deals it. Over 2,000 episodes of RepeatFirst (51 steps each), every new deck
    is a permutation of the cards, each card comes first about equally often, and the new deck has on average one
    card where the old deck had it (a uniform permutation's fixed points; Sattolo's variant, a swap drawn from below
    the position only, would give none)."""
    env, E = RepeatFirst(), 2000
    _, state = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), E))

    @jax.jit
    def episode(state, key):
        def body(state, key):
            step = jax.vmap(env.step)(jax.random.split(key, E), state, jnp.zeros(E, jnp.int32))
            return step.state, step.done
        return jax.lax.scan(body, state, jax.random.split(key, 51))

    new, done = episode(state, jax.random.key(1))
    old, new = np.asarray(state.deck), np.asarray(new.deck)
    assert done[-1].all() and not done[:-1].any() and (np.asarray(state.time) == 0).all()
    assert (np.sort(new, axis=1) == np.arange(52)).all() and not (new == old).all(axis=1).any()
    firsts = np.bincount(new[:, 0], minlength=52)  # about 38 each: within 5 standard deviations
    assert np.abs(firsts - E / 52).max() < 5 * np.sqrt(E / 52)
    assert abs((new == old).sum(axis=1).mean() - 1.0) < 0.15  # mean 1, sd 1: 2000 episodes, sd of the mean 0.022


def test_shuffle_step_swaps_the_position_of_the_step():
    spare = jnp.arange(5, dtype=jnp.int32)
    swapped = [np.asarray(C.shuffle_step(jax.random.key(k), spare, jnp.asarray(1))) for k in range(40)]
    assert all(sorted(s) == [0, 1, 2, 3, 4] and (s[:4] == [0, 1, 2, 3]).sum() >= 3 for s in swapped)
    assert {int(s[4]) for s in swapped} == {0, 1, 2, 3, 4}  # position 4 swapped with any of 0..4, itself included
    assert (np.asarray(C.shuffle_step(jax.random.key(0), spare, jnp.asarray(7))) == np.arange(5)).all()  # past n - 1
