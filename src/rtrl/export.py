"""Spiking cells to and from NIR, the Neuromorphic Intermediate Representation (``pip install nir``, the ``nir``
extra; ``import rtrl`` does not need it).

``to_nir(cell, params, dt=None, target="nir") -> nir.NIRGraph`` and ``from_nir(graph, dt=None) -> (cell, params)``.

**NIR's semantics** (the ``nir`` package's neuron equations, integrated by forward Euler at step ``dt``): the
input ``I`` of a neuron node is the sum of what its incoming edges carry (a recurrent edge carries the previous
step's spikes), and per step::

    LIF      v <- v + dt/tau (v_leak - v + r I)
    IF       v <- v + dt r I
    CubaLIF  I_syn <- I_syn + dt/tau_syn (w_in I - I_syn),   v <- v + dt/tau_mem (v_leak - v + r I_syn)
    LI       v <- v + dt/tau (v_leak - v + r I)                 (no spikes; its output is v)
    I        v <- v + dt r I                                    (no spikes; its output is v)
    CubaLI   as CubaLIF without spikes                          (its output is v)
    then (LIF, IF, CubaLIF)  z = [v > v_threshold],  v <- v_reset where z    (in the same step; v_reset 0 if absent)

so ``leak = 1 - dt/tau`` and an input gain ``g = dt r / tau`` (``dt r`` for IF; times ``dt w_in / tau_syn`` for
CubaLIF) which ``from_nir`` folds into ``W``, ``b`` and ``R``; ``v_leak`` enters the bias as ``dt/tau v_leak``.
The cells: ``LIF`` and ``IF`` -> ``LIF`` (``leak = 1`` for IF), ``CubaLIF`` -> ``SpikingIIR2`` with a first-order
filter (``a0 = -(1 - dt/tau_syn)``, ``a1 = b0 = b1 = 0``; its membrane reads the updated current), ``LI`` ->
``IIR2`` with the identity activation (``a0 = -(1 - dt/tau)``), ``I`` -> the same with ``a0 = -1``, ``CubaLI`` ->
the same with both poles, ``a0 = -(s + m)``, ``a1 = s m`` (``s = 1 - dt/tau_syn``, ``m = 1 - dt/tau_mem``: the
synapse into the membrane is the second-order filter ``(1 - s q)(1 - m q) v = g I``). ``Delay`` and every other node
are refused by name. The neurons reset to ``v_reset``
(``reset="value"``), unless the node's metadata says ``reset="subtract"`` or ``"none"`` (what ``to_nir`` writes for
cells with those resets; NIR has no reset by subtraction).

``from_nir`` reads one population: ``Input -> (Affine | Linear | Scale)* -> neuron -> Output``, with any number of
such chains summed into the neuron (or into a synapse node, ``LI``, ``CubaLI`` or ``I``, feeding a ``LIF`` or
``IF`` node: a ``SpikingIIR2`` with that filter, as ``to_nir`` writes a second-order one), and recurrent chains
``neuron -> (Affine | Linear | Scale)* -> neuron`` (as snnTorch's ``RLeaky``/``RSynaptic`` write them, also nested
as a sub-graph node, as its export does). ``graph`` may
be a path, read with ``nir.read``. ``dt`` comes from the graph's metadata (``graph.metadata["dt"]``, else a node's,
as ``to_nir`` writes on the neuron), else the argument (snnTorch exports at ``dt = 1e-4``, Norse at its ``dt``,
1e-3 by default, and neither writes it); a graph without one and no argument, an argument that disagrees with the
graph's, or a node's ``dt`` that contradicts the graph's or another node's, is refused. Every parameter must be
finite numbers of the node's shape (integers are read as floats); the neurons' ``tau`` must exceed ``dt``
(``tau_syn`` and an integrator's ``tau`` at least ``dt``: a shorter one makes forward Euler's decay negative, an
oscillating, unstable filter). Every field may differ from neuron to neuron (``tau``, ``r``, ``v_leak``,
``v_threshold``, ``v_reset``, ``w_in``): the cells take per-neuron ``leak``, ``threshold`` and ``v_reset``, and the
gains and ``v_leak`` fold into ``W``, ``b`` and ``R`` per neuron. Each refusal is one ``ValueError`` naming the
node and the field.

``to_nir``: ``LIF`` -> NIR ``LIF`` (``IF`` with ``leak = 1``), a first-order ``SpikingIIR2`` (``a1 = b0 = b1 = 0``,
``-1 < a0 <= 0``) -> ``CubaLIF``, any other ``SpikingIIR2`` without taps whose poles are real in [0, 1) -> a synapse
node (the integrator below) feeding a ``LIF`` or ``IF`` membrane (``R`` back into the synapse), an ``IIR2`` with the
identity activation and ``b0 = b1 = 0`` -> the integrator its poles allow (``I``, ``LI``, or ``CubaLI`` for two real
poles in [0, 1); complex poles are refused by name), input projection -> ``Affine(W^T, b)``, ``R`` -> a recurrent
``Linear(R^T)`` (its edges listed before the Output's); per-neuron options as per-neuron fields; ``v_leak = 0``; ``dt``
in seconds in the graph's and the neuron's metadata, with ``time_unit``, ``target`` and what the target's importer
assumes (``importer``). The surrogate derivative is not part of NIR; it travels in the neuron node's metadata.
``target`` says whose importer is to run the graph with rtrl's spikes (checked against snnTorch 1.0.0 and Norse 1.1.0
by tests/test_interop.py, SpikingJelly 2.0.0 and spyx 1.0.0 by tests/test_interop_spikingjelly.py and _spyx.py):

* ``"nir"`` (default, ``dt = 1``): ``r = tau / dt`` and ``w_in = tau_syn / dt`` (input gain 1);
* ``"snntorch"`` (``dt = 1e-4``, the only one its importer runs at): as ``"nir"``, and a recurrent loop of three
  nodes (``Linear(R^T)`` then an identity ``Linear``), because snnTorch rewrites a neuron <-> Linear pair into a
  sub-graph that it runs with the input passed through ``R``; refused: a reset other than to 0 in the spike's
  step (``reset="value"``, ``v_reset = 0``), per-neuron thresholds, ``leak = 1`` (it runs IF as a leaky neuron);
* ``"norse"`` (``dt = 1e-3``, Norse's default; ``norse.torch.from_nir(graph, dt=...)`` must be given the same):
  ``r = w_in = 1`` (Norse ignores both) with the gains folded into ``W``, ``b``, ``R`` per neuron; refused: a reset
  other than to 0 (Norse's LIF ignores ``v_reset``; its reset by subtraction acts in the spike's step, rtrl's one
  step later). An IF keeps ``r = 1/dt``: Norse's IAF adds its input as it is, which is what that ``r`` says.
* ``"spikingjelly"`` (``dt = 1e-4``, its importer's default; ``import_from_nir(graph, dt=...)`` must be given the
  same): as ``"nir"``; refused: a reset other than to 0 in the spike's step (its membrane starts at ``v_reset`` and
  its LIF leaks towards it), per-neuron fields (it takes one value for all neurons);
* ``"spyx"`` (``dt = 1``, ``spyx.nir.from_nir``'s default; it must be given the same): as ``"nir"``, LIF and IF,
  feed-forward or recurrent, with ``reset="subtract"`` (spyx subtracts the threshold and reads no ``v_reset``);
  spyx emits each spike one step later than rtrl (its step fires on the membrane before the input). Refused: other
  resets, ``SpikingIIR2`` (spyx's CuBaLIF subtracts the threshold before the leak, rtrl's after).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import numbers
import os

import jax.numpy as jnp
import numpy as np

from rtrl.cells.base import Params
from rtrl.cells.iir2 import IIR2
from rtrl.cells.lif import LIF
from rtrl.cells.spiking_iir2 import SpikingIIR2
from rtrl.checks import default_dtype
from rtrl.extras import install

SURROGATE_OPTIONS = ("surrogate", "surrogate_scale", "surrogate_height")
NEURONS = ("LIF", "IF", "CubaLIF", "LI", "CubaLI", "I")
INTEGRATORS = ("LI", "CubaLI", "I")  # no spikes: their output is the membrane, read as an IIR2 with identity
MAPS = ("Affine", "Linear", "Scale")
KNOWN_NODES = ("Input", "Output", *MAPS, *NEURONS)
MARKED_RESETS = ("subtract", "none")  # NIR has neither; to_nir marks them in the neuron's metadata


def nir_module():
    try:
        return importlib.import_module("nir")
    except ImportError as error:
        raise ImportError(f"rtrl.export needs the nir package: {install('nir')} (or pip install nir)") from error


def check_dt(dt, where: str = "dt") -> float:
    """``dt`` as a float; ``ValueError`` unless a finite positive real number (a NumPy scalar too)."""
    if isinstance(dt, bool) or not isinstance(dt, numbers.Real) or not math.isfinite(float(dt)) or dt <= 0:
        raise ValueError(f"{where} must be a finite positive number, got {dt!r}")
    return float(dt)


# -- to NIR -------------------------------------------------------------------------------------------------------
# What each target reads (the importers of snnTorch 1.0, Norse 1.1, SpikingJelly 2.0 and spyx 1.0, read from their
# code): the time step it runs at, whatever the file says, and what it makes of a neuron node.
TARGETS = ("nir", "snntorch", "norse", "spikingjelly", "spyx")
DEFAULT_DT = {"nir": 1.0, "snntorch": 1e-4, "norse": 1e-3, "spikingjelly": 1e-4, "spyx": 1.0}
IMPORTERS = {
    "nir": "NIR's equations at the graph's dt",
    "snntorch": "snntorch.import_nir.import_from_nir(graph) runs every LIF and CubaLIF at dt = 1e-4 s whatever the "
                "file says, with r = tau/dt and w_in = tau_syn/dt, resetting to zero in the spike's step",
    "norse": "norse.torch.from_nir(graph, dt=DT) runs at the dt it is given (1e-3 s by default, not the file's), reads "
             "r and w_in as 1 and resets to 0",
    "spikingjelly": "spikingjelly.activation_based.nir_exchange.import_from_nir(graph, dt=DT) runs at the dt it is "
                    "given (1e-4 s by default), with one value of each field for all neurons, resetting to v_reset "
                    "in the spike's step",
    "spyx": "spyx.nir.from_nir(graph, inputs, dt=DT) runs at the dt it is given (1 by default), adds the input as it "
            "is and resets by subtraction; each spike comes one step later than rtrl's",
}


def to_nir(cell, params: Params, dt: float | None = None, target: str = "nir"):
    """The NIR graph of a spiking ``cell`` with ``params`` (see the module docstring), written for ``target``: ``"nir"``
    (NIR's equations, input gain 1 through ``r = tau/dt``), ``"snntorch"`` or ``"norse"`` (what their importers
    run with rtrl's spikes; a cell they cannot run is refused naming the option). ``dt`` in seconds, by default the
    target's own (1 for ``"nir"``, 1e-4 for snnTorch, 1e-3 for Norse)."""
    nir = nir_module()
    if target not in TARGETS:
        raise ValueError(f"target must be one of {list(TARGETS)}, got {target!r}")
    dt = DEFAULT_DT[target] if dt is None else check_dt(dt)
    if isinstance(cell, type):
        raise TypeError(f"cell must be a cell, e.g. {cell.__name__}(input_size, hidden_size), got the class itself")
    if type(cell) not in (LIF, SpikingIIR2, IIR2):
        raise ValueError(f"{getattr(cell, 'name', type(cell).__name__)} has no NIR counterpart; to_nir maps LIF, "
                         "SpikingIIR2 and IIR2 cells (NIR has no adaptive neuron)")
    if type(cell) is IIR2:
        return integrator_graph(nir, cell, checked(cell, params), dt, target)
    if cell.refractory:
        raise ValueError(f"{cell.name} with refractory={cell.refractory} has no NIR counterpart (NIR's neurons have no "
                         "refractory period)")
    params = checked(cell, params)
    N = cell.hidden_size
    ones = np.ones(N)
    leak, threshold, v_reset = (np.asarray(getattr(cell, name), np.float64) * ones
                                for name in ("leak", "threshold", "v_reset"))
    if cell.learn_tau:  # the learnt time constants, as the cell computes them
        leak = np.asarray(cell.leak_of(params, jnp.zeros(N)), np.float64)
    check_target(cell, target, dt, threshold, v_reset, leak)
    metadata = {"dt": dt, **{name: getattr(cell, name) for name in SURROGATE_OPTIONS}}
    if cell.reset in MARKED_RESETS:
        metadata["reset"] = cell.reset
    common = {"v_threshold": threshold, "v_reset": v_reset if cell.reset == "value" else 0 * ones}
    synapse = None  # a second-order SpikingIIR2's filter, a node of its own before the membrane
    if type(cell) is LIF:
        neuron, gain = membrane_node(nir, cell, leak, dt, target, common, metadata)
    else:
        a0, a1, b0, b1 = (np.asarray(c, np.float64) for c in cell.coefficients(params))
        if np.any(a1 != 0) or np.any(b0 != 0) or np.any(b1 != 0) or not np.all((-1 < a0) & (a0 <= 0)) or np.any(
                leak == 1):
            if target != "nir":
                raise ValueError(f"SpikingIIR2 with a second-order filter (or leak = 1) has no {target} "
                                 "counterpart: its importer reads no CubaLI; export it with target='nir'")
            try:
                synapse = integrator_node(nir, (a0, a1, b0, b1), dt)
            except ValueError as error:
                raise ValueError(f"SpikingIIR2's synapse: {error}") from None
            neuron, gain = membrane_node(nir, cell, leak, dt, target, common, metadata)
        else:
            if target == "spikingjelly" and np.any(a0 != a0[0]):
                raise ValueError(f"SpikingJelly's NIR importer takes one synaptic decay for all neurons; this "
                                 f"{cell.name} has a0 = {a0.tolist()}")
            tau_syn, tau_mem = dt / (1 + a0), dt / (1 - leak)
            r, w_in = (ones, ones) if target == "norse" else (tau_mem / dt, tau_syn / dt)
            gain = (dt / tau_syn) * w_in * (dt / tau_mem) * r
            neuron = nir.CubaLIF(tau_syn=tau_syn, tau_mem=tau_mem, r=r, v_leak=0 * ones, w_in=w_in, **common,
                                 metadata=metadata)
    weights = {name: np.asarray(params[name], np.float64) / gain for name in ("W", "b", *(("R",) if cell.recurrent
                                                                                            else ()))}
    nodes = {"input": nir.Input(input_type={"input": np.array([cell.input_size])}),
             "affine": nir.Affine(weight=weights["W"].T, bias=weights["b"]),
             **({} if synapse is None else {"synapse": synapse}),
             "neuron": neuron,
             "output": nir.Output(output_type={"output": np.array([N])})}
    entry = "neuron" if synapse is None else "synapse"  # where the currents go in
    edges = [("input", "affine"), ("affine", entry)] + ([] if synapse is None else [("synapse", "neuron")])
    if cell.recurrent:
        # nirtorch's executors return the last node they run, so the recurrent edges come before the Output's; and
        # snnTorch's importer rewrites a neuron <-> Linear pair into a sub-graph it then runs wrongly (the input
        # through R), so for it the loop has a third node, an identity.
        nodes["recurrent"] = nir.Linear(weight=weights["R"].T)
        if target == "snntorch":
            nodes["identity"] = nir.Linear(weight=np.eye(N))
            edges += [("neuron", "recurrent"), ("recurrent", "identity"), ("identity", "neuron")]
        else:
            edges += [("neuron", "recurrent"), ("recurrent", entry)]
    edges.append(("neuron", "output"))
    graph_metadata = {"dt": dt, "time_unit": "s", "target": target, "importer": IMPORTERS[target]}
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata=graph_metadata)


def checked(cell, params: Params) -> Params:
    """``params`` of ``cell``: a dict of finite arrays of the cell's shapes, else refused naming the parameter."""
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of arrays (cell.init(key)), got {type(params).__name__}")
    cell.check_params(params, cell.param_shapes())
    for name in cell.param_shapes():
        if not np.all(np.isfinite(np.asarray(params[name]))):
            raise ValueError(f"params[{name!r}] has non-finite values (nan or inf); NIR would carry them as they are")
    return params


def membrane_node(nir, cell, leak: np.ndarray, dt: float, target: str, common: dict, metadata: dict):
    """``(node, gain)``: a LIF-type membrane as NIR's ``IF`` (``leak = 1`` for every neuron, ``r = 1/dt``) or ``LIF``
    (``tau = dt/(1 - leak)``, ``r = tau/dt``, or 1 for Norse), and the input gain its equations apply."""
    ones = np.ones(cell.hidden_size)
    if np.all(leak == 1):
        return nir.IF(r=ones / dt, **common, metadata=metadata), ones  # Norse's IAF adds its input as it is: r = 1/dt
    if np.any(leak == 1):
        raise ValueError(f"{cell.name} with leak = 1 for some neurons only has no NIR counterpart: NIR's IF has no "
                         "leak for any neuron, its LIF and CubaLIF leak in every neuron")
    tau = dt / (1 - leak)
    r = ones if target == "norse" else tau / dt
    return nir.LIF(tau=tau, r=r, v_leak=0 * ones, **common, metadata=metadata), r * dt / tau


def integrator_node(nir, coefficients, dt: float):
    """NIR's integrator with the poles of a second-order filter without taps (``integrator_graph``), input gain 1."""
    a0, a1, b0, b1 = coefficients
    if np.any(b0 != 0) or np.any(b1 != 0):
        raise ValueError("a filter with feedforward taps (b0, b1 not 0) has no NIR counterpart: NIR's integrators "
                         "have no zeros")
    ones, zeros = np.ones(np.shape(a0)), np.zeros(np.shape(a0))
    if np.all(a1 == 0) and np.all(a0 == -1):
        return nir.I(r=ones / dt, metadata={"dt": dt})
    if np.all(a1 == 0) and np.all((-1 < a0) & (a0 <= 0)):
        tau = dt / (1 + a0)
        return nir.LI(tau=tau, r=tau / dt, v_leak=zeros, metadata={"dt": dt})
    discriminant = a0**2 - 4 * a1
    if np.any(discriminant < 0):
        raise ValueError("a filter with complex poles (a0^2 < 4 a1, a resonant filter) has no NIR counterpart: NIR's "
                         "CubaLI cascades two real decays")
    p, q = (-a0 + np.sqrt(discriminant)) / 2, (-a0 - np.sqrt(discriminant)) / 2
    if np.any(p >= 1) or np.any(q < 0):
        raise ValueError("a filter with a pole outside [0, 1) (a growing, undamped or alternating filter) has no NIR "
                         "counterpart: forward Euler's decays 1 - dt/tau lie in [0, 1)")
    tau_syn, tau_mem = dt / (1 - p), dt / (1 - q)
    return nir.CubaLI(tau_syn=tau_syn, tau_mem=tau_mem, r=tau_mem / dt, v_leak=zeros, w_in=tau_syn / dt,
                      metadata={"dt": dt})


def integrator_graph(nir, cell: IIR2, params: Params, dt: float, target: str):
    """An ``IIR2`` with the identity activation and no feedforward taps (``b0 = b1 = 0``) as NIR's integrator its
    poles allow, the inverse of ``from_nir``'s reading: ``I`` (``a0 = -1``, ``a1 = 0``: ``r = 1/dt``), ``LI``
    (``a1 = 0``, ``-1 < a0 <= 0``: ``tau = dt/(1 + a0)``, ``r = tau/dt``) or ``CubaLI`` (real poles ``p``, ``q`` in
    [0, 1), ``p + q = -a0``, ``p q = a1``: ``tau_syn = dt/(1 - p)``, ``tau_mem = dt/(1 - q)``, input gain 1);
    refused naming the activation, the taps, or complex or unstable poles."""
    if cell.activation != "identity":
        raise ValueError(f"IIR2 with activation={cell.activation!r} has no NIR counterpart (NIR's integrators output "
                         "their state as it is: activation='identity')")
    if target != "nir":
        raise ValueError(f"IIR2 has no {target} counterpart: its importer reads no leaky integrator with two poles; "
                         "export it with target='nir'")
    coefficients = tuple(np.asarray(c, np.float64) for c in cell.coefficients(params))
    try:
        node = integrator_node(nir, coefficients, dt)
    except ValueError as error:
        raise ValueError(f"IIR2: {error}") from None
    N = cell.hidden_size
    W, b = (np.asarray(params[name], np.float64) for name in ("W", "b"))
    nodes = {"input": nir.Input(input_type={"input": np.array([cell.input_size])}),
             "affine": nir.Affine(weight=W.T, bias=b), "neuron": node,
             "output": nir.Output(output_type={"output": np.array([N])})}
    metadata = {"dt": dt, "time_unit": "s", "target": target, "importer": IMPORTERS[target]}
    return nir.NIRGraph(nodes=nodes, edges=[("input", "affine"), ("affine", "neuron"), ("neuron", "output")],
                        metadata=metadata)


def check_target(cell, target: str, dt: float, threshold: np.ndarray, v_reset: np.ndarray, leak: np.ndarray) -> None:
    """Refuse, naming the option, what ``target``'s importer cannot run as rtrl does."""
    if target == "nir":
        return
    who = {"snntorch": "snnTorch's NIR importer", "norse": "Norse's NIR importer",
           "spikingjelly": "SpikingJelly's NIR importer", "spyx": "spyx's NIR importer"}[target]
    if target == "spyx":
        if cell.reset != "subtract":
            raise ValueError(f"{who} resets by subtracting the threshold and reads no v_reset, so only "
                             f"reset='subtract' runs there as in rtrl; this {cell.name} has reset={cell.reset!r}")
        if type(cell) is not LIF:
            raise ValueError(f"{who} runs {cell.name} as its CuBaLIF, which subtracts the threshold before the leak "
                             "(rtrl after it); only LIF cells run there as in rtrl")
        return
    if target == "spikingjelly":
        for name, values in (("leak", leak), ("threshold", threshold)):
            if np.any(values != values[0]):
                raise ValueError(f"{who} takes one {name} for all neurons; this {cell.name} has {name}="
                                 f"{getattr(cell, name)!r}" + (" (learn_tau=True)" if name == "leak" and
                                                              cell.learn_tau else ""))
    if cell.reset != "value" or np.any(v_reset != 0):
        raise ValueError(f"{who} resets a neuron to 0 in the step it spikes, so only reset='value' with v_reset=0 "
                         f"runs there as in rtrl; this {cell.name} has reset={cell.reset!r}"
                         + (f", v_reset={cell.v_reset!r}" if cell.reset == "value" else "")
                         + " (train with --cell-arg reset=value)")
    if target == "snntorch":
        if dt != DEFAULT_DT["snntorch"]:
            raise ValueError(f"snnTorch's NIR importer runs at dt = 1e-4 s whatever the file says; dt={dt!r} would "
                             "give it other decays (export with dt=1e-4)")
        if np.any(threshold != threshold[0]):
            raise ValueError(f"snnTorch's NIR importer takes one threshold for all neurons; this {cell.name} has "
                             f"threshold={cell.threshold!r}")
        if type(cell) is LIF and np.all(np.asarray(cell.leak) == 1):
            raise ValueError(f"snnTorch's NIR importer runs NIR's IF as a leaky neuron (beta 0.9); this {cell.name} "
                             "has leak = 1")


# -- from NIR -----------------------------------------------------------------------------------------------------
def from_nir(graph, dt: float | None = None) -> tuple:
    """``(cell, params)`` from a NIR graph (or a path to one), with NIR's semantics (see the module docstring)."""
    graph = as_graph(graph)
    nodes, edges = flatten(graph)
    entry, neuron = the_neuron(nodes, edges)
    dt = resolve_dt(graph, nodes, dt)
    inputs = [name for name in nodes if kind(nodes, name) == "Input"]
    if len(inputs) != 1:
        raise ValueError(f"from_nir reads a graph with one Input node, found {inputs}")
    D = io_size(nodes, inputs[0], "input_type", "input")
    chains = {src: chain(nodes, edges, src, neuron) for src, dst in edges if dst == entry}
    forward = {src: c for src, c in chains.items() if c[0] == inputs[0]}
    feedback = {src: c for src, c in chains.items() if c[0] == neuron}
    if not forward:
        raise ValueError(f"neuron node {neuron!r} is fed by no chain of Affine, Linear or Scale nodes from the input")
    A, c = compose(nodes, forward.values(), D)
    N = A.shape[0]
    R, c_rec = compose(nodes, feedback.values(), N) if feedback else (None, np.zeros(N))
    if R is not None and R.shape[0] != N:
        raise ValueError(f"the recurrent chain {list(feedback.values())[0]} gives {R.shape[0]} values to neuron "
                         f"node {neuron!r} of {N} neurons")
    check_rest(nodes, edges, neuron, [*forward.values(), *feedback.values()], N, entry)
    if entry == neuron:
        cell, gain, bias, filter_params = neuron_cell(nodes, neuron, dt, D, N, R is not None)
    else:
        cell, gain, bias, filter_params = synapse_cell(nodes, entry, neuron, dt, D, N, R is not None)
    params = {"W": A.T * gain, "b": (c + c_rec) * gain + bias, **filter_params}
    if R is not None:
        params["R"] = R.T * gain
    dtype = default_dtype()
    return cell, {k: jnp.asarray(v, dtype) for k, v in params.items()}


def as_graph(graph):
    """A ``nir.NIRGraph``: ``graph`` itself, or the graph read from a path."""
    nir = nir_module()
    if isinstance(graph, str | os.PathLike):
        if os.path.exists(graph) and not os.path.isfile(graph):  # a FIFO or a device would block the read
            raise ValueError(f"cannot read a NIR graph from {os.fspath(graph)!r}: not a regular file")
        try:
            outside = reaching_out(graph)
            if outside:  # nir.read would follow it and build another file's graph
                raise ValueError(f"{outside}; a NIR file must hold its whole graph itself")
            graph = nir.read(graph)
        except Exception as error:  # noqa: BLE001 - h5py and nir raise many kinds; the reason goes in the message
            reason = (str(error).splitlines() or [type(error).__name__])[0]
            raise ValueError(f"cannot read a NIR graph from {os.fspath(graph)!r}: {reason}") from error
    if not isinstance(graph, nir.NIRGraph):
        raise TypeError(f"graph must be a nir.NIRGraph or the path of a .nir file, got {type(graph).__name__}")
    return graph


def reaching_out(path) -> str | None:
    """What in the HDF5 file at ``path`` leads to another file (an external link, a dataset stored outside it or
    mapped from others), in a few words; ``None`` where it is self-contained. Soft links are not followed (within
    the file, they lead only where a hard link does); each group is visited once (a hard link may loop)."""
    import h5py

    seen = set()

    def visit(group) -> str | None:
        if group.id in seen:
            return None
        seen.add(group.id)
        for name in group:
            link = group.get(name, getlink=True)
            where = f"{group.name.rstrip('/')}/{name}"
            if isinstance(link, h5py.ExternalLink):
                return f"{where} is an external link (to {link.filename}:{link.path})"
            if isinstance(link, h5py.SoftLink):
                continue
            item = group[name]
            if isinstance(item, h5py.Group):
                found = visit(item)
                if found:
                    return found
            elif isinstance(item, h5py.Dataset) and (item.external or item.is_virtual):
                return f"{where} is a dataset stored in other files"
        return None

    with h5py.File(path, "r") as f:
        return visit(f)


def kind(nodes: dict, name: str) -> str:
    """A node's NIR type by name (``"LIF"``, ``"Affine"``, ...)."""
    return type(nodes[name]).__name__


def flatten(graph, prefix: str = "") -> tuple[dict, list]:
    """The graph's nodes and edges with every sub-graph node (snnTorch's recurrent layers) spliced in: its nodes
    named ``"outer.inner"``, the edges into it led to its Input's successors, the edges out of it from its
    Output's predecessors; the edges checked to join known nodes."""
    if not isinstance(graph.nodes, dict) or not isinstance(graph.edges, list | tuple) or not all(
            isinstance(e, tuple | list) and len(e) == 2 for e in graph.edges):
        where = f"NIR graph {prefix[:-1]!r}" if prefix else "the NIR graph"
        raise ValueError(f"{where}: its nodes must be a dict and its edges a list of pairs of node names"
                         f", got {type(graph.nodes).__name__} and {graph.edges!r:.80}")
    nodes, edges, ends = {}, [], {}
    for name, node in graph.nodes.items():
        if type(node).__name__ == "NIRGraph":
            inner, inner_edges = flatten(node, f"{prefix}{name}.")
            ins = [n for n in inner if kind(inner, n) == "Input"]
            outs = [n for n in inner if kind(inner, n) == "Output"]
            if len(ins) != 1 or len(outs) != 1:
                raise ValueError(f"sub-graph node {prefix}{name!r} must have one Input and one Output node, has "
                                 f"{ins} and {outs}")
            ends[name] = ([d for s, d in inner_edges if s == ins[0]], [s for s, d in inner_edges if d == outs[0]])
            nodes.update({n: v for n, v in inner.items() if n not in (ins[0], outs[0])})
            edges += [(s, d) for s, d in inner_edges if s != ins[0] and d != outs[0]]
        else:
            if type(node).__name__ not in KNOWN_NODES:
                raise ValueError(f"NIR node {prefix}{name!r} ({type(node).__name__}) has no rtrl counterpart; "
                                 f"from_nir reads {', '.join(KNOWN_NODES)}")
            nodes[f"{prefix}{name}"] = node
    for src, dst in graph.edges:
        for end in (src, dst):
            if end not in graph.nodes:
                raise ValueError(f"edge ({src!r}, {dst!r}) names node {prefix}{end!r}, which the graph does not have")
        sources = ends[src][1] if src in ends else [f"{prefix}{src}"]
        targets = ends[dst][0] if dst in ends else [f"{prefix}{dst}"]
        edges += [(s, d) for s in sources for d in targets]
    return nodes, edges


def the_neuron(nodes: dict, edges: list) -> tuple[str, str]:
    """``(entry, neuron)``: the neuron node, and the node its currents enter, the same one unless the graph is a
    synapse (an ``LI``, ``CubaLI`` or ``I`` node) feeding a spiking ``LIF`` or ``IF`` node, as ``to_nir`` writes a
    second-order ``SpikingIIR2``."""
    neurons = [name for name in nodes if kind(nodes, name) in NEURONS]
    if len(neurons) == 2:
        synapse, spiking = sorted(neurons, key=lambda name: kind(nodes, name) not in INTEGRATORS)
        if (kind(nodes, synapse) in INTEGRATORS and kind(nodes, spiking) in ("LIF", "IF")
                and (synapse, spiking) in [tuple(edge) for edge in edges]):
            return synapse, spiking
    if len(neurons) != 1:
        raise ValueError(f"from_nir reads a graph with one neuron node ({', '.join(NEURONS)}), or a synapse (LI, "
                         f"CubaLI, I) feeding a LIF or IF node, found {neurons}; stacks of populations are not read")
    return neurons[0], neurons[0]


def resolve_dt(graph, nodes: dict, dt) -> float:
    """The graph's ``dt`` (its metadata, else a node's), else the argument; refused when two of them differ."""
    stored = graph.metadata.get("dt") if isinstance(graph.metadata, dict) else None
    where = "the graph's metadata dt"
    if stored is not None:
        stored = check_dt(stored, where)
    for name, node in nodes.items():
        mine = node.metadata.get("dt") if isinstance(getattr(node, "metadata", None), dict) else None
        if mine is None:
            continue
        mine = check_dt(mine, f"NIR node {name!r}: metadata dt")
        if stored is None:
            stored, where = mine, f"NIR node {name!r}: metadata dt"
        elif mine != stored:
            raise ValueError(f"NIR node {name!r}: metadata dt = {mine!r} contradicts {where} = {stored!r}; a graph "
                             "runs at one time step")
    if stored is not None:
        if dt is not None and check_dt(dt) != stored:
            raise ValueError(f"dt={dt!r} differs from {where} = {stored!r}; pass dt=None to use the graph's")
        return stored
    if dt is None:
        raise ValueError("from_nir needs the time step: the graph's metadata has no dt, so pass from_nir(graph, "
                         "dt=...) (snnTorch exports at dt = 1e-4, Norse at its own dt, 1e-3 by default)")
    return check_dt(dt)


def field(nodes: dict, name: str, attribute: str) -> np.ndarray:
    """A node's numeric field as float64, refused by node and field unless finite numbers."""
    value = getattr(nodes[name], attribute, None)
    if value is None:
        raise ValueError(f"NIR node {name!r} ({kind(nodes, name)}) has no {attribute}")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = np.asarray(None)
    if array.dtype.kind not in "iuf":  # not bool, complex, text or objects
        raise ValueError(f"NIR node {name!r} field {attribute} must be real numbers, got {type(value).__name__} of "
                         f"{array.dtype}")
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"NIR node {name!r} field {attribute} has non-finite values (nan or inf)")
    return array


def io_size(nodes: dict, name: str, attribute: str, key: str) -> int:
    """The one size of an Input's or Output's type; leading sizes of 1 (the batch of one that Norse's and
    nirtorch's tracers write, ``[1, D]``) are dropped."""
    types = getattr(nodes[name], attribute, None)
    shape = np.asarray(types.get(key) if isinstance(types, dict) else types).reshape(-1)
    if shape.size > 1 and np.issubdtype(shape.dtype, np.integer) and np.all(shape[:-1] == 1):
        shape = shape[-1:]
    if shape.size != 1 or not np.issubdtype(shape.dtype, np.integer) or shape[0] < 1:
        raise ValueError(f"NIR node {name!r} field {attribute} must be one positive size (a vector input), "
                         f"got {types!r}")
    return int(shape[0])


def chain(nodes: dict, edges: list, last: str, neuron: str) -> list[str]:
    """The nodes from a source (the Input or the neuron itself) to ``last``, which feeds the neuron, through
    Affine, Linear and Scale nodes that each have one predecessor."""
    path = [last]
    while kind(nodes, path[0]) in MAPS:
        preds = [src for src, dst in edges if dst == path[0]]
        if len(preds) != 1:
            raise ValueError(f"NIR node {path[0]!r} ({kind(nodes, path[0])}) on the way to neuron node {neuron!r} "
                             f"must have one input, has {preds}")
        if preds[0] in path:
            raise ValueError(f"NIR nodes {path} form a cycle that does not pass through neuron node {neuron!r}")
        path.insert(0, preds[0])
    if path[0] != neuron and kind(nodes, path[0]) != "Input":
        raise ValueError(f"neuron node {neuron!r} is fed by {path[0]!r} ({kind(nodes, path[0])}); from_nir reads "
                         "Input -> (Affine | Linear | Scale)* -> neuron, with recurrent chains from the neuron")
    return path


def compose(nodes: dict, chains, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The summed affine map ``(A, c)`` (``y = A x + c``) of chains that each start from a ``size``-vector."""
    total = None
    for path in chains:
        A, c = np.eye(size), np.zeros(size)
        for name in path[1:]:
            A, c = apply(nodes, name, A, c)
        if total is not None and A.shape != total[0].shape:
            raise ValueError(f"the chains into the neuron give different sizes: {path} gives {A.shape[0]}")
        total = (A, c) if total is None else (total[0] + A, total[1] + c)
    return total


def apply(nodes: dict, name: str, A: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One Affine, Linear or Scale node applied to the affine map ``(A, c)``."""
    size = A.shape[0]
    if kind(nodes, name) == "Scale":
        scale = field(nodes, name, "scale")
        if scale.shape not in ((), (size,)):
            raise ValueError(f"NIR node {name!r} field scale must have shape ({size},), got {scale.shape}")
        return scale[:, None] * A if scale.ndim else scale * A, scale * c
    weight = field(nodes, name, "weight")
    if weight.ndim != 2 or weight.shape[1] != size:
        raise ValueError(f"NIR node {name!r} field weight must have shape (out, {size}) for its {size} inputs, got "
                         f"{weight.shape}")
    bias = field(nodes, name, "bias") if kind(nodes, name) == "Affine" else np.zeros(weight.shape[0])
    if bias.shape != (weight.shape[0],):
        raise ValueError(f"NIR node {name!r} field bias must have shape ({weight.shape[0]},), got {bias.shape}")
    return weight @ A, weight @ c + bias


def check_rest(nodes: dict, edges: list, neuron: str, chains: list, N: int, entry: str) -> None:
    """Every node is on a chain (into ``entry``, then ``entry -> neuron``), and the neuron's other successors are
    Output nodes of its size."""
    used = {neuron, entry, *(name for path in chains for name in path)}
    for src, dst in edges:
        if src == neuron and dst not in used:
            if kind(nodes, dst) != "Output":
                raise ValueError(f"NIR node {dst!r} ({kind(nodes, dst)}) reads neuron node {neuron!r} but leads "
                                 "nowhere back to it; from_nir reads one population (no layers after it)")
            if io_size(nodes, dst, "output_type", "output") != N:
                raise ValueError(f"NIR node {dst!r} field output_type must be [{N}], the neurons' number, got "
                                 f"{nodes[dst].output_type!r}")
            used.add(dst)
    known = {(a, b) for path in chains for a, b in zip(path, [*path[1:], entry], strict=True)}
    known |= {(neuron, name) for name in used if name in nodes and kind(nodes, name) == "Output"}
    known |= {(entry, neuron)} if entry != neuron else set()
    stray = [edge for edge in edges if tuple(edge) not in known]
    if stray:
        raise ValueError(f"edge {stray[0]} is on no path Input -> neuron -> Output; from_nir reads one population")
    unused = [name for name in nodes if name not in used]
    if unused:
        raise ValueError(f"NIR nodes {unused} are on no path Input -> neuron -> Output; from_nir reads one population")


def per_neuron(nodes: dict, name: str, attribute: str, N: int) -> np.ndarray:
    """A neuron field as an ``(N,)`` vector (a scalar, shape ``()``, is one value for all)."""
    value = field(nodes, name, attribute)
    if value.shape not in ((), (1,), (N,)):
        raise ValueError(f"NIR node {name!r} field {attribute} must have shape ({N},) (one per neuron), got "
                         f"{value.shape}")
    return np.broadcast_to(value, (N,)).astype(np.float64)


def option(values: np.ndarray) -> float | tuple[float, ...]:
    """Per-neuron values as a cell option: one float where all neurons share it, else one per neuron."""
    return float(values[0]) if np.all(values == values[0]) else tuple(float(v) for v in values)


def decay(nodes: dict, name: str, attribute: str, dt: float, N: int, *, strict: bool) -> np.ndarray:
    """Forward Euler's decay ``1 - dt / tau`` per neuron, refused unless ``tau > dt`` (``>= dt`` unless strict)."""
    tau = per_neuron(nodes, name, attribute, N)
    bad = tau <= dt if strict else tau < dt
    if np.any(bad):
        need, worst = "above" if strict else "at least", tau[bad][0]
        why = ("a time constant is positive" if worst <= 0 else
               f"forward Euler's decay 1 - dt/{attribute} would be {1 - dt / worst!r}: "
               f"{'the neuron forgets at once' if worst == dt else 'unstable'}")
        raise ValueError(f"NIR node {name!r} field {attribute} must be {need} dt = {dt!r} ({why}), got {worst!r}")
    return 1 - dt / tau


def neuron_cell(nodes: dict, name: str, dt: float, D: int, N: int, recurrent: bool):
    """``(cell, gain, bias, filter_params)``: the cell of the neuron node, the per-neuron gain of its input, the
    constant it adds (``dt/tau v_leak``) and the filter's parameters (CubaLIF, and the integrators LI, CubaLI, I)."""
    node_kind = kind(nodes, name)
    metadata = nodes[name].metadata if isinstance(nodes[name].metadata, dict) else {}
    zeros = np.zeros(N)
    if node_kind in INTEGRATORS:
        return integrator_cell(nodes, name, dt, D, N, recurrent)
    threshold = per_neuron(nodes, name, "v_threshold", N)
    if np.any(threshold <= 0):
        raise ValueError(f"NIR node {name!r} field v_threshold must be positive (rtrl's neurons fire above a positive "
                         f"threshold), got {float(threshold[threshold <= 0][0])!r}")
    options = {"threshold": option(threshold), "recurrent": recurrent,
               **{k: metadata[k] for k in SURROGATE_OPTIONS if metadata.get(k) is not None}}
    reset = metadata.get("reset", "value")
    if reset not in (*MARKED_RESETS, "value"):
        raise ValueError(f"NIR node {name!r} field metadata['reset'] must be one of {list(MARKED_RESETS)} (else the "
                         f"reset is NIR's, to v_reset), got {reset!r}")
    options["reset"] = reset
    if reset == "value":  # NIR's v_reset is optional, 0 when absent
        has_reset = getattr(nodes[name], "v_reset", None) is not None
        options["v_reset"] = option(per_neuron(nodes, name, "v_reset", N) if has_reset else zeros)
    if node_kind == "IF":
        options["leak"], gain, bias = 1.0, dt * per_neuron(nodes, name, "r", N), zeros
    else:
        leak = decay(nodes, name, "tau" if node_kind == "LIF" else "tau_mem", dt, N, strict=True)
        options["leak"] = option(leak)
        rate = 1 - leak
        gain, bias = rate * per_neuron(nodes, name, "r", N), rate * per_neuron(nodes, name, "v_leak", N)
    filter_params = {}
    if node_kind == "CubaLIF":
        if np.any(bias != 0):
            raise ValueError(f"NIR node {name!r} field v_leak must be 0 for a CubaLIF: rtrl's SpikingIIR2 has no "
                             "constant drive on the membrane beside its filtered current")
        synapse = decay(nodes, name, "tau_syn", dt, N, strict=False)
        gain = gain * (1 - synapse) * per_neuron(nodes, name, "w_in", N)
        filter_params = {"a0": -synapse, "a1": zeros, "b0": zeros, "b1": zeros}
    kind_of_cell = SpikingIIR2 if node_kind == "CubaLIF" else LIF
    try:
        cell = kind_of_cell(D, N, **options)
    except ValueError as error:
        raise ValueError(f"NIR node {name!r}: {error}") from None
    return cell, gain, bias, filter_params


def synapse_cell(nodes: dict, synapse: str, neuron: str, dt: float, D: int, N: int, recurrent: bool):
    """``neuron_cell`` of a synapse node (``integrator_cell``: the filter) feeding a spiking ``LIF`` or ``IF`` node
    (``neuron_cell``: the membrane, which must have ``v_leak = 0``): a ``SpikingIIR2`` whose input gain is the
    product of both (the filter is linear, so the membrane's gain moves in front of it)."""
    _, synapse_gain, synapse_bias, filter_params = integrator_cell(nodes, synapse, dt, D, N, False)
    membrane, gain, bias, _ = neuron_cell(nodes, neuron, dt, D, N, recurrent)
    if np.any(bias != 0):
        raise ValueError(f"NIR node {neuron!r} field v_leak must be 0 for a LIF after a synapse: rtrl's SpikingIIR2 "
                         "has no constant drive on the membrane beside its filtered current")
    options = {f.name: getattr(membrane, f.name) for f in dataclasses.fields(membrane)
               if f.name not in ("input_size", "hidden_size")}
    return SpikingIIR2(D, N, **options), synapse_gain * gain, synapse_bias * gain, filter_params


def integrator_cell(nodes: dict, name: str, dt: float, D: int, N: int, recurrent: bool):
    """``neuron_cell`` of a node without spikes, an ``IIR2`` with the identity activation whose output ``y`` is the
    node's ``v``: ``LI`` (``a0 = -(1 - dt/tau)``), ``I`` (``a0 = -1``: ``v <- v + dt r I``) and ``CubaLI``, a
    synaptic filter into a leaky membrane, which is the second-order filter with both poles:
    ``(1 - s q)(1 - m q) v = g I`` for ``s = 1 - dt/tau_syn``, ``m = 1 - dt/tau_mem``, so ``a0 = -(s + m)``,
    ``a1 = s m`` and ``g = (dt/tau_syn) w_in (dt/tau_mem) r``."""
    node_kind, zeros = kind(nodes, name), np.zeros(N)
    if recurrent:
        raise ValueError(f"neuron node {name!r} ({node_kind}) has a recurrent edge; rtrl's leaky integrator (IIR2) "
                         "has no recurrent weights")
    cell = IIR2(D, N, activation="identity")
    if node_kind == "I":
        return cell, dt * per_neuron(nodes, name, "r", N), zeros, {"a0": -np.ones(N), "a1": zeros, "b0": zeros,
                                                                   "b1": zeros}
    m = decay(nodes, name, "tau" if node_kind == "LI" else "tau_mem", dt, N, strict=False)
    gain, bias = (1 - m) * per_neuron(nodes, name, "r", N), (1 - m) * per_neuron(nodes, name, "v_leak", N)
    if node_kind == "LI":
        return cell, gain, bias, {"a0": -m, "a1": zeros, "b0": zeros, "b1": zeros}
    if np.any(bias != 0):
        raise ValueError(f"NIR node {name!r} field v_leak must be 0 for a CubaLI: a constant on the membrane alone is "
                         "no input of rtrl's second-order filter")
    s = decay(nodes, name, "tau_syn", dt, N, strict=False)
    gain = gain * (1 - s) * per_neuron(nodes, name, "w_in", N)
    return cell, gain, bias, {"a0": -(s + m), "a1": s * m, "b0": zeros, "b1": zeros}
