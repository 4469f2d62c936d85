"""How the per-step cost of exact RTRL on Elman grows with the width N: closed form against generic ``rtrl``.

    python -m rtrl.benchmarks.scaling [--sizes 8 16 32 64] [--input 8] [--batch 4] [--steps 20]

Prints the per-step time of each method at each N, their ratio, and the exponent ``a`` of the least-squares fit
``time ~ N^a`` (exact RTRL on a dense recurrence is O(N^4)).
"""

from __future__ import annotations

import argparse

import numpy as np

import rtrl
from rtrl.benchmarks.timing import per_step_seconds, random_problem

METHODS = ("closed_form", "rtrl")


def fitted_exponent(sizes, seconds) -> float:
    """Slope of log(time) against log(N)."""
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def measure(sizes, D: int, B: int, T: int, methods=METHODS) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {m: [] for m in methods}
    for N in sizes:
        cell = rtrl.cells.Elman(D, N)
        seconds = per_step_seconds(cell, *random_problem(cell, T, B, seed=N), methods)
        for m in methods:
            times[m].append(seconds[m])
    return times


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.scaling", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 32, 64])
    parser.add_argument("--input", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)
    times = measure(args.sizes, args.input, args.batch, args.steps)
    print(f"Elman, float32, D={args.input}, B={args.batch}: per-step time (ms)")
    print(f"{'N':>5} " + " ".join(f"{m:>12}" for m in METHODS) + f" {'rtrl / closed_form':>19}")
    for i, N in enumerate(args.sizes):
        cf, dense = times["closed_form"][i], times["rtrl"][i]
        print(f"{N:>5} {cf * 1e3:>12.3f} {dense * 1e3:>12.3f} {dense / cf:>18.2f}x")
    print("fitted exponent: " + ", ".join(f"{m} N^{fitted_exponent(args.sizes, times[m]):.2f}" for m in METHODS))


if __name__ == "__main__":
    main()
