"""Bring your own cell: Flax (linen, nnx), Equinox and plain functions, unmodified, under every exact method."""

import equinox as eqx
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import rtrl
from oracle import (
    EXACT_TOL,
    masked_error,
    perturbed,
    random_carry,
    random_problem,
    reset_error,
    squared_error,
    worst_error,
)
from rtrl.capabilities import HasOutput
from rtrl.cells import from_equinox, from_flax, from_function, from_nnx
from rtrl.compare import relative_error

D, N = 3, 5  # N neither a power of two nor D
LENGTHS = (1, 2, 3, 50)
LINEN = {"SimpleCell": nn.SimpleCell, "GRUCell": nn.GRUCell, "LSTMCell": nn.LSTMCell,
         "OptimizedLSTMCell": nn.OptimizedLSTMCell, "MGUCell": nn.MGUCell}


def linen(name):
    return from_flax(LINEN[name](features=N), input_size=D)


def nnx_module(name):
    dtype = {"dtype": jnp.float64} if name == "SimpleCell" else {}  # it computes in float32 by default
    return getattr(nnx, name)(D, N, rngs=nnx.Rngs(0), **dtype)


def nnx_cell(name):
    return from_nnx(nnx_module(name))


def equinox_module(name):
    return getattr(eqx.nn, name)(D, N, key=jax.random.PRNGKey(0))


def equinox_cell(name):
    return from_equinox(equinox_module(name))


# -- plain functions: one element-wise cell (an IndRNN) and one dense cell -------------------------------------
def indrnn_init(key):
    k_w, k_u = jax.random.split(key)
    return {"W": 0.5 * jax.random.normal(k_w, (D, N)), "u": jax.random.uniform(k_u, (N,), minval=-0.9, maxval=0.9),
            "b": jnp.zeros(N)}


def indrnn_step(params, h, x):  # IndRNN: each neuron feeds back only to itself
    h = jnp.tanh(x @ params["W"] + params["u"] * h + params["b"])
    return h, h


def dense_init(key):
    k_w, k_r = jax.random.split(key)
    return {"W": 0.5 * jax.random.normal(k_w, (D, N)), "R": 0.4 * jax.random.normal(k_r, (N, N))}


def dense_step(params, h, x):
    h = jnp.tanh(x @ params["W"] + h @ params["R"])
    return h, 2.0 * h


def zero_carry():
    return jnp.zeros(N)


FUNCTIONS = {"indrnn": (indrnn_init, indrnn_step), "dense": (dense_init, dense_step)}


def function_cell(name):
    init_fn, step_fn = FUNCTIONS[name]
    return from_function(init_fn, step_fn, zero_carry, input_size=D, hidden_size=N, name=name)


CELLS = {**{f"linen.{n}": (linen, n) for n in LINEN},
         **{f"nnx.{n}": (nnx_cell, n) for n in ("GRUCell", "LSTMCell", "SimpleCell")},
         **{f"equinox.{n}": (equinox_cell, n) for n in ("GRUCell", "LSTMCell")},
         **{f"function.{n}": (function_cell, n) for n in FUNCTIONS}}


def make(name):
    factory, arg = CELLS[name]
    return factory(arg)


# -- the oracle: each framework's own call, under jax.grad through lax.scan, never through the adapter -----------
def framework_step(name, params):
    """``(carry, x) -> (carry, h)`` for a batch of examples (any leading batch dimensions) with ``params``, by the
    framework's own call: linen's ``apply`` and nnx's merged module batch natively; an Equinox module and a plain
    function are per example, so vmapped here."""
    kind, cls = name.split(".")
    if kind == "linen":
        module = LINEN[cls](features=N)
        return lambda carry, x: module.apply({"params": params}, carry, x)
    if kind == "nnx":
        graphdef, _, rest = nnx.split(nnx_module(cls), nnx.Param, ...)
        return lambda carry, x: nnx.merge(graphdef, params, rest)(carry, x)
    if kind == "equinox":
        static = eqx.partition(equinox_module(cls), eqx.is_inexact_array)[1]

        def one(carry, x):
            state = eqx.combine(params, static)(x, carry)
            return state, state[0] if cls == "LSTMCell" else state  # LSTMCell's state is (h, c)
    else:
        step_fn = FUNCTIONS[cls][1]

        def one(carry, x):
            return step_fn(params, carry, x)
    return lambda carry, x: batched(one, jnp.ndim(x) - 1)(carry, x)


def batched(fn, batch_ndim):
    for _ in range(batch_ndim):
        fn = jax.vmap(fn)
    return fn


def framework_carry(name, batch_shape):
    """The framework's own zero carry (``initialize_carry`` where it has one), in float64."""
    kind, cls = name.split(".")
    if kind == "linen":
        carry = LINEN[cls](features=N).initialize_carry(jax.random.PRNGKey(0), (*batch_shape, D))
    elif kind == "nnx":
        carry = nnx_module(cls).initialize_carry((*batch_shape, D), rngs=nnx.Rngs(0))
    else:
        zero = jnp.zeros((*batch_shape, N))
        carry = (zero, zero) if name == "equinox.LSTMCell" else zero
    return jax.tree.map(lambda a: a.astype(jnp.float64), carry)


def framework_run(name, params, carry, xs, ys, weights):
    """``(loss, hs)``: the weighted squared error of the framework's own ``h`` over ``xs`` from ``carry``."""
    step = framework_step(name, params)

    def body(carry, data):
        x, y, w = data
        carry, h = step(carry, x)
        return carry, (w * squared_error(h, y), h)

    losses, hs = jax.lax.scan(body, carry, (xs, ys, weights))[1]
    return losses.sum(), hs


def moved(params, seed):
    """Every parameter moved off its initial value: an adapter that read the module's own would be seen."""
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    return jax.tree.unflatten(tree, [a + 0.2 * jax.random.normal(k, a.shape, a.dtype)
                                     for k, a in zip(keys, leaves, strict=True)])


# Every cell batched; one of each framework unbatched as well (the adapter's no-batch path is shared).
UNBATCHED = ("linen.LSTMCell", "nnx.GRUCell", "equinox.LSTMCell", "function.indrnn")


@pytest.mark.parametrize(("name", "batch_shape"), [pytest.param(n, (2,), id=f"{n}-batch") for n in sorted(CELLS)]
                         + [pytest.param(n, (), id=f"{n}-one") for n in UNBATCHED])
def test_exact_methods_equal_the_frameworks_own_gradient(name, batch_shape):
    """"auto" and "rtrl" through the adapter equal ``jax.grad`` of the framework's own call scanned over the
    sequence (its own carry init, its own h), for T in {1, 3, 40}, from the framework's zero carry and a random
    one, with every parameter moved off the module's own; and the adapter's forward h is the framework's.
    Mutations tried by hand, each caught here: nnx's and Equinox's step calling the module itself (its own
    parameters, not those passed in); Equinox LSTMCell's h taken as state[1] (c); the batch mapped with the carry
    unmapped (``in_axes=(None, None, 0)``); the adapter's zero carry (``AdaptedCell.initial_carry``) made ones."""
    cell = make(name)
    params, xs, ys = random_problem(cell, 40, batch_shape, seed=1)
    params = moved(params, 2)
    lengths = (1, 3, 40)
    masks = jnp.stack([(jnp.arange(40) < k).astype(xs.dtype) for k in lengths])
    methods = ("auto",) if rtrl.inspect(cell).method == "rtrl" else ("auto", "rtrl")  # auto is rtrl on a dense cell

    @jax.jit
    def run(params, carry, given):
        oracle = jax.vmap(lambda w: jax.value_and_grad(
            lambda p: framework_run(name, p, carry, xs, ys, w)[0])(params))(masks)
        ours = {m: jax.vmap(lambda w, m=m: rtrl.sequence_grad(cell, params, xs, (ys, w), masked_error, m,
                                                              carry=given))(masks) for m in methods}
        hs = jax.lax.scan(lambda c, x: cell.step(params, c, x), carry, xs)[1]
        return oracle, ours, framework_run(name, params, carry, xs, ys, masks[0])[1], hs

    for label, carry, given in (("zero", framework_carry(name, batch_shape), cell.initial_carry(batch_shape)),
                                ("random", random_carry(cell, batch_shape, 3), random_carry(cell, batch_shape, 3))):
        oracle, ours, theirs_hs, our_hs = run(params, carry, given)
        np.testing.assert_allclose(our_hs, theirs_hs, rtol=1e-12, atol=1e-14, err_msg=label)
        for m, (loss, grads) in ours.items():
            for i, k in enumerate(lengths):
                g, ref = (jax.tree.map(lambda a, i=i: a[i], tree) for tree in (grads, oracle[1]))
                assert abs(float(loss[i] - oracle[0][i])) <= EXACT_TOL * abs(float(oracle[0][i])), (m, k, label)
                assert relative_error(g, ref) <= EXACT_TOL, (m, k, label)
                assert relative_error(g, jax.tree.map(jnp.zeros_like, ref)) > 0.1  # a gradient that is there


@pytest.mark.parametrize("name", ["linen.GRUCell", "equinox.LSTMCell", "nnx.LSTMCell", "function.indrnn"])
def test_exact_across_a_reset(name):
    cell = make(name)
    params, xs, ys = random_problem(cell, 12, (2,), seed=4)
    assert reset_error(cell, "auto", perturbed(params, 5), xs, ys, reset_at=5) <= EXACT_TOL


def test_auto_finds_the_cheapest_exact_structure():
    indrnn, dense = function_cell("indrnn"), function_cell("dense")
    assert rtrl.inspect(indrnn).method == "diagonal"
    assert rtrl.inspect(indrnn).trace_floats == D * N + N + N  # parameters x state order 1
    assert rtrl.inspect(dense).method == "rtrl"
    assert rtrl.inspect(linen("GRUCell")).method == "rtrl"


# -- the adapter's forward is the framework's own call -----------------------------------------------------------
@pytest.mark.parametrize("name", sorted(LINEN))
def test_linen_forward_is_the_modules_own(name):
    module = LINEN[name](features=N)
    cell = from_flax(module, input_size=D)
    params = cell.init(jax.random.PRNGKey(0))
    carry = random_carry(cell, (), 1)
    x = jnp.arange(D, dtype=jnp.float64) / D
    ours = cell.step(params, carry, x)
    theirs = module.apply({"params": params}, carry, x)
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b), ours, theirs)
    assert jax.tree.structure(params) == jax.tree.structure(module.init(jax.random.PRNGKey(0), carry, x)["params"])


@pytest.mark.parametrize("name", ["GRUCell", "LSTMCell", "SimpleCell"])
def test_nnx_forward_is_the_modules_own(name):
    module = getattr(nnx, name)(D, N, rngs=nnx.Rngs(0))
    cell = from_nnx(module)
    params = cell.init(jax.random.PRNGKey(0), jnp.float32)
    carry = jax.tree.map(lambda a: a.astype(jnp.float32), random_carry(cell, (), 1))
    x = jnp.arange(D, dtype=jnp.float32) / D
    jax.tree.map(np.testing.assert_array_equal, cell.step(params, carry, x), module(carry, x))


@pytest.mark.parametrize("name", ["GRUCell", "LSTMCell"])
def test_equinox_forward_is_the_modules_own(name):
    module = getattr(eqx.nn, name)(D, N, key=jax.random.PRNGKey(0))
    cell = from_equinox(module)
    params = cell.init(jax.random.PRNGKey(0))  # the module's own arrays, in the default float (as the module's)
    carry = random_carry(cell, (), 1)
    x = jnp.arange(D, dtype=jnp.float64) / D
    new, h = cell.step(params, carry, x)
    state = module(x, carry)
    jax.tree.map(np.testing.assert_array_equal, new, state)
    np.testing.assert_array_equal(h, state[0] if name == "LSTMCell" else state)
    if name == "LSTMCell":  # which element is h, by the LSTM's equations: h' = o * tanh(c'), o the last gate
        o = jax.nn.sigmoid(module.weight_ih[3 * N:] @ x + module.weight_hh[3 * N:] @ carry[0] + module.bias[3 * N:])
        np.testing.assert_allclose(h, o * jnp.tanh(state[1]), rtol=1e-12)
    assert jax.tree.structure(params) == jax.tree.structure(eqx.partition(module, eqx.is_inexact_array)[0])


def test_batched_step_maps_the_one_example_step():
    cell = function_cell("dense")
    params = cell.init(jax.random.PRNGKey(0))
    carry = random_carry(cell, (3, 2), 1)
    xs = jax.random.normal(jax.random.PRNGKey(2), (3, 2, D))
    new, h = cell.step(params, carry, xs)
    for i in range(3):
        for j in range(2):
            one = dense_step(params, carry[i, j], xs[i, j])
            np.testing.assert_allclose(new[i, j], one[0], rtol=1e-12)
            np.testing.assert_allclose(h[i, j], one[1], rtol=1e-12)


# -- bad input ---------------------------------------------------------------------------------------------------
def test_a_module_that_is_not_a_recurrent_cell_is_refused():
    with pytest.raises(ValueError, match="module must be a flax.linen recurrent cell"):
        from_flax(nn.Dense(4), input_size=D)
    with pytest.raises(ValueError, match="module must be a flax.nnx recurrent cell"):
        from_nnx(nnx.Linear(D, N, rngs=nnx.Rngs(0)))
    with pytest.raises(ValueError, match="module must be an Equinox recurrent cell"):
        from_equinox(lambda x, h: h)
    with pytest.raises(ValueError, match="step_fn must be a function"):
        from_function(indrnn_init, None, zero_carry, input_size=D, hidden_size=N)


@pytest.mark.parametrize(("step_fn", "message"), [
    (lambda p, h, x: h, r"must return \(carry, h\)"),
    (lambda p, h, x: (jnp.concatenate([h, h]), h), r"must return a carry like its input \(5,\), got \(10,\)"),
    (lambda p, h, x: ((h, h), h), r"must return a carry like its input"),
    (lambda p, h, x: (h, h[:2]), r"h of shape \(hidden_size,\) = \(5,\)"),
    (lambda p, h, x: (h @ p["missing"], h), r"fails on one example"),
])
def test_a_step_of_the_wrong_structure_is_refused(step_fn, message):
    with pytest.raises(ValueError, match=message):
        from_function(indrnn_init, step_fn, zero_carry, input_size=D, hidden_size=N)


def test_a_carry_that_is_not_vectors_is_refused():
    with pytest.raises(ValueError, match=r"carry of .* must be a pytree of vectors \(k,\)"):
        from_function(indrnn_init, indrnn_step, lambda: jnp.zeros((2, N)), input_size=D, hidden_size=N)


def test_parameters_that_do_not_match_are_refused():
    cell = function_cell("indrnn")
    params = cell.init(jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=r"params of indrnn must have the structure and shapes of its init"):
        cell.step({**params, "W": jnp.zeros((D + 1, N))}, cell.initial_carry(), jnp.zeros(D))
    with pytest.raises(ValueError, match=r"params of GRUCell must have the structure"):
        linen("GRUCell").step(params, linen("GRUCell").initial_carry(), jnp.zeros(D))
    with pytest.raises(ValueError, match=r"carry of indrnn must be"):
        cell.step(params, cell.initial_carry((3,)), jnp.zeros((2, D)))


def test_seed_000_simple_cell_gradient_is_the_elman_closed_form():
    """linen.SimpleCell is seed 000's cell: i/kernel = W, i/bias = B, h/kernel = R."""
    cell = linen("SimpleCell")
    params, xs, ys = random_problem(cell, 30, (2,), seed=7)
    params = perturbed(params, 8)
    seed = {"W": params["i"]["kernel"], "B": params["i"]["bias"], "R": params["h"]["kernel"]}
    _, ours = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method="auto")
    _, theirs = rtrl.sequence_grad(rtrl.cells.Elman(D, N), seed, xs, ys, squared_error, method="closed_form")
    mapped = {"i": {"kernel": theirs["W"], "bias": theirs["B"]}, "h": {"kernel": theirs["R"]}}
    assert relative_error(ours, mapped) <= EXACT_TOL


# -- the command line takes a cell by import path -------------------------------------------------------------
def test_rtrl_train_and_inspect_take_a_cell_by_import_path(tmp_path, capsys):
    from rtrl.cli import main

    out = tmp_path / "run"
    args = ["train", "--task", "copy", "--task-arg", "max_length=2", "--cell", "equinox.nn:GRUCell", "--method",
            "auto", "--hidden", "4", "--batch", "2", "--steps", "8", "--eval-every", "4", "--eval-size", "4",
            "--out", str(out), "--quiet"]
    assert main(args) == 0
    assert (out / "checkpoint.npz").is_file()
    capsys.readouterr()
    assert main(["inspect", "--cell", "flax.linen:MGUCell", "--hidden", "4"]) == 0
    text = capsys.readouterr().out
    assert "MGUCell: auto -> rtrl" in text and "hf/kernel" in text


@pytest.mark.parametrize(("cell", "word"), [("nope.module:X", "cannot import"), ("flax.linen:Dense", "recurrent cell"),
                                            ("os:sep", "neither a cell class nor a factory"), ("lstm", "import path")])
def test_a_bad_cell_path_exits_2_with_one_line(tmp_path, capsys, cell, word):
    from rtrl.cli import main

    assert main(["train", "--cell", cell, "--out", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert word in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "run").exists()


def test_an_output_fn_gives_the_new_traces_form_and_stays_exact():
    """With output_fn the online step contracts the new traces (the library cells' fast form); same gradient."""
    def output_fn(params, h, x):
        return h

    cell = from_function(indrnn_init, indrnn_step, zero_carry, input_size=D, hidden_size=N, output_fn=output_fn)
    assert isinstance(cell, HasOutput) and not isinstance(function_cell("indrnn"), HasOutput)
    params, xs, ys = random_problem(cell, 20, (2,), seed=9)
    carries = (cell.initial_carry((2,)), random_carry(cell, (2,), 10))
    error, where = worst_error(cell, ("auto",), perturbed(params, 11), xs, ys, carries, (1, 2, 20))
    assert error <= EXACT_TOL, where


def test_an_output_fn_that_is_not_the_steps_is_refused():
    with pytest.raises(ValueError, match="output_fn of .* must give the step's h from its new carry"):
        from_function(dense_init, dense_step, zero_carry, input_size=D, hidden_size=N,
                      output_fn=lambda params, h, x: h)  # dense_step returns 2 h
