"""The foundation's demonstration: an Elman network learns, fully online, to recall the bit from k steps ago.

A thin wrapper over ``rtrl.training.trainer`` and the ``recall`` task: an optax update after every single step (traces
carried across updates, as RTRL prescribes) on B parallel streams. It reports the held-out accuracy against
chance (50%), then the largest relative difference between the method's gradient and BPTT's on held-out
episodes, in float64.

    python -m rtrl.cli.demo [--delay 10] [--hidden 32] [--steps 4000] [--method rtrl]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

import rtrl
from rtrl.cli.argtypes import positive_int
from rtrl.training.model import readout
from rtrl.training.tasks.recall import Recall
from rtrl.training.trainer import Trainer, fit, make_optimizer


def gradient_difference(task, cell, params, method, key, batch: int) -> float:
    """Relative difference between ``method``'s gradient of the held-out loss and BPTT's, in float64."""
    with jax.enable_x64(True):
        p64 = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
        episodes = task.eval_episodes(key, batch)

        def loss_fn(h, target):
            y, weight = target
            return jnp.sum(task.loss(readout(p64["readout"], h), y) * weight)

        args = (cell, p64["cell"], episodes.xs, (episodes.targets, episodes.weights), loss_fn)
        _, reference = rtrl.sequence_grad(*args, method="bptt")
        _, grads = rtrl.sequence_grad(*args, method=method)
        return rtrl.compare.relative_error(grads, reference)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.cli.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=positive_int, default=10, help="recall the bit from this many steps ago")
    parser.add_argument("--hidden", type=positive_int, default=32)
    parser.add_argument("--batch", type=positive_int, default=16, help="parallel streams")
    parser.add_argument("--steps", type=positive_int, default=4000, help="online steps (one update each)")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--method", default="rtrl", choices=[m for m in rtrl.METHODS if rtrl.methods.resolve(m).online])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    task = Recall(delay=args.delay, episode_length=max(50, 5 * args.delay))
    cell = rtrl.cells.Elman(input_size=task.input_size, hidden_size=args.hidden)
    trainer = Trainer(task, cell, args.method, batch=args.batch, optimizer=make_optimizer("adam", args.lr),
                      stagger=True, seed=args.seed)
    print(f"Elman N={args.hidden}, method={args.method}: recall the bit from {args.delay} steps ago, "
          f"{args.batch} streams, an update after every step")
    start = time.perf_counter()

    def report(state, record):
        print(f"  step {record['step']:>6}: held-out accuracy {record['metric']:.1%}", flush=True)

    state = fit(trainer, trainer.init(), args.steps, eval_every=max(args.steps // 4, 1), on_eval=report)
    print(f"held-out accuracy {trainer.evaluate(state.params)['metric']:.1%} (chance 50.0%) after {args.steps} "
          f"online steps in {time.perf_counter() - start:.1f}s")
    difference = gradient_difference(task, cell, state.params, args.method,
                                     jax.random.PRNGKey(args.seed + 1), args.batch)
    print(f"largest relative difference between {args.method} and BPTT gradients "
          f"(T={task.length}, float64): {difference:.2e}")


if __name__ == "__main__":
    main()
