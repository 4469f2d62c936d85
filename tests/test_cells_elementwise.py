"""IIR2, AdaptiveIIR2 (both parameterisations) and ELSTM: every exact method equals BPTT, traces stay small."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rtrl
from oracle import EXACT_TOL, errors_against_bptt, perturbed, prefix_grads, random_carry, random_problem, worst_error
from rtrl.cells import ELSTM, IIR2, AdaptiveIIR2
from rtrl.cells.iir2 import RHO
from rtrl.compare import relative_error

KINDS = {
    "iir2": lambda D, N: IIR2(D, N),
    "iir2_stable": lambda D, N: IIR2(D, N, parameterisation="stable"),
    "adaptive_iir2": lambda D, N: AdaptiveIIR2(D, N),
    "adaptive_iir2_stable": lambda D, N: AdaptiveIIR2(D, N, parameterisation="stable"),
    "elstm": lambda D, N: ELSTM(D, N),
}
EXACT = ("closed_form", "diagonal", "rtrl")


# Each cell family runs batched and unbatched, each parameterisation at least once (a compilation each), on
# several neurons and inputs (a single neuron would hide any mix-up between neurons) and a seed of its own.
@pytest.mark.parametrize(("kind", "batch_shape", "D", "N", "seed"), [
    ("iir2", (), 3, 5, 101), ("iir2_stable", (3,), 2, 4, 202), ("adaptive_iir2", (3,), 4, 3, 303),
    ("adaptive_iir2_stable", (), 2, 5, 404), ("elstm", (), 3, 4, 505), ("elstm", (3,), 4, 5, 606)])
def test_exact_methods_equal_bptt(kind, batch_shape, D, N, seed):
    """For T in {1, 2, 3, 4, 100}, from a zero and from a given carry."""
    cell = KINDS[kind](D, N)
    params, xs, ys = random_problem(cell, 100, batch_shape, seed)
    carries = (cell.initial_carry(batch_shape), random_carry(cell, batch_shape, seed + 2))
    error, where = worst_error(cell, EXACT, perturbed(params, seed + 1), xs, ys, carries, (1, 2, 3, 4, 100))
    assert error <= EXACT_TOL, where


def trace_elements(learner, params):
    return sum(a.size for a in jax.tree.leaves(learner.init(params).traces))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_traces_have_parameter_size_times_state_order(kind):
    D, N = 5, 7
    cell = KINDS[kind](D, N)
    params = cell.init(jax.random.PRNGKey(0))
    recurrent = {p: a for p, a in params.items() if p not in cell.readout()}
    size = sum(a.size for a in recurrent.values())
    order = 1 if kind == "elstm" else 2
    carry_size = sum(a.size for a in jax.tree.leaves(cell.initial_carry()))
    # Hand-derived: the recurrent parameters times the state order, plus the filters' two inputs and two flags.
    assert trace_elements(rtrl.online(cell, "closed_form"), params) == size * order + (0 if order == 1 else 2 * D + 2)
    # Automatic: each parameter times the carry leaves it reaches (at most all of them), never carry x params.
    diagonal = rtrl.online(cell, "diagonal").init(params).traces
    assert sum(a.size for a in jax.tree.leaves(diagonal)) <= size * len(jax.tree.leaves(cell.initial_carry()))
    assert max(a.size for a in jax.tree.leaves(diagonal)) == max(a.size for a in recurrent.values())
    # The filters' z1, z2 are found to be a delay line of inputs: the automatic traces are the hand-derived ones'.
    assert sum(a.size for a in jax.tree.leaves(diagonal)) == trace_elements(rtrl.online(cell, "closed_form"), params)
    assert trace_elements(rtrl.online(cell, "rtrl"), params) == carry_size * sum(a.size for a in params.values())


def test_diagonal_keeps_only_the_leaves_a_parameter_reaches():
    traces = rtrl.online(AdaptiveIIR2(2, 3), "diagonal").init(AdaptiveIIR2(2, 3).init(jax.random.PRNGKey(0))).traces
    assert sorted(traces["params"]["W"]) == ["y1", "y2"]  # z1, z2 are the inputs' delay line: kept as inputs
    assert sorted(traces["inputs"]) == ["z1", "z2"]
    assert sorted(traces["params"]["w_a0"]) == ["y1", "y2"]  # the coefficient networks never reach z


@pytest.mark.parametrize(("kind", "method"), [("iir2", "closed_form"), ("adaptive_iir2_stable", "diagonal"),
                                             ("elstm", "closed_form")])  # the eLSTM's output has parameters
def test_online_steps_with_a_readout_and_resets_equal_bptt(kind, method):
    """Per-step ``jax.grad`` of a loss through a readout, summed, equals BPTT for the cell and the readout; a reset
    zeroes carry and traces and starts a fresh sequence for that example only."""
    cell = KINDS[kind](3, 4)
    params, xs, ys = random_problem(cell, 6, (2,), 3)
    params = perturbed(params, 4)
    readout = jax.random.normal(jax.random.PRNGKey(5), (4, 2))
    learner = rtrl.online(cell, method)

    def loss(h, target, V):  # target: (y, weight of each example)
        return jnp.sum(target[1][:, None] * (h @ V - target[0][..., :2]) ** 2)

    @jax.jit
    def run(params, V, state, xs, targets):
        def body(state, xy):
            def step_loss(pv):
                h, state_ = learner.step(pv[0], state, xy[0])
                return loss(h, xy[1], pv[1]), state_

            g, state = jax.grad(step_loss, has_aux=True)((params, V))
            return state, g

        state, gs = jax.lax.scan(body, state, (xs, targets))
        return state, jax.tree.map(lambda a: a.sum(0), gs)

    @jax.jit
    def reference(params, V, carry, xs, targets):
        def total(pv):
            return rtrl.methods.bptt.scan_loss(cell, pv[0], xs, targets, lambda h, y: loss(h, y, pv[1]), carry)[0]

        return jax.grad(total)((params, V))

    both = (ys[:3], jnp.ones((3, 2)))
    state, g = run(params, readout, learner.init(params, (2,)), xs[:3], both)
    assert relative_error(g, reference(params, readout, cell.initial_carry((2,)), xs[:3], both)) <= EXACT_TOL
    # Reset example 0 and go on with a loss on example 0 only: its gradient is that of a fresh sequence, while
    # example 1 keeps its carry and traces.
    state = learner.reset(state, jnp.array([True, False]))
    assert not any(np.any(np.asarray(leaf[0])) for leaf in jax.tree.leaves(state))
    assert all(np.any(np.asarray(leaf[1])) for leaf in jax.tree.leaves(state.carry))
    assert any(np.any(np.asarray(leaf[1])) for leaf in jax.tree.leaves(state.traces))
    first = (ys[3:], jnp.zeros((3, 2)).at[:, 0].set(1.0))
    _, g = run(params, readout, state, xs[3:], first)
    assert relative_error(g, reference(params, readout, state.carry, xs[3:], first)) <= EXACT_TOL


@pytest.mark.parametrize("kind", ["adaptive_iir2", "elstm"])
def test_float32_stays_float32_and_close_to_bptt(kind):
    cell = KINDS[kind](3, 4)
    params, xs, ys = random_problem(cell, 20, (2,), 11, dtype=jnp.float32)
    for method in ("closed_form", "diagonal"):
        state = rtrl.online(cell, method).init(params, (2,))
        assert {a.dtype for a in jax.tree.leaves(state)} == {jnp.dtype(jnp.float32)}
    run = prefix_grads(cell, ("bptt", "closed_form", "diagonal"), (20,))
    results = run(params, xs, ys, cell.initial_carry((2,), jnp.float32))
    assert {a.dtype for a in jax.tree.leaves(results)} == {jnp.dtype(jnp.float32)}
    errors = errors_against_bptt(results, (20,))
    assert max(errors.values()) < 1e-4, errors


def test_cells_are_registered_and_exported():
    assert {"iir2": IIR2, "adaptive_iir2": AdaptiveIIR2, "elstm": ELSTM}.items() <= rtrl.cells.CELLS.items()
    assert "diagonal" in rtrl.METHODS


def test_iir2_step_follows_the_contract_equations():
    cell = IIR2(2, 3)
    p = perturbed(cell.init(jax.random.PRNGKey(0)), 1)
    carry = random_carry(cell, (), 2)
    x = jnp.array([0.3, -1.2])
    new, h = cell.step(p, carry, x)
    z = x @ p["W"] + p["b"]
    y = z + p["b0"] * carry["z1"] + p["b1"] * carry["z2"] - p["a0"] * carry["y1"] - p["a1"] * carry["y2"]
    np.testing.assert_allclose(h, jnp.tanh(y), rtol=1e-12)
    for name, value in {"z1": z, "z2": carry["z1"], "y1": y, "y2": carry["y1"]}.items():
        np.testing.assert_allclose(new[name], value, rtol=1e-12)


def test_adaptive_iir2_step_follows_the_contract_equations():
    cell = AdaptiveIIR2(2, 3)
    p = perturbed(cell.init(jax.random.PRNGKey(0)), 1)
    carry = random_carry(cell, (4,), 2)
    x = jax.random.normal(jax.random.PRNGKey(3), (4, 2))
    new, h = cell.step(p, carry, x)
    a0, a1, b0, b1 = (jnp.tanh(x @ p[f"w_{s}"] + p[f"c_{s}"]) for s in ("a0", "a1", "b0", "b1"))
    z = x @ p["W"] + p["b"]
    y = z + b0 * carry["z1"] + b1 * carry["z2"] - a0 * carry["y1"] - a1 * carry["y2"]
    np.testing.assert_allclose(new["y1"], y, rtol=1e-12)
    np.testing.assert_allclose(h, jnp.tanh(y), rtol=1e-12)


def test_stable_parameterisation_uses_reflection_coefficients():
    cell = AdaptiveIIR2(2, 3, parameterisation="stable")
    p = perturbed(cell.init(jax.random.PRNGKey(0)), 1, scale=1.0)
    x = jax.random.normal(jax.random.PRNGKey(3), (4, 2))
    r1, r2 = (RHO * jnp.tanh(x @ p[f"w_{s}"] + p[f"c_{s}"]) for s in ("k1", "k2"))
    a0, a1, _, _ = cell.coefficients(p, x)
    np.testing.assert_allclose(a0, r1 * (1 + r2), rtol=1e-12)
    np.testing.assert_allclose(a1, r2, rtol=1e-12)


def test_elstm_step_follows_the_contract_equations():
    cell = ELSTM(2, 3)
    p = perturbed(cell.init(jax.random.PRNGKey(0)), 1)
    c = random_carry(cell, (4,), 2)["c"]
    x = jax.random.normal(jax.random.PRNGKey(3), (4, 2))
    new, h = cell.step(p, {"c": c}, x)
    f = jax.nn.sigmoid(x @ p["F"] + p["w_f"] * c + p["b_f"])
    z = jnp.tanh(x @ p["Z"] + p["w_z"] * c + p["b_z"])
    c_new = f * c + (1 - f) * z
    np.testing.assert_allclose(new["c"], c_new, rtol=1e-12)
    np.testing.assert_allclose(h, jax.nn.sigmoid(x @ p["O"] + c_new @ p["W_o"] + p["b_o"]) * c_new, rtol=1e-12)


@pytest.mark.parametrize("cls", [IIR2, AdaptiveIIR2])
def test_unknown_parameterisation_is_a_value_error(cls):
    with pytest.raises(ValueError, match="parameterisation must be one of"):
        cls(2, 3, parameterisation="lattice")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_mismatched_parameter_shapes_are_value_errors(kind):
    cell = KINDS[kind](2, 3)
    params = cell.init(jax.random.PRNGKey(0))
    name = next(p for p, a in params.items() if a.ndim == 1)
    bad = {**params, name: jnp.zeros(4)}
    with pytest.raises(ValueError, match=rf"params\['{name}'\].*must have shape \(3,\)"):
        cell.step(bad, cell.initial_carry(), jnp.zeros(2))
    with pytest.raises(ValueError, match="lack"):
        cell.step({p: a for p, a in params.items() if p != name}, cell.initial_carry(), jnp.zeros(2))
