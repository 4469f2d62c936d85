"""Cells side by side (``rtrl.cells.Parallel``): inputs split or shared, outputs concatenated, the members' closed-form
traces and outputs as the cell's own only where every member has them, and every exact method equal to BPTT."""

import jax.numpy as jnp
import numpy as np
import pytest

import rtrl
from oracle import EXACT_TOL, draw_carry, draw_params, draw_problem, reset_error, worst_error
from rtrl.capabilities import HandDerivedTraces, HasOutput
from rtrl.cells import GRU, RTU, Elman, MinGRU, Parallel


def test_sizes_and_the_step_is_each_member_on_its_own_input():
    cell = Parallel((Elman(2, 3), MinGRU(4, 5)))
    assert (cell.input_size, cell.hidden_size) == (6, 8)
    params, xs, _ = draw_problem(cell, 1, (2,), seed=0)
    carry = draw_carry(cell, (2,), seed=1)
    (c0, c1), h = cell.step(params, carry, xs[0])
    e0, h0 = Elman(2, 3).step(params["part0"], carry[0], xs[0][:, :2])
    e1, h1 = MinGRU(4, 5).step(params["part1"], carry[1], xs[0][:, 2:])
    np.testing.assert_array_equal(c0, e0)
    np.testing.assert_array_equal(c1["h"] if isinstance(c1, dict) else c1, e1["h"] if isinstance(e1, dict) else e1)
    np.testing.assert_array_equal(h, jnp.concatenate([h0, h1], axis=-1))


def test_a_shared_input_reaches_every_member_whole():
    cell = Parallel((Elman(3, 2), Elman(3, 4)), shared_input=True)
    assert (cell.input_size, cell.hidden_size) == (3, 6)
    params, xs, _ = draw_problem(cell, 1, (), seed=2)
    _, h = cell.step(params, cell.initial_carry(), xs[0])
    np.testing.assert_array_equal(h[2:], Elman(3, 4).step(params["part1"], Elman(3, 4).initial_carry(), xs[0])[1])


def test_capabilities_are_the_cells_only_where_every_member_has_them():
    assert isinstance(Parallel((RTU(2, 4), MinGRU(3, 2))), HandDerivedTraces)
    assert isinstance(Parallel((RTU(2, 4), MinGRU(3, 2))), HasOutput)
    assert not isinstance(Parallel((RTU(2, 4), GRU(3, 2))), HandDerivedTraces)  # GRU has no closed-form traces
    assert rtrl.methods.resolve("auto", Parallel((RTU(2, 4), RTU(2, 4)))).name == "closed_form"
    assert rtrl.methods.resolve("auto", Parallel((Elman(2, 3), GRU(3, 2)))).name == "rtrl"


def test_bad_construction_and_step_arguments():
    with pytest.raises(ValueError, match="non-empty sequence of cells"):
        Parallel(())
    with pytest.raises(ValueError, match="shared_input needs cells of one input_size.*\\[2, 3\\]"):
        Parallel((Elman(2, 3), Elman(3, 3)), shared_input=True)
    with pytest.raises(ValueError, match="shared_input must be True or False"):
        Parallel((Elman(2, 3),), shared_input="yes")
    cell = Parallel((Elman(2, 3), Elman(1, 2)))
    params = draw_params(cell, seed=0)
    with pytest.raises(ValueError, match=r"keys \['part0', 'part1'\]"):
        cell.step({"part0": params["part0"]}, cell.initial_carry(), jnp.ones(3))
    with pytest.raises(ValueError, match="tuple of the cells' carries"):
        cell.step(params, jnp.zeros(5), jnp.ones(3))
    with pytest.raises(ValueError, match="input_size=3"):
        cell.step(params, cell.initial_carry(), jnp.ones(2))


@pytest.mark.parametrize("cells, shared, methods", [
    ((RTU(3, 4, output_map="concat"), RTU(3, 4, output_map="concat")), True, ("closed_form", "diagonal", "rtrl")),
    ((RTU(2, 4), MinGRU(3, 5)), False, ("closed_form", "rtrl")),
    ((Elman(2, 3), GRU(3, 2)), False, ("rtrl",)),
], ids=["rtu-pair-shared", "rtu-mingru", "elman-gru"])
def test_every_exact_method_equals_bptt_from_zero_and_a_given_carry(cells, shared, methods):
    cell = Parallel(cells, shared_input=shared)
    params, xs, ys = draw_problem(cell, 12, (2,), seed=3)
    carries = (None, draw_carry(cell, (2,), seed=4))
    error, where = worst_error(cell, methods, params, xs, ys, carries, (1, 5, 12))
    assert error <= EXACT_TOL, where


def test_closed_form_online_through_a_reset_equals_bptt():
    cell = Parallel((RTU(2, 4, output_map="concat"), MinGRU(2, 3)), shared_input=True)
    params, xs, ys = draw_problem(cell, 10, (2,), seed=5)
    assert reset_error(cell, "closed_form", params, xs, ys, reset_at=4) <= EXACT_TOL
