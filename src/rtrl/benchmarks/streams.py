"""How exact element-wise RTRL scales: per-step time against the streams B, the width N and the input size D.

    python -m rtrl.benchmarks.streams [--center 64x256x32] [--streams 1 4 32 128 512 1024] [--widths 64 256 1024]
                                      [--inputs 8 64 256] [--steps 10] [--cells ELSTM AdaptiveIIR2 ElementwiseTanh]

Each sweep varies one of B, N, D around ``--center`` (DxNxB) and times, per step (a jitted whole-sequence gradient
of ``--steps`` steps divided by the steps, round-robin, float32), the forward-only step and the cell's cheapest
exact method (what ``auto`` picks: ``closed_form`` for ELSTM and AdaptiveIIR2, ``diagonal`` for the plain tanh
cell of ``rtrl.benchmarks.elementwise``), with float32 and with bfloat16 traces. Every trace holds ``D * N`` (or
``N``) entries per stream, so a step reads and writes ``O(B D N)`` floats: the cost per trace entry
(``ns/entry``) stays flat where the step is linear in ``B D N``, and the fitted exponent of the time against the
swept size is 1. The traces' size is printed beside the time with the caches of this machine
(``/sys/devices/system/cpu/cpu0/cache``), to see where they leave each level.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import jax

import rtrl
from rtrl.benchmarks.elementwise import CELLS
from rtrl.benchmarks.roofline import trace_bytes
from rtrl.benchmarks.scaling import fitted_exponent
from rtrl.benchmarks.timing import forward_fn, gradient_fn, interleaved_seconds, random_problem
from rtrl.run.argtypes import positive_int, size3

CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
TRACE_DTYPES = ("float32", "bfloat16")


def parse_size(text: str) -> int:
    """``32K``, ``1024K``, ``32M`` (sysfs's notation) in bytes."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    text = text.strip()
    return int(text[:-1]) * units[text[-1]] if text[-1:] in units else int(text)


def cache_sizes(root: Path = CACHE_DIR) -> dict[str, int]:
    """``{"L1d": bytes, "L2": bytes, "L3": bytes}`` of one core's data caches, from sysfs; ``{}`` where unknown."""
    caches = {}
    for index in sorted(root.glob("index*")):
        try:
            level, kind, size = ((index / f).read_text().strip() for f in ("level", "type", "size"))
            if kind != "Instruction":
                caches[f"L{level}" + ("d" if kind == "Data" else "")] = parse_size(size)
        except (OSError, ValueError, KeyError, IndexError):
            continue
    return caches


def size_text(nbytes: float) -> str:
    """Bytes in KiB, MiB or GiB, three significant digits."""
    for unit, scale in (("KiB", 2**10), ("MiB", 2**20)):
        if nbytes < 999.5 * scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes / 2**30:.3g} GiB"


def resident_in(nbytes: int, caches: dict[str, int]) -> str:
    """The smallest cache level that holds ``nbytes`` (``"DRAM"`` beyond the last; ``"?"`` with no caches known)."""
    if not caches:
        return "?"
    for name, size in sorted(caches.items(), key=lambda kv: kv[1]):
        if nbytes <= size:
            return name
    return "DRAM"


def exact_method(cell, trace_dtype: str):
    """The cell's cheapest exact method (``auto``) with its traces stored in ``trace_dtype``."""
    method = rtrl.methods.resolve("auto", cell)
    return dataclasses.replace(method, trace_dtype=None if trace_dtype == "float32" else trace_dtype)


def measure(cell_name: str, D: int, N: int, B: int, T: int, dtypes=TRACE_DTYPES) -> dict:
    """One size: seconds per step of the forward step and of the exact method with each trace dtype, and the
    traces' bytes for each."""
    cell = CELLS[cell_name](D, N)
    params, xs, ys = random_problem(cell, T, B)
    methods = {dtype: exact_method(cell, dtype) for dtype in dtypes}
    calls = {"forward": (forward_fn(cell), (params, xs, ys))}
    calls.update({dtype: (gradient_fn(cell, m), (params, xs, ys)) for dtype, m in methods.items()})
    seconds = {name: s / T for name, s in interleaved_seconds(calls, repeats=5).items()}
    return {"cell": cell_name, "D": D, "N": N, "B": B, "T": T, "method": methods[dtypes[0]].name,
            "forward_seconds": seconds.pop("forward"), "seconds": seconds,
            "trace_bytes": {dtype: trace_bytes(cell, params, B, m) for dtype, m in methods.items()}}


def sweep_sizes(center, streams, widths, inputs) -> list[tuple[str, tuple[int, int, int]]]:
    """``(swept axis, (D, N, B))`` for each sweep around ``center``; the center appears once per sweep."""
    D, N, B = center
    return ([("B", (D, N, b)) for b in streams] + [("N", (D, n, B)) for n in widths]
            + [("D", (d, N, B)) for d in inputs])


def measure_all(cells, center, streams, widths, inputs, T: int) -> list[dict]:
    """Every cell on every size of the three sweeps (a size shared by two sweeps is measured once)."""
    rows, measured = [], {}
    for cell_name in cells:
        for axis, (D, N, B) in sweep_sizes(center, streams, widths, inputs):
            key = (cell_name, D, N, B)
            if key not in measured:
                measured[key] = measure(cell_name, D, N, B, T)
            rows.append({**measured[key], "sweep": axis})
    return rows


def per_entry_seconds(row: dict, dtype: str = "float32") -> float:
    """Seconds per step per trace-sized entry ``B * D * N``."""
    return row["seconds"][dtype] / (row["B"] * row["D"] * row["N"])


def exponents(rows: list[dict], dtype: str = "float32") -> dict[tuple[str, str], float]:
    """``{(cell, axis): a}``: the slope of log(time per step) against log(swept size) in each sweep."""
    fits = {}
    for cell, axis in dict.fromkeys((r["cell"], r["sweep"]) for r in rows):
        group = [r for r in rows if r["cell"] == cell and r["sweep"] == axis]
        if len(group) >= 2:
            fits[cell, axis] = fitted_exponent([r[axis] for r in group], [r["seconds"][dtype] for r in group])
    return fits


def print_rows(rows: list[dict], caches: dict[str, int]) -> None:
    print("caches: " + (", ".join(f"{k} {v / 2**10:.0f} KiB" for k, v in caches.items()) or "unknown"))
    print(f"{'cell':>15} {'sweep':>5} {'D x N x B':>14} {'method':>12} {'forward':>10} {'float32':>10} "
          f"{'ns/entry':>9} {'traces':>10} {'in':>5} {'bfloat16':>10} {'vs f32':>7}")
    for r in rows:
        size = r["trace_bytes"]["float32"]
        print(f"{r['cell']:>15} {r['sweep']:>5} {r['D']:>4}x{r['N']:>4}x{r['B']:<4} {r['method']:>12} "
              f"{r['forward_seconds'] * 1e6:>8.1f}us {r['seconds']['float32'] * 1e6:>8.1f}us "
              f"{per_entry_seconds(r) * 1e9:>9.3f} {size_text(size):>10} {resident_in(size, caches):>5} "
              f"{r['seconds']['bfloat16'] * 1e6:>8.1f}us {r['seconds']['bfloat16'] / r['seconds']['float32']:>6.2f}x",
              flush=True)
    print("fitted exponent of the float32 step time against the swept size: " + ", ".join(
        f"{cell} {axis}^{a:.2f}" for (cell, axis), a in exponents(rows).items()))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.streams", description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", choices=sorted(CELLS), default=list(CELLS))
    parser.add_argument("--center", type=size3, default=(64, 256, 32), help="DxNxB every sweep goes through")
    parser.add_argument("--streams", type=positive_int, nargs="+", default=[1, 4, 32, 128, 512, 1024])
    parser.add_argument("--widths", type=positive_int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--inputs", type=positive_int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--steps", type=positive_int, default=10, help="sequence length T of each timed gradient")
    args = parser.parse_args(argv)
    print(f"float32 parameters, T={args.steps}, {jax.devices()[0].platform}; per-step times, round-robin medians")
    rows = measure_all(args.cells, args.center, args.streams, args.widths, args.inputs, args.steps)
    print_rows(rows, cache_sizes())


if __name__ == "__main__":
    main()
