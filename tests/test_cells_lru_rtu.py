"""LRU and RTU (linear and non-linear): every exact method equals BPTT, traces have the size derived, |lambda| < 1."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import rtrl
from oracle import (
    EXACT_TOL,
    XLA_DEFAULT_EMITTERS,
    errors_against_bptt,
    perturbed,
    prefix_grads,
    random_carry,
    random_problem,
    squared_error,
    worst_error,
)
from rtrl.cells import LRU, RTU
from rtrl.cells.elementwise import computed_once
from rtrl.cells.lru import RHO, THETA_MAX, eigenvalue
from rtrl.compare import relative_error

KINDS = {
    "lru": lambda D, N: LRU(D, N),
    "rtu": lambda D, N: RTU(D, N),
    "rtu_nonlinear": lambda D, N: RTU(D, N, variant="nonlinear"),
}
EXACT = ("closed_form", "diagonal", "rtrl")


# Fixed sizes and seeds (N not a power of two; D below, equal to and above... N varies), each family batched or
# not: a compilation each, all methods and lengths in one call.
@pytest.mark.parametrize(("kind", "batch_shape", "D", "N", "seed"), [
    ("lru", (), 3, 7, 11), ("lru", (3,), 2, 5, 12), ("rtu", (3,), 4, 12, 13), ("rtu_nonlinear", (), 1, 5, 14)])
def test_exact_methods_equal_bptt(kind, batch_shape, D, N, seed):
    """For T in {1, 2, 3, 50}, from a zero and from a given carry."""
    cell = KINDS[kind](D, N)
    params, xs, ys = random_problem(cell, 50, batch_shape, seed)
    carries = (cell.initial_carry(batch_shape), random_carry(cell, batch_shape, seed + 2))
    error, where = worst_error(cell, EXACT, perturbed(params, seed + 1), xs, ys, carries, (1, 2, 3, 50))
    assert error <= EXACT_TOL, where


def test_phases_past_their_clamp_stay_exact():
    """theta at, just below and past THETA_MAX (where the phase stops growing: its derivative is 0 there), and far
    below: every exact method still equals BPTT, and the clamped entries (the one at the clamp included) get
    exactly no gradient. Found: ``phase`` was ``exp(minimum(theta, THETA_MAX))``, whose derivative at the clamp
    is 1/2 of the unclamped one (ties split) where the closed form's is 0. (Mutation tried by hand: the closed
    form's ``theta < THETA_MAX`` made ``<=``: caught.)"""
    cell = LRU(2, 6)
    params, xs, ys = random_problem(cell, 30, (2,), 21)
    theta = jnp.array([THETA_MAX + 5.0, THETA_MAX + 1e-3, THETA_MAX, THETA_MAX - 0.1, 0.3, -2.0])
    params = {**perturbed(params, 22), "theta": theta}
    run = prefix_grads(cell, ("bptt", *EXACT), (1, 30))
    for carry in (cell.initial_carry((2,)), random_carry(cell, (2,), 23)):
        results = run(params, xs, ys, carry)
        errors = errors_against_bptt(results, (1, 30))
        assert max(errors.values()) <= EXACT_TOL, errors
        for method in ("bptt", *EXACT):
            theta = np.asarray(results[method][1]["theta"][1])  # T = 30
            assert np.all(theta[:3] == 0) and np.all(theta[3:] != 0), (method, theta)


def trace_floats(cell, method, params):
    return sum(a.size for a in jax.tree.leaves(rtrl.online(cell, method).init(params).traces))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_trace_sizes(kind):
    D, N = 5, 7
    cell = KINDS[kind](D, N)
    params = cell.init(jax.random.PRNGKey(0))
    # closed form: Q, S (N complex) and E (D x N complex) for the linear recurrences (ds/dB_im = i ds/dB_re);
    # the non-linear RTU keeps one complex trace per recurrent parameter.
    closed = 2 * (2 * N + D * N) if kind != "rtu_nonlinear" else 2 * (2 * N + 2 * D * N)
    assert trace_floats(cell, "closed_form", params) == closed
    # diagonal, from the step alone: the same (the second projection a complex pair of the first, the LRU's nu and
    # theta sharing ds/dlambda); the non-linear RTU's parts are not holomorphic, so each parameter keeps its own.
    assert trace_floats(cell, "diagonal", params) == closed
    assert trace_floats(cell, "rtrl", params) == 2 * N * sum(a.size for a in params.values())


def test_after_a_reset_the_gradient_is_that_of_a_fresh_sequence():
    cell = LRU(2, 3)
    params, xs, ys = random_problem(cell, 10, (2,), seed=5)
    learner = rtrl.online(cell, "closed_form")
    stream = jax.jit(lambda state, xs, ys: rtrl.stream_grad(learner, params, state, xs, ys, squared_error))
    _, _, state = stream(learner.init(params, batch_shape=(2,)), xs[:5], ys[:5])
    after = learner.reset(state, jnp.array([True, False]))
    for before, leaf in zip(jax.tree.leaves(state), jax.tree.leaves(after), strict=True):
        assert jnp.all(leaf[0] == 0) and jnp.array_equal(leaf[1], before[1]) and jnp.any(before[0] != 0)
    _, g, _ = stream(learner.reset(state, jnp.array([True, True])), xs[5:], ys[5:])
    _, g_ref = rtrl.sequence_grad(cell, params, xs[5:], ys[5:], squared_error, method="bptt")
    assert relative_error(g, g_ref) <= EXACT_TOL


def test_float32_stays_float32_and_close_to_bptt():
    cell = RTU(3, 4)
    params, xs, ys = random_problem(cell, 20, (2,), 11, dtype=jnp.float32)
    run = prefix_grads(cell, ("bptt", "closed_form"), (20,))
    results = run(params, xs, ys, cell.initial_carry((2,), jnp.float32))
    assert {a.dtype for a in jax.tree.leaves(results)} == {jnp.dtype(jnp.float32)}
    errors = errors_against_bptt(results, (20,))
    assert max(errors.values()) < 1e-4, errors


finite = st.floats(allow_nan=False, allow_infinity=False, width=32)


@jax.jit
def modulus_and_contraction(nu, theta):
    """``|lambda|`` and ``|s'|^2`` after one step from ``s = 1 + i`` with no input."""
    cell = LRU(1, nu.shape[0])
    params = {name: jnp.zeros(shape, nu.dtype) for name, shape in cell.param_shapes().items()}
    params.update(nu=nu, theta=theta)
    ones = jnp.ones_like(nu)
    new, _ = cell.step(params, {"re": ones, "im": ones}, jnp.zeros(1, nu.dtype))
    return jnp.abs(jax.lax.complex(*eigenvalue(nu, theta))), new["re"] ** 2 + new["im"] ** 2


@settings(max_examples=100, deadline=None)
@given(nu=st.lists(finite, min_size=4, max_size=4), theta=st.lists(finite, min_size=4, max_size=4),
       dtype=st.sampled_from([jnp.float32, jnp.float64]))
@example(nu=[-1e30, -40.0, 0.0, 1e30], theta=[1e30, -1e30, 0.0, 88.0], dtype=jnp.float32)
@example(nu=[-1e30, -40.0, 0.0, 1e30], theta=[1e30, -1e30, 0.0, 100.0], dtype=jnp.float64)
def test_every_parameter_value_gives_a_stable_eigenvalue(nu, theta, dtype):
    """(The examples: exp(-exp(nu)) rounds to 1, exp(theta) overflows.) The step is then a contraction."""
    modulus, squared = modulus_and_contraction(jnp.asarray(nu, dtype), jnp.asarray(theta, dtype))
    assert bool(jnp.all(jnp.isfinite(modulus))) and bool(jnp.all(modulus < 1)), (nu, theta, modulus)
    assert bool(jnp.all(squared < 2)), (nu, theta, squared)


@settings(max_examples=10, deadline=None)
@given(r=st.tuples(st.floats(0, 0.999), st.floats(0, 0.999)).map(sorted).filter(lambda r: r[1] > 0),
       max_phase=st.floats(1e-3, 10), seed=st.integers(0, 2**16))
def test_ring_initialisation_draws_inside_the_ring(r, max_phase, seed):
    cell = LRU(2, 64, r_min=r[0], r_max=r[1], max_phase=max_phase)
    params = cell.init(jax.random.PRNGKey(seed))
    lam = cell.eigenvalues(params)
    modulus, angle = np.abs(lam), np.asarray(jnp.exp(params["theta"]))
    assert np.all(modulus >= r[0] - 1e-9) and np.all(modulus <= r[1] + 1e-9)
    assert np.all(angle > 0) and np.all(angle <= max_phase * (1 + 1e-9))
    np.testing.assert_allclose(np.exp(params["gamma_log"]), np.sqrt(1 - modulus**2), rtol=1e-9)
    assert np.all(np.isfinite(np.asarray(params["nu"])))


def test_lru_step_follows_its_equations():
    cell = LRU(2, 3)
    p = cell.init(jax.random.PRNGKey(0))
    carry = random_carry(cell, (4,), 2)
    x = jax.random.normal(jax.random.PRNGKey(3), (4, 2))
    new, h = cell.step(p, carry, x)
    lam = RHO * jnp.exp(-jnp.exp(p["nu"]) + 1j * jnp.exp(p["theta"]))
    s = lam * (carry["re"] + 1j * carry["im"]) + jnp.exp(p["gamma_log"]) * (x @ (p["B_re"] + 1j * p["B_im"]))
    np.testing.assert_allclose(new["re"] + 1j * new["im"], s, rtol=1e-12)
    np.testing.assert_allclose(h, jnp.real(s @ (p["C_re"] + 1j * p["C_im"])) + x @ p["skip"], rtol=1e-12)


@pytest.mark.parametrize("variant", ["linear", "nonlinear"])
def test_rtu_step_follows_its_equations(variant):
    cell = RTU(2, 3, variant=variant)
    p = cell.init(jax.random.PRNGKey(0))
    carry = random_carry(cell, (4,), 2)
    x = jax.random.normal(jax.random.PRNGKey(3), (4, 2))
    new, h = cell.step(p, carry, x)
    r, phase = RHO * jnp.exp(-jnp.exp(p["nu"])), jnp.exp(p["theta"])
    g, q, gamma = r * jnp.cos(phase), r * jnp.sin(phase), jnp.sqrt(1 - r**2)
    a1 = g * carry["c1"] - q * carry["c2"] + gamma * (x @ p["W1"])
    a2 = q * carry["c1"] + g * carry["c2"] + gamma * (x @ p["W2"])
    if variant == "nonlinear":
        a1, a2 = jnp.tanh(a1), jnp.tanh(a2)
        out1, out2 = a1, a2
    else:
        out1, out2 = jnp.tanh(a1), jnp.tanh(a2)
    np.testing.assert_allclose(new["c1"], a1, rtol=1e-12)
    np.testing.assert_allclose(new["c2"], a2, rtol=1e-12)
    np.testing.assert_allclose(h, out1 @ p["C1"] + out2 @ p["C2"], rtol=1e-12)


@pytest.mark.parametrize(("options", "message"), [
    ({"r_min": 0.5, "r_max": 0.4}, "r_min must satisfy 0 <= r_min <= r_max"),
    ({"r_min": -0.1}, "r_min must satisfy"),
    ({"r_max": 1.0}, r"r_max must be in \(0, "),
    ({"r_min": 0.0, "r_max": 0.0}, r"r_max must be in \(0, "),
    ({"r_max": math.nan}, "r_max must be a finite number"),
    ({"max_phase": 0.0}, "max_phase must be > 0"),
    ({"r_min": "0.1"}, "r_min must be a finite number"),
])
@pytest.mark.parametrize("cls", [LRU, RTU])
def test_bad_ring_options_are_value_errors(cls, options, message):
    with pytest.raises(ValueError, match=message):
        cls(2, 3, **options)


def test_bad_rtu_options_are_value_errors():
    with pytest.raises(ValueError, match=r"variant must be one of \['linear', 'nonlinear'\]"):
        RTU(2, 3, variant="gated")
    with pytest.raises(ValueError, match="activation must be one of"):
        RTU(2, 3, activation="swish")


def test_cells_are_registered_and_exported():
    assert {"lru": LRU, "rtu": RTU}.items() <= rtrl.cells.CELLS.items()
    for cell in (LRU(3, 4), RTU(3, 4)):  # defaults alone construct, initialise and step
        params = cell.init(jax.random.PRNGKey(0))
        carry, h = cell.step(params, cell.initial_carry((2,)), jnp.ones((2, 3)))
        assert h.shape == (2, 4) and all(a.shape == (2, 4) for a in jax.tree.leaves(carry))


def test_computed_once_returns_its_vectors_exactly_and_passes_gradients_through():
    for dtype, shape in ((jnp.float32, (7,)), (jnp.float64, (7,)), (jnp.float64, (3, 7)), (jnp.float32, (2, 3, 7))):
        a, b = jax.random.normal(jax.random.PRNGKey(0), (2, *shape), dtype)  # (3, 7): vectors over a batch
        out = computed_once(a * 1e30, b * 1e-30)
        assert out[0].dtype == dtype and np.array_equal(out[0], a * 1e30) and np.array_equal(out[1], b * 1e-30)
    w = jnp.arange(1.0, 8.0)
    grads = jax.grad(lambda a, b: jnp.sum(w * computed_once(a, b)[0]) + 2 * jnp.sum(computed_once(a, b)[1]),
                     argnums=(0, 1))(jnp.ones(7), jnp.ones(7))
    np.testing.assert_array_equal(grads[0], w)
    np.testing.assert_array_equal(grads[1], 2 * jnp.ones(7))


@pytest.mark.parametrize("kind", ["lru", "rtu"])
def test_the_eigenvalues_are_computed_once_per_neuron_not_per_trace_entry(kind):
    """On a CPU XLA fused ``exp``, ``cos`` and ``sin`` of the (N,) eigenvalues into the loop over every (B, D, N)
    trace entry (ten times slower; ``computed_once`` stops it). Read from the compiled online step: every fused
    computation that takes a cosine makes an array of at most N elements. [Without ``computed_once`` in
    ``eigenvalue``: a fusion over the batch, (B, N) = 20 elements, takes the cosine, and this fails.]"""
    assert jax.default_backend() == "cpu"
    B, D, N = 4, 6, 5
    cell = KINDS[kind](D, N)
    params, xs, _ = random_problem(cell, 1, (B,), 0)
    learner = rtrl.online(cell, "closed_form")
    state = learner.init(params, (B,))
    text = jax.jit(learner.step, compiler_options=XLA_DEFAULT_EMITTERS).lower(params, state, xs[0]).compile().as_text()
    computations = text.split("\n\n")
    with_cosine = [c for c in computations if "cosine(" in c and c.lstrip().startswith("%fused")]
    assert with_cosine, "no fused computation takes a cosine: the test reads nothing"
    for computation in with_cosine:
        root = next(line for line in computation.splitlines() if "ROOT" in line)
        dims = [int(d) for d in root.split("=", 1)[1].split("[", 1)[1].split("]", 1)[0].split(",") if d]
        assert math.prod(dims) <= 2 * N, root[:200]
