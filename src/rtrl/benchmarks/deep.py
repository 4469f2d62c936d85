"""Per-step cost of a deep network trained online with layer-local traces, against its forward step and its BPTT.

    python -m rtrl.benchmarks.deep [--cell lru] [--depth 4] [--width 128] [--batch 32] [--input 8] [--steps 100]

A ``Network`` of ``depth`` blocks of the cell (width ``W``, an encoder from ``--input``), float32. Each figure is
the median over repeats of a jitted whole-sequence gradient (T steps, loss on every step) divided by T: for the
layer-local methods the online step (traces carried, a gradient every step, summed), for ``bptt`` one backward
pass over the stored sequence; the baseline scans the same network and loss without any gradient. All timings of a
run are interleaved, so a loaded machine slows them alike: quote the ratios, not the times.
"""

from __future__ import annotations

import argparse
import platform

import jax

import rtrl
from rtrl.benchmarks.timing import per_step_seconds, random_problem
from rtrl.cells import Network
from rtrl.methods import LayerLocal

CELLS = {"lru": rtrl.cells.LRU, "rtu": rtrl.cells.RTU}
METHODS = {"layer_local(closed_form)": LayerLocal(inner="closed_form"),
           "layer_local(diagonal)": LayerLocal(inner="diagonal"), "bptt": "bptt"}


def network(cell: str, depth: int, width: int, input_size: int) -> Network:
    return Network(layers=tuple(CELLS[cell](width, width) for _ in range(depth)), input_size=input_size)


def measure(net: Network, B: int, T: int, seed: int = 0) -> dict[str, float]:
    """Seconds per step of the forward pass (``"forward"``) and of each of ``METHODS`` (by label), float32."""
    params, xs, ys = random_problem(net, T, B, seed)
    t = per_step_seconds(net, params, xs, ys, tuple(METHODS.values()))
    return {"forward": t["forward"], **{label: t[m] for label, m in METHODS.items()}}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.deep", description=__doc__.splitlines()[0])
    parser.add_argument("--cell", choices=sorted(CELLS), default="lru")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--input", type=int, default=8, help="input size (an encoder maps it to the width)")
    parser.add_argument("--steps", type=int, default=100, help="sequence length T")
    args = parser.parse_args(argv)
    t = measure(network(args.cell, args.depth, args.width, args.input), args.batch, args.steps)
    print(f"float32, T={args.steps}; {jax.devices()[0].platform} ({platform.processor() or platform.machine()}); "
          f"{args.depth} x {args.cell.upper()} blocks, width {args.width}, batch {args.batch}, input {args.input}")
    print(f"forward step: {t['forward'] * 1e6:.1f} us")
    for label in METHODS:
        print(f"{label:>26}: {t[label] / t['forward']:6.1f}x the forward step, "
              f"{t[label] / t['bptt']:5.2f}x BPTT", flush=True)


if __name__ == "__main__":
    main()
