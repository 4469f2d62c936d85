"""Per-step cost of the element-wise methods on ELSTM and AdaptiveIIR2, as ratios to a forward-only step.

    python -m rtrl.benchmarks.elementwise [--sizes 64x256x32 32x64x8] [--steps 100] [--rtrl-max-hidden 64]

Sizes are ``DxNxB`` (input, hidden, batch). Each figure is the median over repeats of a jitted whole-sequence
gradient (T steps, loss on every step) divided by T, float32; the forward-only baseline scans the same cell and loss
without any gradient. Dense ``rtrl`` (O(N^2 D) memory per example) runs only up to ``--rtrl-max-hidden`` and on
``--rtrl-steps`` steps. Target: ``closed_form`` and ``diagonal`` within 2.5x of the forward step at 64x256x32.
"""

from __future__ import annotations

import argparse
import platform

import jax

import rtrl
from rtrl.benchmarks.timing import per_step_seconds, random_problem
from rtrl.cli.argtypes import size3

CELLS = {"ELSTM": rtrl.cells.ELSTM, "AdaptiveIIR2": rtrl.cells.AdaptiveIIR2}
METHODS = ("closed_form", "diagonal", "rtrl", "bptt")


def measure(cell, B: int, T: int, rtrl_steps: int | None, seed: int = 0, methods=METHODS) -> dict[str, float]:
    """Seconds per step of the forward pass and of each method (``rtrl`` on ``rtrl_steps`` steps, or not at
    all when ``None``), float32."""
    params, xs, ys = random_problem(cell, T, B, seed)
    if rtrl_steps is None:
        methods = tuple(m for m in methods if m != "rtrl")
    return per_step_seconds(cell, params, xs, ys, methods, steps={"rtrl": rtrl_steps})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.elementwise",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", choices=sorted(CELLS), default=list(CELLS))
    parser.add_argument("--sizes", type=size3, nargs="+", default=[(64, 256, 32), (32, 64, 8)],
                        help="DxNxB: input size, hidden size, batch")
    parser.add_argument("--steps", type=int, default=100, help="sequence length T")
    parser.add_argument("--rtrl-max-hidden", type=int, default=64, help="largest N for dense rtrl")
    parser.add_argument("--rtrl-steps", type=int, default=10, help="sequence length for dense rtrl")
    args = parser.parse_args(argv)
    print(f"float32, T={args.steps} (rtrl: T={args.rtrl_steps}); {jax.devices()[0].platform} "
          f"({platform.processor() or platform.machine()}); per-step time as a ratio to the forward-only step")
    print(f"{'cell':>13} {'D x N x B':>12} {'forward (us)':>13} " + " ".join(f"{m:>12}" for m in METHODS))
    for name in args.cells:
        for D, N, B in args.sizes:
            t = measure(CELLS[name](D, N), B, args.steps, args.rtrl_steps if N <= args.rtrl_max_hidden else None)
            ratios = " ".join(f"{t[m] / t['forward']:>11.1f}x" if m in t else f"{'-':>12}" for m in METHODS)
            print(f"{name:>13} {f'{D}x{N}x{B}':>12} {t['forward'] * 1e6:>13.1f} {ratios}", flush=True)


if __name__ == "__main__":
    main()
