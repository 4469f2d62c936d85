"""Online reinforcement learning with RTRL: environments in pure JAX and a recurrent actor-critic updated at every
environment step. ``import rtrl.rl`` does not import gymnax (only building a gymnax environment does)."""

from rtrl.optim import obgd
from rtrl.rl.algorithms import ActorCritic
from rtrl.rl.assemble import RLAssembly, assemble
from rtrl.rl.config import RLConfig
from rtrl.rl.envs import ENVS, Env, EpisodeStats, Masked, TMaze, make
from rtrl.rl.loop import OnlineActorCritic, RLState, record, train
from rtrl.rl.rolling import rolling_tbptt

__all__ = ["ENVS", "ActorCritic", "Env", "EpisodeStats", "Masked", "OnlineActorCritic", "RLAssembly", "RLConfig",
           "RLState", "TMaze", "assemble", "make", "obgd", "record", "rolling_tbptt", "train"]
