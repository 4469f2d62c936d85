"""Per-step time and trace memory of every method on Elman, as ratios to a forward-only step, in one run.

    python -m rtrl.benchmarks.approximations [--sizes 32 64 128] [--input 8] [--batch 4] [--steps 32]

Time: the median over repeats of a jitted whole-sequence gradient (T steps, loss on every step) divided by T,
and its ratio to the forward-only step (the same cell and loss scanned without any gradient). Memory: the bytes of the
traces a trace method carries for the whole batch (what an online learner keeps besides the carry); the
sequence methods keep none but store the activations of T (``bptt``) or ``truncation`` (``tbptt``) steps.
"""

from __future__ import annotations

import argparse
import platform

import jax

import rtrl
from rtrl.benchmarks.roofline import trace_bytes
from rtrl.benchmarks.timing import per_step_seconds, random_problem
from rtrl.methods import resolve

METHODS = ("closed_form", "rtrl", "snap1", "snap2", "eprop", "uoro", "tbptt", "bptt")


def measure(N: int, D: int, B: int, T: int, methods=METHODS, seed: int = 0) -> dict[str, dict]:
    """Per method: seconds per step and trace bytes (float32); ``"forward"`` holds the baseline."""
    cell = rtrl.cells.Elman(D, N)
    params, xs, ys = random_problem(cell, T, B, seed)
    seconds = per_step_seconds(cell, params, xs, ys, methods)
    rows = {"forward": {"seconds": seconds["forward"], "bytes": None}}
    rows.update({m: {"seconds": seconds[m], "bytes": trace_bytes(cell, params, B, m)} for m in methods})
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.approximations",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 128], help="hidden sizes N")
    parser.add_argument("--input", type=int, default=8, help="input size D")
    parser.add_argument("--batch", type=int, default=4, help="batch size B")
    parser.add_argument("--steps", type=int, default=32, help="sequence length T")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), help="method names")
    args = parser.parse_args(argv)
    print(f"Elman, float32, D={args.input}, B={args.batch}, T={args.steps}; {jax.devices()[0].platform} "
          f"({platform.processor() or platform.machine()}); tbptt truncation {resolve('tbptt').truncation}")
    print(f"{'N':>4} {'method':>12} {'us/step':>11} {'x forward':>10} {'trace KiB':>11}")
    for N in args.sizes:
        rows = measure(N, args.input, args.batch, args.steps, args.methods)
        base = rows["forward"]["seconds"]
        for name, row in rows.items():
            kib = "-" if row["bytes"] is None else f"{row['bytes'] / 1024:.1f}"
            print(f"{N:>4} {name:>12} {row['seconds'] * 1e6:>11.1f} {row['seconds'] / base:>9.1f}x {kib:>11}",
                  flush=True)


if __name__ == "__main__":
    main()
