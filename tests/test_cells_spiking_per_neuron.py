"""Heterogeneous neurons: ``leak``, ``threshold``, ``v_reset`` (and ALIF's ``adaptation``, ``adaptation_decay``) as
one value per neuron. A population with per-neuron options is the same as single neurons side by side, each built
with its own scalar options; every exact method equals BPTT through the surrogate with them; bad shapes are refused
by name; the options round-trip through JSON as ``--cell-arg`` and config.json carry them.

Mutations tried by hand (each made a test below fail, then restored):
* the leak of the membrane's trace taken as its first entry (``leak[0]`` for all neurons): every exactness case
  without ``R``;
* the per-neuron vectors not laid along SpikingIIR2's neuron-major traces (``along`` returning them as they are):
  both SpikingIIR2 cases.

ALIF's case avoids a leak of exactly 0.8: ``diagonal``'s structure probe (``rtrl.structure.elementwise``) weighs
the carry leaves ``a, s, v`` by 1, 4/3, 5/3, and ``0.8 * 5/3 - 1 * 4/3 = 0`` hides ``v``'s dependence on the carry,
so ``diagonal`` refuses ``ALIF(3, 5, leak=0.8)`` (a scalar too; ``LIF`` with ``leak = 2/3`` likewise).
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from oracle import EXACT_TOL, random_carry, reset_error, worst_error
from rtrl.cells import ALIF, LIF, SpikingIIR2
from rtrl.cells.lookup import make_cell
from test_cells_spiking import T, spiking_problem

LEAK5 = (0.95, 0.9, 0.85, 0.6, 1.0)  # not 0.8: see the module docstring
THRESHOLD5 = (1.0, 0.7, 1.3, 0.9, 1.1)
V_RESET5 = (0.0, -0.2, 0.1, 0.3, -0.1)
LEARNT5 = (0.95, 0.9, 0.85, 0.6, 0.75)

CASES = {
    "lif_subtract": LIF(3, 5, leak=LEAK5, threshold=THRESHOLD5),
    "lif_value": LIF(3, 5, leak=LEAK5, threshold=THRESHOLD5, reset="value", v_reset=V_RESET5),
    "lif_none": LIF(3, 5, leak=LEAK5, threshold=(1.5, 2.0, 1.8, 1.2, 2.5), reset="none"),
    "lif_value_recurrent": LIF(3, 5, leak=LEAK5, reset="value", v_reset=V_RESET5, recurrent=True),
    "alif_value": ALIF(3, 5, leak=LEAK5, threshold=THRESHOLD5, reset="value", v_reset=V_RESET5,
                       adaptation=(0.0, 0.1, 0.5, 0.3, 0.2), adaptation_decay=(0.9, 0.95, 0.5, 0.99, 0.8)),
    "alif_subtract_mixed": ALIF(3, 5, leak=LEAK5, adaptation=(0.2, 0.1, 0.5, 0.3, 0.2), lif_neurons=2),
    "iir2_value": SpikingIIR2(2, 4, leak=(0.9, 0.5, 0.8, 1.0), threshold=(1.0, 0.8, 1.2, 0.9), reset="value",
                              v_reset=(0.1, 0.0, -0.1, 0.2)),
    "iir2_subtract_square": SpikingIIR2(4, 4, leak=(0.9, 0.5, 0.8, 1.0), threshold=(1.0, 0.8, 1.2, 0.9)),
    # learnt time constants: log_tau a parameter, leak = exp(-exp(-log_tau))
    "lif_learn_tau": LIF(3, 5, leak=LEARNT5, threshold=THRESHOLD5, learn_tau=True),
    "lif_value_learn_tau": LIF(3, 5, leak=LEARNT5, reset="value", v_reset=V_RESET5, learn_tau=True),
    "lif_learn_tau_recurrent": LIF(3, 5, leak=LEARNT5, reset="value", learn_tau=True, recurrent=True),
    "alif_learn_tau": ALIF(3, 5, leak=0.9, reset="value", adaptation=(0.0, 0.1, 0.5, 0.3, 0.2), learn_tau=True),
    "iir2_learn_tau": SpikingIIR2(2, 4, leak=(0.9, 0.5, 0.85, 0.7), reset="value", learn_tau=True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_methods_equal_bptt_with_per_neuron_options(name):
    """``auto``, ``rtrl`` (and the closed form and ``diagonal`` without ``R``) against BPTT, T in {1, 2, 200}, from a
    zero and a random carry: every exact method that applies (``chunked`` takes ``ElementwiseCell`` subclasses only,
    and refuses the spiking cells by name)."""
    cell = CASES[name]
    methods = ("auto", "rtrl") + (() if cell.recurrent else ("closed_form", "diagonal"))
    params, xs, ys = spiking_problem(cell, (2,), 21)
    carries = (cell.initial_carry((2,)), random_carry(cell, (2,), 22))
    error, where = worst_error(cell, methods, params, xs, ys, carries, (1, 2, T))
    assert error <= EXACT_TOL, where


@pytest.mark.parametrize("method", ["closed_form", "rtrl"])
def test_online_learner_reset_half_way_equals_bptt(method):
    cell = CASES["alif_value"]
    params, xs, ys = spiking_problem(cell, (2,), 23)
    assert reset_error(cell, method, params, xs[:40], ys[:40], reset_at=17) <= EXACT_TOL


def run_spikes(cell, params, xs):
    carry, out = cell.initial_carry(xs.shape[1:2]), []
    for x in xs:
        carry, s = cell.step(params, carry, x)
        out.append((np.asarray(s), np.asarray(carry["v"])))
    return np.stack([s for s, _ in out]), np.stack([v for _, v in out])


@pytest.mark.parametrize("name", ["lif_value", "alif_value", "iir2_value", "lif_subtract"])
def test_a_population_is_its_neurons_side_by_side(name):
    """Neuron k of the per-neuron cell, run alone as a one-neuron cell with the scalar options of entry k (and column
    k of the parameters), gives the same spikes and membranes over 60 steps."""
    cell = CASES[name]
    params, xs, _ = spiking_problem(cell, (2,), 24)
    xs = xs[:60]
    spikes, membranes = run_spikes(cell, params, xs)
    per_neuron = ("leak", "threshold", "v_reset", "adaptation", "adaptation_decay")
    for k in range(cell.hidden_size):
        options = {o: getattr(cell, o)[k] for o in per_neuron if isinstance(getattr(cell, o, None), tuple)}
        if isinstance(cell, ALIF):
            options["lif_neurons"] = int(k < cell.lif_neurons)
        one = type(cell)(cell.input_size, 1, **{**{o: getattr(cell, o) for o in ("reset", "surrogate")}, **options})
        alone = {n: p[..., k:k + 1] for n, p in params.items()}
        s, v = run_spikes(one, alone, xs)
        np.testing.assert_array_equal(s[..., 0], spikes[..., k])
        np.testing.assert_allclose(v[..., 0], membranes[..., k], rtol=1e-12, atol=1e-12)
    assert 0 < spikes.mean() < 1


def test_two_neurons_by_hand():
    """x = 1, W = (0.6, 0.5), leak (0.9, 0.5), threshold (1, 0.9), reset to (0.2, -0.1): neuron 0 as in
    test_cells_spiking_resets (v = 0.6, then 1.14 fires and is set to 0.2, then 0.78, then 1.302 fires again);
    neuron 1: v = 0.5, then 0.25 + 0.5 = 0.75, then 0.375 + 0.5 = 0.875, then 0.4375 + 0.5 = 0.9375 fires and is
    set to -0.1."""
    cell = LIF(1, 2, leak=(0.9, 0.5), threshold=(1.0, 0.9), reset="value", v_reset=(0.2, -0.1))
    params = {"W": jnp.array([[0.6, 0.5]]), "b": jnp.zeros(2)}
    spikes, membranes = run_spikes(cell, params, jnp.ones((4, 1, 1)))
    np.testing.assert_array_equal(spikes[:, 0], [[0, 0], [1, 0], [0, 0], [1, 1]])
    np.testing.assert_allclose(membranes[:, 0], [[0.6, 0.5], [0.2, 0.75], [0.78, 0.875], [0.2, -0.1]], atol=1e-12)


@pytest.mark.parametrize(("option", "value", "match"), [
    ("leak", (0.9, 0.8), r"leak must be one number or one per neuron, shape \(hidden_size,\) = \(3,\)"),
    ("threshold", np.ones((3, 1)), r"threshold must be one number or one per neuron"),
    ("v_reset", [0.0, float("nan"), 0.0], r"v_reset\[1\] must be a finite number"),
    ("leak", [0.9, 1.2, 0.5], r"leak\[1\] must be in \(0.0, 1.0\]"),
    ("threshold", (1.0, 0.0, 1.0), r"threshold\[1\] must be in \(0.0, inf\)"),
    ("threshold", ["1", "2", "3"], r"threshold must be a number or 3 numbers"),
    ("threshold", (True, 1.0, 1.0), r"threshold\[0\] must be a finite number"),
])
def test_bad_per_neuron_options_are_refused_by_name(option, value, match):
    with pytest.raises(ValueError, match=match):
        LIF(2, 3, **{option: value})


@pytest.mark.parametrize(("option", "value"), [("adaptation", (0.1, -0.1, 0.0)), ("adaptation_decay", (0.5, 0.5)),
                                               ("adaptation_decay", (0.5, 1.0, 0.5))])
def test_bad_adaptation_is_refused_by_name(option, value):
    with pytest.raises(ValueError, match=option):
        ALIF(2, 3, **{option: value})


def test_arrays_become_tuples_and_the_cell_stays_a_value():
    """A list, a NumPy or a JAX array give the same cell, hashable, equal by value; a scalar stays a float; a 0-d
    array is a scalar."""
    cells = [LIF(2, 3, leak=v) for v in ([0.9, 0.8, 0.7], np.array([0.9, 0.8, 0.7]), (0.9, 0.8, 0.7))]
    cells.append(LIF(2, 3, leak=jnp.array([0.9, 0.8, 0.7], jnp.float64)))
    assert all(c == cells[0] and hash(c) == hash(cells[0]) for c in cells)
    assert cells[0].leak == (0.9, 0.8, 0.7) and all(type(v) is float for v in cells[0].leak)
    assert LIF(2, 3, leak=np.float64(0.5)).leak == 0.5 and LIF(2, 3, threshold=np.array(2)).threshold == 2.0
    assert LIF(2, 3, leak=(0.9, 0.9, 0.9)) != LIF(2, 3, leak=0.9)


def test_per_neuron_options_round_trip_through_json_as_cell_args():
    """``--cell-arg leak=[...]`` parses as JSON (a list), config.json stores the list: the same cell back."""
    args = {"leak": [0.9, 0.8, 0.7], "threshold": [1.0, 1.5, 0.5], "reset": "value", "v_reset": [0.0, 0.1, -0.1],
            "adaptation": [0.0, 0.2, 0.4]}
    cell = make_cell("alif", json.loads(json.dumps(args)), 2, 3)
    assert cell == ALIF(2, 3, **{k: tuple(v) if isinstance(v, list) else v for k, v in args.items()})
    assert make_cell("alif", json.loads(json.dumps({k: getattr(cell, k) for k in args})), 2, 3) == cell


def test_float32_keeps_its_dtype_with_per_neuron_options():
    cell = CASES["alif_value"]
    params = cell.init(jax.random.PRNGKey(0), jnp.float32)
    carry, h = cell.step(params, cell.initial_carry((2,), jnp.float32), jnp.ones((2, 3), jnp.float32))
    assert h.dtype == jnp.float32 and all(leaf.dtype == jnp.float32 for leaf in carry.values())


def test_a_learnt_time_constant_starts_at_the_leak_and_stays_a_decay():
    """``log_tau`` starts at ``log(-1/log(leak))``; any value gives a leak in (0, 1); the cell with it equals the cell
    with that leak as an option; its gradient is not zero on neurons that fire."""
    cell = CASES["lif_value_learn_tau"]
    params = cell.init(jax.random.PRNGKey(0))
    np.testing.assert_allclose(np.exp(-np.exp(-params["log_tau"])), LEARNT5, rtol=1e-12)
    fixed = LIF(3, 5, leak=LEARNT5, reset="value", v_reset=V_RESET5)
    fixed_params = {k: v for k, v in params.items() if k != "log_tau"}
    xs = spiking_problem(fixed, (2,), 25)[1][:50]
    np.testing.assert_array_equal(run_spikes(cell, params, xs)[0], run_spikes(fixed, fixed_params, xs)[0])
    for log_tau in (-50.0, 0.0, 50.0):
        leak = cell.leak_of({"log_tau": jnp.full(5, log_tau)}, xs)
        assert np.all((np.asarray(leak) >= 0) & (np.asarray(leak) <= 1))

    def loss(p):
        _, h = jax.lax.scan(lambda c, x: cell.step(p, c, x), cell.initial_carry((2,)), xs)
        return jnp.sum(h)

    assert np.all(np.abs(np.asarray(jax.grad(loss)(params)["log_tau"])) > 0)


def test_learn_tau_is_refused_with_a_perfect_integrator():
    with pytest.raises(ValueError, match=r"learn_tau needs leak < 1 for every neuron"):
        LIF(2, 3, leak=(0.9, 1.0, 0.8), learn_tau=True)
    with pytest.raises(ValueError, match="learn_tau must be True or False"):
        LIF(2, 3, learn_tau="yes")


def test_eprop_with_learnt_time_constants_is_exact_but_for_the_reset():
    """Without ``R``, e-prop on a LIF with per-neuron options and ``learn_tau`` is the exact gradient of the same
    neurons with the spike in the reset detached (BPTT of a LIF written out here), ``log_tau`` included."""
    import rtrl
    from oracle import fast_sigmoid_heaviside

    cell = LIF(3, 5, leak=LEARNT5, threshold=THRESHOLD5, reset="value", v_reset=V_RESET5, learn_tau=True)
    params, xs, _ = spiking_problem(cell, (), 26)
    readout = jax.random.normal(jax.random.PRNGKey(7), (5, 2), jnp.float64)
    ys = jax.random.normal(jax.random.PRNGKey(8), xs.shape[:1] + (2,), jnp.float64)

    def loss(h, y):
        return 0.5 * jnp.sum((h @ readout - y) ** 2)

    learner = rtrl.online(cell, "eprop")
    eprop = rtrl.stream_grad(learner, params, learner.init(params), xs, ys, loss)[1]
    heaviside = fast_sigmoid_heaviside(cell.surrogate_scale, cell.surrogate_height)
    thr, vr = jnp.array(THRESHOLD5), jnp.array(V_RESET5)

    def total(p):
        def body(v, xy):
            d = jnp.exp(-jnp.exp(-p["log_tau"])) * v + xy[0] @ p["W"] + p["b"]
            s = heaviside(d - thr)
            return d + jax.lax.stop_gradient(s) * (vr - d), loss(s, xy[1])

        return jax.lax.scan(body, jnp.zeros(5), (xs, ys))[1].sum()

    detached = jax.grad(total)(params)
    for name in detached:
        np.testing.assert_allclose(eprop[name], detached[name], rtol=1e-10, atol=1e-10 * np.abs(detached[name]).max())
    assert np.abs(np.asarray(detached["log_tau"])).max() > 0


@pytest.mark.parametrize(("options", "message"), [
    ({"v_reset": 1.0}, r"neuron 0: v_reset=1.0, threshold=1.0"),
    ({"v_reset": (0.0, 0.5, 0.0), "threshold": (1.0, 0.4, 1.0)}, r"neuron 1: v_reset=0.5, threshold=0.4"),
])
def test_a_reset_to_a_value_at_or_above_the_threshold_is_refused(options, message):
    """With ``reset="value"`` only: the other resets do not read ``v_reset``, so there it is refused as an option that
    does nothing (``Cell.unread_options``), not as a reset above the threshold."""
    with pytest.raises(ValueError, match=r"v_reset must be below threshold with reset='value'.*" + message):
        LIF(2, 3, reset="value", **options)
    with pytest.raises(ValueError, match=r"v_reset=.* does nothing here: reset='subtract' sets no value"):
        LIF(2, 3, reset="subtract", **options)
