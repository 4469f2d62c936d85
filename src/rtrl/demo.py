"""The foundation's demonstration: an Elman network learns, fully online, to recall the bit from k steps ago.

An optax update follows every single step (traces carried across updates, as RTRL prescribes), on B parallel
streams of random bits. At the end it reports the accuracy against chance (50%) on a fresh stream, and the
largest relative difference between the RTRL and BPTT gradients on a held-out sequence, in float64.

    python -m rtrl.demo [--delay 10] [--hidden 32] [--steps 4000] [--method rtrl]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import optax
from jax import lax
from tqdm import tqdm

import rtrl

jax.config.update("jax_enable_x64", True)  # float64 for the gradient check; training asks for float32


def bit_stream(key, steps, batch, delay, dtype):
    """Inputs ±1 and targets: the bit that came in ``delay`` steps earlier."""
    bits = jax.random.bernoulli(key, 0.5, (steps + delay, batch)).astype(dtype)
    return (2 * bits[delay:] - 1)[..., None], bits[:steps]


def readout_loss(params, h, y):
    logit = (h @ params["V"] + params["c"])[..., 0]
    return optax.sigmoid_binary_cross_entropy(logit, y).mean(), logit


def make_chunk(learner, optimizer):
    """A jitted scan of ``len(xs)`` online steps, each followed by an optimizer update."""

    @jax.jit
    def chunk(params, opt_state, state, xs, ys):
        def body(carry, xy):
            params, opt_state, state = carry

            def loss(p):
                h, next_state = learner.step(p["cell"], state, xy[0])
                value, logit = readout_loss(p, h, xy[1])
                return value, (next_state, logit)

            (value, (state, logit)), grads = jax.value_and_grad(loss, has_aux=True)(params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            accuracy = jnp.mean((logit > 0) == (xy[1] > 0.5))
            return (optax.apply_updates(params, updates), opt_state, state), (value, accuracy)

        (params, opt_state, state), (losses, accuracies) = lax.scan(body, (params, opt_state, state), (xs, ys))
        return params, opt_state, state, losses.mean(), accuracies.mean()

    return chunk


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=int, default=10, help="recall the bit from this many steps ago")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--batch", type=int, default=16, help="parallel streams")
    parser.add_argument("--steps", type=int, default=4000, help="online steps (one update each)")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--method", default="rtrl", choices=[m for m in rtrl.METHODS if m != "bptt"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    f32 = jnp.float32
    cell = rtrl.cells.Elman(input_size=1, hidden_size=args.hidden)
    k_cell, k_v, k_data, k_test, k_check = jax.random.split(jax.random.PRNGKey(args.seed), 5)
    params = {"cell": cell.init(k_cell, f32), "V": 0.1 * jax.random.normal(k_v, (args.hidden, 1), f32),
              "c": jnp.zeros((1,), f32)}
    learner = rtrl.online(cell, args.method)
    optimizer = optax.adam(args.lr)
    opt_state, state = optimizer.init(params), learner.init(params["cell"], batch_shape=(args.batch,))
    chunk = make_chunk(learner, optimizer)

    print(f"Elman N={args.hidden}, method={args.method}: recall the bit from {args.delay} steps ago, "
          f"{args.batch} streams, an update after every step")
    chunk_len = 100
    xs, ys = bit_stream(k_data, args.steps, args.batch, args.delay, f32)
    start = time.perf_counter()
    with tqdm(range(0, args.steps, chunk_len), unit="chunk", desc="training") as bar:
        for t in bar:
            params, opt_state, state, loss, acc = chunk(params, opt_state, state, xs[t:t + chunk_len],
                                                        ys[t:t + chunk_len])
            bar.set_postfix(loss=f"{float(loss):.3f}", acc=f"{float(acc):.3f}",
                            steps_per_s=f"{(t + chunk_len) / (time.perf_counter() - start):.0f}")

    # Accuracy on a fresh stream, parameters frozen.
    test_xs, test_ys = bit_stream(k_test, 500, args.batch, args.delay, f32)
    carry = cell.initial_carry((args.batch,), f32)
    _, hs = lax.scan(lambda c, x: cell.step(params["cell"], c, x), carry, test_xs)
    logits = readout_loss(params, hs, test_ys)[1]
    accuracy = float(jnp.mean((logits[args.delay:] > 0) == (test_ys[args.delay:] > 0.5)))
    print(f"held-out accuracy {accuracy:.1%} (chance 50.0%) after {args.steps} online steps "
          f"in {time.perf_counter() - start:.1f}s")

    # The RTRL gradient against BPTT on a held-out sequence, in float64.
    p64 = jax.tree.map(lambda a: a.astype(jnp.float64), params)
    check_xs, check_ys = bit_stream(k_check, 200, args.batch, args.delay, jnp.float64)

    def loss_fn(h, y):
        return readout_loss(p64, h, y)[0]

    _, g_ref = rtrl.sequence_grad(cell, p64["cell"], check_xs, check_ys, loss_fn, method="bptt")
    _, g = rtrl.sequence_grad(cell, p64["cell"], check_xs, check_ys, loss_fn, method=args.method)
    print(f"largest relative difference between {args.method} and BPTT gradients (T=200, float64): "
          f"{rtrl.compare.relative_error(g, g_ref):.2e}")


if __name__ == "__main__":
    main()
