"""Structure discovery on cells built to stress it, each written as plain functions of one example.

Discovery (``rtrl.structure.elementwise``) reads leaf-level dependencies from the step's jaxpr and neuron-level
ones from derivatives at random probes; ``auto`` picks ``diagonal`` from it. These cells are where such probing
can go wrong: derivatives that are exactly zero at some probes (ReLU), or at every probe (a ReLU behind a
threshold the probes never cross, or a coupling of neurons that only such a ReLU opens), a per-neuron state of
order three (a shift chain), parameters of three dimensions with the neuron axis first, in the middle and last.
Each must get the method it should, and ``auto``, ``diagonal`` (where it applies) and ``rtrl`` must equal BPTT
from a zero carry, a non-zero carry and across a reset. (Mutations tried by hand, each caught: ``Leaves.reach``
without its closure over carry leaves; ``spread`` with one axis too few for a 3-d parameter; either of the
unseen-entry checks in ``elementwise`` removed. Survived, equivalent: ``placement_of`` returning a non-negative
axis, which every user normalises.)
"""

import jax
import jax.numpy as jnp
import pytest

import rtrl
from oracle import EXACT_TOL, gradient_error, random_carry, random_problem, reset_error, worst_error
from rtrl.cells import from_function
from rtrl.structure import old_values_read

D, N = 3, 5


def normal(key, shape, scale):
    return scale * jax.random.normal(key, shape)


def zero_carry():
    return jnp.zeros(N)


# -- element-wise ReLU: derivatives exactly 0 wherever a neuron is off -------------------------------------------
def relu_init(key):
    k = jax.random.split(key, 3)
    return {"W": normal(k[0], (D, N), 0.6), "u": jax.random.uniform(k[1], (N,), minval=-0.9, maxval=0.9),
            "b": normal(k[2], (N,), 0.3)}


def relu_step(params, h, x):
    h = jax.nn.relu(x @ params["W"] + params["u"] * h + params["b"])
    return h, h


def threshold_init(key):  # the bias lifts the threshold's pre-activations to about 0 in use, not at the probes
    params = relu_init(key)
    return {**params, "b": params["b"] + 3.0}


def threshold_step(params, h, x):
    """The input's ReLU behind a threshold that the probes (pre-activations of order 1) never cross: ``W`` and
    ``b`` are unseen at every probe, the recurrence through ``u`` is seen."""
    h = jnp.tanh(params["u"] * h + jax.nn.relu(x @ params["W"] + params["b"] - 3.0))
    return h, h


def gated_init(key):
    k = jax.random.split(key, 3)
    return {"W": normal(k[0], (D, N), 0.6), "b": normal(k[1], (N,), 0.3), "k": 5.5 + normal(k[2], (N,), 0.1)}


def gated_step(params, h, x):
    """Neuron j reads neuron j - 1 through a ReLU that opens near ``k = 5.5`` (in use), never at the probes
    (``k`` of order 1 there): its whole dependence on the carry is unseen, though every parameter is seen."""
    k = params["k"]
    h = 0.2 * k * jnp.tanh(x @ params["W"] + params["b"]) + 0.5 * jax.nn.relu(jnp.roll(h, 1) + k - 5.5)
    return h, h


def dense_relu_init(key):
    k = jax.random.split(key, 2)
    return {"W": normal(k[0], (D, N), 0.6), "R": normal(k[1], (N, N), 0.4)}


def dense_relu_step(params, h, x):
    h = jax.nn.relu(x @ params["W"] + h @ params["R"])
    return h, h


# -- a third-order shift chain: y1' = tanh(x W + a y1 + c y3), y2' = y1, y3' = y2 ----------------------------------
def chain_init(key):
    k = jax.random.split(key, 3)
    return {"W": normal(k[0], (D, N), 0.6), "a": jax.random.uniform(k[1], (N,), minval=-0.8, maxval=0.8),
            "c": jax.random.uniform(k[2], (N,), minval=-0.5, maxval=0.5)}


def chain_step(params, carry, x):
    y1 = jnp.tanh(x @ params["W"] + params["a"] * carry["y1"] + params["c"] * carry["y3"])
    return {"y1": y1, "y2": carry["y1"], "y3": carry["y2"]}, y1


def chain_carry():
    return {"y1": jnp.zeros(N), "y2": jnp.zeros(N), "y3": jnp.zeros(N)}


# -- parameters of three dimensions, the neuron axis first, in the middle and last ----------------------------------
def tensor_init(key):
    k = jax.random.split(key, 3)
    return {"M": normal(k[0], (N, 2, 2), 0.4), "V": normal(k[1], (D, N, 3), 0.5), "W": normal(k[2], (2, D, N), 0.5)}


def tensor_step(params, carry, x):
    """A per-neuron 2x2 recurrence ``M[k]`` on ``(y1, y2)``, driven by ``x W[0]``, ``x W[1]`` and three mixed
    projections ``V``."""
    M, V, W = params["M"], params["V"], params["W"]
    v = jnp.einsum("d,dnk->nk", x, V) @ jnp.array([1.0, -0.5, 0.25])
    y1 = jnp.tanh(M[:, 0, 0] * carry["y1"] + M[:, 0, 1] * carry["y2"] + x @ W[0] + v)
    y2 = jnp.tanh(M[:, 1, 0] * carry["y1"] + M[:, 1, 1] * carry["y2"] + x @ W[1])
    return {"y1": y1, "y2": y2}, y1 - y2


def pair_carry():
    return {"y1": jnp.zeros(N), "y2": jnp.zeros(N)}


CELLS = {  # name: (init, step, carry, the method auto must pick, the trace floats it keeps per example)
    "relu": (relu_init, relu_step, zero_carry, "diagonal", D * N + 2 * N),
    "threshold_relu": (threshold_init, threshold_step, zero_carry, "rtrl", N * (D * N + 2 * N)),
    "hidden_coupling": (gated_init, gated_step, zero_carry, "rtrl", N * (D * N + 2 * N)),
    "dense_relu": (dense_relu_init, dense_relu_step, zero_carry, "rtrl", N * (D * N + N * N)),
    "shift_chain": (chain_init, chain_step, chain_carry, "diagonal", 3 * (D * N + 2 * N)),
    "tensor": (tensor_init, tensor_step, pair_carry, "diagonal", 2 * (4 * N + 3 * D * N + 2 * D * N)),
}


def make(name):
    init, step, carry, _, _ = CELLS[name]
    return from_function(init, step, carry, input_size=D, hidden_size=N, name=name)


@pytest.mark.parametrize("name", sorted(CELLS))
def test_discovery_picks_the_method_it_should(name):
    info = rtrl.inspect(make(name))
    assert (info.method, info.trace_floats) == CELLS[name][3:], str(info)


@pytest.mark.parametrize("name", sorted(CELLS))
def test_exact_methods_equal_bptt(name):
    """From a zero and a random carry, T in {1, 2, 3, 30}, batched; and across a reset."""
    cell = make(name)
    params, xs, ys = random_problem(cell, 30, (2,), seed=sorted(CELLS).index(name))
    methods = ("auto", "diagonal", "rtrl") if CELLS[name][3] == "diagonal" else ("auto", "rtrl")
    carries = (cell.initial_carry((2,)), random_carry(cell, (2,), 40))
    error, where = worst_error(cell, methods, params, xs, ys, carries, (1, 2, 3, 30))
    assert error <= EXACT_TOL, where
    assert reset_error(cell, "auto", params, xs, ys, reset_at=7) <= EXACT_TOL


@pytest.mark.parametrize("cell", [rtrl.cells.LIF(3, 4, leak=2 / 3), rtrl.cells.ALIF(3, 4, leak=0.8)])
def test_round_parameter_values_do_not_cancel_the_probe_and_diagonal_stays_exact(cell):
    """With the carry leaves' probe weights 1 and 1.5, LIF's spike at leak 2/3 (2/3 x 1.5 - threshold 1 x 1 = 0)
    and ALIF's at leak 0.8 had a zero derivative on the carry at every probe, and ``diagonal`` refused both as
    not element-wise. Irrational weights cancel against no round value; the traces found are exact."""
    params, xs, ys = random_problem(cell, 30, (2,), seed=1)
    assert rtrl.inspect(cell).method == "closed_form"  # auto's pick is unchanged; diagonal must bind too
    assert gradient_error(cell, "diagonal", params, xs, ys) <= EXACT_TOL


@pytest.mark.parametrize("cell", [rtrl.cells.LRU(1, 8), rtrl.cells.LRU(2, 8), rtrl.cells.RTU(2, 5),
                                  rtrl.cells.LRU(2, 8, output_map="concat")])
def test_complex_rotations_are_found_element_wise_at_every_size(cell):
    """Under this suite's XLA flags (unoptimised CPU code), these sizes' probes decoded a bit ~1e-11 off (relative
    to a value that is a difference of two terms) and the tolerance of 1e3 eps refused them as coupled."""
    assert rtrl.inspect(cell).method == "closed_form"
    assert rtrl.online(cell, method="diagonal") is not None


def test_old_values_read_counts_a_new_value_read_as_no_old_read():
    """Hand-checked on steps of a carry (a, b): a stack (b' reads the new a', which read the old a) reads only a in
    a' and only b in b'; a swap reads the other leaf in each; a shift passes a on as b'; a constant reads nothing.
    [guards: a read through a new value counted as a read of what made it (the stack would read both); a leaf
    passed on unchanged counted as no read]"""

    def reads(step):
        return old_values_read(jax.make_jaxpr(step)(1.0, 2.0).jaxpr)

    def stack(a, b):
        new_a = jnp.tanh(a)
        return new_a, 0.5 * b + new_a

    assert reads(stack) == [frozenset({0}), frozenset({1})]
    assert reads(lambda a, b: (b, a)) == [frozenset({1}), frozenset({0})]
    assert reads(lambda a, b: (2.0 * a, a)) == [frozenset({0}), frozenset({0})]
    assert reads(lambda a, b: (a + 1.0, 3.0)) == [frozenset({0}), frozenset()]
