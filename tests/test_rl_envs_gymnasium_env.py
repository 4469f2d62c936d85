"""A Gymnasium environment is code and options from outside (``rtrl.rl.envs.gymnasium_env``): every option is
checked before anything is written, and an environment that raises, or gives observations or rewards rtrl cannot
use, is one line naming the environment (and, mid-run, the step), never a traceback, a silent run, or a folder left
holding only its config.json.

The faulty environments are registered by a module in the test's folder, named on the command line
(``--env gymnasium:faulty_envs_test:Bad-v0``), as a user's own environment would be.
"""

import json
import math
import sys

import numpy as np
import pytest

from rtrl.cli import main
from rtrl.driver import Stopped
from rtrl.rl.envs import make
from rtrl.rl.envs.gymnasium_env import Fault, checked_observation, checked_reward, kind_of_default
from rtrl.run.folder import read_metrics

pytest.importorskip("gymnasium")

MODULE = "faulty_envs_test"
SOURCE = '''
import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Base(gym.Env):
    observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, fault="", at=0):
        self.fault, self.at, self.t = fault, at, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if self.fault == "reset":
            raise RuntimeError("reset broke")
        self.t = 0
        return np.zeros(5 if self.fault == "shape" else 3, np.float32), {}

    def step(self, action):
        self.t += 1
        late = self.t > self.at
        if self.fault == "step" and late:
            raise RuntimeError("step broke")
        obs = np.zeros(3, np.float32)
        reward = {"nan_reward": float("nan"), "inf_reward": float("inf"), "none_reward": None}.get(self.fault, 0.0) \\
            if late else 0.0
        if self.fault == "nan_obs" and late:
            obs[:] = np.nan
        return obs, reward, False, self.t >= 50, {}


class Raises(Base):
    def __init__(self, **kwargs):
        raise RuntimeError("constructor broke")


gym.register("Bad-v0", entry_point=Base)
gym.register("Raises-v0", entry_point=Raises)
'''
RL = "--steps 8 --hidden 3 --envs 2 --record-every 4 --quiet".split()


@pytest.fixture
def here(tmp_path, monkeypatch):
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop(MODULE, None)


def refused(here, capsys, args, *words):
    """``rtrl rl`` exits 2 with one line naming each of ``words``, and nothing is written."""
    assert main(["rl", *args, *RL, "--out", str(here / "out")]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], err
    assert not (here / "out").exists()
    return lines[0]


OPTION_ROWS = [
    ("CartPole-v1", "max_episode_steps=0", "max_episode_steps"),
    ("CartPole-v1", "max_episode_steps=-5", "max_episode_steps"),
    ("CartPole-v1", "max_episode_steps=ten", "max_episode_steps"),
    ("CartPole-v1", "max_episode_steps=2.5", "max_episode_steps"),
    ("CartPole-v1", "max_episode_steps=true", "max_episode_steps"),
    ("CartPole-v1", 'max_episode_steps={"a": 1}', "max_episode_steps"),
    ("CartPole-v1", "max_episode_steps=null", "max_episode_steps"),
    ("FrozenLake-v1", "map_name=9x9", "map_name"),
    ("FrozenLake-v1", "is_slippery=maybe", "is_slippery"),
    ("FrozenLake-v1", "success_rate=high", "success_rate"),
    ("CartPole-v1", "render_mode=human", "render_mode"),
    ("CartPole-v1", "render_mode=bogus", "render_mode"),
    ("CartPole-v1", "disable_env_checker=3", "disable_env_checker"),
    ("CartPole-v1", "wind=3", "wind"),
]


@pytest.mark.parametrize("env, option, word", OPTION_ROWS, ids=[f"{e} {o}" for e, o, _ in OPTION_ROWS])
def test_an_option_of_a_gymnasium_environment_is_checked_before_anything_is_written(here, capsys, env, option,
                                                                                    word):
    """[``check_options`` not called: ``max_episode_steps=true`` runs as 1, ``is_slippery=maybe`` and
    ``render_mode=bogus`` are accepted, ``max_episode_steps=0`` and ``map_name=9x9`` are tracebacks]"""
    refused(here, capsys, ["--env", f"gymnasium:{env}", "--env-arg", option], word, f"gymnasium:{env}")


def test_a_presets_environment_option_is_checked_too(here, capsys):
    refused(here, capsys, ["--preset", "popgym-repeat-first", "--env-arg", "max_episode_steps=0"],
            "max_episode_steps")


def test_an_option_of_its_defaults_kind_is_taken(here, capsys):
    """The same options with values of their default's kind run (the check refuses only what is wrong)."""
    for i, (env, options) in enumerate((("CartPole-v1", ["max_episode_steps=3"]),
                                        ("FrozenLake-v1", ["is_slippery=false", "map_name=8x8"]))):
        out = here / f"run{i}"
        args = [a for option in options for a in ("--env-arg", option)]
        assert main(["rl", "--env", f"gymnasium:{env}", *args, *RL, "--out", str(out)]) == 0, capsys.readouterr().err
    assert json.loads((here / "run1" / "config.json").read_text())["env_args"] == {"is_slippery": False,
                                                                                  "map_name": "8x8"}
    assert make("gymnasium:CartPole-v1", max_episode_steps=3).max_steps == 3


FAULT_ROWS = [
    ("Raises-v0", "", "constructor broke"),
    ("Bad-v0", "reset", "reset broke"),
    ("Bad-v0", "shape", "observation of 5 numbers"),
    ("Bad-v0", "step", "step broke"),
    ("Bad-v0", "nan_reward", "reward nan"),
    ("Bad-v0", "inf_reward", "reward inf"),
    ("Bad-v0", "none_reward", "reward None"),
    ("Bad-v0", "nan_obs", "not finite"),
]


@pytest.mark.parametrize("env, fault, word", FAULT_ROWS, ids=[f"{e} {f}" for e, f, _ in FAULT_ROWS])
def test_an_environment_that_fails_at_once_is_refused_before_anything_is_written(here, capsys, env, fault, word):
    """A fault in the constructor, the first reset or the first step: exit 2, the environment named, no folder.
    [the probe's reset and step removed: the reset, shape, NaN and step rows leave a folder with config.json
    and .lock and end in a traceback or as "a parameter became nan"]"""
    args = ["--env", f"gymnasium:{MODULE}:{env}"] + (["--env-arg", f"fault={fault}"] if fault else [])
    refused(here, capsys, args, word, f"gymnasium:{MODULE}:{env}")


@pytest.mark.parametrize("fault, word", [("step", "step broke"), ("nan_reward", "reward nan"),
                                         ("none_reward", "reward None"), ("nan_obs", "not finite")])
def test_an_environment_that_fails_mid_run_stops_it_keeping_the_last_good_checkpoint(here, capsys, fault, word):
    """Past the first record: exit 1, one line naming the environment and the step, the checkpoint of the last
    record kept (and a resume of it meets the same fault the same way). [``Checked`` not wrapping the copies: the
    NaN rows end as "a parameter became nan" naming no environment, the None row is a traceback]"""
    out = here / "out"
    args = ["rl", "--env", f"gymnasium:{MODULE}:Bad-v0", "--env-arg", f"fault={fault}", "--env-arg", "at=5", *RL,
            "--out", str(out)]
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"gymnasium:{MODULE}:Bad-v0" in err[0] and "at step 6" in err[0] and word in err[0], err
    assert "checkpoint (step 4) is kept" in err[0], err
    assert [r["step"] for r in read_metrics(out)] == [4]


def test_an_environment_that_fails_before_its_first_record_leaves_no_folder(here, capsys):
    """Failing at step 2, before the first record at 4: exit 1, the folder this command made removed again.
    [``train_run`` without ``fresh``: config.json and .lock stay]"""
    out = here / "out"
    assert main(["rl", "--env", f"gymnasium:{MODULE}:Bad-v0", "--env-arg", "fault=step", "--env-arg", "at=1", *RL,
                 "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "at step 2" in err and "removed" in err, err
    assert not out.exists()


def test_a_missing_package_is_named(here, capsys):
    """popgym's Labyrinth IDs exist only where mazelib is installed: say that it is missing, not that the ID does
    not exist. [``PACKAGES`` without its Labyrinth entry: "doesn't exist"]"""
    try:
        import mazelib  # noqa: F401
    except ImportError:
        refused(here, capsys, ["--env", "gymnasium:popgym-LabyrinthEscapeEasy-v0"], "mazelib", "pip install")
    else:
        pytest.skip("mazelib is installed here")


def test_what_an_environment_gives_is_checked_by_hand_checked_cases():
    """The checks alone, on tiny cases: the reward a finite number (a 0-d array too), the observation of its
    space's size and finite; an option's kind is its default's."""
    from gymnasium import spaces

    assert checked_reward(1) == 1 and checked_reward(np.float32(0.5)) == 0.5 and checked_reward(np.array(2.0)) == 2
    for bad in (None, float("nan"), -math.inf, True, "1", np.array([1.0])):
        with pytest.raises(Fault):
            checked_reward(bad)
    box = spaces.Box(-1, 1, (2,))
    checked_observation(box, np.zeros(2, np.float32), "step")
    checked_observation(spaces.Discrete(3), 2, "step")
    for bad in (np.zeros(3), np.array([0.0, np.inf]), None):
        with pytest.raises(Fault):
            checked_observation(box, bad, "step")
    assert kind_of_default(True)[1](False) and not kind_of_default(True)[1]("maybe")
    assert kind_of_default(3)[1](4) and not kind_of_default(3)[1](True) and not kind_of_default(3)[1](2.5)
    assert kind_of_default(0.5)[1](1) and not kind_of_default(0.5)[1](math.nan)
    assert kind_of_default(None) is None
    assert issubclass(Stopped, RuntimeError)


def test_a_number_past_float32s_range_is_a_fault_not_an_infinity():
    """The agent reads observations and rewards in float32: a finite reward of 1e39 (or -3.5e38) would arrive as
    an infinity, the largest float32 (about 3.40282e38) is taken; an observation entry likewise, named with its
    value. [the check made on float64 only: 1e39 passes and the run trains on inf]"""
    from gymnasium import spaces

    top = float(np.finfo(np.float32).max)
    assert checked_reward(top) == top and checked_reward(-top) == -top
    for bad in (1e39, -3.5e38, np.float64(4e38)):
        with pytest.raises(Fault, match=r"beyond float32's range"):
            checked_reward(bad)
    box = spaces.Box(-np.inf, np.inf, (2,), np.float64)
    checked_observation(box, np.array([top, -top]), "step")
    with pytest.raises(Fault, match=r"its reset gave an observation entry -1e\+39, beyond float32's range"):
        checked_observation(box, np.array([0.0, -1e39]), "reset")


def test_an_integer_box_takes_the_nearest_integer_within_its_bounds():
    """A Box of integers in [-2, 3]: the agent's action u is squashed onto the open interval and rounded to the
    nearest integer, so both bounds are reached and 0 is taken for |squashed| <= 0.5 only. By hand: u = 0 squashes
    to the middle, 0.5, taken as 0 (round half to even); u = +-30 to 3 and -2; u = atanh(2 * 1.4 / 5 - 1) to
    -2 + 1.4 = -0.6, taken as -1, and u = atanh(2 * 3.6 / 5 - 1) to 1.6, taken as 2. A float Box is untouched. [a
    cast alone: u = 30 gives 2, 3 is never taken, and -0.6 gives 0; a floor: 1.6 gives 1]"""
    from gymnasium import spaces

    from rtrl.rl.envs.gymnasium_env import to_space

    box = spaces.Box(-2, 3, (1,), np.int64)
    bounds = ((-2.0,), (3.0,))
    u = np.array([[0.0], [30.0], [-30.0], [math.atanh(2 * 1.4 / 5 - 1)], [math.atanh(2 * 3.6 / 5 - 1)]])
    taken = to_space(box, bounds, u)
    assert taken.dtype == np.int64 and taken.ravel().tolist() == [0, 3, -2, -1, 2]
    floats = spaces.Box(-2.0, 3.0, (1,), np.float32)
    np.testing.assert_allclose(to_space(floats, bounds, u).ravel(), [0.5, 3.0, -2.0, -0.6, 1.6], rtol=1e-6)


@pytest.mark.parametrize("space, words", [("obs", "observation space Box([], [], (0,), float32), of no entries"),
                                          ("act", "action space Box([], [], (0,), float32), of no entries")])
def test_a_space_of_no_entries_is_refused_naming_the_environment(here, capsys, space, words):
    """An observation or a Box action of shape (0,): one line naming the environment and the space, not the
    network's ``input_size`` or ``num_actions``."""
    source = ("import gymnasium as gym, numpy as np\nfrom gymnasium import spaces\n"
              "class Empty(gym.Env):\n"
              "    def __init__(self, empty='obs'):\n"
              "        self.observation_space = spaces.Box(-1.0, 1.0, (0 if empty == 'obs' else 2,), np.float32)\n"
              "        self.action_space = spaces.Box(-1.0, 1.0, (0 if empty == 'act' else 2,), np.float32)\n"
              "    def reset(self, *, seed=None, options=None):\n"
              "        return np.zeros(self.observation_space.shape, np.float32), {}\n"
              "    def step(self, action):\n"
              "        return np.zeros(self.observation_space.shape, np.float32), 0.0, False, False, {}\n"
              "if 'Empty-v0' not in gym.registry:\n"
              "    gym.register('Empty-v0', entry_point=Empty, max_episode_steps=5)\n")
    (here / "empty_envs_test.py").write_text(source)
    try:
        refused(here, capsys, ["--env", "gymnasium:empty_envs_test:Empty-v0", "--env-arg", f"empty={space}"],
                "gymnasium:empty_envs_test:Empty-v0", words)
    finally:
        sys.modules.pop("empty_envs_test", None)
