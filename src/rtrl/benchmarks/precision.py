"""Trace precision: per-step time and gradient fidelity of traces stored in bfloat16 (or float16) against float32.

    python -m rtrl.benchmarks.precision [--size 64x256x32] [--steps 100] [--dtypes bfloat16 float16]

Each element-wise cell's cheapest exact method (``auto``: ``closed_form`` for ELSTM and AdaptiveIIR2,
``diagonal`` for the plain tanh cell of ``rtrl.benchmarks.elementwise``) runs with its traces stored in each dtype
(``trace_dtype``: updated and contracted in float32, rounded once a step). Time: the per-step time of a jitted
whole-sequence gradient at ``--size``, round-robin with the float32 traces and BPTT. Fidelity: on the fidelity
problems of ``rtrl fidelity`` (4 inputs, 16 neurons, a batch of 2, standard normal inputs and targets; here in
float32, ``--fidelity-steps`` long, ``--seeds`` seeds), the cosine and relative error of the gradient against
BPTT's and against the float32 traces' (the worst cosine and relative error over the seeds).
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

from rtrl import sequence_grad
from rtrl.benchmarks.elementwise import CELLS
from rtrl.benchmarks.streams import exact_method
from rtrl.benchmarks.timing import gradient_fn, interleaved_seconds, random_problem, squared_error
from rtrl.cli.argtypes import positive_int, size3
from rtrl.compare import cosine, relative_error

DTYPES = ("bfloat16", "float16")
FIDELITY = {"D": 4, "N": 16, "B": 2}


def step_seconds(cell_name: str, D: int, N: int, B: int, T: int, dtypes=DTYPES) -> dict[str, float]:
    """Seconds per step of BPTT and of the exact method with float32 traces and with each of ``dtypes``."""
    cell = CELLS[cell_name](D, N)
    params, xs, ys = random_problem(cell, T, B)
    calls = {dtype: (gradient_fn(cell, exact_method(cell, dtype)), (params, xs, ys)) for dtype in ("float32", *dtypes)}
    calls["bptt"] = (gradient_fn(cell, "bptt"), (params, xs, ys))
    return {name: s / T for name, s in interleaved_seconds(calls).items()}


def fidelity(cell_name: str, T: int, seeds: int, dtypes=DTYPES) -> dict[str, dict[str, float]]:
    """``{dtype: {"cosine_bptt", "error_bptt", "cosine_float32", "error_float32"}}``: the worst over ``seeds``
    fidelity problems of the gradient with traces in ``dtype`` against BPTT's and the float32 traces'."""
    cell = CELLS[cell_name](FIDELITY["D"], FIDELITY["N"])
    worst = {dtype: {"cosine_bptt": 1.0, "error_bptt": 0.0, "cosine_float32": 1.0, "error_float32": 0.0}
             for dtype in ("float32", *dtypes)}
    for seed in range(seeds):
        k_p, k_x, k_y = jax.random.split(jax.random.PRNGKey(seed), 3)
        params = cell.init(k_p, jnp.float32)
        xs = jax.random.normal(k_x, (T, FIDELITY["B"], cell.input_size), jnp.float32)
        ys = jax.random.normal(k_y, (T, FIDELITY["B"], cell.hidden_size), jnp.float32)
        reference = {"bptt": sequence_grad(cell, params, xs, ys, squared_error, method="bptt")[1]}
        reference["float32"] = sequence_grad(cell, params, xs, ys, squared_error, exact_method(cell, "float32"))[1]
        for dtype, scores in worst.items():
            grads = sequence_grad(cell, params, xs, ys, squared_error, exact_method(cell, dtype))[1]
            for name, ref in reference.items():
                scores[f"cosine_{name}"] = min(scores[f"cosine_{name}"], cosine(grads, ref))
                scores[f"error_{name}"] = max(scores[f"error_{name}"], relative_error(grads, ref))
    return worst


def measure(cells, size, T: int, fidelity_T: int, seeds: int, dtypes=DTYPES) -> list[dict]:
    D, N, B = size
    return [{"cell": name, "D": D, "N": N, "B": B, "T": T, "method": exact_method(CELLS[name](D, N), "float32").name,
             "seconds": step_seconds(name, D, N, B, T, dtypes), "fidelity_T": fidelity_T, "seeds": seeds,
             "fidelity": fidelity(name, fidelity_T, seeds, dtypes)} for name in cells]


def print_rows(rows: list[dict]) -> None:
    for r in rows:
        t = r["seconds"]
        print(f"{r['cell']} {r['D']}x{r['N']}x{r['B']} {r['method']}: float32 traces "
              f"{t['float32'] * 1e6:.1f} us a step ({t['float32'] / t['bptt']:.2f}x bptt)")
        for dtype, f in r["fidelity"].items():
            print(f"  {dtype:>9} {t[dtype] / t['float32']:5.2f}x float32 traces, {t[dtype] / t['bptt']:5.2f}x bptt; "
                  f"cosine {f['cosine_bptt']:.6f} / rel. err. {f['error_bptt']:.2g} to bptt, "
                  f"{f['cosine_float32']:.6f} / {f['error_float32']:.2g} to float32 traces", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.precision", description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", choices=sorted(CELLS), default=list(CELLS))
    parser.add_argument("--size", type=size3, default=(64, 256, 32), help="DxNxB of the timing")
    parser.add_argument("--steps", type=positive_int, default=100, help="sequence length of the timing")
    parser.add_argument("--fidelity-steps", type=positive_int, default=100, help="sequence length of the fidelity")
    parser.add_argument("--seeds", type=positive_int, default=3)
    parser.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES))
    args = parser.parse_args(argv)
    print(f"{jax.devices()[0].platform}; float32 parameters; worst fidelity over {args.seeds} seeds at "
          f"T={args.fidelity_steps}")
    print_rows(measure(args.cells, args.size, args.steps, args.fidelity_steps, args.seeds, args.dtypes))


if __name__ == "__main__":
    main()
