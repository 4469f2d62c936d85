"""Whole-sequence gradient time and memory against the sequence length: RTRL is flat in T, BPTT grows.

    python -m rtrl.benchmarks.sequence [--cell elstm] [--size 32x64x8] [--lengths 100 1000 10000]

For each method and T: the median time of one jitted ``sequence_grad`` (float32), XLA's compiled temporary
memory (``memory_analysis().temp_size_in_bytes``: what the program allocates beyond its inputs and outputs),
and the peak resident memory of a fresh process that compiles and runs it once (VmHWM).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys

import jax

import rtrl
from rtrl.benchmarks.timing import gradient_fn, interleaved_seconds, random_problem
from rtrl.run.argtypes import size3

METHODS = ("closed_form", "diagonal", "chunked", "bptt")


def problem(cell_name: str, D: int, N: int, B: int, T: int, seed: int = 0):
    cell = rtrl.cells.CELLS[cell_name](D, N)
    return (cell, *random_problem(cell, T, B, seed))


def compiled_temp_bytes(fn, *args) -> int:
    return int(fn.lower(*args).compile().memory_analysis().temp_size_in_bytes)


def peak_rss_of_this_process() -> int:
    """The high-water mark of this process's resident memory. ``/proc/self/status``'s VmHWM belongs to this
    program alone, while ``ru_maxrss`` keeps the parent's peak across fork and exec (Linux)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def peak_rss_bytes(cell_name: str, D: int, N: int, B: int, T: int, method: str) -> int:
    """Peak resident memory of a fresh process that builds the problem and computes the gradient once."""
    out = subprocess.run([sys.executable, "-m", "rtrl.benchmarks.sequence", "--peak-rss-of", cell_name,
                          str(D), str(N), str(B), str(T), method], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def measure(cell_name: str, D: int, N: int, B: int, lengths, methods=METHODS, rss: bool = True) -> list[dict]:
    rows = []
    for T in lengths:
        cell, params, xs, ys = problem(cell_name, D, N, B, T)
        fns = {method: gradient_fn(cell, method) for method in methods}
        seconds = interleaved_seconds({m: (fn, (params, xs, ys)) for m, fn in fns.items()}, repeats=5)
        for method, fn in fns.items():
            row = {"cell": cell_name, "D": D, "N": N, "B": B, "T": T, "method": method, "seconds": seconds[method],
                   "temp_bytes": compiled_temp_bytes(fn, params, xs, ys)}
            if rss:
                row["peak_rss_bytes"] = peak_rss_bytes(cell_name, D, N, B, T, method)
            rows.append(row)
    return rows


def print_rows(rows: list[dict]) -> None:
    print(f"{'T':>6} {'method':>12} {'time (s)':>10} {'vs bptt':>8} {'XLA temp (MiB)':>15} {'peak RSS (MiB)':>15}")
    bptt = {r["T"]: r["seconds"] for r in rows if r["method"] == "bptt"}
    for r in rows:
        ratio = f"{r['seconds'] / bptt[r['T']]:.2f}x" if r["T"] in bptt else "-"
        rss = f"{r['peak_rss_bytes'] / 2**20:.0f}" if "peak_rss_bytes" in r else "-"
        print(f"{r['T']:>6} {r['method']:>12} {r['seconds']:>10.4f} {ratio:>8} {r['temp_bytes'] / 2**20:>15.2f} "
              f"{rss:>15}", flush=True)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--peak-rss-of"]:  # the child process of peak_rss_bytes
        cell_name, D, N, B, T, method = argv[1], *map(int, argv[2:6]), argv[6]
        cell, params, xs, ys = problem(cell_name, D, N, B, T)
        jax.block_until_ready(gradient_fn(cell, method)(params, xs, ys))
        print(peak_rss_of_this_process())
        return
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.sequence", description=__doc__.splitlines()[0])
    parser.add_argument("--cell", default="elstm", choices=sorted(rtrl.cells.CELLS))
    parser.add_argument("--size", type=size3, default=(32, 64, 8), help="DxNxB")
    parser.add_argument("--lengths", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    rows = measure(args.cell, *args.size, args.lengths, args.methods)
    print(f"{args.cell} {args.size[0]}x{args.size[1]}x{args.size[2]} (DxNxB), float32, {jax.devices()[0].platform}")
    print_rows(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
