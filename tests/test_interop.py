"""rtrl's NIR exports run in the real snnTorch and Norse (the ``interop`` extra: torch CPU, snntorch, nirtorch,
norse) with rtrl's spikes, exactly, over 200 steps: a feed-forward LIF with heterogeneous leaks, a recurrent LIF, a
feed-forward and a recurrent CubaLIF (first-order SpikingIIR2), written by ``to_nir(target=...)`` and by ``rtrl
export --target snntorch|norse`` from trained runs, and loaded with each library's own importer as docs/spiking.md
says. And the reverse: graphs those libraries write, read by ``from_nir``, spike in rtrl as in the library.

Skipped, with the reason, where the extra is not installed."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

REASON = "needs the interop extra: pip install 'rtrl[interop]' (torch CPU, snntorch, nirtorch, norse)"
torch = pytest.importorskip("torch", reason=REASON)
snntorch = pytest.importorskip("snntorch", reason=REASON)
pytest.importorskip("nirtorch", reason=REASON)
norse_torch = pytest.importorskip("norse.torch", reason=REASON)
nir = pytest.importorskip("nir", reason=REASON)
from snntorch.export_nir import export_to_nir  # noqa: E402
from snntorch.import_nir import import_from_nir  # noqa: E402

from rtrl.cells import LIF, SpikingIIR2  # noqa: E402
from rtrl.cli import main  # noqa: E402
from rtrl.export import from_nir, to_nir  # noqa: E402

STEPS, BATCH = 200, 4


def rtrl_spikes(cell, params, xs):
    """(STEPS, BATCH, N) spikes of the cell in float64."""
    return np.asarray(jax.lax.scan(lambda c, x: cell.step(params, c, x), cell.initial_carry((BATCH,)), xs)[1])


def torch_spikes(module, xs, dtype, state=None):
    """Spikes of a module built by nirtorch (called as ``module(x, state) -> (spikes, state)``) step by step."""
    module = module.to(dtype)
    out = []
    with torch.no_grad():
        for x in torch.as_tensor(np.asarray(xs), dtype=dtype):
            spikes, state = module(x, state)
            out.append(spikes.numpy())
    return np.array(out, np.float64)


def inputs(cell, seed):
    """Spike trains in (Poisson-like, rate 0.3), as a neuromorphic network gets them."""
    return (jax.random.uniform(jax.random.PRNGKey(seed), (STEPS, BATCH, cell.input_size)) < 0.3).astype(jnp.float64)


def network(cell, seed):
    params = cell.init(jax.random.PRNGKey(seed))
    return {**params, "W": 2.0 * params["W"], "b": 0.05 * jnp.ones(cell.hidden_size)}


def first_order(params, n):
    return {**params, "a0": -jnp.linspace(0.3, 0.7, n), "a1": jnp.zeros(n), "b0": jnp.zeros(n), "b1": jnp.zeros(n)}


CELLS = {
    "lif": lambda: (LIF(8, 16, reset="value", leak=tuple(np.linspace(0.6, 0.97, 16))), None),
    "lif_recurrent": lambda: (LIF(8, 16, reset="value", leak=0.9, recurrent=True), None),
    "cuba": lambda: (SpikingIIR2(8, 16, reset="value", leak=tuple(np.linspace(0.6, 0.9, 16))), first_order),
    "cuba_recurrent": lambda: (SpikingIIR2(8, 16, reset="value", leak=0.8, recurrent=True), first_order),
    # per-neuron thresholds: Norse runs them, snnTorch's importer takes one for all (refused by name)
    "lif_thresholds": lambda: (LIF(8, 16, reset="value", leak=tuple(np.linspace(0.6, 0.97, 16)),
                                   threshold=tuple(np.linspace(0.6, 1.4, 16)), learn_tau=True), None),
}


def load(target, path):
    """What docs/spiking.md says to run: each library's own importer on the file."""
    graph = nir.read(path)
    if target == "snntorch":
        return import_from_nir(graph)
    return norse_torch.from_nir(graph, dt=float(graph.metadata["dt"]))


@pytest.mark.parametrize("target", ["snntorch", "norse"])
@pytest.mark.parametrize("name", sorted(CELLS))
def test_an_export_runs_in_the_library_with_rtrls_spikes(name, target, tmp_path):
    cell, adjust = CELLS[name]()
    params = network(cell, 1)
    params = adjust(params, cell.hidden_size) if adjust else params
    xs = inputs(cell, 2)
    expected = rtrl_spikes(cell, params, xs)
    assert 0.02 < expected.mean() < 0.6, expected.mean()
    if name == "lif_thresholds" and target == "snntorch":
        with pytest.raises(ValueError, match="snnTorch's NIR importer takes one threshold for all neurons"):
            to_nir(cell, params, target=target)
        return
    nir.write(tmp_path / "net.nir", to_nir(cell, params, target=target))
    # snnTorch's recurrent graphs build float32 constants inside, so it runs in float32 (Norse in float64)
    got = torch_spikes(load(target, tmp_path / "net.nir"), xs, torch.float32 if target == "snntorch" else
                       torch.float64)
    np.testing.assert_array_equal(got, expected)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A LIF trained by ``rtrl train`` as docs/spiking.md says (reset to zero, per-neuron leaks), and a recurrent
    one."""
    root = tmp_path_factory.mktemp("runs")
    common = ("train --task copy --task-arg max_length=2 --hidden 12 --method rtrl --batch 4 --lr 0.05 --eval-every 10 "
              "--eval-size 8 --quiet --steps 20 --cell lif --cell-arg reset=value").split()
    leaks = "[" + ",".join(f"{v:.3f}" for v in np.linspace(0.7, 0.95, 12)) + "]"
    assert main([*common, "--cell-arg", f"leak={leaks}", "--out", str(root / "ff")]) == 0
    assert main([*common, "--cell-arg", "recurrent=true", "--out", str(root / "rec")]) == 0
    return root


@pytest.mark.parametrize("target", ["snntorch", "norse"])
@pytest.mark.parametrize("run", ["ff", "rec"])
def test_rtrl_export_of_a_trained_run_runs_in_the_library(trained, run, target, tmp_path, capsys):
    import rtrl

    out = tmp_path / "run.nir"
    assert main(["export", str(trained / run), "--nir", str(out), "--target", target]) == 0
    assert "load with" in capsys.readouterr().out
    cell, params = rtrl.load(trained / run)
    params = {k: 3.0 * v if k in ("W", "R") else v for k, v in params.items()}  # a short run: more drive, more spikes
    nir.write(out, to_nir(cell, params, target=target))
    xs = inputs(cell, 3)
    expected = rtrl_spikes(cell, params, xs)
    assert 0.02 < expected.mean() < 0.8, expected.mean()
    got = torch_spikes(load(target, out), xs, torch.float32 if target == "snntorch" else torch.float64)
    np.testing.assert_array_equal(got, expected)


ZERO_RESET = {"threshold": torch.ones(16), "init_hidden": True, "reset_mechanism": "zero", "reset_delay": False}
SNNTORCH_NEURONS = {
    "leaky": lambda: snntorch.Leaky(beta=torch.linspace(0.6, 0.95, 16), **ZERO_RESET),
    "synaptic": lambda: snntorch.Synaptic(alpha=torch.linspace(0.3, 0.8, 16), beta=torch.linspace(0.6, 0.95, 16),
                                          **ZERO_RESET),
    "rleaky": lambda: snntorch.RLeaky(beta=torch.linspace(0.6, 0.95, 16), linear_features=16, **ZERO_RESET),
}


@pytest.mark.parametrize("name", sorted(SNNTORCH_NEURONS))
def test_a_layer_exported_by_snntorch_runs_in_rtrl_as_in_snntorch(name):
    """snnTorch's own export of ``Linear -> Leaky | Synaptic | RLeaky`` with decays per neuron (reset to zero; its
    dt, 1e-4, not written), read by ``from_nir`` at dt = 1e-4, spikes as the snnTorch network does. (snnTorch 1.0.0
    exports no ``Leaky`` with one scalar ``beta`` and ``threshold``, nir's type check refusing its scalar fields, and
    no ``RSynaptic`` at all: its tracer finds an empty graph.)"""
    torch.manual_seed(0)
    neuron = SNNTORCH_NEURONS[name]()
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), neuron)
    with torch.no_grad():
        net[0].weight.mul_(4.0)
    graph = export_to_nir(net.to(torch.float32), torch.zeros(1, 8), ignore_dims=[0])
    cell, params = from_nir(graph, dt=1e-4)
    assert cell.recurrent == (name == "rleaky") and len(set(cell.leak)) == 16
    xs = inputs(cell, 4)
    expected = rtrl_spikes(cell, params, xs)
    assert 0.02 < expected.mean() < 0.6, expected.mean()
    for state in ("mem", "syn", "spk"):  # the export's trace ran the network once: from rest again
        if hasattr(neuron, state):
            setattr(neuron, state, torch.zeros(1))
    with torch.no_grad():
        got = np.array([net(x).numpy() for x in torch.as_tensor(np.asarray(xs), dtype=torch.float32)], np.float64)
    np.testing.assert_array_equal(got, expected)


NORSE_NEURONS = {  # the cell, and its state at rest (Norse starts LIF and LI membranes at v_leak; NIR and rtrl at 0)
    "lif": (lambda: norse_torch.LIFBoxCell(norse_torch.LIFBoxParameters(
        tau_mem_inv=1 / torch.linspace(2.0, 20.0, 16), v_leak=torch.linspace(-0.2, 0.4, 16),
        v_th=torch.linspace(0.6, 1.4, 16)), dt=1.0), lambda v: norse_torch.LIFBoxFeedForwardState(v=v)),
    "li": (lambda: norse_torch.LIBoxCell(norse_torch.LIBoxParameters(
        tau_mem_inv=1 / torch.linspace(2.0, 20.0, 16), v_leak=torch.linspace(-0.2, 0.4, 16)), dt=1.0),
           lambda v: norse_torch.LIBoxState(v=v)),
    "iaf": (lambda: norse_torch.IAFCell(norse_torch.IAFParameters(v_th=torch.linspace(0.6, 1.4, 16)), dt=1.0),
            lambda v: None),
}


@pytest.mark.parametrize("name", sorted(NORSE_NEURONS))
def test_a_layer_exported_by_norse_runs_in_rtrl_as_in_norse(name):
    """Norse's own export of ``Linear -> LIFBoxCell | LIBoxCell | IAFCell`` with per-neuron time constants, leak
    potentials and thresholds, read by ``from_nir``, gives Norse's spikes (an LI: its membrane). Norse 1.1.0 writes
    ``tau = dt / tau_mem_inv`` (``dt`` times the time constant, not the time constant), an IF's ``r = 1`` for its
    ``v <- v + I``, and no ``v_reset`` (its own is 0), so its file means its network only at dt = 1 (time counted in
    steps), the case taken here; at another dt no reader of NIR, rtrl included, can recover Norse's network from the
    file. (Its ``LIFCell`` export is not read here: that cell integrates the current before adding the input, NIR's
    CubaLIF after.)"""
    torch.manual_seed(1)
    make, rest = NORSE_NEURONS[name]
    net = norse_torch.SequentialState(torch.nn.Linear(8, 16), make())
    with torch.no_grad():
        net[0].weight.mul_(12.0 if name == "lif" else 3.0)
    graph = norse_torch.to_nir(net, torch.zeros(1, 8), dt=1.0)
    cell, params = from_nir(graph, dt=1.0)
    xs = inputs(cell, 5)
    expected = rtrl_spikes(cell, params, xs)
    got = torch_spikes(net, xs, torch.float64, [None, rest(torch.zeros(BATCH, 16, dtype=torch.float64))])
    if name == "li":
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)  # the membranes; Norse's weights are float32
        return
    assert 0.02 < expected.mean() < 0.6 and len(set(cell.threshold)) == 16, expected.mean()
    np.testing.assert_array_equal(got, expected)
