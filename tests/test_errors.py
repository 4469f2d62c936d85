"""Bad input gets a ValueError that names the problem."""

import dataclasses

import jax
import jax.numpy as jnp
import pytest

import rtrl
from oracle import random_problem, squared_error
from rtrl.optim import obgd


@pytest.fixture
def problem():
    cell = rtrl.cells.Elman(3, 4)
    params, xs, ys = random_problem(cell, 5, (2,), seed=0)
    return cell, params, xs, ys


def test_wrong_input_size(problem):
    cell, params, xs, ys = problem
    with pytest.raises(ValueError, match="input_size=3"):
        rtrl.sequence_grad(cell, params, xs[..., :2], ys, squared_error)
    with pytest.raises(ValueError, match="input_size=3"):
        cell.step(params, cell.initial_carry((2,)), xs[0, :, :2])


def test_empty_sequence(problem):
    cell, params, xs, ys = problem
    with pytest.raises(ValueError, match="T = 0"):
        rtrl.sequence_grad(cell, params, xs[:0], ys[:0], squared_error)


def test_targets_of_another_length(problem):
    cell, params, xs, ys = problem
    with pytest.raises(ValueError, match="targets must have leading dimension T = 5"):
        rtrl.sequence_grad(cell, params, xs, ys[:4], squared_error)


def test_unknown_method(problem):
    cell, params, xs, ys = problem
    with pytest.raises(ValueError, match="unknown method 'rtlr'"):
        rtrl.sequence_grad(cell, params, xs, ys, squared_error, method="rtlr")
    with pytest.raises(ValueError, match="unknown method"):
        rtrl.online(cell, "nope")


@dataclasses.dataclass(frozen=True)
class Leaky(rtrl.cells.Cell):
    """A cell with no hand-derived traces."""

    def init(self, key, dtype=None):
        return {"W": jax.random.normal(key, (self.input_size, self.hidden_size), dtype or jnp.float64)}

    def step(self, params, carry, x):
        h = 0.5 * carry + x @ params["W"]
        return h, h


def test_method_that_does_not_apply():
    with pytest.raises(ValueError, match="'closed_form' needs hand-derived traces, and Leaky provides none"):
        rtrl.online(Leaky(2, 2), "closed_form")


def test_bptt_has_no_online_step(problem):
    cell = problem[0]
    with pytest.raises(ValueError, match="no online step"):
        rtrl.online(cell, "bptt")


@pytest.mark.parametrize("kwargs, match", [
    ({"input_size": 0, "hidden_size": 3}, "input_size must be a positive integer"),
    ({"input_size": 2, "hidden_size": -1}, "hidden_size must be a positive integer"),
    ({"input_size": 2, "hidden_size": 3, "activation": "tahn"}, "activation must be one of"),
])
def test_bad_cell_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rtrl.cells.Elman(**kwargs)


def test_params_of_the_wrong_shape(problem):
    cell, params, xs, ys = problem
    bad = dict(params, R=jnp.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"params\['R'\] of Elman must have shape \(4, 4\)"):
        rtrl.sequence_grad(cell, bad, xs, ys, squared_error)


def test_reset_with_a_mask_of_the_wrong_shape(problem):
    cell, params, _, _ = problem
    learner = rtrl.online(cell, "rtrl")
    state = learner.init(params, batch_shape=(2,))
    with pytest.raises(ValueError, match="done must be a bool array of the batch shape"):
        learner.reset(state, jnp.array([True, False, True]))
    assert jax.tree.leaves(learner.reset(state, jnp.array([True, False])))


@pytest.mark.parametrize("kwargs, match", [
    ({"learning_rate": -1.0}, "learning_rate must be a positive finite number, got -1.0"),
    ({"learning_rate": float("inf")}, "learning_rate must be a positive finite number, got inf"),
    ({"kappa": 0.0}, "kappa must be a positive finite number, got 0.0"),
    ({"kappa": float("nan")}, "kappa must be a positive finite number, got nan"),
])
def test_obgd_names_its_bad_argument(kwargs, match):
    """ObGD's step size and bound are checked under their own names (it once said ``lr`` for ``learning_rate``
    and took an infinite one, every update then NaN). Mutation: ``not value > 0`` (inf passes) fails the inf case."""
    with pytest.raises(ValueError, match=match):
        obgd(**kwargs)
