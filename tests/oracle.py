"""The suite's shared oracles and problems, in one module: random problems (drawn with JAX or, cheaper to compile,
with NumPy), gradients compared against BPTT (one compiled call over several methods and lengths; an online learner
reset mid-sequence against BPTT that zeroes the same example), the tolerance. The BPTT they compare against is
``jax.grad`` through ``lax.scan`` of the cell's own step (``rtrl.sequence_grad(method="bptt")`` or written here).
"""

import jax
import jax.numpy as jnp
import numpy as np

import rtrl
from rtrl.compare import relative_error  # noqa: F401 (re-exported for tests)

EXACT_TOL = 1e-9
# Compile options restoring XLA's default CPU fusion emitters, which tests/conftest.py turns off to compile the suite
# faster: a test that reads the kernels of a compiled program (jax.jit(f, compiler_options=XLA_DEFAULT_EMITTERS))
# checks the fusions XLA makes by default, the ones a user's program gets.
XLA_DEFAULT_EMITTERS = {"xla_cpu_use_fusion_emitters": True}


def squared_error(h, y):
    return jnp.sum((h - y) ** 2)


def random_problem(cell, T, batch_shape, seed, dtype=jnp.float64):
    """Parameters, inputs and targets for ``cell``, all drawn from ``seed``."""
    k_p, k_x, k_y = jax.random.split(jax.random.PRNGKey(seed), 3)
    params = cell.init(k_p, dtype)
    xs = jax.random.normal(k_x, (T, *batch_shape, cell.input_size), dtype)
    ys = jax.random.normal(k_y, (T, *batch_shape, cell.hidden_size), dtype)
    return params, xs, ys


def random_carry(cell, batch_shape, seed, dtype=jnp.float64):
    """A non-zero carry of the cell's structure."""
    zero = cell.initial_carry(batch_shape, dtype)
    leaves, tree = jax.tree.flatten(zero)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    noise = [0.5 * jax.random.normal(k, a.shape, dtype) for k, a in zip(keys, leaves, strict=True)]
    return jax.tree.unflatten(tree, noise)


def gradient_error(cell, method, params, xs, ys, carry=None, loss_fn=squared_error):
    """Relative error of ``method``'s loss and gradient against BPTT on the same problem."""
    loss_ref, g_ref = rtrl.sequence_grad(cell, params, xs, ys, loss_fn, method="bptt", carry=carry)
    loss, g = rtrl.sequence_grad(cell, params, xs, ys, loss_fn, method=method, carry=carry)
    loss_err = abs(float(loss - loss_ref)) / max(abs(float(loss_ref)), 1e-300)
    return max(loss_err, relative_error(g, g_ref))


# -- problems drawn with NumPy: no PRNG kernels to compile for every new shape, so tests stay fast. Parameters
# have the structure of ``cell.init`` (matrices scaled by 1/sqrt(fan-in), vectors 0.3), inputs and targets are
# standard normal; everything is a function of ``seed``.
def draw_params(cell, seed, dtype=jnp.float64):
    rng = np.random.default_rng(seed)
    shapes = jax.eval_shape(lambda: cell.init(jax.random.PRNGKey(0), dtype))

    def leaf(s):
        scale = 1.0 / np.sqrt(s.shape[0]) if len(s.shape) == 2 else 0.3
        return jnp.asarray(scale * rng.standard_normal(s.shape), dtype)

    return jax.tree.map(leaf, shapes)


def draw_problem(cell, T, batch_shape, seed, dtype=jnp.float64):
    """``params, xs (T, *batch, D), ys (T, *batch, N)``."""
    rng = np.random.default_rng(seed + 1000)
    xs = jnp.asarray(rng.standard_normal((T, *batch_shape, cell.input_size)), dtype)
    ys = jnp.asarray(rng.standard_normal((T, *batch_shape, cell.hidden_size)), dtype)
    return draw_params(cell, seed, dtype), xs, ys


def draw_carry(cell, batch_shape, seed, dtype=jnp.float64):
    """A non-zero carry with the cell's structure."""
    rng = np.random.default_rng(seed + 2000)
    zero = cell.initial_carry(batch_shape, dtype)
    return jax.tree.map(lambda a: jnp.asarray(0.5 * rng.standard_normal(a.shape), dtype), zero)


# -- one compiled call that holds several exact methods to BPTT at several sequence lengths at once
def perturbed(params, seed, scale=0.1):
    """``params`` with noise added to the arrays that are all zero (biases), so that they take part too; the
    others keep their initial values (which keep the IIR filters stable over long sequences)."""
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    return jax.tree.unflatten(tree, [a if np.any(a) else a + scale * jax.random.normal(k, a.shape, a.dtype)
                                     for k, a in zip(keys, leaves, strict=True)])


def masked_error(h, target):
    y, weight = target
    return weight * squared_error(h, y)


def prefix_grads(cell, methods, lengths):
    """A jitted ``(params, xs, ys, carry) -> {method: (losses, grads)}`` stacked over ``lengths``: the loss of
    the first k steps is the loss of the whole sequence with the later steps weighted 0, so one compiled call
    checks every length k <= len(xs) through the public ``sequence_grad``."""

    def run(params, xs, ys, carry):
        steps = jnp.arange(xs.shape[0])
        masks = jnp.stack([(steps < k).astype(xs.dtype) for k in lengths])
        return {m: jax.vmap(lambda w, m=m: rtrl.sequence_grad(cell, params, xs, (ys, w), masked_error, m,
                                                              carry=carry))(masks)
                for m in methods}

    return jax.jit(run)


def errors_against_bptt(results, lengths):
    """``{(method, length): relative error of loss and gradients against results["bptt"]}``."""
    ref_loss, ref_grads = results["bptt"]
    errors = {}
    for m, (loss, grads) in results.items():
        for i, k in enumerate(lengths):
            g, ref = (jax.tree.map(lambda a, i=i: a[i], tree) for tree in (grads, ref_grads))
            loss_err = abs(float(loss[i] - ref_loss[i])) / max(abs(float(ref_loss[i])), 1e-300)
            errors[m, k] = max(loss_err, relative_error(g, ref))
    return errors


def worst_error(cell, methods, params, xs, ys, carries, lengths):
    """The largest error over methods, lengths and initial carries, and where it occurs."""
    run = prefix_grads(cell, ("bptt",) + tuple(methods), lengths)
    errors = {}
    for c, carry in enumerate(carries):
        errors.update({(*key, f"carry {c}"): e for key, e in errors_against_bptt(run(params, xs, ys, carry),
                                                                                  lengths).items()})
    worst = max(errors, key=errors.get)
    return errors[worst], worst


def online_grads(cell, method, params, xs, ys, resets, carry=None):
    """The summed per-step gradients (squared error) of an online learner (``rtrl.online``) over ``xs`` from
    ``carry`` (default: the cell's initial carry), reset where ``resets`` (T, B) says, in one compiled call."""
    learner = rtrl.online(cell, method)

    @jax.jit
    def run(params):
        def body(acc, data):
            state, grads = acc
            x, y, done = data
            state = learner.reset(state, done)

            def step_loss(p):
                h, next_state = learner.step(p, state, x)
                return squared_error(h, y), next_state

            g, state = jax.grad(step_loss, has_aux=True)(params)
            return (state, jax.tree.map(jnp.add, grads, g)), None

        zero = jax.tree.map(jnp.zeros_like, params)
        return jax.lax.scan(body, (learner.init(params, xs.shape[1:2], carry), zero), (xs, ys, resets))[0][1]

    return run(params)


def reset_error(cell, method, params, xs, ys, reset_at):
    """Relative error against BPTT of the summed per-step gradients of an online learner whose example 0 is reset
    before step ``reset_at`` (the other examples run on), on a batch of (at least) two examples; BPTT zeroes
    example 0's carry at the same step, so the other examples' gradients still flow through it."""
    mask = jnp.zeros(xs.shape[:2], bool).at[reset_at, 0].set(True)  # (T, B)

    @jax.jit
    def bptt_grads(params):
        def total(p):
            def body(carry, data):
                x, y, done = data
                carry = jax.tree.map(lambda c: jnp.where(done[:, None], 0.0, c), carry)
                carry, h = cell.step(p, carry, x)
                return carry, squared_error(h, y)

            return jax.lax.scan(body, cell.initial_carry(xs.shape[1:2], xs.dtype), (xs, ys, mask))[1].sum()

        return jax.grad(total)(params)

    return relative_error(online_grads(cell, method, params, xs, ys, mask), bptt_grads(params))


def fast_sigmoid_heaviside(k: float, c: float):
    """``H(u)`` with the tangent ``c / (1 + k |u|)^2 du`` (the fast-sigmoid surrogate), written here for the spiking
    oracles (not ``rtrl.cells.spiking.spike``)."""

    @jax.custom_jvp
    def heaviside(u):
        return (u > 0).astype(u.dtype)

    @heaviside.defjvp
    def heaviside_jvp(primals, tangents):
        (u,), (du,) = primals, tangents
        return heaviside(u), c / (1 + k * jnp.abs(u)) ** 2 * du

    return heaviside
