"""``rtrl.kernels.trace_chunk``: the element-wise trace recurrence and its contraction over a chunk of steps.

The XLA path and the Pallas kernel (interpret mode on a CPU) against an independent NumPy loop in float64, and
a whole LRU sequence whose gradient, built from the chunk's traces, equals BPTT's. Sizes are tiny: interpret
mode is slow. Mutations tried by hand: ``J[t, r, s]`` for ``J[t, s, r]`` in either path (the random ``J`` is not
symmetric: caught), contracting ``e_{t-1}`` instead of ``e_t`` (caught), every Pallas program reading block 0
(``lambda i: (0, 0, 0, 0)`` in ``J``'s spec: caught, the grid has two blocks), dropping ``I`` of the
first step (caught)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import oracle
import rtrl
from rtrl.kernels import default_block, trace_chunk


def numpy_chunk(J, I, g, e0):
    """The recurrence written out entry by entry, in float64 NumPy (shares nothing with the code it checks)."""
    J, I, g, e = (np.asarray(a, np.float64) for a in (J, I, g, e0))
    T, S, _, N = J.shape
    grad = np.zeros(I.shape[2:])
    for t in range(T):
        new = np.zeros_like(e)
        for s in range(S):
            for k in range(N):
                new[s, k] = I[t, s, k] + sum(J[t, s, r, k] * e[r, k] for r in range(S))
                grad[k] += g[t, s, k] * new[s, k]
        e = new
    return e, grad


def random_chunk(T, S, N, rest, seed):
    k_J, k_I, k_g, k_e = jax.random.split(jax.random.PRNGKey(seed), 4)
    return (0.6 * jax.random.normal(k_J, (T, S, S, N), jnp.float64), jax.random.normal(k_I, (T, S, N, *rest),
                                                                                      jnp.float64),
            jax.random.normal(k_g, (T, S, N), jnp.float64), jax.random.normal(k_e, (S, N, *rest), jnp.float64))


@pytest.mark.parametrize("S, rest", [(1, ()), (2, (3,)), (2, ())])
def test_both_backends_equal_a_numpy_loop(S, rest):
    J, I, g, e0 = random_chunk(5, S, 4, rest, seed=S + len(rest))
    expected = numpy_chunk(J, I, g, e0)
    for backend in ("xla", "pallas"):
        e_T, grad = trace_chunk(J, I, g, e0, backend=backend, block_n=2)  # a grid of two blocks of neurons
        assert e_T.shape == e0.shape and grad.shape == (4, *rest)
        assert oracle.relative_error(np.asarray(e_T), expected[0]) <= 1e-12, backend
        assert oracle.relative_error(np.asarray(grad), expected[1]) <= 1e-12, backend


def lru_jacobians(cell, params, xs, ys):
    """``(J, I, g, immediate)`` of an LRU's forward pass from a zero carry, one example: the carry's Jacobians
    and each recurrent parameter's immediate ones per step (``jvp``/``vjp`` of one step with all-ones tangents,
    as ``rtrl.methods.diagonal`` explains), the credits on the carry, and the readout's summed immediate
    gradient."""
    leaves = ("re", "im")
    recurrent = {k: params[k] for k in ("nu", "theta", "gamma_log", "B_re", "B_im")}

    def recur(p, carry, x):
        return cell.recur(p, carry, {name: x @ p[name] for name in ("B_re", "B_im")})

    def loss(p, carry, x, y):
        return oracle.squared_error(cell.output(p, carry, x), y)

    def one_hot(like, leaf):
        return {name: jnp.ones_like(a) if name == leaf else jnp.zeros_like(a) for name, a in like.items()}

    def forward(carry, xy):
        x, y = xy
        new, pullback = jax.vjp(lambda p: recur(p, carry, x), recurrent)
        J = jnp.stack([jnp.stack([jax.jvp(lambda c: recur(recurrent, c, x), (carry,), (one_hot(carry, r),))[1][s]
                                  for r in leaves]) for s in leaves])  # J[s, r] = dc'_s / dc_r, per neuron
        I = {name: jnp.stack([pullback(one_hot(new, s))[0][name] for s in leaves]) for name in recurrent}
        g_p, g_c = jax.grad(loss, argnums=(0, 1))(params, new, x, y)
        return new, (J, I, jnp.stack([g_c[s] for s in leaves]), g_p)

    _, (J, I, g, immediate) = jax.jit(lambda xs, ys: lax.scan(forward, cell.initial_carry((), xs.dtype),
                                                              (xs, ys)))(xs, ys)
    return J, I, g, jax.tree.map(lambda a: jnp.sum(a, axis=0), immediate)


def chunk_gradient(J, I, g, immediate, backend):
    """The gradient: each recurrent parameter's traces run over the whole sequence as one chunk, contracted
    with the credits, plus the immediate gradient."""
    grads = dict(immediate)
    for name, I_name in I.items():
        projection = I_name.ndim == 4  # (T, S, D, N): the trace is neuron-major, (T, S, N, D)
        I_trace = jnp.swapaxes(I_name, 2, 3) if projection else I_name
        _, grad = trace_chunk(J, I_trace, g, jnp.zeros(I_trace.shape[1:], I_trace.dtype), backend=backend)
        grads[name] = grads[name] + (grad.T if projection else grad)
    return grads


def test_a_whole_lru_sequence_from_the_chunk_kernel_is_bptt():
    """LRU (two carry leaves: S = 2; vectors with rest = (), projections with rest = (D,)) over 6 steps from a
    zero carry: both backends give BPTT's gradient."""
    cell = rtrl.cells.LRU(2, 4)
    params, xs, ys = oracle.random_problem(cell, 6, (), seed=3)
    _, expected = rtrl.sequence_grad(cell, params, xs, ys, oracle.squared_error, method="bptt")
    jacobians = lru_jacobians(cell, params, xs, ys)
    for backend in ("xla", "pallas"):
        assert oracle.relative_error(chunk_gradient(*jacobians, backend), expected) <= oracle.EXACT_TOL, backend


def test_the_default_block_is_the_largest_power_of_two_dividing_n_up_to_128():
    assert [default_block(n) for n in (256, 128, 96, 64, 6, 7)] == [128, 128, 32, 64, 2, 1]


def test_the_default_block_keeps_its_traces_within_the_budget():
    """``(order + 1) * block * width <= 16384`` where a block of one neuron fits: ELSTM at D = 64 keeps 128 neurons,
    LRU (order 2) 64 and IIR2 (order 4) 32; at D = 32 LRU keeps 128 and IIR2 64; a width past the budget gets 1."""
    assert [default_block(8192, order, width) for order, width in ((1, 64), (2, 64), (4, 64), (2, 32), (4, 32))] == \
        [128, 64, 32, 128, 64]
    assert default_block(8192, 4, 8192) == 1 and default_block(96, 4, 64) == 32


def test_bad_arguments_are_named():
    J, I, g, e0 = random_chunk(2, 2, 4, (), seed=0)
    with pytest.raises(ValueError, match="J must have shape"):
        trace_chunk(J[:, :1], I, g, e0)
    with pytest.raises(ValueError, match="g must have shape"):
        trace_chunk(J, I, g[:1], e0)
    with pytest.raises(ValueError, match="I must have shape"):
        trace_chunk(J, I[:, :, :3], g, e0)
    with pytest.raises(ValueError, match="e0 must have shape"):
        trace_chunk(J, I, g, e0[:1])
    with pytest.raises(ValueError, match="backend must be one of"):
        trace_chunk(J, I, g, e0, backend="triton")
    with pytest.raises(ValueError, match="block_n must be a positive integer that divides N = 4"):
        trace_chunk(J, I, g, e0, backend="pallas", block_n=3)


@pytest.mark.parametrize("backend", ["xla", "pallas"])
def test_the_chunk_compiles_inside_a_callers_jit(backend):
    """Nothing reads a value on the Python side: the chunk traces inside ``jax.jit`` and gives the same result."""
    J, I, g, e0 = random_chunk(3, 2, 4, (2,), seed=1)
    jitted = jax.jit(lambda *a: trace_chunk(*a, backend=backend))(J, I, g, e0)
    eager = trace_chunk(J, I, g, e0, backend=backend)
    assert all(jnp.allclose(a, b, rtol=1e-14, atol=0) for a, b in zip(jitted, eager, strict=True))
