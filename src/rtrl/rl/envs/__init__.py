"""Environments in pure JAX (``base``: the protocol and wrappers; one module per environment; ``registry``: by name).
Building a gymnax environment imports gymnax; importing this package does not."""

from rtrl.rl.envs.base import Env, EpisodeStats, Masked, select
from rtrl.rl.envs.registry import ENVS, make
from rtrl.rl.envs.tmaze import TMaze

__all__ = ["ENVS", "Env", "EpisodeStats", "Masked", "TMaze", "make", "select"]
