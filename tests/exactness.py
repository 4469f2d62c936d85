"""One compiled call that holds several exact methods to BPTT at several sequence lengths at once."""

import jax
import jax.numpy as jnp
import numpy as np

import rtrl
from oracle import squared_error
from rtrl.compare import relative_error


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
