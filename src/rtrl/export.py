"""Spiking cells to and from NIR, the Neuromorphic Intermediate Representation (``pip install nir``, the ``nir``
extra; ``import rtrl`` does not need it).

``to_nir(cell, params, dt=1.0) -> nir.NIRGraph`` and ``from_nir(graph) -> (cell, params)``. The graphs::

    input -> Affine(W^T, b) -> LIF | CubaLIF -> output          (NIR's weights are (out, in): ``y = weight @ x``)
                                 ^        |
                                 +-Linear(R^T)                 (recurrent=True: the last spikes fed back)

* ``LIF`` cell -> NIR ``LIF``; ``SpikingIIR2`` whose filter is first order (``a1 = b0 = b1 = 0``, decay
  ``-a0`` in (0, 1)) -> NIR ``CubaLIF``; any other cell (``ALIF``: NIR has no adaptive neuron; a second-order
  ``SpikingIIR2``; a non-spiking cell) -> ``ValueError`` naming it.
* Discretisation: forward Euler with step ``dt`` (kept in each neuron node's metadata), which is exactly the cells'
  update: ``tau dv/dt = (v_leak - v) + r I`` gives ``v' = (1 - dt/tau) v + (dt r / tau) I``, so ``leak = 1 - dt/tau``
  and the input gain ``dt r / tau`` is 1 with ``r = tau / dt``; ``v_leak = 0``. ``CubaLIF``'s current
  ``tau_syn dI/dt = -I + w_in S`` gives ``I' = (1 - dt/tau_syn) I + (dt w_in / tau_syn) S``: the filter with
  ``a0 = -(1 - dt/tau_syn)`` and gain 1 with ``w_in = tau_syn / dt``; the membrane reads the updated current (as
  snntorch's ``Synaptic`` and Norse do). Reading a graph, any other gain is folded into ``W``, ``b`` and ``R``.
* Reset: NIR's neurons reset *to* ``v_reset``; the cells here reset *by subtraction* of the threshold. ``to_nir``
  writes ``v_reset = 0`` and ``metadata["reset"] = "subtract"``; ``from_nir`` reads only neuron nodes that say
  so (a reset to ``v_reset`` cannot be represented exactly, so it is refused by the node's name).
* The surrogate derivative is not part of NIR; it travels in the neuron node's metadata (default otherwise).
"""

from __future__ import annotations

import importlib

import jax.numpy as jnp
import numpy as np

from rtrl.cells.base import Params
from rtrl.cells.lif import LIF
from rtrl.cells.spiking_iir2 import SpikingIIR2

SURROGATE_OPTIONS = ("surrogate", "surrogate_scale", "surrogate_height")
KNOWN_NODES = ("Input", "Output", "Affine", "Linear", "LIF", "CubaLIF")


def nir_module():
    try:
        return importlib.import_module("nir")
    except ImportError as error:
        raise ImportError("rtrl.export needs the nir package: pip install 'rtrl[nir]' (or pip install nir)") from error


def to_nir(cell, params: Params, dt: float = 1.0):
    """The NIR graph of a spiking ``cell`` with ``params`` (see the module docstring)."""
    nir = nir_module()
    if not (isinstance(dt, int | float) and not isinstance(dt, bool) and dt > 0):
        raise ValueError(f"dt must be a positive number, got {dt!r}")
    if type(cell) not in (LIF, SpikingIIR2):
        raise ValueError(f"{getattr(cell, 'name', type(cell).__name__)} has no NIR counterpart; to_nir maps LIF and "
                         "first-order SpikingIIR2 cells (NIR has no adaptive or second-order neuron)")
    N = cell.hidden_size
    ones = np.ones(N)
    metadata = {"reset": "subtract", "dt": float(dt), **{name: getattr(cell, name) for name in SURROGATE_OPTIONS}}
    tau_mem = dt / (1 - cell.leak) * ones
    common = {"r": tau_mem / dt, "v_leak": 0 * ones, "v_threshold": cell.threshold * ones, "v_reset": 0 * ones}
    if type(cell) is LIF:
        neuron = nir.LIF(tau=tau_mem, **common, metadata=metadata)
    else:
        a0, a1, b0, b1 = (np.asarray(c) for c in cell.synapse.coefficients(cell.filter_params(params)))
        if np.any(a1 != 0) or np.any(b0 != 0) or np.any(b1 != 0) or not np.all((-1 < a0) & (a0 < 0)):
            raise ValueError("SpikingIIR2 maps to NIR's CubaLIF only with a first-order filter (a1 = b0 = b1 = 0, "
                             "-1 < a0 < 0); this one is second order, and NIR has no second-order synapse")
        tau_syn = dt / (1 + a0)
        neuron = nir.CubaLIF(tau_syn=tau_syn, tau_mem=tau_mem, w_in=tau_syn / dt, **common, metadata=metadata)
    nodes = {"input": nir.Input(input_type={"input": np.array([cell.input_size])}),
             "affine": nir.Affine(weight=np.asarray(params["W"]).T, bias=np.asarray(params["b"])),
             "neuron": neuron,
             "output": nir.Output(output_type={"output": np.array([N])})}
    edges = [("input", "affine"), ("affine", "neuron"), ("neuron", "output")]
    if cell.recurrent:
        nodes["recurrent"] = nir.Linear(weight=np.asarray(params["R"]).T)
        edges += [("neuron", "recurrent"), ("recurrent", "neuron")]
    return nir.NIRGraph(nodes=nodes, edges=edges)


def from_nir(graph) -> tuple:
    """``(cell, params)`` from a NIR graph of the shape ``to_nir`` writes (see the module docstring)."""
    for name, node in graph.nodes.items():
        if kind(graph, name) not in KNOWN_NODES:
            raise ValueError(f"NIR node {name!r} ({type(node).__name__}) has no rtrl counterpart; from_nir reads "
                             f"{', '.join(KNOWN_NODES)}")
    neurons = [name for name in graph.nodes if kind(graph, name) in ("LIF", "CubaLIF")]
    if len(neurons) != 1:
        raise ValueError(f"from_nir reads a graph with one neuron node (LIF or CubaLIF), found {neurons}")
    name = neurons[0]
    neuron = graph.nodes[name]
    into = [src for src, dst in graph.edges if dst == name]
    inputs = [src for src in into if any(dst == src and kind(graph, s) == "Input" for s, dst in graph.edges)]
    feedback = [src for src in into if (name, src) in graph.edges]
    if len(inputs) != 1 or kind(graph, inputs[0]) not in ("Affine", "Linear"):
        raise ValueError(f"neuron node {name!r} must be fed by one Affine or Linear node that reads the input, "
                         f"got {into}")
    if len(feedback) > 1 or (feedback and kind(graph, feedback[0]) != "Linear"):
        raise ValueError(f"neuron node {name!r} may have one recurrent Linear node, got {feedback}")
    metadata = dict(neuron.metadata)
    if metadata.get("reset") != "subtract":
        raise ValueError(f"neuron node {name!r} resets to v_reset (NIR's default); rtrl's neurons reset by subtraction "
                         "of the threshold, so they cannot represent it (to_nir marks its graphs reset='subtract')")
    dt = float(metadata.get("dt", 1.0))
    tau = "tau" if kind(graph, name) == "LIF" else "tau_mem"
    if np.any(np.asarray(neuron.v_leak) != 0):
        raise ValueError(f"neuron node {name!r} has a non-zero v_leak, which rtrl's neurons do not have")
    gain = dt * np.asarray(neuron.r) / np.asarray(getattr(neuron, tau))
    projection = graph.nodes[inputs[0]]
    weight = np.asarray(projection.weight)
    bias = np.asarray(getattr(projection, "bias", np.zeros(weight.shape[0])))
    options = {"leak": 1 - dt / uniform(name, tau, neuron), "threshold": uniform(name, "v_threshold", neuron),
               "recurrent": bool(feedback),
               **{k: metadata[k] for k in SURROGATE_OPTIONS if metadata.get(k) is not None}}
    params = {"W": weight.T * gain, "b": bias * gain}
    if feedback:
        params["R"] = np.asarray(graph.nodes[feedback[0]].weight).T * gain
    D, N = weight.shape[1], weight.shape[0]
    if kind(graph, name) == "LIF":
        cell = LIF(D, N, **options)
    else:
        tau_syn = np.asarray(neuron.tau_syn)
        params = {k: v * (dt * np.asarray(neuron.w_in) / tau_syn) for k, v in params.items()}
        zeros = np.zeros(N)
        params.update(a0=-(1 - dt / tau_syn), a1=zeros, b0=zeros, b1=zeros)
        cell = SpikingIIR2(D, N, **options)
    dtype = jnp.result_type(weight.dtype)
    return cell, {k: jnp.asarray(v, dtype) for k, v in params.items()}


def uniform(node: str, field: str, neuron) -> float:
    """The one value of a per-neuron field that rtrl's cells keep as a single option."""
    values = np.asarray(getattr(neuron, field))
    if not np.all(values == values.flat[0]):
        raise ValueError(f"neuron node {node!r} has several values of {field}; rtrl's cells take one for all neurons")
    return float(values.flat[0])


def kind(graph, node: str) -> str:
    """A node's NIR type by name (``"LIF"``, ``"Affine"``, ...)."""
    return type(graph.nodes[node]).__name__
