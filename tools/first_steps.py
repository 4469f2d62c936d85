"""The first steps of an RL run, one at a time: the scaled reward each step hands the learner, and what the update
does to the parameters. Written to find why Farr et al.'s time input once blew our learner up (docs/rl-control.md,
"Why the anchor's time input broke our learner"): the normalisers' statistics started empty, so the first reward
was divided by sqrt(1e-8).

    .venv/bin/python tools/first_steps.py --preset hopper-p-anchor-agent
    .venv/bin/python tools/first_steps.py --preset hopper-p-anchor-agent --empty-statistics   # as before f999930

``--empty-statistics`` starts the running statistics with nothing counted (``rtrl.rl.envs.normalize.stats_init``
as it was before the prior). Prints one line a step: the reward as scaled, the L1 norm of the critic's traces, the
norm of every parameter and the L1 norm of the step's change to them (seed 0, one environment per seed as the
preset says).
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from optax.tree_utils import tree_norm

from rtrl.rl import RLConfig
from rtrl.rl.envs import normalize
from rtrl.rl.loop import OnlineActorCritic
from rtrl.rl.presets import PRESETS


def empty(shape, dtype):
    return normalize.Stats(jnp.zeros((), dtype), jnp.zeros(shape, dtype), jnp.zeros(shape, dtype))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", required=True, choices=sorted(PRESETS), metavar="NAME")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--empty-statistics", action="store_true", help="the statistics start with nothing counted")
    args = p.parse_args(argv)
    if args.empty_statistics:
        normalize.stats_init = empty  # the wrappers look it up when they start
    config = RLConfig(**{**PRESETS[args.preset].options, "steps": args.steps, "record_every": args.steps,
                         "fidelity_every": 0, "seeds": 1})
    run = OnlineActorCritic(config)
    state = run.init(0)
    for t in range(args.steps):
        before = state.params
        state = run.advance(state, 1)
        reward = np.asarray(state.pending.transition.reward).ravel()
        traces = state.traces[0] if isinstance(state.traces, tuple) else state.traces
        change = float(tree_norm(jax.tree.map(lambda a, b: a - b, state.params, before), ord=1))
        print(f"step {t + 1}: scaled reward {reward[0]:.6g}, critic trace L1 {float(tree_norm(traces, ord=1)):.6g}, "
              f"parameters' norm {float(tree_norm(state.params)):.6g}, change L1 {change:.6g}")


if __name__ == "__main__":
    main()
