"""minGRU: its step follows its equations (NumPy), and every exact method equals BPTT (float64, zero and given
carry, resets, a long sequence)."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rtrl
from oracle import EXACT_TOL, perturbed, random_carry, random_problem, reset_error, worst_error
from rtrl.cells import MinGRU

EXACT = ("closed_form", "diagonal", "rtrl")


def test_registered_and_builds_from_sizes_alone():
    assert rtrl.cells.CELLS["mingru"] is MinGRU
    cell = MinGRU(3, 4)
    params = cell.init(jax.random.PRNGKey(0))
    assert {k: v.shape for k, v in params.items()} == {"W_z": (3, 4), "b_z": (4,), "W_h": (3, 4), "b_h": (4,)}
    assert rtrl.inspect(cell).method == "closed_form"


def test_step_follows_its_equations():
    """One step against the equations written in NumPy from the paper's notation."""
    cell = MinGRU(3, 4)
    rng = np.random.default_rng(0)
    p = {k: rng.normal(size=s) for k, s in cell.param_shapes().items()}
    x, h = rng.normal(size=(2, 3)), rng.normal(size=(2, 4))
    z = 1 / (1 + np.exp(-(x @ p["W_z"] + p["b_z"])))
    expected = (1 - z) * h + z * (x @ p["W_h"] + p["b_h"])
    carry, out = cell.step({k: jnp.asarray(v) for k, v in p.items()}, {"h": jnp.asarray(h)}, jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(carry["h"]), expected, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-12)


@pytest.mark.parametrize(("batch_shape", "D", "N", "seed"), [((), 3, 7, 31), ((3,), 2, 5, 32)])
def test_exact_methods_equal_bptt(batch_shape, D, N, seed):
    """For T in {1, 2, 3, 300}, from a zero and from a given carry; the gate's biases are moved so that some
    neurons keep their state for long (1 - z near 1) and others forget fast."""
    cell = MinGRU(D, N)
    params, xs, ys = random_problem(cell, 300, batch_shape, seed)
    params = perturbed(params, seed + 1)
    params = {**params, "b_z": jnp.linspace(-4.0, 2.0, N, dtype=params["b_z"].dtype)}
    carries = (cell.initial_carry(batch_shape), random_carry(cell, batch_shape, seed + 2))
    error, where = worst_error(cell, EXACT, params, xs, ys, carries, (1, 2, 3, 300))
    assert error <= EXACT_TOL, where


def test_reset_mid_sequence_stays_exact():
    cell = MinGRU(2, 5)
    params, xs, ys = random_problem(cell, 20, (2,), 41)
    assert reset_error(cell, "closed_form", perturbed(params, 42), xs, ys, 7) <= EXACT_TOL


def test_chrono_initialisation_spreads_the_timescales():
    """max_timescale = T: z = 1/tau at a zero input, tau within [2, T]; 0 (default) keeps b_z at zero; a bad value
    is a ValueError naming the option."""
    b = MinGRU(3, 500, max_timescale=100.0).init(jax.random.PRNGKey(1), jnp.float64)["b_z"]
    tau = 1 / np.asarray(jax.nn.sigmoid(b))
    assert tau.min() >= 2 - 1e-9 and tau.max() <= 100 + 1e-9 and tau.max() > 90 and tau.min() < 5
    assert not MinGRU(3, 4).init(jax.random.PRNGKey(1))["b_z"].any()
    with pytest.raises(ValueError, match="max_timescale"):
        MinGRU(3, 4, max_timescale=-1.0)


def test_min_timescale_keeps_fast_neurons():
    """min_timescale = T0 < 2: tau uniform within [T0, T], so some neurons start faster than the default's 2 (z above
    1/2); T0 of 1 or less (a neuron that does not even keep its input) is a ValueError naming the option."""
    b = MinGRU(3, 2000, max_timescale=8.0, min_timescale=1.1).init(jax.random.PRNGKey(1), jnp.float64)["b_z"]
    tau = 1 / np.asarray(jax.nn.sigmoid(b))
    assert tau.min() >= 1.1 - 1e-9 and tau.max() <= 8 + 1e-9 and tau.min() < 1.2 and tau.max() > 7.9
    assert abs(np.mean(tau < 2) - 0.9 / 6.9) < 0.03  # the share below the default's 2: uniform on [1.1, 8]
    with pytest.raises(ValueError, match="min_timescale"):
        MinGRU(3, 4, max_timescale=8.0, min_timescale=1.0)


@pytest.mark.parametrize("options, said", [
    ({"min_timescale": 50}, "min_timescale=50 does nothing here: the chrono initialisation needs max_timescale above "
                            "min_timescale=50, got max_timescale=0.0"),
    ({"min_timescale": 50, "max_timescale": 30}, "min_timescale=50 does nothing here"),
    ({"max_timescale": 1.5}, "max_timescale=1.5 does nothing here: the chrono initialisation needs max_timescale "
                             "above min_timescale=2.0"),
    ({"max_timescale": 2}, "max_timescale=2 does nothing here"),
])
def test_a_timescale_the_initialisation_does_not_read_is_refused_in_one_line(options, said):
    """Without a ``max_timescale`` above it, ``min_timescale`` is never read (``b_z = 0``), nor a ``max_timescale``
    at or below it [accepted: the option silently ignored]."""
    with pytest.raises(ValueError, match=re.escape(said)):
        MinGRU(2, 3, **options)


def test_the_timescales_read_are_accepted_and_set_b_z_by_hand():
    """``min_timescale`` 2 and ``max_timescale`` 0 as given (the defaults, an int among them) are accepted; with
    ``max_timescale`` 3 and ``min_timescale`` 2.5 every ``b_z = -log(tau - 1)`` for a ``tau`` in [2.5, 3]."""
    assert MinGRU(2, 3, min_timescale=2, max_timescale=0) == MinGRU(2, 3)
    b_z = np.asarray(MinGRU(2, 3, max_timescale=3, min_timescale=2.5).init(jax.random.PRNGKey(0))["b_z"])
    assert np.all((b_z <= -np.log(1.5) + 1e-6) & (b_z >= -np.log(2.0) - 1e-6))
