"""The spyx column of the NIR matrix (tests/interop_matrix.py, docs/interop.md): rtrl's exports run by
``spyx.nir.from_nir`` spike as rtrl does, one step later (spyx's neuron fires on the membrane before the input),
over 200 steps; spyx's exports read by ``from_nir``, and each refusal, shown. Skipped where the ``interop`` extra is
not installed (spyx needs Python 3.11)."""

import inspect

import numpy as np
import pytest

REASON = "needs the interop extra: pip install 'rtrl[interop]' (spyx; Python >= 3.11)"
spyx = pytest.importorskip("spyx", reason=REASON)
import spyx.nir as spyx_nir  # noqa: E402
from flax import nnx  # noqa: E402

from interop_matrix import EXPORT, IMPORT, cells  # noqa: E402
from interop_run import inputs, network, rtrl_spikes, spiking  # noqa: E402
from rtrl.cells import IIR2, LIF, SpikingIIR2  # noqa: E402
from rtrl.export import from_nir, to_nir  # noqa: E402

DT = 1.0  # spyx.nir.from_nir's default; its exporter's too


def in_spyx(cell, params, target="spyx"):
    """rtrl's spikes and spyx's for rtrl's graph."""
    xs = inputs(cell.input_size, 2)
    _, out = spyx_nir.from_nir(to_nir(cell, params, dt=DT, target=target), xs, dt=DT)
    return rtrl_spikes(cell, params, xs), np.asarray(out, np.float64)


def exported(cell):
    expected, got = in_spyx(cell, network(cell))
    spiking(expected)
    assert not np.any(got[0])
    np.testing.assert_array_equal(got[1:], expected[:-1])


def refused(cell, match, decay=None):
    params = network(cell, decay=decay)
    with pytest.raises(ValueError, match=match):
        to_nir(cell, params, target="spyx")
    expected, got = in_spyx(cell, params, target="nir")  # what it would run: other spikes, even one step later
    spiking(expected)
    assert np.any(got[1:] != expected[:-1])


def spyx_model(make):
    rngs = nnx.Rngs(0)
    model = spyx.nn.Sequential(nnx.Linear(8, 16, rngs=rngs), make(rngs))
    model.layers[0].kernel[...] = 3.0 * model.layers[0].kernel[...]
    return model


def spyx_graph(model):
    return spyx_nir.to_nir(model, {"input": np.array([8])}, {"output": np.array([16])}, dt=DT)


def differs(make):
    """spyx's export of a network that spikes runs differently in rtrl, whether or not one step apart."""
    model = spyx_model(make)
    cell, params = from_nir(spyx_graph(model), dt=DT)
    xs = inputs(8, 5)
    got, expected = np.asarray(spyx.nn.run(model, xs)[0], np.float64), rtrl_spikes(cell, params, xs)
    spiking(got)
    assert np.any(got != expected) and np.any(got[1:] != expected[:-1])


def lif_writes_beta_as_r():
    model = spyx_model(lambda rngs: spyx.nn.LIF((16,), rngs=rngs))
    lif = spyx_graph(model).nodes["layer_1"]
    np.testing.assert_allclose(lif.r, np.asarray(model.layers[1].beta[...]), rtol=1e-6)
    differs(lambda rngs: spyx.nn.LIF((16,), rngs=rngs))


def recurrent_refused():
    graph = spyx_graph(spyx_model(lambda rngs: spyx.nn.RLIF((16,), rngs=rngs)))
    with pytest.raises(ValueError, match="must have one input"):
        from_nir(graph, dt=DT)


def li_refused():
    cell = IIR2(8, 16, activation="identity")
    params = network(cell, decay=0.5)
    with pytest.raises(ValueError, match="IIR2 has no spyx counterpart"):
        to_nir(cell, params, target="spyx")
    with pytest.raises(ValueError, match="LI without a following nir.Threshold"):  # spyx's own refusal
        spyx_nir.from_nir(to_nir(cell, params, dt=DT), inputs(8, 2), dt=DT)


def psu_lif_refused():
    graph = spyx_graph(spyx_model(lambda rngs: spyx.nn.PSU_LIF((16,), rngs=rngs)))
    with pytest.raises(ValueError, match="Threshold"):
        from_nir(graph, dt=DT)


def no_reset_option():
    for kind in (spyx.nn.IF, spyx.nn.LIF, spyx.nn.CuBaLIF, spyx.nn.RLIF):
        assert not any("reset" in name for name in inspect.signature(kind).parameters), kind


LEAKS, THRESHOLDS = tuple(np.linspace(0.6, 0.97, 16)), tuple(np.linspace(0.6, 1.4, 16))
CHECKS = {
    ("LIF, reset by subtraction, per-neuron leak and threshold", EXPORT): lambda: exported(
        LIF(8, 16, leak=LEAKS, threshold=THRESHOLDS)),
    ("LIF, reset by subtraction, per-neuron leak and threshold", IMPORT): lif_writes_beta_as_r,
    ("LIF, reset by subtraction, recurrent", EXPORT): lambda: exported(LIF(8, 16, leak=0.9, recurrent=True)),
    ("LIF, reset by subtraction, recurrent", IMPORT): recurrent_refused,
    ("IF, reset by subtraction", EXPORT): lambda: exported(LIF(8, 16, leak=1.0)),
    ("IF, reset by subtraction", IMPORT): lambda: differs(lambda rngs: spyx.nn.IF((16,), threshold=1.2)),
    ("CubaLIF, reset by subtraction", EXPORT): lambda: refused(SpikingIIR2(8, 16, leak=0.8), "CuBaLIF", decay=0.5),
    ("CubaLIF, reset by subtraction", IMPORT): lambda: differs(lambda rngs: spyx.nn.CuBaLIF((16,), rngs=rngs)),
    ("LIF, reset to v_reset", EXPORT): lambda: refused(LIF(8, 16, reset="value", leak=0.9), "reset='subtract'"),
    ("LIF, reset to v_reset", IMPORT): no_reset_option,
    ("LI (no spikes)", EXPORT): li_refused,
    ("LI (no spikes)", IMPORT): psu_lif_refused,
}


def test_every_cell_of_the_matrix_has_its_check():
    assert list(CHECKS) == cells("spyx")


@pytest.mark.parametrize("row, direction", list(CHECKS))
def test_the_cell_holds_in_spyx(row, direction):
    CHECKS[row, direction]()
