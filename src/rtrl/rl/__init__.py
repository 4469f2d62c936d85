"""Online reinforcement learning with RTRL: environments in pure JAX and a recurrent actor-critic updated at every
environment step. ``import rtrl.rl`` does not import gymnax (only building a gymnax environment does)."""

from rtrl.rl.envs import ENVS, Env, EpisodeStats, Masked, make
from rtrl.rl.tmaze import TMaze

__all__ = ["ENVS", "Env", "EpisodeStats", "Masked", "TMaze", "make"]
