"""rtrl's NIR exports run in the real snnTorch and Norse (the ``interop`` extra: torch CPU, snntorch, nirtorch,
norse) with rtrl's spikes, exactly, over 200 steps: a feed-forward LIF with heterogeneous leaks, a recurrent LIF, a
feed-forward and a recurrent CubaLIF (first-order SpikingIIR2), written by ``to_nir(target=...)`` and by ``rtrl
export --target snntorch|norse`` from trained runs, and loaded with each library's own importer as docs/spiking.md
says. And the reverse: graphs those libraries write, read by ``from_nir``, spike in rtrl as in the library. The
snnTorch and Norse columns of the NIR matrix (tests/interop_matrix.py, docs/interop.md) are ``CHECKS`` below, one
test a cell, refusals included.

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

from interop_matrix import EXPORT, IMPORT, cells  # noqa: E402
from rtrl.cells import IIR2, LIF, SpikingIIR2  # noqa: E402
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
    "if": lambda: (LIF(8, 16, reset="value", leak=1.0), None),  # NIR's IF
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


REFUSED = {  # what to_nir refuses for a target, and its message
    ("lif_thresholds", "snntorch"): "snnTorch's NIR importer takes one threshold for all neurons",
    ("if", "snntorch"): "runs NIR's IF as a leaky neuron",
}


def exported(name, target, tmp_path):
    """The cell's export for ``target`` runs in the library with rtrl's spikes (or is refused, REFUSED)."""
    cell, adjust = CELLS[name]()
    params = network(cell, 1)
    params = adjust(params, cell.hidden_size) if adjust else params
    xs = inputs(cell, 2)
    expected = rtrl_spikes(cell, params, xs)
    assert 0.02 < expected.mean() < 0.6, expected.mean()
    if (name, target) in REFUSED:
        with pytest.raises(ValueError, match=REFUSED[name, target]):
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
    "leaky_thresholds": lambda: snntorch.Leaky(beta=torch.linspace(0.6, 0.95, 16),
                                               **{**ZERO_RESET, "threshold": torch.linspace(0.6, 1.4, 16)}),
    "leaky_subtract": lambda: snntorch.Leaky(beta=torch.linspace(0.6, 0.95, 16),
                                             **{**ZERO_RESET, "reset_mechanism": "subtract"}),
}


def snntorch_run(name):
    """snnTorch's own export of ``Linear -> neuron`` with decays per neuron (its dt, 1e-4, not written), read by
    ``from_nir`` at dt = 1e-4: (snnTorch's spikes, rtrl's, the cell). (snnTorch 1.0.0 exports no ``Leaky`` with one
    scalar ``beta`` and ``threshold``, nir's type check refusing its scalar fields.)"""
    torch.manual_seed(0)
    neuron = SNNTORCH_NEURONS[name]()
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), neuron)
    with torch.no_grad():
        net[0].weight.mul_(4.0)
    graph = export_to_nir(net.to(torch.float32), torch.zeros(1, 8), ignore_dims=[0])
    cell, params = from_nir(graph, dt=1e-4)
    xs = inputs(cell, 4)
    expected = rtrl_spikes(cell, params, xs)
    assert 0.02 < expected.mean() < 0.6, expected.mean()
    for state in ("mem", "syn", "spk"):  # the export's trace ran the network once: from rest again
        if hasattr(neuron, state):
            setattr(neuron, state, torch.zeros(1))
    with torch.no_grad():
        got = np.array([net(x).numpy() for x in torch.as_tensor(np.asarray(xs), dtype=torch.float32)], np.float64)
    return got, expected, cell


def snntorch_layer(name):
    """snnTorch's export spikes in rtrl as in snnTorch."""
    got, expected, cell = snntorch_run(name)
    assert cell.recurrent == (name == "rleaky") and len(set(cell.leak)) == 16
    np.testing.assert_array_equal(got, expected)


def snntorch_subtract_differs():
    """snnTorch writes a Leaky that resets by subtraction as NIR's LIF, which resets to v_reset: other spikes."""
    got, expected, cell = snntorch_run("leaky_subtract")
    assert cell.reset == "value" and np.any(got != expected)


def rsynaptic_export_fails():
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), snntorch.RSynaptic(
        alpha=torch.linspace(0.3, 0.8, 16), beta=torch.linspace(0.6, 0.95, 16), linear_features=16, **ZERO_RESET))
    with pytest.raises(ValueError, match="empty graph"):
        export_to_nir(net, torch.zeros(1, 8), ignore_dims=[0])


NORSE_NEURONS = {  # the cell, and its state at rest (Norse starts LIF and LI membranes at v_leak; NIR and rtrl at 0)
    "lif": (lambda: norse_torch.LIFBoxCell(norse_torch.LIFBoxParameters(
        tau_mem_inv=1 / torch.linspace(2.0, 20.0, 16), v_leak=torch.linspace(-0.2, 0.4, 16),
        v_th=torch.linspace(0.6, 1.4, 16)), dt=1.0), lambda v: norse_torch.LIFBoxFeedForwardState(v=v)),
    "li": (lambda: norse_torch.LIBoxCell(norse_torch.LIBoxParameters(
        tau_mem_inv=1 / torch.linspace(2.0, 20.0, 16), v_leak=torch.linspace(-0.2, 0.4, 16)), dt=1.0),
           lambda v: norse_torch.LIBoxState(v=v)),
    "iaf": (lambda: norse_torch.IAFCell(norse_torch.IAFParameters(v_th=torch.linspace(0.6, 1.4, 16)), dt=1.0),
            lambda v: None),
    # its current-based LIF takes no per-neuron parameters (its export asserts one shape for all)
    "lifcell": (lambda: norse_torch.LIFCell(norse_torch.LIFParameters(
        tau_syn_inv=torch.tensor(0.5), tau_mem_inv=torch.tensor(0.25), v_th=torch.tensor(0.5)), dt=1.0),
                lambda v: None),
}


def norse_run(name):
    """Norse's own export of ``Linear -> cell`` with per-neuron time constants, leak potentials and thresholds, read
    by ``from_nir``: (Norse's spikes, rtrl's, the cell). Norse 1.1.0 writes ``tau = dt / tau_mem_inv`` (``dt`` times
    the time constant, not the time constant), an IF's ``r = 1`` for its ``v <- v + I``, and no ``v_reset`` (its own
    is 0), so its file means its network only at dt = 1 (time counted in steps), the case taken here; at another dt
    no reader of NIR, rtrl included, can recover Norse's network from the file."""
    torch.manual_seed(1)
    make, rest = NORSE_NEURONS[name]
    net = norse_torch.SequentialState(torch.nn.Linear(8, 16), make())
    with torch.no_grad():
        net[0].weight.mul_(12.0 if name in ("lif", "lifcell") else 3.0)
    graph = norse_torch.to_nir(net, torch.zeros(8), dt=1.0)  # one sample, no batch dimension (docs/interop.md)
    cell, params = from_nir(graph, dt=1.0)
    xs = inputs(cell, 5)
    expected = rtrl_spikes(cell, params, xs)
    got = torch_spikes(net, xs, torch.float64, [None, rest(torch.zeros(BATCH, 16, dtype=torch.float64))])
    return got, expected, cell


def norse_layer(name):
    """Norse's export spikes in rtrl as in Norse (an LI: its membrane, to float32's precision)."""
    got, expected, cell = norse_run(name)
    if name == "li":
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)  # the membranes; Norse's weights are float32
        return
    assert 0.02 < expected.mean() < 0.6 and len(set(cell.threshold)) == 16, expected.mean()
    np.testing.assert_array_equal(got, expected)


def norse_lifcell_differs():
    """Norse's LIFCell integrates the current after the membrane reads it, NIR's CubaLIF before: other spikes, at
    the same step and one step apart."""
    got, expected, cell = norse_run("lifcell")
    assert type(cell) is SpikingIIR2 and 0.02 < got.mean() < 0.6
    assert np.any(got != expected) and np.any(got[1:] != expected[:-1])


def norse_recurrent_refused():
    graph = norse_torch.to_nir(norse_torch.SequentialState(norse_torch.LIFRecurrentCell(8, 16)), torch.zeros(1, 8),
                               dt=1.0)
    with pytest.raises(ValueError, match="NoneType"):
        from_nir(graph, dt=1.0)


def subtraction_refused(target):
    cell = LIF(8, 16, reset="subtract")
    with pytest.raises(ValueError, match="reset='subtract'"):
        to_nir(cell, cell.init(jax.random.PRNGKey(0)), target=target)


def no_recurrent_box_cell():
    """Norse's only recurrent LIF is current-based (``LIFRecurrentCell``: the CubaLIF row)."""
    assert not hasattr(norse_torch, "LIFBoxRecurrentCell") and hasattr(norse_torch, "LIFRecurrentCell")


def integrator_refused(target):
    cell = IIR2(8, 16, activation="identity")
    with pytest.raises(ValueError, match=f"IIR2 has no {target} counterpart"):
        to_nir(cell, first_order(cell.init(jax.random.PRNGKey(0)), 16), target=target)


CHECKS = {
    "snntorch": {
        ("LIF, reset to 0, per-neuron leak", EXPORT): lambda tmp: exported("lif", "snntorch", tmp),
        ("LIF, reset to 0, per-neuron leak", IMPORT): lambda tmp: snntorch_layer("leaky"),
        ("LIF, reset to 0, recurrent", EXPORT): lambda tmp: exported("lif_recurrent", "snntorch", tmp),
        ("LIF, reset to 0, recurrent", IMPORT): lambda tmp: snntorch_layer("rleaky"),
        ("CubaLIF, reset to 0, per-neuron decays", EXPORT): lambda tmp: exported("cuba", "snntorch", tmp),
        ("CubaLIF, reset to 0, per-neuron decays", IMPORT): lambda tmp: snntorch_layer("synaptic"),
        ("CubaLIF, reset to 0, recurrent", EXPORT): lambda tmp: exported("cuba_recurrent", "snntorch", tmp),
        ("CubaLIF, reset to 0, recurrent", IMPORT): lambda tmp: rsynaptic_export_fails(),
        ("LIF, per-neuron thresholds", EXPORT): lambda tmp: exported("lif_thresholds", "snntorch", tmp),
        ("LIF, per-neuron thresholds", IMPORT): lambda tmp: snntorch_layer("leaky_thresholds"),
        ("LIF, reset by subtraction", EXPORT): lambda tmp: subtraction_refused("snntorch"),
        ("LIF, reset by subtraction", IMPORT): lambda tmp: snntorch_subtract_differs(),
    },
    "norse": {
        ("LIF, reset to 0, per-neuron leak and threshold", EXPORT): lambda tmp: [
            exported("lif", "norse", tmp), exported("lif_thresholds", "norse", tmp)],
        ("LIF, reset to 0, per-neuron leak and threshold", IMPORT): lambda tmp: norse_layer("lif"),
        ("LIF, reset to 0, recurrent", EXPORT): lambda tmp: exported("lif_recurrent", "norse", tmp),
        ("LIF, reset to 0, recurrent", IMPORT): lambda tmp: no_recurrent_box_cell(),
        ("CubaLIF, reset to 0", EXPORT): lambda tmp: exported("cuba", "norse", tmp),
        ("CubaLIF, reset to 0", IMPORT): lambda tmp: norse_lifcell_differs(),
        ("CubaLIF, reset to 0, recurrent", EXPORT): lambda tmp: exported("cuba_recurrent", "norse", tmp),
        ("CubaLIF, reset to 0, recurrent", IMPORT): lambda tmp: norse_recurrent_refused(),
        ("IF, reset to 0", EXPORT): lambda tmp: exported("if", "norse", tmp),
        ("IF, reset to 0", IMPORT): lambda tmp: norse_layer("iaf"),
        ("LI (no spikes)", EXPORT): lambda tmp: integrator_refused("norse"),
        ("LI (no spikes)", IMPORT): lambda tmp: norse_layer("li"),
    },
}


@pytest.mark.parametrize("framework", sorted(CHECKS))
def test_every_cell_of_the_matrix_has_its_check(framework):
    assert list(CHECKS[framework]) == cells(framework)


@pytest.mark.parametrize("framework, row, direction", [(f, *cell) for f in CHECKS for cell in CHECKS[f]])
def test_the_cell_holds_in_the_library(framework, row, direction, tmp_path):
    CHECKS[framework][row, direction](tmp_path)


def test_norse_s_exporter_wants_every_field_per_neuron_and_a_sample_without_a_batch():
    """What docs/interop.md tells a Norse user: one field per neuron and the others scalars fails inside Norse's
    exporter; a sample with a batch of several is written as the Input's shape, which ``from_nir`` refuses by name;
    every field per neuron and a sample of one example read back."""
    def exported(parameters, example):
        net = norse_torch.SequentialState(torch.nn.Linear(8, 16), norse_torch.LIFBoxCell(parameters, dt=1.0))
        return norse_torch.to_nir(net, example, dt=1.0)

    tau_mem_inv = 1 / torch.linspace(2.0, 20.0, 16)
    with pytest.raises(AssertionError, match="All parameters must have the same shape"):
        exported(norse_torch.LIFBoxParameters(tau_mem_inv=tau_mem_inv), torch.zeros(8))
    per_neuron = norse_torch.LIFBoxParameters(tau_mem_inv=tau_mem_inv, v_leak=torch.zeros(16), v_th=torch.ones(16))
    with pytest.raises(ValueError, match="input_type must be one positive size"):
        from_nir(exported(per_neuron, torch.zeros(4, 8)), dt=1.0)
    cell, params = from_nir(exported(per_neuron, torch.zeros(8)), dt=1.0)
    assert (type(cell), cell.input_size, cell.hidden_size) == (LIF, 8, 16)
