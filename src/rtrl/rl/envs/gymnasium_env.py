"""Any Gymnasium environment (``--env gymnasium:ID``), stepped on the host as a vector of E copies.

A Gymnasium environment is a Python object, not a pure function: it cannot run inside the jitted ``lax.scan``
that fuses a gymnax environment with the agent. ``rtrl.rl.loop`` steps it between jitted calls of the agent
(``OnlineActorCritic`` with a ``host`` environment). Gymnasium (and popgym, for ``popgym-*`` IDs) is imported when
such an environment is built, never by ``import rtrl`` or ``import rtrl.rl``.

* ``gymnasium.make_vec(ID, E, vectorization_mode="sync")`` with the autoreset mode chosen explicitly: ``SAME_STEP``,
  where the step that ends an episode returns the next episode's first observation and the last one in
  ``info["final_obs"]``, which is the ``rtrl.rl`` protocol (``Env.step``). (Gymnasium's default, ``NEXT_STEP``,
  would spend one extra step per episode whose action is ignored.) ``options`` are ``gymnasium.make``'s keyword
  arguments (``max_episode_steps``, the environment's own).
* Observations are encoded as one float vector: a ``Discrete`` one-hot, a ``MultiDiscrete`` its one-hots
  concatenated, a ``Box`` or ``MultiBinary`` flattened, a ``Tuple`` or ``Dict`` of these concatenated (the
  ``Dict`` in its keys' order), as ``gymnasium.spaces.flatten`` does. Actions: ``Discrete`` only (a ``Box`` action
  space would need a Gaussian policy head, which the agent does not have; it is refused).
* ``terminated`` and ``truncated`` are told apart: ``truncated`` (and not ``terminated``) is the cut the loop
  bootstraps from ``final_obs``.
* A Python environment's state is not a pytree, so a checkpoint cannot hold it: a resumed run re-seeds the
  environments (from the run's seed and the step) and begins new episodes there (``rtrl.rl.loop``).
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, NamedTuple

import numpy as np

from rtrl.frozen import Frozen

PREFIX = "gymnasium:"
PACKAGES = {"popgym-": "popgym"}  # ID prefix -> the package whose import registers those IDs (its extra's name)


def is_gymnasium(name: str) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX) and len(name) > len(PREFIX)


def env_import(name) -> str | None:
    """The import path ``MODULE:ID`` of a ``gymnasium:MODULE:ID`` environment (Gymnasium's ``make`` imports MODULE,
    which registers ID: code a run folder naming it would run; ``rtrl.config.option``'s ``imports``), else ``None``."""
    if is_gymnasium(name) and ":" in name[len(PREFIX):]:
        return name[len(PREFIX):]
    return None


def _imported(module: str, name: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = module if module in PACKAGES.values() else "gymnasium"
        raise ValueError(f"environment {name!r} needs the {module} package: pip install 'rtrl[{extra}]'") from None


def encoder(space, where: str):
    """``(size, encode)`` of an observation space: ``encode`` maps a batch of E observations (as a vector
    environment returns them) to an ``(E, size)`` float32 array; ``ValueError`` naming a space it cannot encode."""
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        n, start = int(space.n), int(space.start)
        return n, lambda o: np.eye(n, dtype=np.float32)[np.asarray(o) - start]
    if isinstance(space, spaces.MultiDiscrete):
        nvec, start = space.nvec.ravel(), space.start.ravel()
        offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])

        def multi(o):
            o = np.asarray(o).reshape(len(o), -1) - start
            out = np.zeros((len(o), int(nvec.sum())), np.float32)
            np.put_along_axis(out, offsets + o, 1.0, axis=1)
            return out

        return int(nvec.sum()), multi
    if isinstance(space, (spaces.Box, spaces.MultiBinary)):
        return int(np.prod(space.shape)), lambda o: np.asarray(o, np.float32).reshape(len(o), -1)
    if isinstance(space, (spaces.Tuple, spaces.Dict)):
        keys = list(space.spaces) if isinstance(space, spaces.Dict) else range(len(space.spaces))
        parts = [(k, *encoder(space.spaces[k], where)) for k in keys]
        return sum(size for _, size, _ in parts), lambda o: np.concatenate([f(o[k]) for k, _, f in parts], axis=1)
    raise ValueError(f"{where} has the observation space {space}, which rtrl rl cannot encode (Discrete, "
                     "MultiDiscrete, Box, MultiBinary, and Tuple or Dict of these)")


class Outcome(NamedTuple):
    """E environments' step, encoded (host arrays): what the agent observes of it."""

    obs: np.ndarray  # (E, obs_size) the next observation (the next episode's first where done)
    reward: np.ndarray  # (E,)
    done: np.ndarray  # (E,) bool: terminated or truncated
    truncated: np.ndarray  # (E,) bool: cut by a time limit and not terminated (its value is owed)
    final_obs: np.ndarray  # (E, obs_size) the episode's last observation where done, else obs
    episode_return: np.ndarray  # (E,) the return of the episode that ended where done, else 0


class Vector:
    """E copies of a Gymnasium environment stepped together: ``reset(seeds) -> obs``, ``step(actions) ->
    Outcome``, all host arrays; it keeps each episode's running return (lost with the environments on a resume)."""

    def __init__(self, env: GymnasiumEnv, envs: int):
        import gymnasium
        from gymnasium.vector import AutoresetMode
        from gymnasium.vector.utils import concatenate, create_empty_array

        env.check()
        self.envs = gymnasium.make_vec(env.env_id, num_envs=envs, vectorization_mode="sync",
                                       vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
                                       **dict(env.options))
        self.space = self.envs.single_observation_space
        self.encode = encoder(self.space, env.name)[1]
        self.start = int(self.envs.single_action_space.start)
        self.returns = np.zeros(envs)
        self.batched = lambda last: concatenate(self.space, last, create_empty_array(self.space, len(last)))

    def reset(self, seeds: list[int]) -> np.ndarray:
        self.returns[:] = 0.0
        return self.encode(self.envs.reset(seed=seeds)[0])

    def step(self, actions: np.ndarray) -> Outcome:
        obs, reward, terminated, truncated, info = self.envs.step(actions + self.start)
        obs, done = self.encode(obs), terminated | truncated
        final = obs.copy()
        ended = np.flatnonzero(done)
        if ended.size:
            last = [info["final_obs"][i] for i in ended]
            final[ended] = self.encode(self.batched(last))
        self.returns += reward
        episode_return = np.where(done, self.returns, 0.0)
        self.returns[done] = 0.0
        return Outcome(obs, np.asarray(reward, np.float32), done, truncated & ~terminated, final, episode_return)

    def close(self) -> None:
        self.envs.close()


class GymnasiumEnv(Frozen):
    """``gymnasium.make(env_id, **options)``'s sizes and limits, and ``vector(E)``; it is not an ``Env`` (no pure
    ``reset`` / ``step``): ``host`` tells the loop to step it on the host."""

    env_id: str = "CartPole-v1"
    options: tuple[tuple[str, Any], ...] = ()

    host = True

    def __post_init__(self) -> None:
        self.check()

    @property
    def name(self) -> str:
        return PREFIX + self.env_id + "".join(f" {k}={v}" for k, v in self.options)

    def check(self) -> None:
        """``ValueError`` naming what is wrong: a missing package, an unknown ID, an option ``make`` refuses, a
        space the agent cannot handle."""
        _probe(self.env_id, self.options)

    obs_size = property(lambda self: _probe(self.env_id, self.options).obs_size)
    num_actions = property(lambda self: _probe(self.env_id, self.options).num_actions)
    max_steps = property(lambda self: _probe(self.env_id, self.options).max_steps)

    def vector(self, envs: int) -> Vector:
        return Vector(self, envs)


class Probe(NamedTuple):
    obs_size: int
    num_actions: int
    max_steps: int | None  # None: no limit the environment states


@functools.cache
def _probe(env_id: str, options: tuple) -> Probe:
    """One environment made and closed: its spaces checked, its sizes and its episode limit."""
    name = PREFIX + env_id
    _imported("gymnasium", name)
    import gymnasium
    from gymnasium import spaces

    for prefix, package in PACKAGES.items():
        if env_id.startswith(prefix):
            _imported(package, name)
    try:
        env = gymnasium.make(env_id, **dict(options))
    except gymnasium.error.Error as e:  # an unknown ID, version, namespace; a module:ID that does not import
        raise ValueError(f"environment {name!r}: {e}") from None
    except ModuleNotFoundError as e:  # gymnasium's ``module:ID`` form, its module missing
        raise ValueError(f"environment {name!r}: {e}") from None
    except TypeError as e:  # a keyword argument the environment does not take
        raise ValueError(f"environment {name!r} does not take the options {dict(options)} ({e})") from None
    try:
        size = encoder(env.observation_space, name)[0]
        actions = env.action_space
        if not isinstance(actions, spaces.Discrete):
            raise ValueError(f"{name} has the action space {actions}; rtrl rl's policy is categorical and needs a "
                             "Discrete one")
        limit = env.spec.max_episode_steps if env.spec is not None else None
        limit = limit or getattr(env.unwrapped, "max_episode_length", None)  # popgym states it so
        return Probe(size, int(actions.n), int(limit) if limit else None)
    finally:
        env.close()
