"""The environments by name: ``ENVS`` (name -> constructor, whose docstring's first line ``rtrl list`` shows),
``popgym:<Task><Easy|Medium|Hard>`` for POPGym's tasks in JAX (``rtrl.rl.envs.popgym``), ``gymnasium:ID`` for any
registered Gymnasium environment, and ``make(name, **options)``. A new environment is a
module of this package and one entry here."""

from __future__ import annotations

import dataclasses

from rtrl.config import Invalid
from rtrl.rl.envs.base import Env, EpisodeStats, Masked
from rtrl.rl.envs.continuous import Squashed
from rtrl.rl.envs.gymnasium_env import PREFIX, GymnasiumEnv, is_gymnasium
from rtrl.rl.envs.gymnax_env import Gymnax
from rtrl.rl.envs.masked import MASKS
from rtrl.rl.envs.popgym import EXPECTED as POPGYM_NAMES
from rtrl.rl.envs.popgym import is_popgym, known, popgym_env
from rtrl.rl.envs.tmaze import TMaze


def _option_fields(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _built(cls, name: str, options: dict):
    """``cls(**options)``, with a ``ValueError`` naming an option ``cls`` does not have."""
    unknown = sorted(set(options) - set(_option_fields(cls)))
    if unknown:
        raise ValueError(f"environment {name!r} has no option {unknown[0]!r}; its options are {_option_fields(cls)}")
    return cls(**options)


def _tmaze(**options):
    """Built here (rtrl.rl.TMaze): a cue at the start, the matching turn at the end of a corridor (length, max_steps)"""
    return _built(TMaze, "tmaze", options)


def _gymnax(gymnax_name: str, what: str, keep: tuple[int, ...] | None = None):
    def make_env(**options):
        env = Gymnax(gymnax_name, tuple(sorted(options.items())))
        return Masked(env, keep) if keep is not None else env

    make_env.__doc__ = f"gymnax {gymnax_name}{what} (options: its EnvParams fields; the rl extra)"
    return make_env


# name -> constructor(**options), its docstring's line what `rtrl list` shows. The gymnax ones need the ``rl``
# extra (gymnax is imported only when built).
ENVS = {
    "tmaze": _tmaze,
    "memory-chain": _gymnax("MemoryChain-bsuite", ": a context bit at the start, to repeat after memory_length steps"),
    "cartpole": _gymnax("CartPole-v1", ""),
    "cartpole-masked": _gymnax("CartPole-v1", " with cart position and pole angle only, no velocities (a POMDP)",
                               keep=(0, 2)),
    "pendulum": _gymnax("Pendulum-v1", ": swing up and hold a pendulum, one torque in [-2, 2] (continuous)"),
    "pendulum-p": _gymnax("Pendulum-v1", " with cos and sin of the angle only, no angular velocity (a POMDP, "
                          "continuous)", keep=MASKS["Pendulum"]["P"]),
}


def env_name(value) -> str:
    """A name of ``ENVS``, ``popgym:<Task><Level>`` or ``gymnasium:ID``; ``Invalid`` (what was expected) otherwise
    (a configuration's check)."""
    if isinstance(value, str) and (value in ENVS or known(value) or is_gymnasium(value)):
        return value
    raise Invalid(f"one of {sorted(ENVS)}, {POPGYM_NAMES}, or gymnasium:ID (any registered Gymnasium environment)")


def make(name: str, **options) -> Env | GymnasiumEnv:
    """The environment ``name`` from ``ENVS`` with its options, or the POPGym task ``popgym:<Task><Level>``, wrapped
    in ``EpisodeStats`` (and, with a Box action space, in ``Squashed``: it takes actions in ``R^A``,
    ``rtrl.rl.envs.continuous``); or, for ``gymnasium:ID``, the Gymnasium environment ``ID`` made with ``options``
    (stepped on the host)."""
    if is_gymnasium(name):
        return GymnasiumEnv(name[len(PREFIX):], tuple(sorted(options.items())))
    if is_popgym(name):
        return EpisodeStats(popgym_env(name, **options))
    if name not in ENVS:
        raise ValueError(f"unknown environment {name!r}; expected one of {sorted(ENVS)}, {POPGYM_NAMES}, or "
                         "gymnasium:ID")
    env = ENVS[name](**options)
    return EpisodeStats(env if env.action_bounds is None else Squashed(env))
