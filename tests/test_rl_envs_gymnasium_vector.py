"""rtrl's Gymnasium vector (``rtrl.rl.envs.gymnasium_env.Vector``) against the same environments stepped one by
one here, with Gymnasium's own ``TimeLimit``: copies whose episodes end on different steps, an episode that
terminates exactly at the time limit (terminated, so nothing is owed), one cut by the limit (truncated: its value
is owed), and an action space with an offset (``Discrete(n, start=1)``)."""

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

from rtrl.rl.envs.gymnasium_env import GymnasiumEnv


class Countdown(gymnasium.Env):
    """Terminates after ``3 + seed % 3`` steps (so copies with different seeds end on different steps, and the seed
    2 copy's 5th step is also the time limit's); reward = the action taken (start 1, so agent action a gives a + 1);
    observation = steps left, as a Box."""

    def __init__(self):
        self.observation_space = spaces.Box(0, 10, (1,), np.float32)
        self.action_space = spaces.Discrete(3, start=1)
        self.length, self.left = 3, 3

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.length = 3 + seed % 3
        self.left = self.length
        return np.array([self.left], np.float32), {}

    def step(self, action):
        assert self.action_space.contains(action), action
        self.left -= 1
        return np.array([self.left], np.float32), float(action), self.left == 0, False, {}


ID = "RtrlTests/Countdown-v0"
if ID not in gymnasium.registry:
    gymnasium.register(id=ID, entry_point=Countdown, max_episode_steps=5)


def reference(seeds, actions, limit=5):
    """Each copy stepped alone: per step, (obs, reward, terminated, truncated, last obs, episode return)."""
    out = []
    for e, seed in enumerate(seeds):
        env = gymnasium.make(ID, max_episode_steps=limit)
        obs, _ = env.reset(seed=seed)
        total, rows = 0.0, []
        for a in actions[:, e]:
            obs, r, term, trunc, _ = env.step(int(a) + 1)
            total += r
            last = obs
            done = term or trunc
            if done:
                obs, _ = env.reset()
            rows.append((obs[0], r, term, trunc, last[0], total if done else 0.0))
            if done:
                total = 0.0
        out.append(rows)
    return out


@pytest.mark.parametrize("limit", [5, 4])
def test_vector_matches_copies_stepped_alone(limit):
    seeds = [0, 1, 2]  # episodes of 3, 4, 5 steps; with limit 4 the third copy is cut (truncated) at step 4
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 3, size=(14, 3))
    vector = GymnasiumEnv(ID, (("max_episode_steps", limit),)).vector(3)
    first = vector.reset(seeds)
    np.testing.assert_array_equal(first[:, 0], [3, 4, 5])
    ref = reference(seeds, actions, limit)
    for t in range(len(actions)):
        got = vector.step(actions[t])
        for e in range(3):
            obs, r, term, trunc, last, ret = ref[e][t]
            assert got.obs[e, 0] == obs and got.reward[e] == r and got.final_obs[e, 0] == last
            assert got.done[e] == (term or trunc)
            assert got.truncated[e] == (trunc and not term), (t, e)
            assert got.episode_return[e] == ret
    vector.close()


def test_termination_at_the_time_limit_is_not_a_truncation():
    """Hand-checked: seed 2 terminates at its 5th step, where the limit of 5 also cuts it."""
    vector = GymnasiumEnv(ID, (("max_episode_steps", 5),)).vector(1)
    vector.reset([2])
    outcomes = [vector.step(np.array([0])) for _ in range(5)]
    assert [bool(o.done[0]) for o in outcomes] == [False] * 4 + [True]
    assert not outcomes[-1].truncated[0]
    assert outcomes[-1].episode_return[0] == 5.0  # five steps of agent action 0 = env action 1


def test_a_cut_episode_is_owed_its_value():
    vector = GymnasiumEnv(ID, (("max_episode_steps", 2),)).vector(1)
    vector.reset([1])
    outcomes = [vector.step(np.array([2])) for _ in range(2)]
    assert outcomes[-1].done[0] and outcomes[-1].truncated[0]
    assert outcomes[-1].final_obs[0, 0] == 2 and outcomes[-1].obs[0, 0] == 4  # last obs kept; a new episode began
    assert outcomes[-1].episode_return[0] == 6.0


class Cell(gymnasium.Env):
    """A MultiDiscrete action, a cell ``(row, column)`` of a 2 x 3 grid with rows starting at 1: the reward is
    ``10 row + column``, the cell the environment took; endless, one observation."""

    observation_space = spaces.Box(0, 1, (1,), np.float32)
    action_space = spaces.MultiDiscrete([2, 3], start=[1, 0])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        assert self.action_space.contains(action), action
        return np.zeros(1, np.float32), float(10 * action[0] + action[1]), False, False, {}


CELL = "RtrlTests/Cell-v0"
if CELL not in gymnasium.registry:
    gymnasium.register(id=CELL, entry_point=Cell, max_episode_steps=50)


def test_a_multidiscrete_action_is_one_categorical_over_its_cells():
    """Six actions, unravelled row-major and shifted by ``start``: 0 -> (1, 0), 5 -> (2, 2), 4 -> (2, 1), 2 -> (1, 2)
    (hand-checked rewards 10, 22, 21, 12); the previous action fed back is the agent's integer's one-hot of 6.
    [Mutations: ``start`` dropped; column-major unravel; one-hot over the grid's rows -> fail]"""
    env = GymnasiumEnv(CELL, extra_inputs=("action",))
    assert env.num_actions == 6 and env.action_bounds is None and env.obs_size == 1 + 6
    vector = env.vector(4)
    vector.reset([0, 1, 2, 3])
    out = vector.step(np.array([0, 5, 4, 2]))
    assert out.reward.tolist() == [10.0, 22.0, 21.0, 12.0]
    np.testing.assert_array_equal(out.obs[:, 1:], np.eye(6)[[0, 5, 4, 2]])
    vector.close()
