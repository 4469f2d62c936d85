"""The method "auto": the cheapest exact traces, found from the step alone, on library cells and plain functions."""

import jax
import jax.numpy as jnp
import pytest

import rtrl
from exactness import perturbed, worst_error
from oracle import EXACT_TOL, random_carry, random_problem, squared_error
from rtrl.cells import ELSTM, GRU, IIR2, AdaptiveIIR2, Elman, Stack, from_function
from rtrl.compare import relative_error

D, N = 3, 4
LIBRARY = {
    "Elman": (lambda: Elman(D, N), "closed_form"),
    "GRU": (lambda: GRU(D, N), "rtrl"),
    "IIR2": (lambda: IIR2(D, N), "closed_form"),
    "AdaptiveIIR2": (lambda: AdaptiveIIR2(D, N, parameterisation="stable"), "closed_form"),
    "ELSTM": (lambda: ELSTM(D, N), "closed_form"),
    "Stack": (lambda: Stack((ELSTM(D, N), ELSTM(N, N))), "rtrl"),  # two element-wise layers make a dense stack
}


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_auto_on_every_library_cell_is_its_cheapest_exact_method(name):
    """"auto" becomes that method itself, whose exactness the cell's own tests hold to BPTT."""
    make, expected = LIBRARY[name]
    cell = make()
    assert rtrl.inspect(cell).method == expected
    assert rtrl.methods.resolve("auto", cell) == rtrl.methods.resolve(expected)
    assert rtrl.online(cell, "auto").method == rtrl.methods.resolve(expected)


def test_auto_through_sequence_grad_equals_bptt():
    cell = Stack((ELSTM(2, 3), ELSTM(3, 3)))
    params, xs, ys = random_problem(cell, 20, (2,), seed=0)
    carries = (cell.initial_carry((2,)), random_carry(cell, (2,), 1))
    error, where = worst_error(cell, ("auto",), perturbed(params, 2), xs, ys, carries, (1, 2, 3, 20))
    assert error <= EXACT_TOL, where


# -- element-wise cells written as plain functions of one example, with the library's parameter names ----------
def elstm_step(p, c, x):  # the carry is a bare vector c
    """The eLSTM's equations (rtrl.cells.elstm), written out."""
    f = jax.nn.sigmoid(x @ p["F"] + p["w_f"] * c + p["b_f"])
    z = jnp.tanh(x @ p["Z"] + p["w_z"] * c + p["b_z"])
    c = f * c + (1 - f) * z
    return c, jax.nn.sigmoid(x @ p["O"] + c @ p["W_o"] + p["b_o"]) * c


def iir2_step(p, carry, x):
    """Seed 001's second-order IIR neuron (rtrl.cells.iir2), written out; the carry is a tuple (z1, z2, y1, y2)."""
    z1, z2, y1, y2 = carry
    z = x @ p["W"] + p["b"]
    y = z + p["b0"] * z1 + p["b1"] * z2 - p["a0"] * y1 - p["a1"] * y2
    return (z, z1, y, y1), jnp.tanh(y)


PLAIN = {
    "elstm": (ELSTM(D, N), elstm_step, lambda: jnp.zeros(N), 1),
    "iir2": (IIR2(D, N), iir2_step, lambda: (jnp.zeros(N),) * 4, 2),
}


def plain(name):
    library, step, carry_fn, order = PLAIN[name]
    cell = from_function(library.init, step, carry_fn, input_size=D, hidden_size=N, name=f"plain {name}")
    return cell, library, order


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_auto_on_a_plain_function_is_diagonal_with_traces_of_parameter_size_times_state_order(name):
    cell, library, order = plain(name)
    info = rtrl.inspect(cell)
    assert info.method == "diagonal"
    recurrent = sum(a.size for p, a in library.init(jax.random.PRNGKey(0)).items()
                    if not info.roles[p].startswith("readout"))
    assert info.trace_floats <= recurrent * order * (2 if name == "iir2" else 1)  # W, b reach z1, z2 as well
    assert info.trace_floats == rtrl.inspect(library).memory["diagonal"]
    assert "readout" in info.roles["W_o"] if name == "elstm" else "per-neuron" in info.roles["a0"]


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_auto_on_a_plain_function_equals_diagonal_on_the_library_cell_and_bptt(name):
    cell, library, _ = plain(name)
    params, xs, ys = random_problem(library, 30, (2,), seed=3)
    params = perturbed(params, 4)
    carries = (cell.initial_carry((2,)), random_carry(cell, (2,), 5))
    error, where = worst_error(cell, ("auto",), params, xs, ys, carries, (1, 2, 3, 30))
    assert error <= EXACT_TOL, where
    _, ours = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method="auto")
    _, theirs = rtrl.sequence_grad(library, params, xs, ys, squared_error, method="diagonal")
    assert relative_error(ours, theirs) <= EXACT_TOL


def test_auto_without_a_cell_stays_auto_and_is_listed():
    assert "auto" in rtrl.METHODS
    assert rtrl.methods.resolve("auto").name == "auto"
    assert isinstance(rtrl.methods.resolve("auto", GRU(2, 3)), rtrl.methods.DenseRTRL)


def test_inspect_tells_a_person_the_roles_and_the_memory():
    text = str(rtrl.inspect(ELSTM(D, N)))
    for word in ("auto -> closed_form", "element-wise over 4 neurons", "W_o", "readout", "projection",
                 "per-neuron", "diagonal", "rtrl"):
        assert word in text, (word, text)
    gru = rtrl.inspect(GRU(D, N))
    assert gru.trace_floats == N * sum(a.size for a in GRU(D, N).init(jax.random.PRNGKey(0)).values())
    assert "couples neurons" in gru.carry and "diagonal" not in gru.memory
