"""Trace precision: per-step time and gradient fidelity of traces stored in bfloat16 (or float16) against float32.

    python -m rtrl.benchmarks.precision [--size 64x256x32] [--steps 100] [--dtypes bfloat16 float16]
    python -m rtrl.benchmarks.precision --float64 --no-timing --cells ELSTM AdaptiveIIR2 iir2 lru rtu

Each element-wise cell's cheapest exact method (``auto``: ``closed_form`` for ELSTM and AdaptiveIIR2,
``diagonal`` for the plain tanh cell of ``rtrl.benchmarks.elementwise``) runs with its traces stored in each dtype
(``trace_dtype``: updated and contracted in float32, rounded once a step). Time: the per-step time of a jitted
whole-sequence gradient at ``--size``, round-robin with the float32 traces and BPTT. Fidelity: on the fidelity
problems of ``rtrl fidelity`` (4 inputs, 16 neurons, a batch of 2, standard normal inputs and targets, in float32,
or in float64 with ``--float64`` as ``rtrl fidelity`` does; ``--fidelity-steps`` long, ``--seeds`` seeds), the
cosine and relative error of the gradient against BPTT's and against the full-precision traces' (the worst cosine
and relative error over the seeds). The cells are the benchmark cells and the registered element-wise ones.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

import rtrl
from rtrl import sequence_grad
from rtrl.benchmarks import elementwise
from rtrl.benchmarks.streams import exact_method
from rtrl.benchmarks.timing import gradient_fn, interleaved_seconds, random_problem, squared_error
from rtrl.compare import cosine, relative_error
from rtrl.run.argtypes import positive_int, size3

DTYPES = ("bfloat16", "float16")
FIDELITY = {"D": 4, "N": 16, "B": 2}
CELLS = {**elementwise.CELLS, **{name: rtrl.cells.CELLS[name] for name in ("iir2", "lru", "rtu")}}


def step_seconds(cell_name: str, D: int, N: int, B: int, T: int, dtypes=DTYPES) -> dict[str, float]:
    """Seconds per step of BPTT and of the exact method with float32 traces and with each of ``dtypes``."""
    cell = CELLS[cell_name](D, N)
    params, xs, ys = random_problem(cell, T, B)
    calls = {dtype: (gradient_fn(cell, exact_method(cell, dtype)), (params, xs, ys)) for dtype in ("float32", *dtypes)}
    calls["bptt"] = (gradient_fn(cell, "bptt"), (params, xs, ys))
    return {name: s / T for name, s in interleaved_seconds(calls).items()}


def fidelity(cell_name: str, T: int, seeds: int, dtypes=DTYPES, dtype=jnp.float32) -> dict[str, dict[str, float]]:
    """``{traces: {"cosine_bptt", "error_bptt", "cosine_float32", "error_float32"}}``: the worst over ``seeds``
    fidelity problems in ``dtype`` of the gradient with traces stored in ``traces`` against BPTT's and against
    full-precision traces' (the row ``"float32"``: traces in ``dtype`` itself)."""
    cell = CELLS[cell_name](FIDELITY["D"], FIDELITY["N"])
    worst = {traces: {"cosine_bptt": 1.0, "error_bptt": 0.0, "cosine_float32": 1.0, "error_float32": 0.0}
             for traces in ("float32", *dtypes)}
    for seed in range(seeds):
        k_p, k_x, k_y = jax.random.split(jax.random.PRNGKey(seed), 3)
        params = cell.init(k_p, dtype)
        xs = jax.random.normal(k_x, (T, FIDELITY["B"], cell.input_size), dtype)
        ys = jax.random.normal(k_y, (T, FIDELITY["B"], cell.hidden_size), dtype)
        reference = {"bptt": sequence_grad(cell, params, xs, ys, squared_error, method="bptt")[1]}
        reference["float32"] = sequence_grad(cell, params, xs, ys, squared_error, exact_method(cell, "float32"))[1]
        for traces, scores in worst.items():
            grads = sequence_grad(cell, params, xs, ys, squared_error, exact_method(cell, traces))[1]
            for name, ref in reference.items():
                scores[f"cosine_{name}"] = min(scores[f"cosine_{name}"], cosine(grads, ref))
                scores[f"error_{name}"] = max(scores[f"error_{name}"], relative_error(grads, ref))
    return worst


def measure(cells, size, T: int, fidelity_T: int, seeds: int, dtypes=DTYPES, timing: bool = True,
            dtype=jnp.float32) -> list[dict]:
    D, N, B = size
    return [{"cell": name, "D": D, "N": N, "B": B, "T": T, "method": exact_method(CELLS[name](D, N), "float32").name,
             "seconds": step_seconds(name, D, N, B, T, dtypes) if timing else None, "fidelity_T": fidelity_T,
             "seeds": seeds, "fidelity": fidelity(name, fidelity_T, seeds, dtypes, dtype)} for name in cells]


def print_rows(rows: list[dict]) -> None:
    for r in rows:
        t = r["seconds"]
        timing = "" if t is None else (f" (timing at {r['D']}x{r['N']}x{r['B']}: float32 traces "
                                      f"{t['float32'] * 1e6:.1f} us a step, {t['float32'] / t['bptt']:.2f}x bptt)")
        print(f"{r['cell']} {r['method']}{timing}")
        for dtype, f in r["fidelity"].items():
            speed = "" if t is None else f"{t[dtype] / t['float32']:5.2f}x float32 traces, " \
                                         f"{t[dtype] / t['bptt']:5.2f}x bptt; "
            label = "full" if dtype == "float32" else dtype  # traces in the problem's own dtype
            print(f"  {label:>9} {speed}cosine {f['cosine_bptt']:.6f} / rel. err. {f['error_bptt']:.2g} to bptt, "
                  f"{f['cosine_float32']:.6f} / {f['error_float32']:.2g} to full-precision traces", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.precision", description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", choices=sorted(CELLS), default=list(elementwise.CELLS))
    parser.add_argument("--size", type=size3, default=(64, 256, 32), help="DxNxB of the timing")
    parser.add_argument("--steps", type=positive_int, default=100, help="sequence length of the timing")
    parser.add_argument("--fidelity-steps", type=positive_int, default=100, help="sequence length of the fidelity")
    parser.add_argument("--seeds", type=positive_int, default=3)
    parser.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES))
    parser.add_argument("--float64", action="store_true", help="fidelity problems in float64 (as rtrl fidelity)")
    parser.add_argument("--no-timing", dest="timing", action="store_false", help="fidelity only")
    args = parser.parse_args(argv)
    if args.float64:
        jax.config.update("jax_enable_x64", True)
    dtype = jnp.float64 if args.float64 else jnp.float32
    print(f"{jax.devices()[0].platform}; worst fidelity over {args.seeds} seeds at T={args.fidelity_steps}, "
          f"{jnp.dtype(dtype).name} problems; timing with float32 parameters")
    print_rows(measure(args.cells, args.size, args.steps, args.fidelity_steps, args.seeds, args.dtypes, args.timing,
                       dtype))


if __name__ == "__main__":
    main()
