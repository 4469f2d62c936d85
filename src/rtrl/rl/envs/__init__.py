"""Environments in pure JAX (``base``: the protocol and wrappers; one module per environment; ``registry``: by name),
and any Gymnasium environment, stepped on the host (``gymnasium_env``). Building a gymnax or Gymnasium environment
imports gymnax or gymnasium; importing this package does not."""

from rtrl.rl.envs.base import Env, EpisodeStats, Masked, Step, select
from rtrl.rl.envs.gymnasium_env import GymnasiumEnv, env_import
from rtrl.rl.envs.registry import ENVS, env_name, make
from rtrl.rl.envs.tmaze import TMaze

__all__ = ["ENVS", "Env", "EpisodeStats", "GymnasiumEnv", "Masked", "Step", "TMaze", "env_import", "env_name", "make",
           "select"]
