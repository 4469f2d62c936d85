"""The Rockpool column of the NIR matrix (tests/interop_matrix.py, docs/interop.md): Rockpool 3.1's NIR module
against rtrl's, both directions, each refusal shown. Rockpool's neurons decay by ``exp(-dt/tau)`` per step, NIR's
forward Euler by ``1 - dt/tau`` (what rtrl writes and reads), so no cell maps; the tests show the two decays of the
same file. Skipped where the ``interop`` extra is not installed."""

import numpy as np
import pytest

REASON = "needs the interop extra: pip install 'rtrl[interop]' (torch CPU, rockpool)"
torch = pytest.importorskip("torch", reason=REASON)
pytest.importorskip("rockpool", reason=REASON)
from rockpool.nn.combinators import Sequential  # noqa: E402
from rockpool.nn.modules import LIFNeuronTorch, LIFTorch, LinearTorch  # noqa: E402
from rockpool.nn.modules.torch import nir as rockpool_nir  # noqa: E402

from interop_matrix import EXPORT, IMPORT, cells  # noqa: E402
from interop_run import network  # noqa: E402
from rtrl.cells import LIF, SpikingIIR2  # noqa: E402
from rtrl.export import from_nir, to_nir  # noqa: E402

DT = 1e-3  # Rockpool's default time step


def decays_differ(rockpool_decay, rtrl_leak, tau):
    """Rockpool's per-step decay is exp(-dt/tau); the same file's in rtrl (and NIR) is 1 - dt/tau."""
    np.testing.assert_allclose(rtrl_leak, 1 - DT / tau, rtol=1e-6)
    assert np.all(np.abs(np.asarray(rockpool_decay) - np.asarray(rtrl_leak)) > 1e-4)


def lif_import_fails():
    cell = LIF(8, 16, reset="value", leak=0.9)
    with pytest.raises(AttributeError, match="tau_mem"):
        rockpool_nir.from_nir(to_nir(cell, network(cell), dt=DT))


def cuba_in_rockpool():
    cell = SpikingIIR2(8, 16, reset="value", leak=0.8)
    graph = to_nir(cell, network(cell, decay=0.5), dt=DT)
    lif = rockpool_nir.from_nir(graph).get_submodule("neuron")
    tau = graph.nodes["neuron"].tau_mem
    decays_differ(torch.exp(-lif.dt / lif.tau_mem).detach().numpy(), np.full(16, 0.8), tau)


def rockpool_in_rtrl(neuron):
    graph = rockpool_nir.to_nir(Sequential(LinearTorch((8, 16)), neuron))
    cell, _ = from_nir(graph, dt=DT)
    tau = neuron.tau_mem.detach().numpy() * np.ones(16)
    decays_differ(np.exp(-DT / tau), np.broadcast_to(np.asarray(cell.leak), (16,)), tau)


CHECKS = {
    ("LIF", EXPORT): lif_import_fails,
    ("LIF", IMPORT): lambda: rockpool_in_rtrl(LIFNeuronTorch(16, dt=DT)),
    ("CubaLIF", EXPORT): cuba_in_rockpool,
    ("CubaLIF", IMPORT): lambda: rockpool_in_rtrl(LIFTorch(16, dt=DT)),
}


def test_every_cell_of_the_matrix_has_its_check():
    assert list(CHECKS) == cells("rockpool")


@pytest.mark.parametrize("row, direction", list(CHECKS))
def test_the_cell_holds_in_rockpool(row, direction):
    CHECKS[row, direction]()
