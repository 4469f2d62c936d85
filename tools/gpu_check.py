"""The compiled Pallas path on a GPU, float64: ``trace_chunk`` against the tests' NumPy loop (trailing shapes that
are and are not powers of two), and ``Chunked(kernel="pallas")`` against BPTT on every element-wise cell (the cases
of tests/test_methods_chunked.py). Run by tools/gpu_figures.sh; on a CPU Pallas interprets, so there this checks the
script. (pytest printed nothing and exited 1 on the H100 machine, cause not found, so this is a plain script.)"""

import sys

import jax

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, "tests")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import rtrl  # noqa: E402
from oracle import perturbed, random_carry, random_problem, relative_error  # noqa: E402
from rtrl.kernels import trace_chunk  # noqa: E402
from rtrl.methods import Chunked  # noqa: E402
from test_kernels import numpy_chunk, random_chunk  # noqa: E402
from test_methods_chunked import CELLS, Resonator, bptt, error, squared_error  # noqa: E402


def main() -> None:
    print(jax.devices(), flush=True)
    worst = 0.0
    for S, rest in ((1, ()), (2, (3,)), (2, ()), (4, (5,)), (2, (3, 5))):
        J, I, g, e0 = random_chunk(6, S, 12, rest, seed=S)
        want = numpy_chunk(J, I, g, e0)
        for block in (4, None):
            e, grad = trace_chunk(J, I, g, e0, backend="pallas", block_n=block)
            err = max(relative_error(np.asarray(grad), want[1]), relative_error(np.asarray(e), want[0]))
            worst = max(worst, err)
            print("trace_chunk pallas S", S, "rest", rest, "block", block, "vs numpy", err, flush=True)
    for name, cell in {**CELLS, "resonator": Resonator(3, 4)}.items():
        for T, K, batch, seed in ((11, 4, (2,), 5), (7, 16, (), None), (9, 3, (2, 3), 6)):
            params, xs, ys = random_problem(cell, T, batch, 1)
            params = perturbed(params, 2)
            carry = cell.initial_carry(batch, jnp.float64) if seed is None else random_carry(cell, batch, seed)
            method = Chunked(K, kernel="pallas")
            got = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method=method, carry=carry)
            err = error(got, bptt(cell, params, xs, ys, carry))
            worst = max(worst, err)
            print("Chunked(kernel='pallas') float64 vs BPTT", name, T, K, batch, err, flush=True)
    print("worst relative error", worst)


if __name__ == "__main__":
    main()
