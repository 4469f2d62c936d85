"""The streaming agent's step: the whole online actor-critic step against the forward-only agent step, and
against the memoryless agent's step.

    python -m rtrl.benchmarks.agent [--cells mingru rtu rtu-matrix lru lru-matrix] [--widths 16 64 192]
                                    [--envs 1 16 64] [--steps 50] [--algorithms ac q qrc sarsa ...]

For each torso, width and number of environments per call, on MemoryChain (cue 20 steps back), float32, with the
streaming presets' agent (``rtrl.rl.presets.STREAMING``: AC(lambda), Adam, no entropy bonus; the fidelity check
off): the time per step of ``rtrl rl``'s jitted loop (``OnlineActorCritic.advance``: the torso's online step with
its exact traces under ``auto``, the objectives' gradients, the TD error, the parameter-space eligibility
traces, the update, the environments' step and the bookkeeping), against the forward-only agent step: the same
torso's ``cell.step`` (no traces), the heads, the sampled action and the environments' step, scanned the same way.
Both are timed interleaved (``rtrl.benchmarks.timing``), so a slow spell of a shared machine slows both alike and
the ratio holds; ``env steps/s`` is environments x steps a second of the full step, and ``x E=1`` that figure over
the first count's (one environment by default) of the same torso and width.

A torso is a registered cell's name, or one of ``TORSOS``: ``rtu`` and ``lru`` are the agent's own RTU and LRU
(``output_map="concat"``, ``rtrl.rl.assemble.torso_args``: no N x N output matrix in the cell, the heads read the
units' parts, so the agent keeps no N x N eligibility traces per environment), ``rtu-matrix`` and ``lru-matrix``
those cells with their output matrix (``--cell-arg output_map=matrix``; the agents' torso before they left it out),
``memoryless`` the memoryless rows' torso (``rtrl.rl.presets.ROW_OPTIONS``:
no recurrence), ``mingru-tbptt1`` the minGRU under TBPTT(1) (no traces: what the torso's learning costs without
them). Every width's torsos, the memoryless one always among them, and every environment count are timed
in one interleaved call, so ``x memoryless``, each full step over the memoryless agent's full step with as many
environments, compares timings taken under the same load.

``--algorithms`` (``ALGORITHMS``; default ``ac`` alone) times each torso under each algorithm's agent, all in the
same interleaved call: ``ac`` the streaming presets' actor-critic; ``q``, ``qrc`` and ``sarsa`` the value-based
agents with the same torso, Adam step and gamma (epsilon-greedy; ``qrc`` its secondary weights too);
``ac-intentional`` and ``q-intentional`` the intentional step (``optimizer="intentional"``; ``q-intentional`` is
``rtrl.rl.presets.Q_ALGORITHMS["q"]``, the memory-chain-L-q presets' agent: eta 0.5, gamma 0.99, lambda 0.8);
``gaussian`` the Gaussian actor-critic on ``pendulum-p`` (``rtrl.rl.control_presets.PENDULUM``'s agent: a tanh
layer of 64 before the heads). Each algorithm's forward-only step acts as its agent does (a Q agent
epsilon-greedy on its action values, the Gaussian one a draw about its mean), and its ``x memoryless`` is over the
same algorithm's memoryless agent."""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.benchmarks.timing import interleaved_seconds
from rtrl.online import zero_where
from rtrl.rl.agent import heads
from rtrl.rl.config import RLConfig
from rtrl.rl.control_presets import PENDULUM
from rtrl.rl.loop import OnlineActorCritic
from rtrl.rl.presets import Q_ALGORITHMS, ROW_OPTIONS, STREAMING

BASELINE = "memoryless"
TORSOS = {  # a torso's options beyond the streaming presets'; a registered cell's name is its own torso
    BASELINE: {"cell": ROW_OPTIONS[BASELINE]["cell"], "method": ROW_OPTIONS[BASELINE]["method"], "cell_args": {}},
    "rtu-matrix": {"cell": "rtu", "cell_args": {"output_map": "matrix"}},
    "lru-matrix": {"cell": "lru", "cell_args": {"output_map": "matrix"}},
    "mingru-tbptt1": {"cell": "mingru", "method": "tbptt", "truncation": 1},
}
CELLS = ("mingru", "rtu", "rtu-matrix", "lru", "lru-matrix")
ENV = {"env": "memory-chain", "env_args": {"memory_length": 20}}
VALUE_BASED = {k: v for k, v in STREAMING.items() if k != "entropy"}  # the streaming agent less what only AC reads
ALGORITHMS = {  # name -> the environment and agent options of its runs (the torso's, width and count aside)
    "ac": {**ENV, **STREAMING},
    "ac-intentional": {**ENV, **STREAMING, "optimizer": "intentional", "lr": 0.5},
    "q": {**ENV, **VALUE_BASED, "algorithm": "q"},
    "q-intentional": {**ENV, **VALUE_BASED, **Q_ALGORITHMS["q"]},
    "qrc": {**ENV, **VALUE_BASED, **Q_ALGORITHMS["qrc"]},
    "sarsa": {**ENV, **VALUE_BASED, "algorithm": "sarsa"},
    "gaussian": {k: v for k, v in PENDULUM.items() if k not in ("hidden", "envs", "steps", "record_every")},
}


def torso_options(torso: str) -> dict:
    """The ``RLConfig`` options that make ``torso`` (a ``TORSOS`` name or a registered cell's)."""
    return TORSOS.get(torso, {"cell": torso})


def sampled(params, h: jax.Array, key: jax.Array, epsilon: float) -> jax.Array:
    """The actions of all environments from the torsos' outputs ``h`` (E, N), as the agent of ``params`` acts: a Q
    agent's epsilon-greedy on its action values (the rate ``epsilon``), the Gaussian actor-critic's a draw about its
    mean, the actor-critic's a draw from its policy (the value head computed too, as the agent does)."""
    if "q" in params:
        q = h @ params["q"]["W"] + params["q"]["b"]
        k_explore, k_random = jax.random.split(key)
        explore = jax.random.uniform(k_explore, q.shape[:1]) < epsilon
        return jnp.where(explore, jax.random.randint(k_random, q.shape[:1], 0, q.shape[1]), jnp.argmax(q, axis=1))
    logits, _ = jax.vmap(heads, in_axes=(None, 0))(params, h)
    if "log_std" in params:
        return logits + jnp.exp(params["log_std"]) * jax.random.normal(key, logits.shape, logits.dtype)
    return jax.random.categorical(key, logits)


def forward_only(run: OnlineActorCritic, steps: int):
    """``(params, env_state, obs, key) -> (carry, env_state, obs, key)`` after ``steps`` forward-only agent steps of
    all environments: the torso's ``cell.step`` (no traces), the heads, the sampled action (``sampled``), the
    environments' step."""
    cell, env, E, epsilon = run.agent.torso.cell, run.env, run.config.envs, run.config.epsilon

    @jax.jit
    def scanned(params, env_state, obs, key):
        def one(carry_state, _):
            carry, env_state, obs, key = carry_state
            key, k_act, k_env = jax.random.split(key, 3)
            carry, h = cell.step(params["torso"], carry, obs)
            action = sampled(params, h, k_act, epsilon)
            step = jax.vmap(env.step)(jax.random.split(k_env, E), env_state, action)
            return (zero_where(step.done, carry), step.state, step.obs.astype(obs.dtype), key), None

        start = (cell.initial_carry((E,), obs.dtype), env_state, obs, key)
        return lax.scan(one, start, None, length=steps)[0]

    return scanned


def measure(torsos, width: int, envs, steps: int = 50, algorithms=("ac",)) -> list[dict]:
    """A row per algorithm of ``algorithms`` (``ALGORITHMS``), torso (the memoryless one first, added where
    ``torsos`` lacks it) and number of environments in ``envs``: seconds per step of the full agent step and of the
    forward-only one, their ratio, environment steps a second against the first count's (``vs_first``), and the
    full step over the same algorithm's memoryless agent's with as many environments (``vs_memoryless``). All of
    them are timed interleaved in one call, so every ratio is taken under the same load."""
    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if unknown:
        raise ValueError(f"algorithms must be among {', '.join(ALGORITHMS)}, got {', '.join(map(repr, unknown))}")
    torsos = [BASELINE, *(t for t in torsos if t != BASELINE)]
    calls, runs = {}, {}
    for algorithm in algorithms:
        for torso in torsos:
            for e in envs:
                options = {**ALGORITHMS[algorithm], **torso_options(torso), "hidden": width, "envs": e,
                           "fidelity_every": 0}
                run = runs[algorithm, torso, e] = OnlineActorCritic(RLConfig(**options, steps=steps,
                                                                             record_every=steps))
                state = run.init(0)
                calls[(algorithm, torso, "full", e)] = (jax.jit(run._advance, static_argnums=1), (state, steps))
                calls[(algorithm, torso, "forward", e)] = (forward_only(run, steps),
                                                           (state.params, state.env_state, state.obs, state.key))
    seconds = {key: s / steps for key, s in interleaved_seconds(calls, repeats=9, min_seconds=0.2).items()}
    rows = []
    for algorithm in algorithms:
        for torso in torsos:
            first = envs[0] / seconds[(algorithm, torso, "full", envs[0])]
            for e in envs:
                full_s, forward_s = seconds[(algorithm, torso, "full", e)], seconds[(algorithm, torso, "forward", e)]
                rows.append({"algorithm": algorithm, "cell": torso, "width": width, "envs": e,
                             "method": runs[algorithm, torso, e].agent.torso.learner.method.name,
                             "full_seconds": full_s, "forward_seconds": forward_s,
                             "ratio_to_forward": full_s / forward_s, "env_steps_per_second": e / full_s,
                             "first_envs": envs[0], "vs_first": (e / full_s) / first,
                             "vs_memoryless": full_s / seconds[(algorithm, BASELINE, "full", e)]})
    return rows


def measure_all(cells, widths, envs, steps: int = 50, algorithms=("ac",)) -> list[dict]:
    """``measure`` at every width (one interleaved call each), the rows printed as each width's call ends."""
    rows = []
    for width in widths:
        measured = measure(list(cells), width, list(envs), steps, tuple(algorithms))
        rows += measured
        print_rows(measured)
    return rows


def print_rows(rows: list[dict]) -> None:
    for r in rows:
        vs = f"{r['vs_first']:6.1f}x E={r['first_envs']}" if r["envs"] != r["first_envs"] else ""
        print(f"  {r['algorithm']:>14} {r['cell']:>10} N={r['width']:<4} E={r['envs']:<3} {r['method']:>11} "
              f"{r['full_seconds'] * 1e3:9.3f} ms  forward {r['forward_seconds'] * 1e3:8.3f} ms  "
              f"{r['ratio_to_forward']:6.2f}x  {r['vs_memoryless']:6.2f}x memoryless  "
              f"{r['env_steps_per_second']:10.0f} env steps/s {vs}", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.agent", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", nargs="+", default=list(CELLS),
                        help=f"torsos: registered cells or {sorted(TORSOS)} (the memoryless one is always timed)")
    parser.add_argument("--widths", nargs="+", type=int, default=[16, 64, 192])
    parser.add_argument("--envs", nargs="+", type=int, default=[1, 16, 64])
    parser.add_argument("--steps", type=int, default=50, help="steps per timed call")
    parser.add_argument("--algorithms", nargs="+", default=["ac"], choices=list(ALGORITHMS),
                        help="the agents to time each torso under, in one interleaved call (gaussian: on pendulum-p)")
    args = parser.parse_args(argv)
    print("the agent's step against the forward-only agent step and the memoryless agent's step (MemoryChain, "
          "float32; gaussian: pendulum-p)")
    measure_all(args.cells, args.widths, args.envs, args.steps, args.algorithms)


if __name__ == "__main__":
    main()
