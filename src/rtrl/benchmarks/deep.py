"""Per-step cost of a deep network trained online with layer-local traces, against its forward step and its BPTT.

    python -m rtrl.benchmarks.deep [--cell lru] [--depth 4] [--width 128] [--batch 32] [--input 8] [--steps 100]
    python -m rtrl.benchmarks.deep --fidelity [--width 16] [--steps 100] [--seeds 8]

``--fidelity`` prints instead the cosine similarity of the layer-local gradient (``closed_form`` inner) with
BPTT's for 2- and 4-block networks of each cell (float64, random regression targets, fresh ``cell.init``
parameters per seed, batch 2, input 3): the minimum and mean over seeds.

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
import jax.numpy as jnp
import numpy as np

import rtrl
from rtrl.benchmarks.timing import per_step_seconds, random_problem, squared_error
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


def fidelity(cell: str, depth: int, width: int, T: int, seeds: int, input_size: int = 3, B: int = 2) -> list[float]:
    """Cosine of the layer-local (``closed_form``) gradient with BPTT's, float64, one per seed."""
    from rtrl.compare import cosine

    net = network(cell, depth, width, input_size)
    cosines = []
    for seed in range(seeds):
        key = jax.random.PRNGKey(seed)
        params = net.init(key, jnp.float64)
        xs = jax.random.normal(jax.random.fold_in(key, 1), (T, B, input_size), jnp.float64)
        ys = jax.random.normal(jax.random.fold_in(key, 2), (T, B, width), jnp.float64)
        grads = [rtrl.sequence_grad(net, params, xs, ys, squared_error, method)[1]
                 for method in ("bptt", METHODS["layer_local(closed_form)"])]
        cosines.append(cosine(grads[1], grads[0]))
    return cosines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.deep", description=__doc__.splitlines()[0])
    parser.add_argument("--cell", choices=sorted(CELLS), default="lru")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--input", type=int, default=8, help="input size (an encoder maps it to the width)")
    parser.add_argument("--steps", type=int, default=100, help="sequence length T")
    parser.add_argument("--fidelity", action="store_true", help="print layer-local fidelity instead of timings")
    parser.add_argument("--seeds", type=int, default=8, help="seeds for --fidelity")
    args = parser.parse_args(argv)
    if args.fidelity:
        jax.config.update("jax_enable_x64", True)
        print(f"layer-local (closed_form) vs BPTT, cosine over {args.seeds} seeds: width {args.width}, "
              f"T={args.steps}, batch 2, input 3, float64")
        for cell in CELLS:
            for depth in (2, 4):
                c = fidelity(cell, depth, args.width, args.steps, args.seeds)
                print(f"{cell.upper():>4} {depth} blocks: min {min(c):.3f}  mean {np.mean(c):.3f}", flush=True)
        return
    t = measure(network(args.cell, args.depth, args.width, args.input), args.batch, args.steps)
    print(f"float32, T={args.steps}; {jax.devices()[0].platform} ({platform.processor() or platform.machine()}); "
          f"{args.depth} x {args.cell.upper()} blocks, width {args.width}, batch {args.batch}, input {args.input}")
    print(f"forward step: {t['forward'] * 1e6:.1f} us")
    for label in METHODS:
        print(f"{label:>26}: {t[label] / t['forward']:6.1f}x the forward step, "
              f"{t[label] / t['bptt']:5.2f}x BPTT", flush=True)


if __name__ == "__main__":
    main()
