"""The streaming agent's step: the whole online actor-critic step against the forward-only agent step, and
against the memoryless agent's step.

    python -m rtrl.benchmarks.agent [--cells mingru rtu rtu-concat lru lru-concat] [--widths 16 64 192]
                                    [--envs 1 16 64] [--steps 50]

For each torso, width and number of environments per call, on MemoryChain (cue 20 steps back), float32, with the
streaming presets' agent (``rtrl.rl.presets.STREAMING``: AC(lambda), Adam, no entropy bonus; the fidelity check
off): the time per step of ``rtrl rl``'s jitted loop (``OnlineActorCritic.advance``: the torso's online step with
its exact traces under ``auto``, the objectives' gradients, the TD error, the parameter-space eligibility
traces, the update, the environments' step and the bookkeeping), against the forward-only agent step: the same
torso's ``cell.step`` (no traces), the heads, the sampled action and the environments' step, scanned the same way.
Both are timed interleaved (``rtrl.benchmarks.timing``), so a slow spell of a shared machine slows both alike and
the ratio holds; ``env steps/s`` is environments x steps a second of the full step, and ``x E=1`` that figure over
the first count's (one environment by default) of the same torso and width.

A torso is a registered cell's name, or one of ``TORSOS``: ``rtu-concat`` and ``lru-concat`` are RTU and LRU with
``output_map="concat"`` (no N x N output matrix in the cell: the heads read the units' parts, so the agent keeps no
N x N eligibility traces per environment), ``memoryless`` the memoryless rows' torso (``rtrl.rl.presets.ROW_OPTIONS``:
no recurrence). Every width's torsos, the memoryless one always among them, and every environment count are timed
in one interleaved call, so ``x memoryless``, each full step over the memoryless agent's full step with as many
environments, compares timings taken under the same load."""

from __future__ import annotations

import argparse

import jax
from jax import lax

from rtrl.benchmarks.timing import interleaved_seconds
from rtrl.online import zero_where
from rtrl.rl.agent import heads
from rtrl.rl.config import RLConfig
from rtrl.rl.loop import OnlineActorCritic
from rtrl.rl.presets import ROW_OPTIONS, STREAMING

BASELINE = "memoryless"
TORSOS = {  # a torso's options beyond the streaming presets'; a registered cell's name is its own torso
    BASELINE: {"cell": ROW_OPTIONS[BASELINE]["cell"], "method": ROW_OPTIONS[BASELINE]["method"], "cell_args": {}},
    "rtu-concat": {"cell": "rtu", "cell_args": {"output_map": "concat"}},
    "lru-concat": {"cell": "lru", "cell_args": {"output_map": "concat"}},
}
CELLS = ("mingru", "rtu", "rtu-concat", "lru", "lru-concat")
ENV = {"env": "memory-chain", "env_args": {"memory_length": 20}}


def torso_options(torso: str) -> dict:
    """The ``RLConfig`` options that make ``torso`` (a ``TORSOS`` name or a registered cell's)."""
    return TORSOS.get(torso, {"cell": torso})


def forward_only(run: OnlineActorCritic, steps: int):
    """``(params, env_state, obs, key) -> (carry, env_state, obs, key)`` after ``steps`` forward-only agent steps of
    all environments: the torso's ``cell.step`` (no traces), the heads, the sampled action, the environments' step."""
    cell, env, E = run.agent.cell, run.env, run.config.envs

    @jax.jit
    def scanned(params, env_state, obs, key):
        def one(carry_state, _):
            carry, env_state, obs, key = carry_state
            key, k_act, k_env = jax.random.split(key, 3)
            carry, h = cell.step(params["torso"], carry, obs)
            logits, _ = jax.vmap(heads, in_axes=(None, 0))(params, h)
            action = jax.random.categorical(k_act, logits)
            step = jax.vmap(env.step)(jax.random.split(k_env, E), env_state, action)
            return (zero_where(step.done, carry), step.state, step.obs.astype(obs.dtype), key), None

        start = (cell.initial_carry((E,), obs.dtype), env_state, obs, key)
        return lax.scan(one, start, None, length=steps)[0]

    return scanned


def measure(torsos, width: int, envs, steps: int = 50) -> list[dict]:
    """A row per torso (the memoryless one first, added where ``torsos`` lacks it) and number of environments in
    ``envs``: seconds per step of the full agent step and of the forward-only one, their ratio, environment steps a
    second against the first count's (``vs_first``), and the full step over the memoryless agent's with as many
    environments (``vs_memoryless``). All of them are timed interleaved in one call, so every ratio is taken under
    the same load."""
    torsos = [BASELINE, *(t for t in torsos if t != BASELINE)]
    calls, runs = {}, {}
    for torso in torsos:
        for e in envs:
            options = {**STREAMING, **torso_options(torso), "hidden": width, "envs": e, "fidelity_every": 0}
            run = runs[torso, e] = OnlineActorCritic(RLConfig(**ENV, **options, steps=steps, record_every=steps))
            state = run.init(0)
            calls[(torso, "full", e)] = (jax.jit(run._advance, static_argnums=1), (state, steps))
            calls[(torso, "forward", e)] = (forward_only(run, steps),
                                            (state.params, state.env_state, state.obs, state.key))
    seconds = {key: s / steps for key, s in interleaved_seconds(calls, repeats=9, min_seconds=0.2).items()}
    rows = []
    for torso in torsos:
        first = envs[0] / seconds[(torso, "full", envs[0])]
        for e in envs:
            full_s, forward_s = seconds[(torso, "full", e)], seconds[(torso, "forward", e)]
            rows.append({"cell": torso, "width": width, "envs": e, "method": runs[torso, e].agent.learner.method.name,
                         "full_seconds": full_s, "forward_seconds": forward_s, "ratio_to_forward": full_s / forward_s,
                         "env_steps_per_second": e / full_s, "first_envs": envs[0], "vs_first": (e / full_s) / first,
                         "vs_memoryless": full_s / seconds[(BASELINE, "full", e)]})
    return rows


def measure_all(cells, widths, envs, steps: int = 50) -> list[dict]:
    """``measure`` at every width (one interleaved call each), the rows printed as each width's call ends."""
    rows = []
    for width in widths:
        measured = measure(list(cells), width, list(envs), steps)
        rows += measured
        print_rows(measured)
    return rows


def print_rows(rows: list[dict]) -> None:
    for r in rows:
        vs = f"{r['vs_first']:6.1f}x E={r['first_envs']}" if r["envs"] != r["first_envs"] else ""
        print(f"  {r['cell']:>10} N={r['width']:<4} E={r['envs']:<3} {r['method']:>11} "
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
    args = parser.parse_args(argv)
    print("the agent's step against the forward-only agent step and the memoryless agent's step (MemoryChain, "
          "float32)")
    measure_all(args.cells, args.widths, args.envs, args.steps)


if __name__ == "__main__":
    main()
