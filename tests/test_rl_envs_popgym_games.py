"""POPGym's games in JAX (rtrl.rl.envs.popgym: Concentration, MultiarmedBandit, Battleship, MineSweeper) against
popgym itself, step by step over 1,000 steps of random actions (tests/popgym_check.py), at every level; and each
game's rules on a hand-worked board.

popgym's board (its shuffled deck, its ships, its mines) is read after its seeded reset and injected; the bandit's
payout draw goes the other way, the port's draw handed to popgym's generator. Mutations tried by hand, each caught:
Concentration's second card of a turn staying hidden in the observation; a matched card turned again rewarding
-1/L when it is the turn's second card; Battleship scoring a repeated hit; MineSweeper's count without the cell
itself; the bandit paying where the draw is above the odds; Battleship's action read (column, row).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from popgym_check import agree
from rtrl.rl.envs.popgym import Battleship, Concentration, MineSweeper, MultiarmedBandit
from rtrl.rl.envs.popgym.battleship import place
from rtrl.rl.envs.popgym.multiarmed_bandit import BanditState

LEVELS = ["Easy", "Medium", "Hard"]


def concentration(env, gym):
    state = env.start(jnp.asarray(gym.deck.idx.copy(), jnp.int32))
    return env.observe(state.board, state.face_up), state


@functools.cache
def first_obs(env):
    """The port's first observation (the same in every episode of these games)."""
    return jax.jit(env.reset)(jax.random.key(0))[0]


@functools.cache
def start(env):
    return jax.jit(env.start)


def bandit(env, gym):
    return first_obs(env), BanditState(jnp.asarray(gym.bandits), jnp.zeros((), jnp.int32))


class Drawn:
    """popgym's generator, its next ``random()`` the port's draw."""

    def __init__(self, value):
        self.value = value

    def random(self):
        return float(self.value)


def bandit_draw(env, gym, key):
    gym._np_random = Drawn(env.draw(key))


def ships(env, gym):
    return first_obs(env), start(env)(jnp.asarray(gym.board == 1))


def mines(env, gym):
    return first_obs(env), start(env)(jnp.asarray(gym.hidden_grid == 1))


def cell(env, a):
    return np.array([a // env.size, a % env.size])


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("task, inject, feed, to_gym", [
    ("Concentration", concentration, None, lambda env, a: a),
    ("MultiarmedBandit", bandit, bandit_draw, lambda env, a: a),
    ("Battleship", ships, None, cell),
    ("MineSweeper", mines, None, cell),
])
def test_agrees_with_popgym_step_by_step(task, inject, feed, to_gym, level):
    lengths = agree(task + level, inject, steps=1000 if level == "Easy" else 300, feed=feed, to_gym=to_gym)
    assert len(lengths) >= (2 if level == "Easy" else 1)  # a Hard bandit's episode is 600 steps


def test_concentration_rules():
    """Colours 0 1 0 1 ... at places 0, 1, 2, ...: turning 0 then 2 matches (+1/26, both stay up); 1 then 2 (up)
    ends the turn with -2/104; 1 alone then 3 is a pair of colour 1 (+1/26); 4 then 4 is no match (-2/104); 0 (up)
    first -1/104. The observation shows the turned cards (face down: value 2)."""
    env = Concentration()
    step = jax.jit(env.transition)
    state = env.start(jnp.arange(52, dtype=jnp.int32))
    rewards, shown = [], []
    for a in [0, 2, 1, 2, 1, 3, 4, 4, 0]:
        obs, state, reward, done, truncated = step(jax.random.key(0), state, a)
        rewards.append(float(reward))
        shown.append(np.asarray(obs).reshape(52, 3).argmax(1)[:6].tolist())
        assert not done
    f, s = np.float32(-1 / 104), np.float32(1 / 26)
    assert rewards == [0.0, s, 0.0, 2 * f, 0.0, s, 0.0, 2 * f, f]
    assert shown[0] == [0, 2, 2, 2, 2, 2] and shown[1] == [0, 2, 0, 2, 2, 2] and shown[3] == [0, 1, 0, 2, 2, 2]
    assert shown[5] == [0, 1, 0, 1, 2, 2] and shown[7] == [0, 1, 0, 1, 0, 2]
    assert np.asarray(state.face_up)[:6].tolist() == [True, True, True, True, False, False]
    # the last pair matched ends the episode (terminated), however many steps are left
    last = state._replace(face_up=(jnp.arange(52) != 49) & (jnp.arange(52) != 51), first=jnp.asarray(49, jnp.int32))
    assert [bool(x) for x in step(jax.random.key(0), last, 51)[3:]] == [True, False]
    # the 104th step is truncated
    late = state._replace(time=jnp.asarray(103, jnp.int32))
    assert [bool(x) for x in step(jax.random.key(0), late, 5)[3:]] == [True, True]


def test_multiarmed_bandit_rules():
    """An arm pays where the step's draw is below its odds: odds 1 always pays (+1/200, observation 1), odds 0
    never (-1/200, observation 0); the 200th step is truncated."""
    env = MultiarmedBandit()
    step = jax.jit(env.transition)
    state = BanditState(jnp.asarray([1.0, 0.0] + [0.5] * 8, jnp.float32), jnp.zeros((), jnp.int32))
    for a, paid in [(0, 1), (1, 0)] * 20:
        obs, _, reward, done, _ = step(jax.random.key(a + 7 * paid), state, a)
        assert np.asarray(obs).tolist() == [1 - paid, paid] and float(reward) == np.float32((2 * paid - 1) / 200)
    assert [bool(x) for x in step(jax.random.key(0), state._replace(time=jnp.asarray(199)), 0)[3:]] \
        == [True, True]
    odds = env.reset(jax.random.key(3))[1].odds
    assert odds.shape == (10,) and bool(((odds >= 0) & (odds < 1)).all())


def test_battleship_rules():
    """Ships of 2 cells at (0, 0)-(0, 1) only (size 4): a hit rewards +1/2, a miss or a repeat -1/14; both cells
    hit ends it (terminated). Reset places every ship on distinct free cells."""
    env = Battleship(size=4, ships=(2,))
    step = jax.jit(env.transition)
    ships = np.zeros((4, 4), bool)
    ships[0, :2] = True
    state = env.start(jnp.asarray(ships))
    out = []
    for a in [0, 0, 5, 1]:
        obs, state, reward, done, truncated = step(jax.random.key(0), state, a)
        out.append((int(np.argmax(obs)), float(reward), bool(done)))
    assert out == [(1, 0.5, False), (0, np.float32(-1 / 14), False), (0, np.float32(-1 / 14), False), (1, 0.5, True)]
    placed = jax.vmap(Battleship().reset)(jax.random.split(jax.random.key(0), 20))[1].ships
    assert np.asarray(placed.sum(axis=(1, 2))).tolist() == [12] * 20  # 2 + 3 + 3 + 4 cells, none shared
    full = np.ones((4, 4), bool)
    full[3] = False  # only row 3 is free: a ship of 4 goes across it
    assert (np.asarray(place(jax.random.key(0), jnp.asarray(full), 4)) == np.ones((4, 4), bool)).all()
    column = np.ones((4, 4), bool)
    column[:3, 0] = False  # only (0..2, 0) is free: a ship of 3 goes down it
    assert (np.asarray(place(jax.random.key(1), jnp.asarray(column), 3)) == np.ones((4, 4), bool)).all()
    # on an empty 2 x 2 board a ship of 2 has 4 placements (2 across, 2 down), each drawn about a quarter of the time
    ships = jax.vmap(lambda k: place(k, jnp.zeros((2, 2), bool), 2))(jax.random.split(jax.random.key(2), 4000))
    kinds = np.asarray(ships).reshape(4000, 4) @ np.array([1, 2, 4, 8])
    assert sorted(set(kinds.tolist())) == [3, 5, 10, 12]
    assert np.abs(np.bincount(kinds)[[3, 5, 10, 12]] - 1000).max() < 150  # sd 27


def test_minesweeper_rules():
    """Mines at (0, 0) and (3, 3) on 4 x 4: cell (1, 1) sees 1 mine, (0, 0) itself 1 and ends it (-1/2 - 1/14);
    a new cell +1/14, a repeat -1/24; all 14 free cells uncovered ends it (terminated)."""
    env = MineSweeper()
    step = jax.jit(env.transition)
    mines = np.zeros((4, 4), bool)
    mines[0, 0] = mines[3, 3] = True
    state = env.start(jnp.asarray(mines))
    assert np.asarray(state.near).tolist() == [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    obs, s1, reward, done, _ = step(jax.random.key(0), state, 5)
    assert (int(np.argmax(obs)), float(reward), bool(done)) == (1, np.float32(1 / 14), False)
    obs, s2, reward, done, _ = step(jax.random.key(0), s1, 5)
    assert (float(reward), bool(done)) == (np.float32(-0.5 / 12), False)
    obs, _, reward, done, truncated = step(jax.random.key(0), s2, 0)
    assert (float(reward), bool(done), bool(truncated)) == (np.float32(-0.5 - 1 / 14), True, False)
    s = state
    for a in [a for a in range(16) if a not in (0, 15)]:
        _, s, reward, done, truncated = step(jax.random.key(0), s, a)
    assert (bool(done), bool(truncated), int(s.time)) == (True, False, 14)
    placed = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 10))[1].mines
    assert np.asarray(placed.sum(axis=(1, 2))).tolist() == [2] * 10


def won_on_the_last_step(game: str):
    """``(env, state, winning action, losing action)``: a game one step before its time limit whose winning action
    ends it (the last ship cell hit, the last pair matched, the last free cell uncovered) and whose other action
    does not (a miss, a pair that does not match, a cell uncovered again)."""
    if game == "Battleship":  # one ship of 2 at (0, 0)-(0, 1), (0, 0) hit; 15 of 16 steps taken
        env = Battleship(size=4, ships=(2,))
        ships = np.zeros((4, 4), bool)
        ships[0, :2] = True
        state = env.start(jnp.asarray(ships))
        state = state._replace(fired=state.fired.at[0, 0].set(True), hits=jnp.asarray(1, jnp.int32),
                               time=jnp.asarray(15, jnp.int32))
        return env, state, 1, 5
    if game == "Concentration":  # every pair matched but the one at 49 and 51 (colours 1 and 1), 49 turned;
        env = Concentration()  # 103 of 104 steps taken
        state = env.start(jnp.arange(52, dtype=jnp.int32) % 2)
        state = state._replace(face_up=(jnp.arange(52) != 49) & (jnp.arange(52) != 51),
                               first=jnp.asarray(49, jnp.int32), time=jnp.asarray(103, jnp.int32))
        return env, state, 51, 0  # 0: a matched card turned again, the turn over, the game not
    env = MineSweeper()  # mines at (0, 0) and (3, 3), every free cell but (3, 2) uncovered; 13 of 14 steps taken
    mines = np.zeros((4, 4), bool)
    mines[0, 0] = mines[3, 3] = True
    state = env.start(jnp.asarray(mines))
    uncovered = ~jnp.asarray(mines) & ~((jnp.arange(4)[:, None] == 3) & (jnp.arange(4)[None, :] == 2))
    return env, state._replace(uncovered=uncovered, time=jnp.asarray(13, jnp.int32)), 14, 5


@pytest.mark.parametrize("game", ["Battleship", "Concentration", "MineSweeper"])
def test_a_win_on_the_time_limits_last_step_is_terminated_not_truncated(game):
    """The winning action on the last step the time limit allows ends the episode terminated (no value owed: the
    game is over), not truncated; the other action on that step is truncated (the limit, checked: the case is on
    it). Through ``env.step`` (the automatic reset) and ``transition`` alike. [guards: ``truncated = time >=
    limit`` without ``& ~terminated``]"""
    env, state, win, other = won_on_the_last_step(game)
    for action, want in ((win, [True, False]), (other, [True, True])):
        _, _, reward, done, truncated = env.transition(jax.random.key(0), state, action)
        assert [bool(done), bool(truncated)] == want, (game, action)
        step = env.step(jax.random.key(0), state, action)
        assert [bool(step.done), bool(step.truncated)] == want, (game, action)
    assert float(env.transition(jax.random.key(0), state, win)[2]) > 0  # the win is rewarded


def test_a_minesweeper_board_whose_cells_overflow_32_bits_is_refused_by_its_size():
    """``size=100000``: ``size ** 2`` cells overflowed in the jitted reset (an ``OverflowError``); the largest board
    whose cells fit (46,340 ** 2 < 2 ** 31 <= 46,341 ** 2) is accepted."""
    with pytest.raises(ValueError, match=r"size must be at most 46340 \(a board of size \*\* 2 cells"):
        MineSweeper(size=100_000)
    with pytest.raises(ValueError, match="size must be at most 46340"):
        MineSweeper(size=46_341)
    assert MineSweeper(size=46_340).num_actions == 46_340 ** 2 < 2 ** 31 <= 46_341 ** 2
