"""NIR export and import of the spiking cells: the round trip keeps the forward output, bad input is refused."""

import jax
import jax.numpy as jnp
import nir
import numpy as np
import pytest

from rtrl.cells import ALIF, LIF, Elman, SpikingIIR2
from rtrl.export import from_nir, to_nir

STEPS = 100


def spikes_and_membrane(cell, params, xs):
    _, (s, v) = jax.lax.scan(lambda c, x: (lambda c: (c, (c["s"], c["v"])))(cell.step(params, c, x)[0]),
                             cell.initial_carry(xs.shape[1:-1], xs.dtype), xs)
    return s, v


def first_order(cell, params):
    """A first-order synapse: decays in (0, 1) (a0 = -decay), a1 = b0 = b1 = 0."""
    N = cell.hidden_size
    return {**params, "a0": -jnp.linspace(0.3, 0.8, N), "a1": jnp.zeros(N), "b0": jnp.zeros(N), "b1": jnp.zeros(N)}


CASES = {
    "lif": (LIF(3, 5, leak=0.8, threshold=0.7, surrogate="triangle"), None),
    "lif_recurrent": (LIF(3, 4, recurrent=True), None),
    "cuba": (SpikingIIR2(2, 4, leak=0.85, surrogate_scale=2.0), first_order),
    "cuba_recurrent": (SpikingIIR2(3, 3, recurrent=True), first_order),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("through_file", [False, True])
def test_round_trip_keeps_the_forward_output(name, through_file, tmp_path):
    """The cell read back has the same options, and over 100 steps the same spikes (which are neither all 0 nor
    all 1) and membrane, with a time step dt = 0.25 (not 1, where r = tau / dt = tau). Mutations tried by hand:
    to_nir's ``r = tau / dt`` written ``r = tau`` (the input gain folded back into W is 4x): caught; CubaLIF's
    ``w_in = tau_syn / dt`` written ``1``: caught."""
    cell, adjust = CASES[name]
    params = cell.init(jax.random.PRNGKey(1))
    params = {**params, "W": 3 * params["W"], "b": 0.1 * jnp.ones(cell.hidden_size)}
    params = adjust(cell, params) if adjust else params
    graph = to_nir(cell, params, dt=0.25)
    assert {type(n).__name__ for n in graph.nodes.values()} >= {"Input", "Affine", "Output"}
    if through_file:
        nir.write(tmp_path / "graph.nir", graph)
        graph = nir.read(tmp_path / "graph.nir")
    back, back_params = from_nir(graph)
    assert type(back) is type(cell) and back.recurrent == cell.recurrent
    assert (back.surrogate, back.surrogate_scale, back.threshold) == (cell.surrogate, cell.surrogate_scale,
                                                                      cell.threshold)
    assert back.leak == pytest.approx(cell.leak, rel=1e-12)
    xs = jax.random.normal(jax.random.PRNGKey(2), (STEPS, 2, cell.input_size))
    s, v = spikes_and_membrane(cell, params, xs)
    s_back, v_back = spikes_and_membrane(back, back_params, xs)
    assert 0.02 < float(s.mean()) < 0.7
    np.testing.assert_array_equal(s_back, s)
    np.testing.assert_allclose(v_back, v, rtol=1e-5, atol=1e-5)


def test_the_graph_states_its_discretisation():
    """dt = 0.5 and leak 0.9: tau = dt / (1 - leak) = 5, r = tau / dt = 10, and the reset is by subtraction."""
    cell = LIF(2, 3, recurrent=True)
    graph = to_nir(cell, cell.init(jax.random.PRNGKey(0)), dt=0.5)
    lif = graph.nodes["neuron"]
    np.testing.assert_allclose(lif.tau, 5.0)
    np.testing.assert_allclose(lif.r, 10.0)
    assert lif.metadata["reset"] == "subtract" and lif.metadata["dt"] == 0.5
    assert set(graph.edges) == {("input", "affine"), ("affine", "neuron"), ("neuron", "output"),
                                ("neuron", "recurrent"), ("recurrent", "neuron")}
    assert from_nir(graph)[0].leak == pytest.approx(0.9)


@pytest.mark.parametrize("cell", [ALIF(2, 3), Elman(2, 3), SpikingIIR2(2, 3)])
def test_a_cell_with_no_counterpart_is_refused_by_name(cell):
    """ALIF (no adaptive neuron in NIR), a non-spiking cell, and a SpikingIIR2 with a second-order filter."""
    with pytest.raises(ValueError, match=cell.name):
        to_nir(cell, cell.init(jax.random.PRNGKey(0)))


def test_a_graph_with_nodes_we_cannot_map_is_refused_by_node():
    cell = LIF(2, 3)
    graph = to_nir(cell, cell.init(jax.random.PRNGKey(0)))
    graph.nodes["pool"] = nir.Threshold(threshold=np.ones(3))
    with pytest.raises(ValueError, match="'pool'.*Threshold"):
        from_nir(graph)
    reset_to_zero = nir.NIRGraph.from_list(nir.Affine(weight=np.ones((3, 2)), bias=np.zeros(3)),
                                           nir.LIF(tau=np.ones(3), r=np.ones(3), v_leak=np.zeros(3),
                                                   v_threshold=np.ones(3)))
    with pytest.raises(ValueError, match="'lif'.*v_reset"):
        from_nir(reset_to_zero)
