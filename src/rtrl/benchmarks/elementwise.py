"""Per-step cost of the element-wise methods on ELSTM, AdaptiveIIR2 and a plain tanh cell (and, with ``--cells``,
IIR2, LRU, RTU and MinGRU, which ``rtrl bench`` adds to its per-step section), as ratios to a forward-only step.

    python -m rtrl.benchmarks.elementwise [--cells ELSTM LRU] [--sizes 64x256x32 32x64x8] [--steps 100]
    python -m rtrl.benchmarks.elementwise --diagonal-vs-closed-form [--cells IIR2 LRU RTU] [--steps 200] [--cpu-time]

The second form prints, per cell and size, ``diagonal``'s whole-sequence gradient time as a ratio to
``closed_form``'s (measured round-robin in one process) and the trace bytes of each (float32, the batch's):
how close the traces found from the step alone come to the hand-derived ones. ``--cpu-time`` times it on one XLA
thread by the process's CPU time (``rtrl.benchmarks.timing.CPU_TIME``): ratios that hold on a busy machine.

Sizes are ``DxNxB`` (input, hidden, batch). Each figure is the median over repeats of a jitted whole-sequence
gradient (T steps, loss on every step) divided by T, float32; the forward-only baseline scans the same cell and loss
without any gradient. Dense ``rtrl`` (O(N^2 D) memory per example) runs only up to ``--rtrl-max-hidden`` and on
``--rtrl-steps`` steps; a method that does not apply to a cell (``closed_form`` on the plain tanh cell) is left
out. Target: ``closed_form`` and ``diagonal`` within 2.5x of the forward step at 64x256x32.

``ElementwiseTanh`` is the simplest element-wise recurrence, ``c' = tanh(x @ W + w*c + b)``, ``h = c'``, written
as a user would, a plain function of one example handed to ``rtrl.cells.from_function`` (with its
``output_fn``): ``diagonal`` finds its traces from the step alone.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import jax
import jax.numpy as jnp

import rtrl
from rtrl.benchmarks.roofline import trace_bytes
from rtrl.benchmarks.timing import CPU_TIME, per_step_seconds, random_problem
from rtrl.cells.base import glorot
from rtrl.methods import Chunked, resolve
from rtrl.run.argtypes import size3
from rtrl.validate import applies


def tanh_step(p, c, x):
    """One example of the element-wise tanh cell: ``c' = tanh(x @ W + w*c + b)``, ``h = c'``."""
    c = jnp.tanh(x @ p["W"] + p["w"] * c + p["b"])
    return c, c


def tanh_cell(D: int, N: int):
    """The element-wise tanh cell as a user's plain function (``rtrl.cells.from_function``)."""

    def init(key):
        k_W, k_w = jax.random.split(key)
        return {"W": glorot(k_W, (D, N), jnp.float32), "w": jax.random.uniform(k_w, (N,), jnp.float32, -0.9, 0.9),
                "b": jnp.zeros((N,), jnp.float32)}

    return rtrl.cells.from_function(init, tanh_step, lambda: jnp.zeros((N,)), input_size=D, hidden_size=N,
                                    name="ElementwiseTanh", output_fn=lambda p, c, x: c)


# name -> cell of (input size, hidden size): the cells every section measures
CELLS = {"ELSTM": rtrl.cells.ELSTM, "AdaptiveIIR2": rtrl.cells.AdaptiveIIR2, "ElementwiseTanh": tanh_cell}
# and the other cells with closed-form traces, in the per-step section only
PER_STEP_CELLS = {**CELLS, "IIR2": rtrl.cells.IIR2, "LRU": rtrl.cells.LRU, "RTU": rtrl.cells.RTU,
                  "MinGRU": rtrl.cells.MinGRU}
METHODS = ("closed_form", "diagonal", "chunked", "rtrl", "bptt")
EXACT_ELEMENTWISE = ("closed_form", "diagonal", "chunked")  # the methods held to BPTT's price
# chunked with its traces run forward by rtrl.kernels.trace_chunk: on request (--methods), since on a CPU Pallas
# runs in interpret mode, a correctness path far slower than any other column
VARIANTS = {"chunked-xla": Chunked(kernel="xla"), "chunked-pallas": Chunked(kernel="pallas")}


def measure(cell, B: int, T: int, rtrl_steps: int | None, seed: int = 0, methods=METHODS) -> dict[str, float]:
    """Seconds per step of the forward pass and of each method (``rtrl`` on ``rtrl_steps`` steps, or not at
    all when ``None``), float32."""
    params, xs, ys = random_problem(cell, T, B, seed)
    timed = {label: VARIANTS.get(label, label) for label in methods}  # column -> method (a name or an object)
    timed = {label: m for label, m in timed.items()
             if applies(resolve(m), cell) and (m != "rtrl" or rtrl_steps is not None)}
    seconds = per_step_seconds(cell, params, xs, ys, list(timed.values()), steps={"rtrl": rtrl_steps})
    return {"forward": seconds["forward"], **{label: seconds[m] for label, m in timed.items()}}


def diagonal_against_closed_form(cell, B: int, T: int, seed: int = 0, clock=time.perf_counter) -> dict[str, float]:
    """Seconds per step of ``closed_form`` and ``diagonal`` (whole-sequence gradient, round-robin on ``clock``) and
    the bytes of each one's traces for ``B`` streams, float32."""
    params, xs, ys = random_problem(cell, T, B, seed)
    t = per_step_seconds(cell, params, xs, ys, ("closed_form", "diagonal"), clock=clock)
    return {**t, **{f"{m} bytes": trace_bytes(cell, params, B, m) for m in ("closed_form", "diagonal")}}


def print_against_closed_form(cells, sizes, T: int, clock=time.perf_counter) -> None:
    print(f"{'cell':>13} {'D x N x B':>12} {'closed_form (us)':>17} {'diagonal (us)':>14} {'ratio':>6} "
          f"{'closed_form MiB':>16} {'diagonal MiB':>13}")
    for name in cells:
        for D, N, B in sizes:
            r = diagonal_against_closed_form(PER_STEP_CELLS[name](D, N), B, T, clock=clock)
            print(f"{name:>13} {f'{D}x{N}x{B}':>12} {r['closed_form'] * 1e6:>17.1f} {r['diagonal'] * 1e6:>14.1f} "
                  f"{r['diagonal'] / r['closed_form']:>5.2f}x {r['closed_form bytes'] / 2**20:>16.2f} "
                  f"{r['diagonal bytes'] / 2**20:>13.2f}", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.elementwise",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", choices=sorted(PER_STEP_CELLS), default=list(CELLS))
    parser.add_argument("--sizes", type=size3, nargs="+", default=[(64, 256, 32), (32, 64, 8)],
                        help="DxNxB: input size, hidden size, batch")
    parser.add_argument("--steps", type=int, default=100, help="sequence length T")
    parser.add_argument("--rtrl-max-hidden", type=int, default=64, help="largest N for dense rtrl")
    parser.add_argument("--rtrl-steps", type=int, default=10, help="sequence length for dense rtrl")
    parser.add_argument("--methods", nargs="+", choices=[*METHODS, *VARIANTS], default=list(METHODS),
                        help="the columns (chunked-xla, chunked-pallas: Chunked(kernel=...), on request)")
    parser.add_argument("--diagonal-vs-closed-form", action="store_true",
                        help="diagonal against closed_form: time ratio and trace bytes (default cells: IIR2 LRU RTU)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="with --diagonal-vs-closed-form: one XLA thread, timed by the process's CPU time")
    args = parser.parse_args(argv)
    if args.cpu_time and not args.diagonal_vs_closed_form:
        parser.error("--cpu-time applies to --diagonal-vs-closed-form")
    if args.diagonal_vs_closed_form:
        if args.cpu_time:
            os.environ.update(CPU_TIME)  # before JAX starts its backend: nothing has run on it yet
        cells = args.cells if args.cells != list(CELLS) else ["IIR2", "LRU", "RTU"]
        clock = time.process_time if args.cpu_time else time.perf_counter
        print(f"float32, T={args.steps}; {jax.devices()[0].platform} ({platform.processor() or platform.machine()}); "
              "whole-sequence gradient per step, round-robin in one process"
              + ("; one XLA thread, CPU time" if args.cpu_time else ""))
        print_against_closed_form(cells, args.sizes, args.steps, clock)
        return
    print(f"float32, T={args.steps} (rtrl: T={args.rtrl_steps}); {jax.devices()[0].platform} "
          f"({platform.processor() or platform.machine()}); per-step time as a ratio to the forward-only step")
    width = max(12, *map(len, args.methods))
    print(f"{'cell':>13} {'D x N x B':>12} {'forward (us)':>13} " + " ".join(f"{m:>{width}}" for m in args.methods))
    for name in args.cells:
        for D, N, B in args.sizes:
            rtrl_steps = args.rtrl_steps if N <= args.rtrl_max_hidden else None
            t = measure(PER_STEP_CELLS[name](D, N), B, args.steps, rtrl_steps, methods=args.methods)
            ratios = " ".join(f"{t[m] / t['forward']:>{width - 1}.2f}x" if m in t else f"{'-':>{width}}"
                              for m in args.methods)
            print(f"{name:>13} {f'{D}x{N}x{B}':>12} {t['forward'] * 1e6:>13.1f} {ratios}", flush=True)


if __name__ == "__main__":
    main()
