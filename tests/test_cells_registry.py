"""Every registered cell (``rtrl.cells.CELLS``) under every exact method of the registry that applies to it, held to
a BPTT written here (``jax.grad`` through ``lax.scan`` of the cell's own step, float64): a cell added to the
registry is held to BPTT the moment it is added. A method that does not apply must say so, naming itself and the
cell, with a ``ValueError``; ``bptt``, ``rtrl`` and ``auto`` apply to every cell.

One batch holds the three starts: example 0 from a zero carry, example 1 from a random carry, example 2 from a
random carry and reset (carry zeroed) half-way. The sequence methods (``chunked``) have no reset: they run the
same batch with example 2's reset left out, against the oracle without it."""

import jax
import jax.numpy as jnp
import pytest
from jax import lax

import rtrl
from oracle import EXACT_TOL, online_grads, perturbed, random_carry, random_problem
from rtrl.compare import relative_error

T, RESET_AT = 12, 6
SIZES = ((2, 3), (3, 5))  # (input_size, hidden_size)
EXACT = tuple(sorted((name for name, make in rtrl.methods.REGISTRY.items() if make().exact), key=lambda m: m == "auto"))
ALWAYS = ("bptt", "rtrl", "auto")


def total_loss(h, y):
    return jnp.sum((h - y) ** 2)


def oracle_grads(cell, params, carry, xs, ys, resets):
    """BPTT: the gradient of the summed squared error, the carry of an example zeroed where ``resets`` says;
    ``resets`` (k, T, batch) gives k gradients (stacked), in one compiled call."""

    def loss(p, resets):
        def body(c, data):
            x, y, done = data
            c = jax.tree.map(lambda a: jnp.where(done[:, None], jnp.zeros_like(a), a), c)
            c, h = cell.step(p, c, x)
            return c, total_loss(h, y)

        return lax.scan(body, carry, (xs, ys, resets))[1].sum()

    return jax.jit(jax.vmap(lambda r: jax.grad(loss)(params, r)))(resets)


def problem(cell):
    params, xs, ys = random_problem(cell, T, (3,), seed=0)
    random = random_carry(cell, (3,), seed=1)
    carry = jax.tree.map(lambda r: r.at[0].set(0.0), random)  # example 0 from zero, 1 and 2 from random
    resets = jnp.zeros((T, 3), bool).at[RESET_AT, 2].set(True)
    return perturbed(params, 2), carry, xs, ys, resets


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", sorted(rtrl.cells.CELLS))
def test_every_registered_cell_under_every_exact_method_equals_bptt(name, size):
    cell = rtrl.cells.CELLS[name](*size)
    params, carry, xs, ys, resets = problem(cell)
    both = oracle_grads(cell, params, carry, xs, ys, jnp.stack([resets, jnp.zeros_like(resets)]))
    with_reset, without_reset = (jax.tree.map(lambda g, i=i: g[i], both) for i in (0, 1))
    checked = []
    for method in EXACT:
        try:
            resolved = rtrl.methods.resolve(method, cell)
        except ValueError as e:
            assert method not in ALWAYS, f"{method} refused {name}: {e}"
            assert repr(method) in str(e) and cell.name in str(e), f"{method} on {name} refused without saying: {e}"
            continue
        if method == "auto":  # it becomes one of the others (checked there), with its options
            assert resolved in [rtrl.methods.resolve(m, cell) for m in checked]
            checked.append(method)
            continue
        if resolved.online:
            grads, reference = online_grads(cell, method, params, xs, ys, resets, carry), with_reset
        else:
            _, grads = rtrl.sequence_grad(cell, params, xs, ys, total_loss, method=method, carry=carry)
            reference = without_reset
        error = relative_error(grads, reference)
        assert error <= EXACT_TOL, f"{method} on {name}: relative error {error:.2e} against BPTT"
        checked.append(method)
    assert set(ALWAYS) <= set(checked)


def test_the_oracle_sees_the_reset():
    """The reset changes the gradient (else the sweep would not test it)."""
    cell = rtrl.cells.CELLS["elman"](2, 3)
    params, carry, xs, ys, resets = problem(cell)
    both = oracle_grads(cell, params, carry, xs, ys, jnp.stack([resets, jnp.zeros_like(resets)]))
    assert relative_error(*(jax.tree.map(lambda g, i=i: g[i], both) for i in (0, 1))) > 1e-3


# -- "auto" hands its options to the method it chooses, on every branch (closed_form, diagonal, rtrl) ----------
def elementwise_tanh(D, N):
    """A user's element-wise cell without hand-derived traces: "auto" takes "diagonal" for it."""

    def init(key):
        k_W, k_w = jax.random.split(key)
        return {"W": jax.random.normal(k_W, (D, N)) / D, "w": jax.random.uniform(k_w, (N,), minval=-0.9, maxval=0.9)}

    def step(p, c, x):
        c = jnp.tanh(x @ p["W"] + p["w"] * c)
        return c, c

    return rtrl.cells.from_function(init, step, lambda: jnp.zeros((N,)), input_size=D, hidden_size=N)


BRANCHES = {"closed_form": lambda: rtrl.cells.IIR2(2, 3), "diagonal": lambda: elementwise_tanh(2, 3),
            "rtrl": lambda: rtrl.cells.GRU(2, 3)}


@pytest.mark.parametrize("branch", sorted(BRANCHES))
@pytest.mark.parametrize("trace_dtype", ["bfloat16", "float32"])
def test_auto_forwards_its_options_on_every_branch(branch, trace_dtype):
    cell = BRANCHES[branch]()
    chosen = rtrl.methods.resolve(rtrl.methods.Auto(trace_dtype=trace_dtype), cell)
    assert chosen == rtrl.methods.REGISTRY[branch](trace_dtype=trace_dtype)
    learner = rtrl.online(cell, rtrl.methods.Auto(trace_dtype=trace_dtype))
    params = cell.init(jax.random.PRNGKey(0), jnp.float64)
    traces = learner.init(params, batch_shape=(2,)).traces
    assert {a.dtype for a in jax.tree.leaves(traces)} == {jnp.dtype(trace_dtype)}
