"""``rtrl.cells.Encoded``: the stream-x encoder (sparse init, layer norm without affine parameters, leaky ReLU)
before a cell. Its forward pass against a NumPy oracle, its initialisation, its exact gradients against BPTT (its
hand-derived traces behind an element-wise cell, dense RTRL behind any other), and its refusals."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import rtrl
from oracle import EXACT_TOL, online_grads, perturbed, random_carry, random_problem
from rtrl.cells.encoder import Encoded, encoded
from rtrl.cells.lookup import make_cell
from rtrl.compare import relative_error


def numpy_step(params, h, x, slope):
    """The encoder then the minGRU, written out in NumPy for one example (the module docstring's equations)."""
    W, b = (np.asarray(params["encoder"][k]) for k in ("W", "b"))
    a = x @ W + b
    y = (a - a.mean()) / np.sqrt(((a - a.mean()) ** 2).mean() + 1e-5)
    e = np.where(y >= 0, y, slope * y)
    p = {k: np.asarray(v) for k, v in params["cell"].items()}
    z = 1 / (1 + np.exp(-(e @ p["W_z"] + p["b_z"])))
    return (1 - z) * h + z * (e @ p["W_h"] + p["b_h"])


def test_the_forward_pass_is_the_encoder_then_the_cell():
    cell = Encoded(3, rtrl.cells.MinGRU(5, 4, max_timescale=8), slope=0.2)
    params = perturbed(cell.init(jax.random.PRNGKey(0)), 1)
    xs = np.asarray(jax.random.normal(jax.random.PRNGKey(2), (6, 3)))
    carry, h = cell.initial_carry(()), np.zeros(4)
    for x in xs:
        carry, out = cell.step(params, carry, jnp.asarray(x))
        h = numpy_step(params, h, x, 0.2)
        np.testing.assert_allclose(np.asarray(out), h, rtol=1e-12, atol=1e-12)
    # a batch steps each example as alone
    batch = cell.step(params, cell.initial_carry((6,)), jnp.asarray(xs))[1]
    np.testing.assert_allclose(np.asarray(batch), np.stack([numpy_step(params, np.zeros(4), x, 0.2) for x in xs]),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("D", "sparsity", "zeros"), [(20, 0.9, 18), (10, 0.5, 5), (3, 0.9, 2), (4, 0.0, 0)])
def test_sparse_initialisation_zeroes_that_many_inputs_of_every_unit(D, sparsity, zeros):
    cell = Encoded(D, rtrl.cells.MinGRU(50, 4), sparsity=sparsity)
    W = np.asarray(cell.init(jax.random.PRNGKey(3))["encoder"]["W"])
    assert W.shape == (D, 50)
    assert ((W == 0).sum(axis=0) == zeros).all()  # per unit: ceil(sparsity * D), at most D - 1
    assert (np.abs(W) <= 1 / math.sqrt(D)).all()
    if 0 < zeros < D:  # the zeros fall on different inputs in different units
        assert len({tuple(np.flatnonzero(W[:, j] == 0)) for j in range(50)}) > 1


def test_no_affine_parameters_and_the_code_is_normalised():
    inner = rtrl.cells.MinGRU(16, 4)
    cell = Encoded(3, inner)
    params = cell.init(jax.random.PRNGKey(0))
    assert set(params) == {"encoder", "cell"} and set(params["encoder"]) == {"W", "b"}
    assert not np.any(params["encoder"]["b"])
    assert jax.tree.structure(params["cell"]) == jax.tree.structure(inner.init(jax.random.PRNGKey(0)))
    x = jax.random.normal(jax.random.PRNGKey(1), (3,))
    e = cell.encode(params["encoder"], x)
    pre = x @ params["encoder"]["W"]
    y = (pre - pre.mean()) / jnp.sqrt(pre.var() + 1e-5)
    np.testing.assert_allclose(e, jnp.where(y >= 0, y, 0.01 * y), rtol=1e-12)  # no gain, no shift


def bptt(cell, params, carry, xs, ys, resets):
    def loss(p):
        def body(c, data):
            x, y, done = data
            c = jax.tree.map(lambda a: jnp.where(done[:, None], jnp.zeros_like(a), a), c)
            c, h = cell.step(p, c, x)
            return c, jnp.sum((h - y) ** 2)

        return lax.scan(body, carry, (xs, ys, resets))[1].sum()

    return jax.grad(loss)(params)


@pytest.mark.parametrize(("inner", "expected"), [(rtrl.cells.MinGRU(5, 4, max_timescale=8), "closed_form"),
                                                 (rtrl.cells.LRU(5, 4), "closed_form"),
                                                 (rtrl.cells.Elman(5, 4), "rtrl")], ids=lambda c: getattr(c, "name", c))
def test_exact_methods_equal_bptt_from_zero_and_random_carries_and_across_a_reset(inner, expected):
    cell = Encoded(3, inner)
    params, xs, ys = random_problem(cell, 12, (3,), seed=0)
    params = perturbed(params, 2)
    carry = jax.tree.map(lambda r: r.at[0].set(0.0), random_carry(cell, (3,), seed=1))
    resets = jnp.zeros((12, 3), bool).at[6, 2].set(True)
    reference = bptt(cell, params, carry, xs, ys, resets)
    assert rtrl.methods.resolve("auto", cell).name == expected
    for method in ("auto", "rtrl"):
        error = relative_error(online_grads(cell, method, params, xs, ys, resets, carry), reference)
        assert error <= EXACT_TOL, f"{method}: relative error {error:.2e} against BPTT"
    assert np.any(reference["encoder"]["W"])  # the encoder's gradient is checked, not zero on both sides


def test_the_diagonal_method_refuses_it_by_name():
    with pytest.raises(ValueError, match="'diagonal'.*Encoded"):
        rtrl.methods.resolve("diagonal", Encoded(3, rtrl.cells.MinGRU(5, 4)))


def test_the_factory_builds_a_registered_cell_behind_the_encoder():
    cell = make_cell("rtrl.cells.encoder:encoded", {"max_timescale": 16, "width": 8}, 3, 6)
    assert isinstance(cell, Encoded) and isinstance(cell.cell, rtrl.cells.MinGRU)
    assert (cell.input_size, cell.width, cell.hidden_size, cell.cell.max_timescale) == (3, 8, 6, 16)
    assert encoded(3, 6).width == 6


@pytest.mark.parametrize(("make", "match"), [
    (lambda: Encoded(3, "mingru"), "cell must be an rtrl cell"),
    (lambda: Encoded(3, rtrl.cells.MinGRU(5, 4), sparsity=1.0), "sparsity must be a number in"),
    (lambda: Encoded(3, rtrl.cells.MinGRU(5, 4), slope=-1), "slope"),
    (lambda: Encoded(0, rtrl.cells.MinGRU(5, 4)), "input_size"),
    (lambda: encoded(3, 4, cell="nope"), "cell must be one of"),
])
def test_bad_options_are_refused_by_name(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_a_width_that_cannot_fit_is_refused_before_anything_is_allocated(monkeypatch):
    """``encoded(2, 3, width=5)`` by hand: the encoder's W 2 x 5 = 10 and b 5, the minGRU(5, 3)'s W_z, W_h 5 x 3
    and b_z, b_h 3 each = 36, and the sparse initialisation's draw and ranks 2 x (2 x 5) = 20: 71 floats (568 bytes
    in float64, the tests' default). With exactly that free it is built; a byte less is one line naming width
    (``encoded(width=10**9)`` once reached ``init`` and an XLA out-of-memory error from inside the sparse
    initialisation)."""
    import rtrl.devices
    from rtrl.checks import default_dtype

    needed = 71 * default_dtype().itemsize
    monkeypatch.setattr(rtrl.devices, "available_memory", lambda devices=1: (needed, "free (test)"))
    assert encoded(2, 3, width=5).width == 5
    monkeypatch.setattr(rtrl.devices, "available_memory", lambda devices=1: (needed - 1, "free (test)"))
    with pytest.raises(ValueError, match=rf"^width=5: .* {needed} bytes .* {needed - 1} bytes free \(test\); "
                                         "choose a smaller width$"):
        encoded(2, 3, width=5)
    for width in (0, -1, 2.5, True, 2**31):
        with pytest.raises(ValueError, match="^width must be"):
            encoded(2, 3, width=width)
