"""The diagonal method on a cell that exists only here: exact traces from a declaration, and clear refusals."""

import dataclasses

import jax
import jax.numpy as jnp
import pytest

import rtrl
from exactness import perturbed, worst_error
from oracle import EXACT_TOL, random_carry, random_problem
from rtrl.cells import Cell, ElementwiseCell, Elman
from rtrl.cells.base import glorot


@dataclasses.dataclass(frozen=True)
class LeakyAdaptation(ElementwiseCell):
    """A leaky unit with an adaptation current, written without any trace derivation::

        v' = s*v + (1 - s)*tanh(x @ U + b - beta*a)          s = sigmoid(leak)
        a' = r*a + sigmoid(x @ G + g) * v'                   r = sigmoid(decay)
        h  = tanh(v' - a' + x @ R)                           R: readout
    """

    def param_shapes(self):
        D, N = self.input_size, self.hidden_size
        return {"U": (D, N), "G": (D, N), "R": (D, N), "leak": (N,), "decay": (N,), "beta": (N,), "b": (N,),
                "g": (N,)}

    def projections(self):
        return ("U", "G")

    def readout(self):
        return ("R",)

    def carry_sizes(self):
        return {"v": self.hidden_size, "a": self.hidden_size}

    def init(self, key, dtype=None):
        keys = jax.random.split(key, len(self.param_shapes()))
        shapes = self.param_shapes()
        dtype = dtype or jnp.zeros(()).dtype
        return {name: glorot(k, shape, dtype) if len(shape) == 2 else 0.5 * jax.random.normal(k, shape, dtype)
                for k, (name, shape) in zip(keys, shapes.items(), strict=True)}

    def recur(self, vectors, carry, u):
        s, r = jax.nn.sigmoid(vectors["leak"]), jax.nn.sigmoid(vectors["decay"])
        v = s * carry["v"] + (1 - s) * jnp.tanh(u["U"] + vectors["b"] - vectors["beta"] * carry["a"])
        return {"v": v, "a": r * carry["a"] + jax.nn.sigmoid(u["G"] + vectors["g"]) * v}

    def output(self, params, carry, x):
        return jnp.tanh(carry["v"] - carry["a"] + x @ params["R"])


def test_diagonal_is_exact_on_a_cell_defined_here():
    batch_shape = (2,)
    cell = LeakyAdaptation(3, 4)
    params, xs, ys = random_problem(cell, 50, batch_shape, 0)
    carries = (cell.initial_carry(batch_shape), random_carry(cell, batch_shape, 1))
    error, where = worst_error(cell, ("diagonal", "rtrl"), perturbed(params, 2), xs, ys, carries, (1, 2, 3, 4, 50))
    assert error <= EXACT_TOL, where


def test_traces_of_a_cell_defined_here_are_its_parameters_times_its_leaves():
    cell = LeakyAdaptation(3, 4)
    params = cell.init(jax.random.PRNGKey(0))
    traces = rtrl.online(cell, "diagonal").init(params).traces
    assert set(traces) == set(params) - {"R"}  # the readout keeps no traces
    for name, trace in traces.items():
        assert sorted(trace) == ["a", "v"]  # every recurrent parameter reaches both leaves
        assert all(e.shape == params[name].shape for e in trace.values())


def replace_method(cls, **methods):
    return dataclasses.dataclass(frozen=True)(type(cls.__name__, (cls,), methods))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"projections": lambda self: ("U", "leak")}, r"projection 'leak' .* must have shape \(input_size, hidden"),
        ({"projections": lambda self: ("U",)}, r"parameter 'G' .* must be a per-neuron vector of shape \(4,\)"),
        ({"readout": lambda self: ("R", "Q")}, r"readout\(\) names \['Q'\], which are not parameters"),
        ({"readout": lambda self: ("R", "U")}, r"declares \['U'\] both as projections and as readout"),
        ({"carry_sizes": lambda self: {"v": 4, "a": 8}}, r"carry leaf 'a' .* must have size hidden_size = 4, got 8"),
    ],
)
def test_a_wrong_declaration_is_a_value_error(changes, message):
    cell = replace_method(LeakyAdaptation, **changes)(3, 4)
    with pytest.raises(ValueError, match=message):
        rtrl.online(cell, "diagonal")


def test_a_recurrence_that_mixes_neurons_is_refused():
    def recur(self, vectors, carry, u):
        new = LeakyAdaptation.recur(self, vectors, carry, u)
        return {"v": new["v"], "a": new["a"] + 0.1 * jnp.roll(carry["v"], 1)}  # neuron k sees neuron k - 1

    with pytest.raises(ValueError, match=r"recur couples neurons .* use 'rtrl'"):
        rtrl.online(replace_method(LeakyAdaptation, recur=recur)(3, 4), "diagonal")


def test_diagonal_on_elman_says_it_couples_neurons_and_points_to_rtrl():
    with pytest.raises(ValueError, match=r"Elman is not one: its recurrence couples neurons .* use 'rtrl'"):
        rtrl.online(Elman(3, 4), "diagonal")
    with pytest.raises(ValueError, match="use 'rtrl'"):
        rtrl.sequence_grad(Elman(3, 4), Elman(3, 4).init(jax.random.PRNGKey(0)), jnp.zeros((2, 3)), jnp.zeros((2, 4)),
                           lambda h, y: jnp.sum(h), method="diagonal")


@dataclasses.dataclass(frozen=True)
class UndeclaredLeaky(Cell):
    """Element-wise, but it does not say so."""

    def init(self, key, dtype=None):
        return {"W": glorot(key, (self.input_size, self.hidden_size), dtype or jnp.zeros(()).dtype)}

    def step(self, params, carry, x):
        h = 0.5 * carry + jnp.tanh(x @ params["W"])
        return h, h


def test_an_element_wise_cell_that_does_not_declare_itself_is_told_how():
    with pytest.raises(ValueError, match="does not declare its element-wise structure .*ElementwiseCell"):
        rtrl.online(UndeclaredLeaky(3, 4), "diagonal")
