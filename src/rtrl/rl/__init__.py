"""Online reinforcement learning with RTRL: environments in pure JAX and a recurrent actor-critic updated at every
environment step. ``import rtrl.rl`` does not import gymnax (only building a gymnax environment does)."""

from rtrl.rl.agent import ActorCritic
from rtrl.rl.envs import ENVS, Env, EpisodeStats, Masked, make
from rtrl.rl.loop import OnlineActorCritic, RLConfig, RLState, record, train
from rtrl.rl.obgd import obgd
from rtrl.rl.rolling import rolling_tbptt
from rtrl.rl.tmaze import TMaze

__all__ = ["ENVS", "ActorCritic", "Env", "EpisodeStats", "Masked", "OnlineActorCritic", "RLConfig", "RLState", "TMaze",
           "make", "obgd", "record", "rolling_tbptt", "train"]
