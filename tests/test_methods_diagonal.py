"""The diagonal method on a cell that exists only here: exact traces from a declaration, and clear refusals."""

import dataclasses

import jax
import jax.numpy as jnp
import pytest

import rtrl
from oracle import EXACT_TOL, perturbed, random_carry, random_problem, worst_error
from rtrl.cells import Cell, ElementwiseCell, Elman
from rtrl.cells.base import glorot


@dataclasses.dataclass(frozen=True)
class LeakyAdaptation(ElementwiseCell):
    """A leaky unit with an adaptation current, written without any trace derivation::

        v' = s*v + (1 - s)*tanh(x @ U + b - beta*a)          s = sigmoid(leak)
        a' = r*a + sigmoid(x @ G + g) * v'                   r = sigmoid(decay)
        h  = tanh(v' - a' + x @ R)                           R: readout
    """

    def param_shapes(self):
        D, N = self.input_size, self.hidden_size
        return {"U": (D, N), "G": (D, N), "R": (D, N), "leak": (N,), "decay": (N,), "beta": (N,), "b": (N,),
                "g": (N,)}

    def projections(self):
        return ("U", "G")

    def readout(self):
        return ("R",)

    def carry_sizes(self):
        return {"v": self.hidden_size, "a": self.hidden_size}

    def init(self, key, dtype=None):
        keys = jax.random.split(key, len(self.param_shapes()))
        shapes = self.param_shapes()
        dtype = dtype or jnp.zeros(()).dtype
        return {name: glorot(k, shape, dtype) if len(shape) == 2 else 0.5 * jax.random.normal(k, shape, dtype)
                for k, (name, shape) in zip(keys, shapes.items(), strict=True)}

    def recur(self, vectors, carry, u):
        s, r = jax.nn.sigmoid(vectors["leak"]), jax.nn.sigmoid(vectors["decay"])
        v = s * carry["v"] + (1 - s) * jnp.tanh(u["U"] + vectors["b"] - vectors["beta"] * carry["a"])
        return {"v": v, "a": r * carry["a"] + jax.nn.sigmoid(u["G"] + vectors["g"]) * v}

    def output(self, params, carry, x):
        return jnp.tanh(carry["v"] - carry["a"] + x @ params["R"])


def test_diagonal_is_exact_on_a_cell_defined_here():
    batch_shape = (2,)
    cell = LeakyAdaptation(3, 4)
    params, xs, ys = random_problem(cell, 50, batch_shape, 0)
    carries = (cell.initial_carry(batch_shape), random_carry(cell, batch_shape, 1))
    error, where = worst_error(cell, ("diagonal", "rtrl"), perturbed(params, 2), xs, ys, carries, (1, 2, 3, 4, 50))
    assert error <= EXACT_TOL, where


def test_traces_of_a_cell_defined_here_are_its_parameters_times_its_leaves():
    cell = LeakyAdaptation(3, 4)
    params = cell.init(jax.random.PRNGKey(0))
    traces = rtrl.online(cell, "diagonal").init(params).traces
    assert traces["inputs"] == {}  # both leaves read the carry: no stored inputs
    traces = traces["params"]
    assert set(traces) == set(params) - {"R"}  # the readout keeps no traces
    for name, trace in traces.items():
        assert sorted(trace) == ["a", "v"]  # every recurrent parameter reaches both leaves
        # neuron-major: a projection (D, N) keeps an (N, D) trace, a vector its own shape
        assert all(e.shape == params[name].shape[::-1] for e in trace.values())


def replace_method(cls, **methods):
    return dataclasses.dataclass(frozen=True)(type(cls.__name__, (cls,), methods))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"projections": lambda self: ("U", "leak")}, r"projection 'leak' .* must have shape \(input_size, hidden"),
        ({"projections": lambda self: ("U",)}, r"parameter 'G' .* must be a per-neuron vector of shape \(4,\)"),
        ({"readout": lambda self: ("R", "Q")}, r"readout\(\) names \['Q'\], which are not parameters"),
        ({"readout": lambda self: ("R", "U")}, r"declares \['U'\] both as projections and as readout"),
        ({"carry_sizes": lambda self: {"v": 4, "a": 8}}, r"carry leaves are not per-neuron vectors of one size"),
    ],
)
def test_a_wrong_declaration_is_a_value_error(changes, message):
    cell = replace_method(LeakyAdaptation, **changes)(3, 4)
    with pytest.raises(ValueError, match=message):
        rtrl.online(cell, "diagonal")


def test_a_recurrence_that_mixes_neurons_is_refused():
    def recur(self, vectors, carry, u):
        new = LeakyAdaptation.recur(self, vectors, carry, u)
        return {"v": new["v"], "a": new["a"] + 0.1 * jnp.roll(carry["v"], 1)}  # neuron k sees neuron k - 1

    with pytest.raises(ValueError, match=r"LeakyAdaptation is not one: its recurrence couples neurons .* use 'rtrl'"):
        rtrl.online(replace_method(LeakyAdaptation, recur=recur)(3, 4), "diagonal")


def test_diagonal_on_elman_says_it_couples_neurons_and_points_to_rtrl():
    with pytest.raises(ValueError, match=r"Elman is not one: its recurrence couples neurons .* use 'rtrl'"):
        rtrl.online(Elman(3, 4), "diagonal")
    with pytest.raises(ValueError, match="use 'rtrl'"):
        rtrl.sequence_grad(Elman(3, 4), Elman(3, 4).init(jax.random.PRNGKey(0)), jnp.zeros((2, 3)), jnp.zeros((2, 4)),
                           lambda h, y: jnp.sum(h), method="diagonal")


class UndeclaredLeaky(Cell):
    """Element-wise, but it does not say so: a plain ``Cell`` with a shared-free leak, input weights stored
    transposed (``(N, D)``, so the neuron axis is not the last) and a readout-only scale."""

    def param_shapes(self):
        return {"W": (self.hidden_size, self.input_size), "leak": (self.hidden_size,), "scale": (1,)}

    def step(self, params, carry, x):
        c = jax.nn.sigmoid(params["leak"]) * carry + jnp.tanh(x @ params["W"].T)
        return c, params["scale"] * c


def test_an_element_wise_cell_that_does_not_declare_itself_gets_exact_small_traces():
    cell = UndeclaredLeaky(3, 4)
    params, xs, ys = random_problem(cell, 20, (2,), 0)
    params = perturbed({**params, "scale": params["scale"] + 1.0}, 1)
    carries = (cell.initial_carry((2,)), random_carry(cell, (2,), 1))
    error, where = worst_error(cell, ("diagonal",), params, xs, ys, carries, (1, 2, 20))
    assert error <= EXACT_TOL, where
    traces = rtrl.online(cell, "diagonal").init(params).traces["params"]
    assert {p: {s: e.shape for s, e in t.items()} for p, t in traces.items()} == {"W": {"carry": (4, 3)},
                                                                                   "leak": {"carry": (4,)}}


def test_a_parameter_shared_by_neurons_is_refused_with_its_name():
    class SharedLeak(UndeclaredLeaky):
        def step(self, params, carry, x):
            c = jax.nn.sigmoid(params["scale"]) * carry + jnp.tanh(x @ params["W"].T)  # one leak for all
            return c, c

    with pytest.raises(ValueError, match=r"parameter 'scale' has entries that reach several neurons .* use 'rtrl'"):
        rtrl.online(SharedLeak(3, 4), "diagonal")


# -- structure that shrinks the traces, found in a user's plain functions (rtrl.cells.from_function) ------------
def tap_cell(D, N):
    """A user's filter with a delay line of a non-linear input: ``u = tanh(x @ W + b)``, ``u1' = u``,
    ``u2' = u1``, ``v' = a v + c1 u1 + c2 u2 + u``, ``h = v'``."""

    def init(key):
        keys = jax.random.split(key, 5)
        return {"W": glorot(keys[0], (D, N), jnp.float32), "b": 0.3 * jax.random.normal(keys[1], (N,)),
                "a": jax.random.uniform(keys[2], (N,), minval=-0.8, maxval=0.8),
                "c1": 0.5 * jax.random.normal(keys[3], (N,)), "c2": 0.5 * jax.random.normal(keys[4], (N,))}

    def step(p, c, x):
        u = jnp.tanh(x @ p["W"] + p["b"])
        v = p["a"] * c["v"] + p["c1"] * c["u1"] + p["c2"] * c["u2"] + u
        return {"u1": u, "u2": c["u1"], "v": v}, v

    zero = lambda: {"u1": jnp.zeros(N), "u2": jnp.zeros(N), "v": jnp.zeros(N)}  # noqa: E731
    return rtrl.cells.from_function(init, step, zero, input_size=D, hidden_size=N, name="Taps")


def complex_cell(D, N, drive_factor=1j, quadratic=0.0):
    """A user's complex diagonal recurrence written with complex numbers inside, its state carried as two real
    leaves: ``s' = lambda s + quadratic s^2 + g (x @ Wr + drive_factor x @ Wi)``, ``lambda = exp(-exp(log_decay)
    + i angle)``, ``h = Re s' + Im s'``."""

    def init(key):
        keys = jax.random.split(key, 5)
        return {"log_decay": jax.random.uniform(keys[0], (N,), minval=-1.0, maxval=0.5),
                "angle": jax.random.uniform(keys[1], (N,), maxval=3.0), "g": 1 + 0.1 * jax.random.normal(keys[2], (N,)),
                "Wr": glorot(keys[3], (D, N), jnp.float32), "Wi": glorot(keys[4], (D, N), jnp.float32)}

    def step(p, c, x):
        s = jax.lax.complex(c["p"], c["q"])
        lam = jnp.exp(-jnp.exp(p["log_decay"]) + 1j * p["angle"])
        s = lam * s + quadratic * s**2 + p["g"] * (x @ p["Wr"] + drive_factor * (x @ p["Wi"]))
        new = {"p": jnp.real(s), "q": jnp.imag(s)}
        return new, new["p"] + new["q"]

    zero = lambda: {"p": jnp.zeros(N), "q": jnp.zeros(N)}  # noqa: E731
    return rtrl.cells.from_function(init, step, zero, input_size=D, hidden_size=N, name="Complex")


def trace_floats(cell):
    params = cell.init(jax.random.PRNGKey(0))
    return sum(a.size for a in jax.tree.leaves(rtrl.online(cell, "diagonal").init(params).traces))


def exactness(cell):
    params, xs, ys = random_problem(cell, 30, (2,), 0)
    carries = (cell.initial_carry((2,)), random_carry(cell, (2,), 1))
    return worst_error(cell, ("diagonal",), params, xs, ys, carries, (1, 2, 3, 30))


def test_a_users_delay_line_of_inputs_is_kept_as_the_inputs():
    D, N = 3, 4
    cell = tap_cell(D, N)
    found = rtrl.methods.diagonal.find(cell)
    names = dict(zip(found.carry_names, found.stored, strict=True))
    assert names == {"u1": (found.carry_names.index("u1"), 1), "u2": (found.carry_names.index("u1"), 2), "v": None}
    # traces on v alone (W, b, a, c1, c2), and two inputs with their flags for u1, u2
    assert trace_floats(cell) == D * N + 4 * N + 2 * (D + 1)
    error, where = exactness(cell)
    assert error <= EXACT_TOL, where
    info = str(rtrl.inspect(cell))
    assert "u1 reads no carry" in info and "u2 is u1 1 step later (a delay line" in info


def test_a_users_holomorphic_recurrence_keeps_one_complex_trace_per_complex_parameter():
    D, N = 3, 4
    cell = complex_cell(D, N)
    found = rtrl.methods.diagonal.find(cell)
    index = {name: j for j, name in enumerate(found.param_names)}
    assert [(found.param_names[p.leader], found.param_names[p.follower], p.sign) for p in found.pairs] == [
        ("Wi", "Wr", -1)]  # on (p, q): e[Wi] = i e[Wr], so e[Wr] = -i e[Wi]
    assert [m.params for m in found.multipliers] == [tuple(sorted((index["angle"], index["log_decay"])))]
    # ds/dlambda (2N) for log_decay and angle, ds/dg (2N), ds/dWi (2DN): the LRU's closed form's count
    assert trace_floats(cell) == 4 * N + 2 * D * N
    error, where = exactness(cell)
    assert error <= EXACT_TOL, where
    info = str(rtrl.inspect(cell))
    assert "its traces are -i times Wi's" in info and "only through its multiplier lambda" in info


@pytest.mark.parametrize(("drive_factor", "quadratic", "pairs", "multipliers"), [(2j, 0.0, 0, 1), (1j, 0.02, 1, 0)])
def test_a_near_miss_keeps_its_own_traces(drive_factor, quadratic, pairs, multipliers):
    """``Wi`` driving with ``2i`` (its traces are 2i times ``Wr``'s, not i times) gives no pair; a holomorphic but
    non-linear recurrence (``+ 0.02 s^2``) keeps its pair, but its Jacobian depends on the carry, so no shared
    ``ds/dlambda``."""
    cell = complex_cell(3, 4, drive_factor, quadratic)
    found = rtrl.methods.diagonal.find(cell)
    assert (len(found.pairs), len(found.multipliers)) == (pairs, multipliers)
    error, where = exactness(cell)
    assert error <= EXACT_TOL, where


def test_the_rtu_with_a_non_linearity_on_each_part_has_no_complex_pair():
    found = rtrl.methods.diagonal.find(rtrl.cells.RTU(3, 4, variant="nonlinear"))
    assert found.pairs == () and found.multipliers == ()


def copy_cell(D, N, variant):
    """Cells that look like a delay line and are not one: ``"recurrent source"`` copies a leaf that reads the carry
    (``u1' = a u1 + tanh(x @ W + b)``, ``u2' = u1``: its traces are u1's one step late, which only storing them
    would give); ``"scaled copy"`` multiplies its source (``u1' = tanh(x @ W + b)``, ``u2' = k u1``: it reads the
    carry, so it is no input of its own). Both have ``v' = a v + c1 u1 + c2 u2``, ``h = v'``."""

    def init(key):
        keys = jax.random.split(key, 6)
        return {"W": glorot(keys[0], (D, N), jnp.float32), "b": 0.3 * jax.random.normal(keys[1], (N,)),
                "a": jax.random.uniform(keys[2], (N,), minval=-0.8, maxval=0.8),
                "c1": 0.5 * jax.random.normal(keys[3], (N,)), "c2": 0.5 * jax.random.normal(keys[4], (N,)),
                "k": 1 + 0.3 * jax.random.normal(keys[5], (N,))}

    def step(p, c, x):
        u = jnp.tanh(x @ p["W"] + p["b"])
        u1, u2 = (p["a"] * c["u1"] + u, c["u1"]) if variant == "recurrent source" else (u, p["k"] * c["u1"])
        v = p["a"] * c["v"] + p["c1"] * c["u1"] + p["c2"] * c["u2"]
        return {"u1": u1, "u2": u2, "v": v}, v

    zero = lambda: {"u1": jnp.zeros(N), "u2": jnp.zeros(N), "v": jnp.zeros(N)}  # noqa: E731
    return rtrl.cells.from_function(init, step, zero, input_size=D, hidden_size=N, name="Copies")


@pytest.mark.parametrize(("variant", "stored"), [("recurrent source", {"u1": None, "u2": None, "v": None}),
                                                 ("scaled copy", {"u1": ("u1", 1), "u2": None, "v": None})])
def test_a_copy_that_is_no_delay_line_of_inputs_keeps_its_traces(variant, stored):
    cell = copy_cell(3, 4, variant)
    found = rtrl.methods.diagonal.find(cell)
    names = found.carry_names
    assert {n: s and (names[s[0]], s[1]) for n, s in zip(names, found.stored, strict=True)} == stored
    error, where = exactness(cell)
    assert error <= EXACT_TOL, where
    assert "delay line" not in str(rtrl.inspect(cell))


def test_binding_again_reuses_the_structure_found():
    """The structure is found once per cell and example shapes (its probes compile several programs): an equal
    cell (frozen options compare by value) bound again, with arrays or shapes, is not probed again."""
    misses = rtrl.structure.elementwise.cache_info().misses
    rtrl.online(LeakyAdaptation(2, 7), "diagonal")
    assert rtrl.structure.elementwise.cache_info().misses == misses + 1
    cell = LeakyAdaptation(2, 7)
    rtrl.online(cell, "diagonal").init(cell.init(jax.random.PRNGKey(1)), batch_shape=(3,))
    rtrl.methods.resolve("auto", cell)
    assert rtrl.structure.elementwise.cache_info().misses == misses + 1


def test_a_per_neuron_vector_read_in_another_order_is_exact():
    """``w[perm]``: every entry of the vector reaches one neuron, but entry ``k`` reaches neuron ``perm^-1(k)``, so
    its immediate Jacobian is not the one a tangent on the vector gives neuron by neuron."""
    D, N, perm = 3, 4, jnp.array([2, 0, 3, 1])

    def init(key):
        k_W, k_w = jax.random.split(key)
        return {"W": glorot(k_W, (D, N), jnp.float32), "w": jax.random.uniform(k_w, (N,), minval=-0.9, maxval=0.9)}

    def step(p, c, x):
        c = jnp.tanh(x @ p["W"] + p["w"][perm] * c)
        return c, c

    cell = rtrl.cells.from_function(init, step, lambda: jnp.zeros(N), input_size=D, hidden_size=N, name="Permuted")
    found = rtrl.methods.diagonal.find(cell)
    assert found.placement[found.param_names.index("w")].tolist() == [1, 3, 0, 2]
    error, where = exactness(cell)
    assert error <= EXACT_TOL, where
