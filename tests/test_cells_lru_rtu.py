"""LRU and RTU (linear and non-linear, with an output matrix or the units' parts concatenated): every exact method
equals BPTT, traces have the size derived, |lambda| < 1."""

import json
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
    reset_error,
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
    "lru_concat": lambda D, N: LRU(D, N, output_map="concat"),
    "rtu_concat": lambda D, N: RTU(D, N, output_map="concat"),
    "rtu_nonlinear_concat": lambda D, N: RTU(D, N, variant="nonlinear", output_map="concat"),
}
EXACT = ("closed_form", "diagonal", "rtrl")


# Fixed sizes and seeds (N not a power of two; D below, equal to and above... N varies), each family batched or
# not: a compilation each, all methods and lengths in one call.
@pytest.mark.parametrize(("kind", "batch_shape", "D", "N", "seed"), [
    ("lru", (), 3, 7, 11), ("lru", (3,), 2, 5, 12), ("rtu", (3,), 4, 12, 13), ("rtu_nonlinear", (), 1, 5, 14),
    ("lru_concat", (3,), 2, 10, 15), ("rtu_concat", (), 3, 8, 16), ("rtu_nonlinear_concat", (2,), 1, 6, 17)])
def test_exact_methods_equal_bptt(kind, batch_shape, D, N, seed):
    """For T in {1, 2, 3, 50}, from a zero and from a given carry (``auto`` too where the output is concatenated:
    it must resolve to the closed form there as with the matrix)."""
    cell = KINDS[kind](D, N)
    params, xs, ys = random_problem(cell, 50, batch_shape, seed)
    carries = (cell.initial_carry(batch_shape), random_carry(cell, batch_shape, seed + 2))
    methods = EXACT + ("auto",) if kind.endswith("concat") else EXACT
    error, where = worst_error(cell, methods, perturbed(params, seed + 1), xs, ys, carries, (1, 2, 3, 50))
    assert error <= EXACT_TOL, where


@pytest.mark.parametrize("kind", ["lru_concat", "rtu_concat", "rtu_nonlinear_concat"])
def test_concatenated_outputs_stay_exact_after_a_reset(kind):
    """The online learners' summed per-step gradients, example 0 reset half-way (its carry and traces zeroed), equal
    BPTT's with that example's carry zeroed at the same step, under every exact method and ``auto`` (the closed
    form)."""
    cell = KINDS[kind](2, 8)
    assert rtrl.inspect(cell).method == "closed_form"
    params, xs, ys = random_problem(cell, 16, (2,), 31)
    for method in (*EXACT, "auto"):
        assert reset_error(cell, method, perturbed(params, 32), xs, ys, 7) <= EXACT_TOL, method


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
    D = 5
    cell = KINDS[kind](D, 14 if kind.endswith("concat") else 7)
    N = 7  # the complex units: hidden_size, or half of it where the output is the units' parts concatenated
    assert cell.units() == N
    params = cell.init(jax.random.PRNGKey(0))
    # closed form: Q, S (N complex) and E (D x N complex) for the linear recurrences (ds/dB_im = i ds/dB_re);
    # the non-linear RTU keeps one complex trace per recurrent parameter.
    closed = 2 * (2 * N + D * N) if not kind.startswith("rtu_nonlinear") else 2 * (2 * N + 2 * D * N)
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


def test_concatenated_lru_step_follows_its_equations():
    """``h = (Re s', Im s') + x @ skip`` over ``hidden_size / 2`` complex units, no ``C``; the recurrence that of the
    matrix LRU with as many units (the same ``s'`` from the same recurrent parameters)."""
    cell = LRU(2, 6, output_map="concat")
    p = cell.init(jax.random.PRNGKey(0))
    assert {name: a.shape for name, a in p.items()} == {
        "nu": (3,), "theta": (3,), "gamma_log": (3,), "B_re": (2, 3), "B_im": (2, 3), "skip": (2, 6)}
    carry = random_carry(cell, (4,), 2)
    assert {name: a.shape for name, a in carry.items()} == {"re": (4, 3), "im": (4, 3)}
    x = jax.random.normal(jax.random.PRNGKey(3), (4, 2))
    new, h = cell.step(p, carry, x)
    lam = RHO * jnp.exp(-jnp.exp(p["nu"]) + 1j * jnp.exp(p["theta"]))
    s = lam * (carry["re"] + 1j * carry["im"]) + jnp.exp(p["gamma_log"]) * (x @ (p["B_re"] + 1j * p["B_im"]))
    np.testing.assert_allclose(new["re"] + 1j * new["im"], s, rtol=1e-12)
    np.testing.assert_allclose(h, jnp.concatenate([jnp.real(s), jnp.imag(s)], -1) + x @ p["skip"], rtol=1e-12)
    matrix = LRU(2, 3)
    recurrent = {k: p[k] for k in ("nu", "theta", "gamma_log", "B_re", "B_im")}
    same, _ = matrix.step({**matrix.init(jax.random.PRNGKey(1)), **recurrent}, carry, x)
    assert all(np.array_equal(same[k], new[k]) for k in ("re", "im"))


@pytest.mark.parametrize("variant", ["linear", "nonlinear"])
def test_concatenated_rtu_step_is_the_papers_output(variant):
    """``h = (f(c1'), f(c2'))`` (linear) or ``(c1', c2')`` (non-linear), as Elelimy et al. write it: the carry of
    the matrix RTU with as many units, and its output is that concatenation times ``[C1; C2]``."""
    cell, matrix = RTU(2, 6, variant=variant, output_map="concat"), RTU(2, 3, variant=variant)
    p = matrix.init(jax.random.PRNGKey(0))
    own = {k: a for k, a in p.items() if k not in ("C1", "C2")}
    assert {k: a.shape for k, a in cell.init(jax.random.PRNGKey(0)).items()} == {k: a.shape for k, a in own.items()}
    carry = random_carry(cell, (4,), 2)
    x = jax.random.normal(jax.random.PRNGKey(3), (4, 2))
    new, h = cell.step(own, carry, x)
    new_matrix, h_matrix = matrix.step(p, carry, x)
    assert all(np.array_equal(new[k], new_matrix[k]) for k in ("c1", "c2"))
    f = jnp.tanh if variant == "linear" else (lambda a: a)
    np.testing.assert_array_equal(h, jnp.concatenate([f(new["c1"]), f(new["c2"])], -1))
    np.testing.assert_allclose(h @ jnp.concatenate([p["C1"], p["C2"]]), h_matrix, rtol=1e-12)


def test_the_default_output_map_is_the_matrix():
    for cls in (LRU, RTU):
        assert cls(2, 3) == cls(2, 3, output_map="matrix") and cls(2, 3).units() == 3
        params = cls(2, 3).init(jax.random.PRNGKey(0))
        assert {"C_re", "C_im"} <= set(params) if cls is LRU else {"C1", "C2"} <= set(params)


@pytest.mark.parametrize("cls", [LRU, RTU])
def test_bad_output_maps_are_value_errors(cls):
    with pytest.raises(ValueError, match=r"output_map must be one of \['matrix', 'concat'\], got 'dense'"):
        cls(2, 4, output_map="dense")
    with pytest.raises(ValueError, match="output_map must be one of"):
        cls(2, 4, output_map=None)
    with pytest.raises(ValueError, match="hidden_size must be even under output_map='concat'.*got 5"):
        cls(2, 5, output_map="concat")
    cls(2, 5)  # any width with the matrix


def test_output_map_from_the_command_line_round_trips_through_config_json(tmp_path, capsys):
    """``rtrl rl --cell lru --cell-arg output_map=concat``: config.json keeps the option and ``rtrl.load`` rebuilds
    the same cell, whose parameters have no ``C``; a wrong value, or an odd ``--hidden``, is refused (status 2) in
    a line naming the argument, before anything is written."""
    from rtrl.cli import main

    tiny = "rl --env tmaze --env-arg length=2 --envs 2 --record-every 10 --steps 10 --quiet --cell lru".split()
    assert main([*tiny, "--hidden", "6", "--cell-arg", "output_map=concat", "--out", str(tmp_path / "run")]) == 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["cell_args"] == {"output_map": "concat"}
    cell, params = rtrl.load(tmp_path / "run")
    assert cell == LRU(cell.input_size, 6, output_map="concat") and "C_re" not in params
    assert params["nu"].shape == (3,) and params["skip"].shape == (cell.input_size, 6)
    capsys.readouterr()
    for args, word in ((["--hidden", "6", "--cell-arg", "output_map=dense"], "output_map must be one of"),
                       (["--hidden", "5", "--cell-arg", "output_map=concat"], "hidden_size must be even")):
        assert main([*tiny, *args, "--out", str(tmp_path / "bad")]) == 2
        assert word in capsys.readouterr().err and not (tmp_path / "bad").exists()


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
