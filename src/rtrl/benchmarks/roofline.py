"""The memory-traffic bound of a trace method: bytes of traces read and written per step over the bandwidth.

    python -m rtrl.benchmarks.roofline [--cell elstm] [--size 64x256x32] [--methods closed_form diagonal]

A trace method reads its traces and writes them back every step, so ``2 * trace_bytes / bandwidth`` is a lower
bound on its step time whatever its arithmetic. The bandwidth is measured here, on a streaming update
``x <- a * x + b`` in place over a buffer the size of the traces (so a working set that fits in cache is timed in
cache, as the traces are); the fraction of the bound reached is ``bound / measured step``. The DRAM bandwidth (a buffer
much larger than the caches) is printed beside it.

The **trace-traffic floor** adds what any exact online step must also do: the forward step and the backward pass
of what does not recur (``cell.output``: the eLSTM's output gate; ``tanh`` for the filters), timed as a scan
that steps the cell and back-propagates each step's loss through ``output`` alone (``nonrecurrent_fn``). A step
at the floor reads and writes its traces once and does nothing else; ``of floor`` is ``floor / measured step``.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
from jax import lax

import rtrl
from rtrl.benchmarks.sequence import problem
from rtrl.benchmarks.timing import forward_fn, gradient_fn, interleaved_seconds, median_seconds, squared_error
from rtrl.run.argtypes import size3


def bandwidth_bytes_per_second(nbytes: int = 256 * 2**20, updates: int = 16) -> float:
    """Bytes read plus written per second by a streaming scale-and-add over ``nbytes`` of float32, in place (a
    loop of ``updates`` passes over one buffer, as the online step updates its traces: a fresh output buffer
    would double the working set and time a cache-sized buffer half out of cache)."""
    x = jnp.ones((max(nbytes // 4, 1024),), jnp.float32)
    fn = jax.jit(lambda x, n: lax.fori_loop(0, n, lambda i, x: 1.0001 * x + 1e-7, x))
    return 2 * x.nbytes * updates / median_seconds(fn, x, updates, repeats=9)


def trace_bytes(cell, params, batch: int, method) -> int | None:
    """Size of a learner's traces for ``batch`` streams (shapes only; nothing is allocated); ``None`` for a
    sequence method, which keeps none."""
    if not rtrl.methods.resolve(method, cell).online:
        return None
    learner = rtrl.online(cell, method)
    state = jax.eval_shape(lambda p: learner.init(p, batch_shape=(batch,)), params)
    return sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(state.traces))


def nonrecurrent_fn(cell):
    """``(params, xs, ys) -> grads``: the cell stepped over ``xs`` and each step's loss back-propagated through
    ``cell.output`` only (to the parameters and the new carry, as an exact online step does), no traces."""

    @jax.jit
    def run(params, xs, ys):
        def body(acc, xy):
            carry, grads = acc
            carry = cell.step(params, carry, xy[0])[0]
            h, pull = jax.vjp(cell.output, params, carry, xy[0])
            g_params, g_carry, _ = pull(jax.grad(squared_error)(h, xy[1]))
            return (carry, jax.tree.map(jnp.add, grads, g_params)), g_carry

        start = (cell.initial_carry(xs.shape[1:-1], xs.dtype), jax.tree.map(jnp.zeros_like, params))
        (_, grads), credits = lax.scan(body, start, (xs, ys))
        return grads, jax.tree.map(lambda c: c.sum(0), credits)  # the credits kept, or XLA drops their pass

    return run


def measure(cell_name: str, D: int, N: int, B: int, methods, T: int = 50) -> list[dict]:
    cell, params, xs, ys = problem(cell_name, D, N, B, T)
    dram = bandwidth_bytes_per_second()
    calls = {"forward": (forward_fn(cell), (params, xs, ys)), "nonrecurrent": (nonrecurrent_fn(cell), (params, xs, ys))}
    calls.update({method: (gradient_fn(cell, method), (params, xs, ys)) for method in (*methods, "bptt")})
    seconds = {name: s / T for name, s in interleaved_seconds(calls).items()}
    rows = []
    for method in methods:
        size = trace_bytes(cell, params, B, method)
        bandwidth = bandwidth_bytes_per_second(size)
        bound, step = 2 * size / bandwidth, seconds[method]
        rows.append({"cell": cell_name, "D": D, "N": N, "B": B, "method": method, "trace_traffic_bytes": 2 * size,
                     "bandwidth": bandwidth, "dram_bandwidth": dram, "bound_seconds": bound, "step_seconds": step,
                     "fraction_of_bound": bound / step, "forward_seconds": seconds["forward"],
                     "nonrecurrent_seconds": seconds["nonrecurrent"], "floor_seconds": seconds["nonrecurrent"] + bound,
                     "fraction_of_floor": (seconds["nonrecurrent"] + bound) / step, "bptt_seconds": seconds["bptt"]})
    return rows


def print_rows(rows: list[dict]) -> None:
    print(f"measured DRAM bandwidth {rows[0]['dram_bandwidth'] / 1e9:.1f} GB/s (read + write, 256 MiB buffer)")
    print(f"{'cell':>14} {'method':>12} {'GB/s at size':>13} {'traces r+w (MiB)':>17} {'bound (us)':>11} "
          f"{'fwd+nonrec (us)':>16} {'floor (us)':>11} {'step (us)':>10} {'of bound':>9} {'of floor':>9} "
          f"{'bptt (us)':>10}")
    for r in rows:
        print(f"{r['cell']:>14} {r['method']:>12} {r['bandwidth'] / 1e9:>13.1f} "
              f"{r['trace_traffic_bytes'] / 2**20:>17.1f} {r['bound_seconds'] * 1e6:>11.1f} "
              f"{r['nonrecurrent_seconds'] * 1e6:>16.1f} {r['floor_seconds'] * 1e6:>11.1f} "
              f"{r['step_seconds'] * 1e6:>10.1f} {r['fraction_of_bound']:>8.0%} {r['fraction_of_floor']:>8.0%} "
              f"{r['bptt_seconds'] * 1e6:>10.1f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.roofline", description=__doc__.splitlines()[0])
    parser.add_argument("--cell", default="elstm", choices=sorted(rtrl.cells.CELLS))
    parser.add_argument("--size", type=size3, default=(64, 256, 32), help="DxNxB")
    parser.add_argument("--methods", nargs="+", default=["closed_form", "diagonal"])
    args = parser.parse_args(argv)
    print(f"{args.cell} {'x'.join(map(str, args.size))} (DxNxB), float32, {jax.devices()[0].platform}")
    print_rows(measure(args.cell, *args.size, args.methods))


if __name__ == "__main__":
    main()
