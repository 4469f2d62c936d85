"""The chunked method: exact RTRL in chunks for element-wise cells, held to BPTT, and its refusals.

Mutations tried by hand, each caught here: the start-trace term ``lambda . e_0`` dropped from a chunk's gradient
(errors 0.2 to 1.6 on every cell); an off-by-one in the adjoint (``mu_t = g_t + J_t^T mu_{t+1}``, the step's own
Jacobian, and ``lambda = mu_1``) fails the exactness test; ``Phi_0`` taken as the identity in the end-of-chunk
traces (``e_K = e_0 + sum_t Phi_t D_t``) fails the traces test and the exactness test of LRU; the last, shorter chunk
dropped fails the T = 200 case (0.21); the per-neuron vectors not broadcast over the batch before the step's
pullback (their credit summed over the streams, so every stream's vector traces get the batch's sum) fails every
cell's exactness test"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import rtrl
from oracle import EXACT_TOL, perturbed, random_carry, random_problem, relative_error
from rtrl.benchmarks import sequence
from rtrl.cells import ElementwiseCell
from rtrl.cells.base import glorot
from rtrl.methods import Chunked, resolve
from rtrl.methods.chunked import run

CELLS = {"elstm": rtrl.cells.ELSTM(3, 5), "iir2": rtrl.cells.IIR2(3, 5), "adaptive_iir2": rtrl.cells.AdaptiveIIR2(3, 5),
         "lru": rtrl.cells.LRU(3, 5), "rtu": rtrl.cells.RTU(3, 5)}
# (T, chunk, batch shape): a long sequence in 12 chunks and a shorter last one of 8 steps, one step per chunk over 3
# streams (no batch axis the size of LRU's and RTU's 2 carry leaves), one chunk longer than the sequence (no batch),
# a single step
CASES = ((200, 16, (2,)), (11, 1, (3,)), (11, 16, ()), (1, 4, (2,)))


def squared_error(h, y):
    return jnp.sum((h - y) ** 2)


def bptt(cell, params, xs, ys, carry):
    """The oracle: ``jax.grad`` through ``lax.scan`` of ``cell.step`` (nothing of the method's own)."""

    def total(p):
        def body(c, xy):
            c, h = cell.step(p, c, xy[0])
            return c, squared_error(h, xy[1])

        return lax.scan(body, carry, (xs, ys))[1].sum()

    return jax.value_and_grad(total)(params)


def error(got, want) -> float:
    (loss, grads), (ref_loss, ref_grads) = got, want
    return max(abs(float(loss - ref_loss)) / abs(float(ref_loss)), relative_error(grads, ref_grads))


@pytest.mark.parametrize("name", list(CELLS))
def test_chunked_equals_bptt_from_zero_and_random_carries_for_every_chunking(name):
    """Every case of ``CASES``, from a zero and a random carry (mapped over both), through the public
    ``sequence_grad``: one compiled program per cell holds them all."""
    cell = CELLS[name]

    @jax.jit
    def results(params, problems):
        def both(K, xs, ys, carry):
            return (rtrl.sequence_grad(cell, params, xs, ys, squared_error, method=Chunked(K), carry=carry),
                    bptt(cell, params, xs, ys, carry))

        return [jax.vmap(lambda c, K=K, xs=xs, ys=ys: both(K, xs, ys, c))(carries)
                for (_, K, _), (xs, ys, carries) in zip(CASES, problems, strict=True)]

    params = perturbed(random_problem(cell, 1, (), 0)[0], 1)
    problems = []
    for i, (T, _, batch) in enumerate(CASES):
        _, xs, ys = random_problem(cell, T, batch, 10 + i)
        carries = jax.tree.map(lambda *a: jnp.stack(a), cell.initial_carry(batch, jnp.float64),
                               random_carry(cell, batch, 20 + i))
        problems.append((xs, ys, carries))
    found = {(*case, carry): error(*jax.tree.map(lambda a, j=j: a[j], result))
             for case, result in zip(CASES, results(params, problems), strict=True)
             for j, carry in enumerate(("zero", "random"))}
    assert max(found.values()) <= EXACT_TOL, found


@pytest.mark.parametrize("name", ["iir2", "lru"])
def test_traces_at_the_end_equal_the_sensitivities_of_the_last_carry(name):
    """The traces the last chunk ends with are ``dc/dtheta`` at step T: the element-wise part of the Jacobian of
    the carry after T steps (``jax.jacrev`` through ``lax.scan`` of the cell's step, here) with respect to each
    parameter it keeps traces for, per carry leaf (zero where a parameter does not reach a leaf: IIR2's
    coefficients and ``z1, z2``)."""
    cell = CELLS[name]
    params, xs, ys = random_problem(cell, 10, (2,), 3)
    params = perturbed(params, 4)
    carry = random_carry(cell, (2,), 5)
    *_, last, traces = jax.jit(lambda p, c: run(cell, p, xs, ys, squared_error, c, 4))(params, carry)

    def last_carry(p):
        return jax.lax.scan(lambda c, x: (cell.step(p, c, x)[0], None), carry, xs)[0]

    for leaf, a in last_carry(params).items():
        np.testing.assert_allclose(last[leaf], a, rtol=1e-12, atol=1e-12)
    jacobian = jax.jacrev(last_carry)(params)  # [leaf][param]: (B, N, *param shape)
    leaves = [path[0].key for path, _ in jax.tree_util.tree_flatten_with_path(carry)[0]]  # the traces' order
    for param, trace in traces.items():
        for i, leaf in enumerate(leaves):
            ours = trace[..., i, :] if trace.ndim == 4 else trace[..., i]
            full = jacobian[leaf][param]
            expected = jnp.einsum("bndn->bnd", full) if full.ndim == 4 else jnp.einsum("bnn->bn", full)
            np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-12, err_msg=f"{param} {leaf}")


@dataclasses.dataclass(frozen=True)
class Resonator(ElementwiseCell):
    """A cell with no per-neuron vectors, written only here: a damped rotation of ``(p, q)`` driven by two
    projections, ``p' = tanh(u_A) * p - q / 2 + u_B``, ``q' = p / 2 + q * tanh(u_B)``, ``h = p' q'``."""

    def param_shapes(self):
        D, N = self.input_size, self.hidden_size
        return {"A": (D, N), "B": (D, N)}

    def projections(self):
        return ("A", "B")

    def carry_sizes(self):
        return {"p": self.hidden_size, "q": self.hidden_size}

    def init(self, key, dtype=None):
        keys = jax.random.split(key)
        return {name: glorot(k, (self.input_size, self.hidden_size), dtype or jnp.zeros(()).dtype)
                for k, name in zip(keys, ("A", "B"), strict=True)}

    def recur(self, vectors, carry, u):
        p, q = carry["p"], carry["q"]
        return {"p": jnp.tanh(u["A"]) * p - q / 2 + u["B"], "q": p / 2 + q * jnp.tanh(u["B"])}

    def output(self, params, carry, x):
        return carry["p"] * carry["q"]


def test_chunked_is_exact_for_a_cell_without_vectors_over_two_batch_axes():
    """No per-neuron vectors (an empty set of vector terms) and a batch of shape (2, 3) (the sums over the batch
    flatten two axes), against BPTT from a random carry, with a last chunk shorter than the others."""
    cell = Resonator(3, 4)
    assert cell.vector_names() == ()
    params, xs, ys = random_problem(cell, 23, (2, 3), 7)
    carry = random_carry(cell, (2, 3), 8)
    got = jax.jit(lambda p, c: run(cell, p, xs, ys, squared_error, c, 5)[:2])(params, carry)
    assert error(got, bptt(cell, params, xs, ys, carry)) <= EXACT_TOL


@pytest.mark.parametrize("kernel, names", [("xla", [*CELLS, "resonator"]), ("pallas", ["lru", "resonator"])])
def test_forward_kernels_equal_bptt(kernel, names):
    """``kernel="xla"`` / ``"pallas"``: the traces run forward through ``rtrl.kernels.trace_chunk`` (Pallas in
    interpret mode here: slow, so on two cells), from a random carry over a batch with a last, shorter chunk, and
    from a zero carry with no batch and one chunk longer than the sequence, and over two batch axes (the batch
    folded into the neurons and summed back out). [Mutations, each caught: every carry leaf's tangent set at once
    for ``J`` (all ones); the gradient summed over the neurons instead of the streams (``reshape((N, -1, D))``); the
    credit of the step before (``g`` shifted by one).]"""
    cells = {**CELLS, "resonator": Resonator(3, 4)}
    found = {}
    for name in names:
        cell = cells[name]
        for T, K, batch, carry_seed in ((11, 4, (2,), 5), (7, 16, (), None), (9, 3, (2, 3), 6)):
            params, xs, ys = random_problem(cell, T, batch, 1)
            params = perturbed(params, 2)
            carry = (cell.initial_carry(batch, jnp.float64) if carry_seed is None
                     else random_carry(cell, batch, carry_seed))
            method = Chunked(K, kernel=kernel)
            got = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method=method, carry=carry)
            found[name, T] = error(got, bptt(cell, params, xs, ys, carry))
    assert max(found.values()) <= EXACT_TOL, found


@pytest.mark.parametrize("kernel", ["triton", "", None, "Pallas"])
def test_an_unknown_kernel_is_refused_by_name(kernel):
    with pytest.raises(ValueError, match=r"^kernel must be one of \('adjoint', 'xla', 'pallas'\)"):
        Chunked(kernel=kernel)


def test_compiled_memory_is_flat_in_T():
    """Constant memory in T: the traces carried between chunks, never the sequence's activations (BPTT's grows 16x
    from T = 64 to 1024, tests/test_benchmarks.py). Both lengths leave a last, shorter chunk of 8 steps. [One chunk
    of the whole sequence, ``Chunked(4096)``: 17x, fails; the chunks cut by slicing and reshaping the sequence, as
    first written, which copies xs and ys whenever T is not a multiple of the chunk: 4x, fails.]"""
    temp = {}
    for T in (72, 1032):
        cell, params, xs, ys = sequence.problem("elstm", 3, 4, 2, T)
        temp[T] = sequence.compiled_temp_bytes(sequence.gradient_fn(cell, Chunked(16)), params, xs, ys)
    assert temp[1032] <= 1.1 * temp[72], temp


def test_float32_gradients_are_float32_and_close_to_bptt():
    cell = CELLS["elstm"]
    params, xs, ys = random_problem(cell, 20, (3,), 6, jnp.float32)
    loss, grads = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method=Chunked(8))
    assert {g.dtype for g in grads.values()} == {jnp.dtype(jnp.float32)}
    wide = jax.tree.map(lambda a: a.astype(jnp.float64), (params, xs, ys))
    assert error((loss, grads), bptt(cell, *wide, cell.initial_carry((3,), jnp.float64))) < 1e-4


def test_applies_exactly_to_element_wise_cells_and_refuses_others_by_name():
    for cls in rtrl.cells.CELLS.values():
        cell = cls(3, 4)
        assert Chunked().applies(cell) == isinstance(cell, ElementwiseCell), cell.name
    with pytest.raises(ValueError, match=r"'chunked' needs an element-wise cell .* Elman is not one; use 'closed_"):
        resolve("chunked", rtrl.cells.Elman(3, 4))
    assert resolve("auto", rtrl.cells.ELSTM(3, 4)).name != "chunked"  # auto is for online use


@pytest.mark.parametrize("chunk", [0, -3, 2.0, True, "16"])
def test_a_chunk_that_is_not_a_positive_int_is_refused_by_name(chunk):
    with pytest.raises(ValueError, match=r"^chunk must be"):
        Chunked(chunk=chunk)


def test_the_trainer_refuses_chunked_before_anything_runs():
    """Its windows are the cell behind resets and a readout, which is not element-wise as declared."""
    from rtrl.training.assemble import assemble
    from rtrl.training.config import RunConfig

    with pytest.raises(ValueError, match=r"method 'chunked' does not apply to the trainer's windows"):
        assemble(RunConfig(task="copy", cell="elstm", method="chunked"))
