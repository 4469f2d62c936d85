"""Bring-your-own cells: ``auto`` on the eLSTM and AdaptiveIIR2 written as plain functions, against ``diagonal``
and ``closed_form`` on the library's cells, per step, as ratios to the library cell's forward-only step.

    python -m rtrl.benchmarks.adapters [--size 64x256x32] [--steps 100]

The plain cells (``PLAIN``) are the cells' equations written out for one example with the library's parameter
names, wrapped by ``rtrl.cells.from_function`` and batched by the library; ``auto`` finds their element-wise
structure from the step alone and resolves to the generic ``diagonal`` method. ``+output_fn`` also gives
``from_function`` the function that makes ``h`` from the new carry, as the library cells declare ``output``: the
online step then contracts the new traces, with no backward pass through the recurrence. Target: within 1.2x of
``diagonal`` on the library cell. All timed round-robin in one run (``interleaved_seconds``), float32.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

import rtrl
from rtrl.benchmarks.timing import forward_fn, gradient_fn, interleaved_seconds, random_problem
from rtrl.run.argtypes import size3


def elstm_step(p, c, x):
    """The eLSTM (``rtrl.cells.ELSTM``), one example; the carry is the bare vector ``c``."""
    f = jax.nn.sigmoid(x @ p["F"] + p["w_f"] * c + p["b_f"])
    z = jnp.tanh(x @ p["Z"] + p["w_z"] * c + p["b_z"])
    c = f * c + (1 - f) * z
    return c, jax.nn.sigmoid(x @ p["O"] + c @ p["W_o"] + p["b_o"]) * c


def iir2_step(p, carry, x):
    """Seed 001's IIR2 neuron (``rtrl.cells.IIR2``), one example; the carry is the tuple ``(z1, z2, y1, y2)``."""
    z1, z2, y1, y2 = carry
    z = x @ p["W"] + p["b"]
    y = z + p["b0"] * z1 + p["b1"] * z2 - p["a0"] * y1 - p["a1"] * y2
    return (z, z1, y, y1), jnp.tanh(y)


def adaptive_iir2_step(p, carry, x):
    """Seed 001's adaptive IIR2 neuron (``rtrl.cells.AdaptiveIIR2``, seed parameterisation), one example."""
    z1, z2, y1, y2 = carry
    a0, a1, b0, b1 = (jnp.tanh(x @ p[f"w_{s}"] + p[f"c_{s}"]) for s in ("a0", "a1", "b0", "b1"))
    z = x @ p["W"] + p["b"]
    y = z + b0 * z1 + b1 * z2 - a0 * y1 - a1 * y2
    return (z, z1, y, y1), jnp.tanh(y)


def elstm_output(p, c, x):
    return jax.nn.sigmoid(x @ p["O"] + c @ p["W_o"] + p["b_o"]) * c


def filter_output(p, carry, x):
    return jnp.tanh(carry[2])


# name -> (library cell class, plain step, zero carry of N neurons, h from the new carry)
PLAIN = {
    "ELSTM": (rtrl.cells.ELSTM, elstm_step, lambda N: jnp.zeros(N), elstm_output),
    "IIR2": (rtrl.cells.IIR2, iir2_step, lambda N: (jnp.zeros(N),) * 4, filter_output),
    "AdaptiveIIR2": (rtrl.cells.AdaptiveIIR2, adaptive_iir2_step, lambda N: (jnp.zeros(N),) * 4, filter_output),
}


def plain_cell(name: str, D: int, N: int, with_output: bool = False):
    """``(plain cell, library cell)``: the same equations and parameters, one of them a plain function (given its
    ``output_fn`` too if ``with_output``)."""
    cls, step, carry, output = PLAIN[name]
    library = cls(D, N)
    return rtrl.cells.from_function(library.init, step, lambda: carry(N), input_size=D, hidden_size=N,
                                    name=f"plain {name}", output_fn=output if with_output else None), library


def measure(name: str, D: int, N: int, B: int, T: int) -> dict[str, float]:
    """Seconds per step: the library cell's forward step, its closed_form and diagonal, the plain cell's auto."""
    plain, library = plain_cell(name, D, N)
    with_output, _ = plain_cell(name, D, N, with_output=True)
    params, xs, ys = random_problem(library, T, B)
    calls = {"forward": (forward_fn(library), (params, xs, ys)),
             "closed_form": (gradient_fn(library, "closed_form"), (params, xs, ys)),
             "diagonal": (gradient_fn(library, "diagonal"), (params, xs, ys)),
             "plain auto": (gradient_fn(plain, "auto"), (params, xs, ys)),
             "+output_fn": (gradient_fn(with_output, "auto"), (params, xs, ys))}
    return {k: v / T for k, v in interleaved_seconds(calls).items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.adapters", description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", choices=sorted(PLAIN), default=["ELSTM", "AdaptiveIIR2"])
    parser.add_argument("--size", type=size3, default=(64, 256, 32), help="DxNxB: input size, hidden size, batch")
    parser.add_argument("--steps", type=int, default=100, help="sequence length T")
    args = parser.parse_args(argv)
    D, N, B = args.size
    print(f"float32, T={args.steps}, {D}x{N}x{B}; per-step time as a ratio to the library cell's forward step")
    columns = ("closed_form", "diagonal", "plain auto", "+output_fn")
    print(f"{'cell':>13} {'forward (us)':>13} " + " ".join(f"{c:>12}" for c in columns)
          + f" {'auto/diagonal':>14} {'+output_fn/diagonal':>20}")
    for name in args.cells:
        t = measure(name, D, N, B, args.steps)
        print(f"{name:>13} {t['forward'] * 1e6:>13.1f} " + " ".join(f"{t[m] / t['forward']:>11.1f}x" for m in columns)
              + f" {t['plain auto'] / t['diagonal']:>13.2f}x {t['+output_fn'] / t['diagonal']:>19.2f}x", flush=True)


if __name__ == "__main__":
    main()
