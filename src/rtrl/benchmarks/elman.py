"""Per-step cost of the exact methods on Elman, as ratios to a forward-only step, measured in one run.

    python -m rtrl.benchmarks.elman [--sizes 16 32 64] [--input 8] [--batch 4] [--steps 100]

Each figure is the median over repeats of a jitted whole-sequence gradient (T steps, loss on every step)
divided by T; the forward-only baseline scans the same cell and loss without any gradient.
"""

from __future__ import annotations

import argparse
import platform

import jax

import rtrl
from rtrl.benchmarks import elementwise

METHODS = ("closed_form", "rtrl", "bptt")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.elman", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 32, 64], help="hidden sizes N")
    parser.add_argument("--input", type=int, default=8, help="input size D")
    parser.add_argument("--batch", type=int, default=4, help="batch size B")
    parser.add_argument("--steps", type=int, default=100, help="sequence length T")
    args = parser.parse_args(argv)
    print(f"Elman, float32, D={args.input}, B={args.batch}, T={args.steps}; {jax.devices()[0].platform} "
          f"({platform.processor() or platform.machine()}); per-step time as a ratio to the forward-only step")
    print(f"{'N':>5} {'forward (us)':>13} " + " ".join(f"{m:>12}" for m in METHODS))
    for N in args.sizes:
        cell = rtrl.cells.Elman(args.input, N)
        t = elementwise.measure(cell, args.batch, args.steps, args.steps, methods=METHODS)
        print(f"{N:>5} {t['forward'] * 1e6:>13.1f} " + " ".join(f"{t[m] / t['forward']:>11.1f}x" for m in METHODS))


if __name__ == "__main__":
    main()
