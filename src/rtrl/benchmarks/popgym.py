"""Environment steps a second of the jitted POPGym ports against popgym's own environments stepped on the host, on
the same task, as a ratio, measured in one run.

    python -m rtrl.benchmarks.popgym [--tasks RepeatPreviousEasy ...] [--envs 64] [--steps 1000] [--repeats 3]
    python -m rtrl.benchmarks.popgym --agent [--tasks ...] [--envs 16] [--steps 2000] [--repeats 3]

The jitted side: E environments of ``popgym:<task>`` stepped ``T`` times with uniformly random actions under one
``jit(scan(vmap(step)))`` (automatic resets and episode statistics included, as ``rtrl rl`` steps them). The host
side: as ``rtrl rl --env gymnasium:popgym-<task>-v0`` steps them, E copies of popgym's environment in rtrl's
Gymnasium vector (``rtrl.rl.envs.gymnasium_env.Vector``: Gymnasium's synchronous vector, the observations encoded as
float vectors, Battleship's and MineSweeper's grid cells one categorical over their combinations), the random
actions drawn by NumPy. Neither side includes an agent: this is the environments' own
cost. Each figure is the median over ``--repeats`` of steps (E x T) divided by the wall time, the two sides timed in
turn.

``--agent``: the same comparison with the learning agent in the loop, the whole of ``rtrl rl``'s step (the torso's
online step under its exact traces, the update, the bookkeeping): ``rtrl.rl.train`` of one configuration (the
suite's agent, that of the ``popgym-repeat-*`` presets: ``AGENT``) with ``--env popgym:<task>`` (the jitted loop, a
``lax.scan`` a chunk) and with ``--env gymnasium:popgym-<task>-v0`` (the host loop: a jitted agent call a step, the
environments stepped by popgym between them), each run compiled once before it is timed. Its last column is the
seconds one seed of ``--steps`` steps takes on the jitted loop, the suite's cost per seed and million frames (``E x
T``).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import jax
import numpy as np

from rtrl.rl import RLConfig, train
from rtrl.rl.envs.gymnasium_env import GymnasiumEnv
from rtrl.rl.envs.popgym import NORMALISATION
from rtrl.rl.envs.registry import make
from rtrl.rl.presets import POPGYM_AGENT

TASKS = tuple(task + "Easy" for task in NORMALISATION)  # the suite's eleven, at their Easy level


def jitted_runner(task: str, envs: int, steps: int):
    """``run(key) -> (episodes ended, checksum)``: ``steps`` steps of ``envs`` environments of ``popgym:task``,
    jitted. The checksum (of every observation and reward) keeps XLA from skipping the work no output needs."""
    env = make("popgym:" + task)

    @jax.jit
    def run(key):
        _, state = jax.vmap(env.reset)(jax.random.split(key, envs))

        def body(state, key):
            k_act, k_env = jax.random.split(key)
            action = jax.random.randint(k_act, (envs,), 0, env.num_actions)
            step = jax.vmap(env.step)(jax.random.split(k_env, envs), state, action)
            return step.state, (step.done.sum(), step.obs.sum() + step.reward.sum())

        ended, checksum = jax.lax.scan(body, state, jax.random.split(key, steps))[1]
        return ended.sum(), checksum.sum()

    return run


def host_runner(task: str, envs: int, steps: int):
    """``run(seed) -> (episodes ended, checksum)``: the same on the host, as ``rtrl rl`` steps them: popgym's
    environments in rtrl's Gymnasium vector (``rtrl.rl.envs.gymnasium_env.Vector``: resetting in the step that ends
    an episode, observations encoded, a grid task's cell one action of its combinations), actions drawn by NumPy."""
    vector = GymnasiumEnv(f"popgym-{task}-v0").vector(envs)

    def run(seed):
        rng = np.random.default_rng(seed)
        vector.reset([seed * envs + i for i in range(envs)])
        ended, checksum = 0, 0.0
        for _ in range(steps):
            out = vector.step(rng.integers(vector.width, size=envs))
            ended += int(out.done.sum())
            checksum += float(out.obs.sum() + out.reward.sum())
        return ended, checksum

    return run, vector


def measure(task: str, envs: int, steps: int, repeats: int = 3) -> dict[str, float]:
    """Environment steps a second, jitted and on the host (medians over ``repeats``, timed in turn)."""
    jitted = jitted_runner(task, envs, steps)
    host, vector = host_runner(task, envs, steps)
    jax.block_until_ready(jitted(jax.random.key(0)))  # compiled before timing
    host(0)
    times: dict[str, list[float]] = {"jitted": [], "host": []}
    try:
        for r in range(repeats):
            start = time.perf_counter()
            jax.block_until_ready(jitted(jax.random.key(r + 1)))
            times["jitted"].append(time.perf_counter() - start)
            start = time.perf_counter()
            host(r + 1)
            times["host"].append(time.perf_counter() - start)
    finally:
        vector.close()
    return {side: envs * steps / statistics.median(t) for side, t in times.items()}


# The suite's agent (rtrl.rl.presets.POPGYM_AGENT: the popgym-repeat-* presets' streaming agent), the fidelity check
# off and without the extra inputs, which the host route does not take (its wrapper steps a jitted environment).
AGENT = {**POPGYM_AGENT, "extra_inputs": False, "fidelity_every": 0}


def agent_seconds(env: str, envs: int, steps: int, repeats: int) -> float:
    """Median wall seconds of ``rtrl.rl.train`` for ``steps`` steps of ``envs`` environments of ``env`` with the
    ``AGENT``, compiled before timing: a first run of the same length (seed 0) compiles the chunks every later run
    shares (a jitted chunk is compiled for its length)."""
    config = RLConfig(**{**AGENT, "env": env, "envs": envs, "steps": steps, "record_every": steps})
    train(config, quiet=True)
    times = []
    for r in range(repeats):
        start = time.perf_counter()
        train(config.replace(seed=r + 1), quiet=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_agent(task: str, envs: int, steps: int, repeats: int = 3) -> dict[str, float]:
    """Environment steps a second of the learning agent's loop, jitted and on the host, and the jitted seconds."""
    seconds = {"jitted": agent_seconds(f"popgym:{task}", envs, steps, repeats),
               "host": agent_seconds(f"gymnasium:popgym-{task}-v0", envs, steps, repeats)}
    return {side: envs * steps / s for side, s in seconds.items()} | {"seconds": seconds["jitted"]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.popgym", description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS, metavar="TASK",
                        help=f"popgym tasks (default: the 11 Easy tasks: {', '.join(TASKS)})")
    parser.add_argument("--agent", action="store_true",
                        help="with the learning agent in the loop (rtrl.rl.train, jitted against host)")
    parser.add_argument("--envs", type=int, help="environments stepped side by side, E (default 64; 16 with --agent)")
    parser.add_argument("--steps", type=int, help="steps of each environment per timing, T (default 1000; 2000 "
                        "with --agent)")
    parser.add_argument("--repeats", type=int, default=3, help="timings of each side (the median is shown)")
    args = parser.parse_args(argv)
    args.envs = args.envs if args.envs is not None else 16 if args.agent else 64
    args.steps = args.steps if args.steps is not None else 2000 if args.agent else 1000
    for name in ("envs", "steps", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be a positive integer, got {getattr(args, name)}")
    if args.agent:
        return main_agent(args)
    print(f"POPGym, E={args.envs} environments x T={args.steps} steps, random actions; jitted on "
          f"{jax.devices()[0].platform}, host on {platform.processor() or platform.machine()}; environment steps a "
          "second (no agent)")
    print(f"{'task':<30} {'jitted':>12} {'host':>10} {'ratio':>8}")
    for task in args.tasks:
        rate = measure(task, args.envs, args.steps, args.repeats)
        print(f"{task:<30} {rate['jitted']:>12,.0f} {rate['host']:>10,.0f} {rate['jitted'] / rate['host']:>7.0f}x",
              flush=True)


def main_agent(args) -> None:
    print(f"POPGym with the learning agent (rtrl.rl.train, {AGENT}), E={args.envs} environments x T={args.steps} "
          f"steps; jitted loop on {jax.devices()[0].platform}, host loop on "
          f"{platform.processor() or platform.machine()}; environment steps a second")
    print(f"{'task':<30} {'jitted':>10} {'host':>8} {'ratio':>7} {'s/seed/Mframes':>15}")
    for task in args.tasks:
        rate = measure_agent(task, args.envs, args.steps, args.repeats)
        per_mframe = rate["seconds"] * 1e6 / (args.envs * args.steps)
        print(f"{task:<30} {rate['jitted']:>10,.0f} {rate['host']:>8,.0f} {rate['jitted'] / rate['host']:>6.0f}x "
              f"{per_mframe:>15,.0f}", flush=True)


if __name__ == "__main__":
    main()
