"""Observation masks (``rtrl.rl.envs.masked``): ``-P`` keeps positions, ``-V`` velocities. The MuJoCo index lists
are checked against the simulator's own state (``data.qpos``, ``data.qvel``), not against the lists; the jitted
``pendulum-p`` against the angle of its state; the Gymnasium options ``mask`` and ``keep`` on the host route, with
their refusals; Box actions reaching a Gymnasium environment squashed onto its bounds, shaped as its space."""

from __future__ import annotations

import math
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.rl.config import RLConfig
from rtrl.rl.envs import make
from rtrl.rl.envs.masked import MASKS, check_keep, keep_of
from rtrl.rl.loop import record, runner

MODULE = "box_envs_test"
SOURCE = '''
import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Echo(gym.Env):
    """Its observation is the action it was given, flattened (zeros at a reset)."""

    observation_space = spaces.Box(-np.inf, np.inf, (4,), np.float64)

    def __init__(self, shape=(2, 2), low=-1.0, high=3.0):
        self.action_space = spaces.Box(np.float64(low), np.float64(high), tuple(shape), np.float64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(4), {}

    def step(self, action):
        return np.asarray(action, np.float64).ravel()[:4], 0.0, False, False, {}


class Several(Echo):
    def __init__(self):
        super().__init__()
        self.action_space = spaces.Dict({"a": spaces.Discrete(2)})


gym.register("Echo-v0", entry_point=Echo)
gym.register("Unbounded-v0", entry_point=Echo, kwargs={"shape": (4,), "low": -np.inf, "high": np.inf})
gym.register("Several-v0", entry_point=Several)
'''


@pytest.fixture
def here(tmp_path, monkeypatch):
    pytest.importorskip("gymnasium")
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warnings' log into the working folder
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop(MODULE, None)


@pytest.mark.parametrize("env_id, skipped", [("Hopper-v5", 1), ("Walker2d-v5", 1), ("HalfCheetah-v5", 1),
                                             ("Ant-v5", 2), ("Ant-v4", 2)])
def test_mujoco_masks_keep_the_simulators_positions_or_velocities(here, env_id, skipped):
    """After a reset: -P's observation is ``qpos`` without the first ``skipped`` entries (x, and Ant's y), -V's is
    ``qvel``, read from the simulator."""
    pytest.importorskip("mujoco")
    for mask in ("P", "V"):
        vector = make(f"gymnasium:{env_id}", mask=mask).vector(1)
        obs = vector.reset([3])[0]
        data = vector.envs.envs[0].unwrapped.data
        want = data.qpos[skipped:] if mask == "P" else data.qvel
        np.testing.assert_allclose(obs, want, rtol=1e-6, atol=1e-7)
        vector.close()


def test_mask_lists_and_their_refusals():
    assert keep_of("Hopper-v5", "P") == (0, 1, 2, 3, 4) and keep_of("Hopper-v5", "V") == tuple(range(5, 11))
    assert keep_of("mymodule:Walker2d-v4", "V") == tuple(range(8, 17)) and keep_of("Pendulum-v1", "P") == (0, 1)
    assert set(MASKS) >= {"Hopper", "Walker2d", "HalfCheetah", "Ant"}
    with pytest.raises(ValueError, match="option mask must be P .* or V"):
        keep_of("Hopper-v5", "p")
    with pytest.raises(ValueError, match="'Acrobot-v1': option mask is defined for .*option keep"):
        keep_of("Acrobot-v1", "P")
    with pytest.raises(ValueError, match="exclude_current_positions_from_observation=false changes it"):
        keep_of("Hopper-v5", "P", {"exclude_current_positions_from_observation": False})
    assert check_keep([2, 0], 3, "here") == (2, 0)
    for bad in ([], [0, 0], [3], [True], "01", [0.5]):
        with pytest.raises(ValueError, match="here: option keep must be a non-empty list of distinct"):
            check_keep(bad, 3, "here")


def test_jitted_pendulum_p_shows_the_angle_and_hides_its_velocity():
    """``pendulum-p``'s observation is (cos theta, sin theta) of its state; its actions, in R, reach the pendulum
    squashed onto [-2, 2] (the torque it applies: ``last_u``)."""
    pytest.importorskip("gymnax")
    env = make("pendulum-p")
    assert (env.obs_size, env.num_actions, env.max_steps) == (2, 1, 200)
    assert env.action_bounds == ((-math.inf,), (math.inf,))
    obs, state = env.reset(jax.random.PRNGKey(0))
    theta = float(state.env.theta)
    np.testing.assert_allclose(obs, [math.cos(theta), math.sin(theta)], rtol=1e-6)
    for u, torque in ((0.0, 0.0), (math.atanh(0.5), 1.0), (30.0, 2.0)):
        step = env.step(jax.random.PRNGKey(1), state, jnp.array([u]))
        np.testing.assert_allclose(step.state.env.last_u, torque, atol=1e-6)
        np.testing.assert_allclose(step.obs, [math.cos(step.state.env.theta), math.sin(step.state.env.theta)],
                                   rtol=1e-6)


def test_gymnasium_mask_and_keep_on_the_host(here):
    """Pendulum-v1 through the vector: mask=P keeps (cos, sin), keep=2 the velocity, keep=0,2 those two."""
    full = make("gymnasium:Pendulum-v1").vector(1).reset([7])
    for options, index in (({"mask": "P"}, [0, 1]), ({"mask": "V"}, [2]), ({"keep": 2}, [2]),
                           ({"keep": "0,2"}, [0, 2])):
        env = make("gymnasium:Pendulum-v1", **options)
        assert env.obs_size == len(index)
        np.testing.assert_allclose(env.vector(1).reset([7]), full[:, index])
    for options, words in (({"mask": "P", "keep": "0"}, "mask or option keep, not both"),
                           ({"keep": "0,3"}, "option keep must be"), ({"keep": "a,b"}, "option keep must be"),
                           ({"mask": "X"}, "option mask must be P")):
        with pytest.raises(ValueError, match=words):
            make("gymnasium:Pendulum-v1", **options)


def test_box_actions_reach_a_gymnasium_environment_squashed_and_shaped(here):
    """A Box (2, 2) on [-1, 3]: four numbers per environment, each squashed by -1 + 4 (tanh(u) + 1) / 2 and shaped
    (2, 2); an unbounded Box gets them as they are."""
    env = make(f"gymnasium:{MODULE}:Echo-v0")
    assert env.num_actions == 4 and env.action_bounds == ((-math.inf,) * 4, (math.inf,) * 4)
    vector = env.vector(2)
    vector.reset([0, 1])
    u = np.array([[0.0, 1.0, -2.0, 40.0], [0.5, -0.5, 3.0, -40.0]], np.float32)
    got = vector.step(u).obs
    np.testing.assert_allclose(got, -1 + 4 * (np.tanh(u) + 1) / 2, rtol=1e-6)
    assert got[0, 3] == 3.0 and got[1, 3] == -1.0
    unbounded = make(f"gymnasium:{MODULE}:Unbounded-v0").vector(2)
    unbounded.reset([0, 1])
    np.testing.assert_allclose(unbounded.step(u).obs, u)


def test_other_action_spaces_are_refused_by_name(here):
    with pytest.raises(ValueError, match="has the action space Dict.*Discrete one .*, a MultiDiscrete .* or a Box"):
        make(f"gymnasium:{MODULE}:Several-v0")


def test_a_host_run_on_a_masked_box_environment(here):
    """``rtrl rl``'s loop on the host route with float (E, 1) actions: Pendulum-v1 with mask=P, two episodes."""
    config = RLConfig(env="gymnasium:Pendulum-v1", env_args={"mask": "P"}, cell="mingru", hidden=4, envs=2,
                      steps=200, record_every=200)
    run = runner(config)
    rec = record(run.advance(run.init(0), 200))
    assert rec["episodes"] == 2 and -2000 < rec["return"] < 0


# Which entries each mask keeps, written out by hand from Gymnasium's documented layouts (not from MASKS), for
# every family, CartPole's included, on a machine without MuJoCo too: a mask that kept a velocity or dropped a
# position would train on another task without a word.
# (environment, mask) -> the entries kept: P the positions (velocities hidden), V the velocities
BY_HAND = {
    ("Hopper-v5", "P"): (0, 1, 2, 3, 4),  # z, torso angle, thigh, leg, foot angles
    ("Hopper-v5", "V"): (5, 6, 7, 8, 9, 10),  # x, z, angular velocities of torso, thigh, leg, foot
    ("Walker2d-v4", "P"): (0, 1, 2, 3, 4, 5, 6, 7),
    ("Walker2d-v4", "V"): (8, 9, 10, 11, 12, 13, 14, 15, 16),
    ("HalfCheetah-v5", "P"): (0, 1, 2, 3, 4, 5, 6, 7),
    ("HalfCheetah-v5", "V"): (8, 9, 10, 11, 12, 13, 14, 15, 16),
    ("Ant-v5", "P"): (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12),  # z, the torso's quaternion (4), 8 joint angles
    ("Ant-v5", "V"): (13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26),  # 6 torso, 8 joint velocities
    ("Pendulum-v1", "P"): (0, 1),  # cos theta, sin theta
    ("Pendulum-v1", "V"): (2,),  # theta dot
    ("CartPole-v1", "P"): (0, 2),  # cart position, pole angle
    ("CartPole-v1", "V"): (1, 3),  # cart velocity, pole angular velocity
}


@pytest.mark.parametrize("env_id, mask", sorted(BY_HAND))
def test_each_mask_keeps_the_entries_its_documented_layout_says(env_id, mask):
    assert keep_of(env_id, mask) == BY_HAND[env_id, mask]


def test_the_two_masks_of_a_family_split_its_positions_from_its_velocities():
    """P and V never share an entry; Ant's contact forces (v5's 78 entries after the velocities) are in neither."""
    for env_id in {e for e, _ in BY_HAND}:
        p, v = keep_of(env_id, "P"), keep_of(env_id, "V")
        assert not set(p) & set(v), env_id
    assert max(keep_of("Ant-v5", "V")) == 26 < 27  # 27..104: contact forces, in neither


def test_cartpole_masks_keep_the_simulators_positions_or_velocities(here):
    """Gymnasium's CartPole through the host vector: -P's observation is (x, theta) and -V's (x dot, theta dot) of
    the simulator's own state (``unwrapped.state``: x, x dot, theta, theta dot), after a reset and after a step."""
    for mask, index in (("P", [0, 2]), ("V", [1, 3])):
        vector = make("gymnasium:CartPole-v1", mask=mask).vector(1)
        obs = vector.reset([4])[0]
        state = np.asarray(vector.envs.envs[0].unwrapped.state)
        np.testing.assert_allclose(obs, state[index], rtol=1e-6)
        obs = vector.step(np.array([1])).obs[0]
        state = np.asarray(vector.envs.envs[0].unwrapped.state)
        np.testing.assert_allclose(obs, state[index], rtol=1e-6)
        vector.close()
