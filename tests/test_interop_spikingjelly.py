"""The SpikingJelly column of the NIR matrix (tests/interop_matrix.py, docs/interop.md): rtrl's exports run by
SpikingJelly's importer, and SpikingJelly's exports read by ``from_nir``, spike for spike over 200 steps; each
refusal shown. Skipped where the ``interop`` extra is not installed (SpikingJelly needs Python 3.11)."""

import numpy as np
import pytest

REASON = "needs the interop extra: pip install 'rtrl[interop]' (torch CPU, spikingjelly; Python >= 3.11)"
torch = pytest.importorskip("torch", reason=REASON)
pytest.importorskip("spikingjelly", reason=REASON)
from spikingjelly.activation_based import functional, layer, neuron  # noqa: E402
from spikingjelly.activation_based.nir_exchange import export_to_nir, import_from_nir  # noqa: E402
from spikingjelly.activation_based.nir_exchange.to_nir import _ModuleMapper  # noqa: E402

from interop_matrix import EXPORT, IMPORT, cells  # noqa: E402
from interop_run import inputs, network, rtrl_spikes, spiking  # noqa: E402
from rtrl.cells import IIR2, LIF, SpikingIIR2  # noqa: E402
from rtrl.export import from_nir, to_nir  # noqa: E402

DT = 1e-4  # SpikingJelly's default, which both its importer and its exporter assume
ZERO = torch.zeros(1, 8, dtype=torch.float64)  # the example input its exporter traces the (float64) network with


def in_spikingjelly(cell, params, target="spikingjelly"):
    """rtrl's spikes and SpikingJelly's for rtrl's graph (run step by step in float64, its state passed on)."""
    xs = inputs(cell.input_size, 2)
    module = import_from_nir(to_nir(cell, params, dt=DT, target=target), dt=DT, dtype=torch.float64)
    state, out = None, []
    with torch.no_grad():
        for x in torch.as_tensor(np.array(xs)):
            spikes, state = module(x, state)
            out.append(spikes.numpy())
    return rtrl_spikes(cell, params, xs), np.array(out, np.float64)


def exported(cell, decay=None):
    expected, got = in_spikingjelly(cell, network(cell, decay=decay))
    spiking(expected)
    np.testing.assert_array_equal(got, expected)


def sj_network(make, gain=3.0):
    torch.manual_seed(0)
    net = torch.nn.Sequential(layer.Linear(8, 16), make()).double()
    with torch.no_grad():
        net[0].weight.mul_(gain)
    return net


def in_rtrl(net):
    """SpikingJelly's spikes and rtrl's for SpikingJelly's export of ``net``."""
    cell, params = from_nir(export_to_nir(net, ZERO, dt=DT), dt=DT)
    xs = inputs(8, 5)
    functional.reset_net(net)
    with torch.no_grad():
        got = np.array([net(x).numpy() for x in torch.as_tensor(np.array(xs))], np.float64)
    return got, rtrl_spikes(cell, params, xs)


def imported(make, gain=3.0):
    got, expected = in_rtrl(sj_network(make, gain))
    spiking(expected)
    np.testing.assert_array_equal(got, expected)


def recurrent_export_fails(make):
    net = torch.nn.Sequential(layer.Linear(8, 16), layer.LinearRecurrentContainer(make(), 16, 16))
    with pytest.raises(torch.fx.proxy.TraceError):
        export_to_nir(net, torch.zeros(1, 8), dt=DT)


def reset_refused(cell, match):
    params = network(cell)
    with pytest.raises(ValueError, match=match):
        to_nir(cell, params, target="spikingjelly")
    expected, got = in_spikingjelly(cell, params, target="nir")  # what it would run: other spikes
    spiking(expected)
    assert np.any(got != expected)


def differs(make):
    """SpikingJelly's export of a network that spikes runs differently in rtrl."""
    got, expected = in_rtrl(sj_network(make))
    spiking(got)
    assert np.any(got != expected)


def soft_reset_refused():
    with pytest.raises(NotImplementedError, match="soft reset"):
        export_to_nir(sj_network(lambda: neuron.LIFNode(tau=4.0, v_reset=None)), ZERO)


def lif_per_neuron():
    for options, match in (({"leak": tuple(np.linspace(0.6, 0.95, 16))}, "one leak for all"),
                           ({"threshold": tuple(np.linspace(0.6, 1.4, 16))}, "one threshold for all")):
        cell = LIF(8, 16, reset="value", **options)
        with pytest.raises(ValueError, match=match):
            to_nir(cell, network(cell), target="spikingjelly")
        with pytest.raises(ValueError, match="must be uniform"):  # its importer's own refusal of the NIR graph
            in_spikingjelly(cell, network(cell), target="nir")
    cuba = SpikingIIR2(8, 16, reset="value", leak=0.8)
    with pytest.raises(ValueError, match="one synaptic decay for all"):
        to_nir(cuba, network(cuba, decay=np.linspace(0.3, 0.7, 16)), target="spikingjelly")


def sj_fields_are_uniform():
    graph = export_to_nir(sj_network(lambda: neuron.LIFNode(tau=4.0, v_reset=0.0)), ZERO, dt=DT)
    lif = next(node for node in graph.nodes.values() if type(node).__name__ == "LIF")
    assert all(np.unique(getattr(lif, name)).size == 1 for name in ("tau", "r", "v_threshold", "v_reset"))


def li_refused():
    cell = IIR2(8, 16, activation="identity")
    params = network(cell, decay=0.5)
    with pytest.raises(ValueError, match="IIR2 has no spikingjelly counterpart"):
        to_nir(cell, params, target="spikingjelly")
    with pytest.raises(Exception, match="LI"):  # its importer's own: no mapping for the node
        import_from_nir(to_nir(cell, params, dt=DT), dt=DT)


def sj_exports_spiking_neurons_only():
    mapper = _ModuleMapper(torch.nn.Sequential(layer.Linear(8, 16)), torch.zeros(1, 8), dt=DT)
    neurons = sorted(kind.__name__ for kind in mapper.map_dict if issubclass(kind, neuron.BaseNode))
    assert neurons == ["CUBALIFNode", "IFNode", "LIFNode", "ParametricLIFNode"]


CHECKS = {
    ("LIF, reset to 0", EXPORT): lambda: exported(LIF(8, 16, reset="value", leak=0.9)),
    ("LIF, reset to 0", IMPORT): lambda: [imported(lambda: neuron.LIFNode(tau=4.0, decay_input=True, v_reset=0.0),
                                                   gain=8.0),
                                          imported(lambda: neuron.LIFNode(tau=4.0, decay_input=False, v_reset=0.0,
                                                                          v_threshold=0.8))],
    ("LIF, reset to 0, recurrent", EXPORT): lambda: exported(LIF(8, 16, reset="value", leak=0.9, recurrent=True)),
    ("LIF, reset to 0, recurrent", IMPORT): lambda: recurrent_export_fails(lambda: neuron.LIFNode(v_reset=0.0)),
    ("IF, reset to 0", EXPORT): lambda: exported(LIF(8, 16, reset="value", leak=1.0)),
    ("IF, reset to 0", IMPORT): lambda: imported(lambda: neuron.IFNode(v_reset=0.0, v_threshold=1.2)),
    ("CubaLIF, reset to 0", EXPORT): lambda: exported(SpikingIIR2(8, 16, reset="value", leak=0.8), decay=0.5),
    ("CubaLIF, reset to 0", IMPORT): lambda: imported(lambda: neuron.CUBALIFNode(c_decay=0.5, v_decay=0.75,
                                                                                 v_reset=0.0)),
    ("CubaLIF, reset to 0, recurrent", EXPORT): lambda: exported(SpikingIIR2(8, 16, reset="value", leak=0.8,
                                                                             recurrent=True), decay=0.5),
    ("CubaLIF, reset to 0, recurrent", IMPORT): lambda: recurrent_export_fails(
        lambda: neuron.CUBALIFNode(c_decay=0.5, v_decay=0.75, v_reset=0.0)),
    ("IF, reset to v_reset != 0", EXPORT): lambda: reset_refused(LIF(8, 16, reset="value", leak=1.0, v_reset=-0.3),
                                                                 "v_reset=0"),
    ("IF, reset to v_reset != 0", IMPORT): lambda: differs(lambda: neuron.IFNode(v_reset=-0.3)),
    ("LIF, reset by subtraction", EXPORT): lambda: reset_refused(LIF(8, 16, reset="subtract", leak=0.9),
                                                                 "reset='subtract'"),
    ("LIF, reset by subtraction", IMPORT): soft_reset_refused,
    ("LIF, per-neuron leak or threshold", EXPORT): lif_per_neuron,
    ("LIF, per-neuron leak or threshold", IMPORT): sj_fields_are_uniform,
    ("LI (no spikes)", EXPORT): li_refused,
    ("LI (no spikes)", IMPORT): sj_exports_spiking_neurons_only,
}


def test_every_cell_of_the_matrix_has_its_check():
    assert list(CHECKS) == cells("spikingjelly")


@pytest.mark.parametrize("row, direction", list(CHECKS))
def test_the_cell_holds_in_spikingjelly(row, direction):
    CHECKS[row, direction]()
