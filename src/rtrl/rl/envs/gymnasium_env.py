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
  ``Dict`` in its keys' order), as ``gymnasium.spaces.flatten`` does. Actions: ``Discrete`` (the agent's integers,
  shifted by the space's ``start``), ``MultiDiscrete`` (one categorical over every combination of its entries, the
  agent's integer unravelled in C order and shifted by ``start``: popgym's Battleship and MineSweeper name a cell
  so) or ``Box`` (the agent acts in ``R^A``, ``A`` the flattened size, and the vector maps that onto the bounds:
  ``rtrl.rl.envs.continuous.squash``); any other space is refused by name.
* Three options are rtrl's own, not ``gymnasium.make``'s: ``mask=P`` (velocities hidden) or ``mask=V`` (positions
  hidden) for the families of ``rtrl.rl.envs.masked.MASKS`` (Hopper, Walker2d, HalfCheetah, Ant, Pendulum,
  CartPole), ``keep=0,2`` (the encoded observation's entries to keep, comma-separated) for any other, and for a Box
  ``actions=clip``: the agent's actions clipped to the bounds instead of squashed into them (``ACTION_MAPS``; Farr
  et al.'s ``ClipActionWrapper``).
* ``extra_inputs`` (``rtrl rl --extra-inputs [PARTS]``) appends the chosen extras (``PARTS``: the previous action, a
  discrete action's one-hot (a MultiDiscrete's over its combinations) or a Box action as the environment took it;
  the previous reward; the time in the episode over its limit) to each observation, as ``rtrl.rl.envs.extra_inputs``
  does for a jitted environment (the same ``extended``).
* ``terminated`` and ``truncated`` are told apart: ``truncated`` (and not ``terminated``) is the cut the loop
  bootstraps from ``final_obs``.
* A Python environment's state is not a pytree, so a checkpoint cannot hold it: a resumed run re-seeds the
  environments (from the run's seed and the step) and begins new episodes there (``rtrl.rl.loop``).
* An environment is code from outside, so what it does is checked, not trusted. Before anything is written
  (``check``): every option (``gymnasium.make``'s ``max_episode_steps``, a positive integer; the environment's own
  of the kind of their default; ``render_mode`` refused, as rtrl never renders), then one environment made, reset
  and stepped once. As the run goes, each copy's observations and rewards (``Checked``): a reward that is not a
  finite number, an observation not of its space's shape or not finite, or a ``reset`` / ``step`` that raises stops
  the run with ``rtrl.driver.Stopped`` naming the environment and the step (the last good checkpoint stays).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
from typing import Any, NamedTuple

import numpy as np

from rtrl.config import is_int
from rtrl.driver import Stopped
from rtrl.extras import install
from rtrl.frozen import Frozen
from rtrl.rl.envs.continuous import squash, unbounded
from rtrl.rl.envs.extra_inputs import extended, named, parts_of
from rtrl.rl.envs.masked import check_keep, keep_of

PREFIX = "gymnasium:"
# ID prefix -> the packages whose import registers those IDs (popgym registers its Labyrinth IDs only where mazelib
# is installed), each with what installs it
PACKAGES = {"popgym-": (("popgym", install("popgym")),),
            "popgym-Labyrinth": (("popgym", install("popgym")), ("mazelib", "pip install mazelib"))}
MAKE_OPTIONS = ("max_episode_steps", "disable_env_checker", "render_mode")  # gymnasium.make's own keywords
# rtrl's own options, not given to gymnasium.make: the observation masks (rtrl.rl.envs.masked), a Box's action map
OWN_OPTIONS = ("mask", "keep", "actions")
ACTION_MAPS = {"squash": "tanh-squashed into the Box (rtrl.rl.envs.continuous.squash)",
               "clip": "clipped to the Box (Farr et al.'s ClipActionWrapper)"}


def is_gymnasium(name: str) -> bool:
    return isinstance(name, str) and name.startswith(PREFIX) and len(name) > len(PREFIX)


def env_import(name) -> str | None:
    """The import path ``MODULE:ID`` of a ``gymnasium:MODULE:ID`` environment (Gymnasium's ``make`` imports MODULE,
    which registers ID: code a run folder naming it would run; ``rtrl.config.option``'s ``imports``), else ``None``."""
    if is_gymnasium(name) and ":" in name[len(PREFIX):]:
        return name[len(PREFIX):]
    return None


def _imported(module: str, name: str, how: str = install("gymnasium")):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ValueError(f"environment {name!r} needs the {module} package: {how}") from None


def reason(error: BaseException) -> str:
    """An exception in one line: its type and the first line of its message."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def kind_of_default(default) -> tuple[str, Any] | None:
    """``(what, check)`` for an option whose default is a flag, an integer, a number or a string: values of that kind
    only; ``None`` for any other default (``None`` itself: the environment decides)."""
    if isinstance(default, bool):
        return "true or false", lambda v: isinstance(v, bool)
    if is_int(default):
        return "an integer", is_int
    if isinstance(default, float):
        return "a finite number", lambda v: (is_int(v) or isinstance(v, float)) and math.isfinite(v)
    if isinstance(default, str):
        return "a string", lambda v: isinstance(v, str)
    return None


def check_options(name: str, spec, options: tuple) -> None:
    """``ValueError`` naming the environment and the option, before anything is made: ``max_episode_steps`` not a
    positive integer, ``render_mode`` (rtrl never renders), an option the environment's constructor does not take
    or of another kind than its default (``is_slippery=maybe``)."""
    from gymnasium.envs.registration import load_env_creator

    creator = spec.entry_point if callable(spec.entry_point) else load_env_creator(spec.entry_point)
    try:
        params = inspect.signature(creator).parameters
    except (TypeError, ValueError):  # no signature to read: the constructor will say
        params = None
    defaults = {k: p.default for k, p in (params or {}).items() if p.default is not p.empty} | dict(spec.kwargs)
    any_keyword = params is None or any(p.kind is p.VAR_KEYWORD for p in params.values())
    for key, value in options:
        if key in OWN_OPTIONS:  # checked once the observation's size is known (``kept``)
            continue
        if key == "max_episode_steps":
            if not (is_int(value) and value > 0):  # null too: it would keep the ID's own limit, not lift it
                raise ValueError(f"environment {name!r}: option max_episode_steps must be a positive integer, got "
                                 f"{value!r}")
        elif key == "render_mode":
            raise ValueError(f"environment {name!r}: option render_mode is not taken (rtrl rl never renders; the "
                             f"run's records are its output), got {value!r}")
        elif key == "disable_env_checker":
            if not isinstance(value, bool):
                raise ValueError(f"environment {name!r}: option disable_env_checker must be true or false, got "
                                 f"{value!r}")
        elif key in defaults:
            kind = kind_of_default(defaults[key])
            if kind is not None and not kind[1](value):
                raise ValueError(f"environment {name!r}: option {key} must be {kind[0]} (like its default "
                                 f"{defaults[key]!r}), got {value!r}")
        elif not any_keyword and key not in params:
            known = sorted({*(params or {}), *MAKE_OPTIONS, *OWN_OPTIONS} - {"self"})
            raise ValueError(f"environment {name!r} has no option {key!r}; its options are {known}")


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


def made_options(options: tuple) -> dict:
    """``gymnasium.make``'s keywords: ``options`` but rtrl's own (``OWN_OPTIONS``), with Gymnasium's own checker off
    unless they say otherwise (its warnings would be lines on stderr; ``Checked`` checks what rtrl needs, and stops
    the run on it)."""
    return {"disable_env_checker": True, **{k: v for k, v in options if k not in OWN_OPTIONS}}


def kept(name: str, env_id: str, options: tuple, size: int) -> tuple[int, ...] | None:
    """The encoded observation's entries that the options ``mask`` or ``keep`` keep (``None``: all of its ``size``);
    ``ValueError`` naming the option."""
    given = dict(options)
    if "mask" in given and "keep" in given:
        raise ValueError(f"environment {name!r}: give option mask or option keep, not both")
    if "mask" in given:
        keep = keep_of(env_id, given["mask"], given, f"environment {name!r}")
        if max(keep) >= size:
            raise ValueError(f"environment {name!r}: option mask={given['mask']} keeps entries up to {max(keep)}, "
                             f"and the observation has {size}")
        return keep
    if "keep" in given:
        keep = given["keep"]
        if isinstance(keep, str):  # the command line's form, 0,2 (a JSON list would not be hashable in a config)
            try:
                keep = tuple(int(i) for i in keep.split(","))
            except ValueError:
                pass
        return check_keep((keep,) if is_int(keep) else keep, size, f"environment {name!r}")
    return None


class Fault(Exception):
    """What an environment gave that rtrl cannot use (``Checked``); its message says what, not where."""


def checked_observation(space, obs, what: str):
    """``obs`` if it is an observation of ``space`` (its flattened size, all finite), else ``Fault``."""
    from gymnasium import spaces

    try:
        flat = np.asarray(spaces.flatten(space, obs), np.float64)
    except Exception as e:  # noqa: BLE001 - whatever an observation of another structure makes flatten raise
        raise Fault(f"its {what} gave an observation that is not of its space {space} ({reason(e)})") from None
    if flat.shape != (spaces.flatdim(space),):
        raise Fault(f"its {what} gave an observation of {flat.size} numbers, not the {spaces.flatdim(space)} of its "
                    f"space {space}")
    if not np.isfinite(flat).all():
        raise Fault(f"its {what} gave an observation that is not finite ({flat[~np.isfinite(flat)][0]})")
    if (beyond := past_float32(flat)) is not None:
        raise Fault(f"its {what} gave an observation entry {beyond!r}, {FLOAT32_RANGE}")
    return obs


FLOAT32_RANGE = "beyond float32's range (at most about 3.4e38 in size), which the agent reads"


def past_float32(values) -> float | None:
    """The first of the finite ``values`` that float32 (what the agent reads of an observation or a reward) would
    make infinite, else ``None``."""
    values = np.asarray(values, np.float64).ravel()
    beyond = np.abs(values) > np.finfo(np.float32).max
    return float(values[beyond][0]) if beyond.any() else None


def checked_reward(reward):
    """``reward`` if it is a finite number (a 0-d array counts), else ``Fault``."""
    value = reward.item() if isinstance(reward, np.ndarray) and reward.shape == () else reward
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise Fault(f"its step gave the reward {reward!r}, not a number")
    if not math.isfinite(value):
        raise Fault(f"its step gave the reward {reward}, not a finite number")
    if past_float32(value) is not None:
        raise Fault(f"its step gave the reward {value!r}, {FLOAT32_RANGE}")
    return reward


def checked_env(env):
    """``env`` wrapped so that each ``reset`` and ``step`` checks what it gives (``Fault``)."""
    import gymnasium

    class Checked(gymnasium.Wrapper):
        def reset(self, **kwargs):
            obs, info = self.env.reset(**kwargs)
            return checked_observation(self.observation_space, obs, "reset"), info

        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            return checked_observation(self.observation_space, obs, "step"), checked_reward(reward), terminated, \
                truncated, info

    return Checked(env)


def failed(name: str, what: str, error: Exception, step: int) -> Stopped:
    """The run stopped at ``step`` because the environment ``name``'s ``what`` (reset, step) failed."""
    told = str(error) if isinstance(error, Fault) else f"its {what} raised {reason(error)}"
    return Stopped(f"environment {name!r} failed at step {step}: {told}", step)


class Vector:
    """E copies of a Gymnasium environment stepped together: ``reset(seeds, step) -> obs``, ``step(actions, step) ->
    Outcome``, all host arrays; it keeps each episode's running return (lost with the environments on a resume).
    Each copy is ``Checked``: a fault is ``rtrl.driver.Stopped`` naming the environment and ``step``.

    ``autoreset`` (training's): an ended episode's environment starts the next at the same step; without it (a
    rollout's episodes, each reset with a seed of its own) it waits for ``reset``. ``wrappers``: more wrappers around
    each copy, after the check (a rollout's video recorder); ``made``: more of ``gymnasium.make``'s arguments."""

    def __init__(self, env: GymnasiumEnv, envs: int, autoreset: bool = True, wrappers: tuple = (), **made):
        import gymnasium
        from gymnasium.vector import AutoresetMode
        from gymnasium.vector.utils import concatenate, create_empty_array

        env.check()
        self.name, self.autoreset = env.name, autoreset
        mode = AutoresetMode.SAME_STEP if autoreset else AutoresetMode.DISABLED
        self.envs = gymnasium.make_vec(env.env_id, num_envs=envs, vectorization_mode="sync",
                                       vector_kwargs={"autoreset_mode": mode}, wrappers=[checked_env, *wrappers],
                                       **made_options(env.options), **made)
        self.space = self.envs.single_observation_space
        size, encode = encoder(self.space, env.name)
        keep = kept(env.name, env.env_id, env.options, size)
        self.encode = encode if keep is None else lambda o: encode(o)[:, list(keep)]
        self.actions = self.envs.single_action_space
        self.bounds = _probe(env.env_id, env.options).bounds
        self.clip = clips(env.name, env.options, self.bounds)
        self.returns = np.zeros(envs)
        self.batched = lambda last: concatenate(self.space, last, create_empty_array(self.space, len(last)))
        self.parts, self.max_steps = env.extra_inputs, env.max_steps
        self.width = env.num_actions  # the previous action's entries (``extra_inputs``): n, or the Box's size
        self.time = np.zeros(envs, np.int64)  # steps taken in each episode under way (``extra_inputs``)

    def fresh(self, obs: np.ndarray) -> np.ndarray:
        """Episodes' first observations, with zero extras where ``extra_inputs``."""
        if not self.parts:
            return obs
        zeros = np.zeros(len(obs))
        return extended(obs, self.parts, np.zeros((len(obs), self.width)), zeros, zeros, self.max_steps, xp=np)

    def reset(self, seeds: list[int], step: int = 0) -> np.ndarray:
        self.returns[:] = 0.0
        self.time[:] = 0
        try:
            return self.fresh(self.encode(self.envs.reset(seed=seeds)[0]))
        except Exception as e:  # noqa: BLE001 - an environment is code from outside: whatever it raises
            raise failed(self.name, "reset", e, step) from None

    def step(self, actions: np.ndarray, step: int = 0) -> Outcome:
        try:
            return self._step(actions)
        except Exception as e:  # noqa: BLE001 - likewise
            raise failed(self.name, "step", e, step) from None

    def _step(self, actions: np.ndarray) -> Outcome:
        taken = to_space(self.actions, self.bounds, actions, self.clip)
        obs, reward, terminated, truncated, info = self.envs.step(taken)
        obs, done = self.encode(obs), terminated | truncated
        final = obs.copy()
        ended = np.flatnonzero(done)
        if ended.size and self.autoreset:  # else the observation is the ended episode's last
            last = [info["final_obs"][i] for i in ended]
            final[ended] = self.encode(self.batched(last))
        if self.parts:
            self.time += 1
            action = previous_action(self.bounds, self.width, actions, taken)
            final = extended(final, self.parts, action, reward, self.time, self.max_steps, xp=np)
            obs = np.where(done[:, None], self.fresh(obs), final)
            self.time[done] = 0
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
    extra_inputs: tuple = ()  # the extras appended, names from ``PARTS`` (the module docstring)

    host = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra_inputs", parts_of(self.extra_inputs))
        self.check()
        if "time" in self.extra_inputs and self.max_steps is None:
            raise ValueError(f"extra_inputs gives the time over the episode's limit, and {self.name} states none; "
                             "give one with --env-arg max_episode_steps=N")

    @property
    def name(self) -> str:
        """``gymnasium:ID`` and its options; ``ExtraInputs(...)`` around it where ``extra_inputs``, as a jitted
        environment's name says it."""
        return named(PREFIX + self.env_id + "".join(f" {k}={v}" for k, v in self.options), self.extra_inputs)

    def check(self) -> None:
        """``ValueError`` naming what is wrong: a missing package, an unknown ID, an option ``make`` refuses, a
        space the agent cannot handle."""
        _probe(self.env_id, self.options)

    @property
    def obs_size(self) -> int:
        probe = _probe(self.env_id, self.options)
        parts = self.extra_inputs
        return probe.obs_size + probe.num_actions * ("action" in parts) + ("reward" in parts) + ("time" in parts)

    num_actions = property(lambda self: _probe(self.env_id, self.options).num_actions)
    max_steps = property(lambda self: _probe(self.env_id, self.options).max_steps)

    @property
    def action_bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """``None`` for a Discrete action space; for a Box, ``R^A`` (the vector maps the agent's actions onto the
        space's bounds, ``rtrl.rl.envs.continuous``)."""
        return None if _probe(self.env_id, self.options).bounds is None else unbounded(self.num_actions)

    def vector(self, envs: int) -> Vector:
        return Vector(self, envs)


class Probe(NamedTuple):
    obs_size: int  # of the encoded observation, masked
    num_actions: int  # a Discrete space's actions, a MultiDiscrete's combinations; a Box's flattened size
    max_steps: int | None  # None: no limit the environment states
    bounds: tuple | None  # a Box's (low, high), flattened; None for a discrete space


def to_space(space, bounds: tuple | None, actions: np.ndarray, clip: bool = False) -> np.ndarray:
    """The agent's actions ``(E,)`` or ``(E, A)`` as ``space`` takes them: a Discrete space's shifted by its
    ``start``, a MultiDiscrete's unravelled over its ``nvec`` (C order) and shifted by its ``start``, a Box's squashed
    onto ``bounds`` (``clip``: clipped to them) and shaped as the space; a Box of integers takes the nearest integer
    within its bounds (a cast alone would round toward zero: ``high`` never taken, 0 taken twice as often)."""
    if bounds is None and hasattr(space, "nvec"):
        entries = np.unravel_index(np.asarray(actions, np.int64), space.nvec.ravel())
        return (np.stack(entries, axis=1).reshape(len(actions), *space.shape) + space.start).astype(space.dtype)
    if bounds is None:
        return actions + int(space.start)
    mapped = np.clip(actions, *bounds) if clip else squash(actions, *bounds, xp=np)
    taken = mapped.reshape(len(actions), *space.shape)
    if np.issubdtype(space.dtype, np.integer):
        taken = np.rint(taken)  # within the bounds: they are integers, and the squash or the clip stays between them
    return taken.astype(space.dtype)


def clips(name: str, options: tuple, bounds: tuple | None) -> bool:
    """Whether the option ``actions`` clips a Box's actions (``ACTION_MAPS``); ``ValueError`` naming it for another
    value, or for a space that is not a Box."""
    given = dict(options)
    if "actions" not in given:
        return False
    if given["actions"] not in ACTION_MAPS:
        raise ValueError(f"environment {name!r}: option actions must be one of {list(ACTION_MAPS)}, got "
                         f"{given['actions']!r}")
    if bounds is None:
        raise ValueError(f"environment {name!r}: option actions maps a Box's actions, and its actions are Discrete")
    return given["actions"] == "clip"


def previous_action(bounds: tuple | None, width: int, actions: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """The extra inputs' previous action of a batch of ``width``-action steps, ``(E, width)``: a Discrete action's
    one-hot (``actions``, the agent's integers; a MultiDiscrete's over its combinations), a Box action as the
    environment took it (``taken``, flattened)."""
    if bounds is None:
        return np.eye(width)[np.asarray(actions, np.int64)]
    return np.asarray(taken, np.float64).reshape(len(taken), -1)


def _probe(env_id: str, options: tuple) -> Probe:
    """``_made``, once per environment and options (options that cannot be hashed, a JSON object: each time)."""
    try:
        hash(options)
    except TypeError:
        return _made(env_id, options)
    return _made_once(env_id, options)


def _made(env_id: str, options: tuple) -> Probe:
    """One environment made, reset and stepped once, then closed: its options and spaces checked, its sizes and its
    episode limit; a ``ValueError`` naming the environment and what is wrong."""
    name = PREFIX + env_id
    _imported("gymnasium", name)
    import gymnasium
    from gymnasium import spaces

    for prefix, packages in PACKAGES.items():
        if env_id.startswith(prefix):
            for package, how in packages:
                _imported(package, name, how)
    module, _, registered = env_id.rpartition(":")  # gymnasium's ``module:ID`` form: importing module registers ID
    try:
        if module:  # what make would import (a run folder may name it only where the user allowed it: rtrl.config)
            importlib.import_module(module)
        spec = gymnasium.spec(registered)
    except gymnasium.error.Error as e:  # an unknown ID, version, namespace
        raise ValueError(f"environment {name!r}: {e}") from None
    except Exception as e:  # noqa: BLE001 - the module missing, or raising as it is imported
        raise ValueError(f"environment {name!r}: cannot import {module!r} ({reason(e)})") from None
    check_options(name, spec, options)
    shown = " with " + " ".join(f"{k}={v!r}" for k, v in options) if options else ""
    try:
        env = gymnasium.make(env_id, **made_options(options))
    except Exception as e:  # noqa: BLE001 - an environment's constructor is code from outside: whatever it raises
        raise ValueError(f"environment {name!r}{shown} cannot be made: {reason(e)}") from None
    try:
        size = encoder(env.observation_space, name)[0]
        keep = kept(name, env_id, options, size)
        actions = env.action_space
        if isinstance(actions, spaces.Discrete):
            bounds, count = None, int(actions.n)
        elif isinstance(actions, spaces.MultiDiscrete):  # one categorical over the combinations (to_space)
            bounds, count = None, int(np.prod(actions.nvec))
        elif isinstance(actions, spaces.Box):
            bounds = tuple(tuple(float(v) for v in np.asarray(b, np.float64).ravel()) for b in (actions.low,
                                                                                                actions.high))
            count = len(bounds[0])
        else:
            raise ValueError(f"{name} has the action space {actions}; rtrl rl takes a Discrete one (a categorical "
                             "policy), a MultiDiscrete (one categorical over its combinations) or a Box (a Gaussian "
                             "policy, --algorithm ac)")
        for what, space, n in (("observation", env.observation_space, size), ("action", actions, count)):
            if n == 0:
                raise ValueError(f"{name} has the {what} space {space}, of no entries: nothing to "
                                 f"{'read' if what == 'observation' else 'choose'}")
        clip = clips(name, options, bounds)
        first = to_space(actions, bounds, np.zeros((1,) if bounds is None else (1, count), np.int64 if bounds is None
                                                   else np.float32), clip)[0]  # the first action, or the Box's middle
        tried = checked_env(env)
        for what, call in (("reset", lambda: tried.reset(seed=0)), ("step", lambda: tried.step(first))):
            try:
                call()
            except Exception as e:  # noqa: BLE001 - likewise
                told = str(e) if isinstance(e, Fault) else f"its {what} raised {reason(e)}"
                raise ValueError(f"environment {name!r}{shown} fails its first {what}: {told}") from None
        limit = env.spec.max_episode_steps if env.spec is not None else None
        limit = limit or getattr(env.unwrapped, "max_episode_length", None)  # popgym states it so
        return Probe(size if keep is None else len(keep), count, int(limit) if limit else None, bounds)
    finally:
        env.close()


_made_once = functools.cache(_made)
