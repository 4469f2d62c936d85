"""``rtrl demo`` (``make run``): an element-wise LSTM learns the copy task fully online, then its gradient is
checked against BPTT.

The run is an ordinary run folder (``--out``, default ``runs/demo``): exact RTRL with the eLSTM's closed-form
traces, an Adam update after every single step on 16 parallel streams, no back-propagation through time. At the
end the method's gradient of the held-out loss, at the trained parameters, is compared with BPTT's in float64:
the largest relative difference is printed (exact methods give about 1e-15).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax
import jax.numpy as jnp

import rtrl
from rtrl.cli.train import train_run
from rtrl.run import checkpoint
from rtrl.run.argtypes import path, positive_int
from rtrl.run.folder import CHECKPOINT, Run
from rtrl.run.folder import CONFIG as CONFIG_FILE
from rtrl.training.config import RunConfig
from rtrl.training.model import readout

CONFIG = RunConfig(task="copy", task_args={"max_length": 6}, cell="elstm", hidden=64, method="closed_form",
                   update_every=1, batch=16, lr=1e-2, steps=30000, eval_every=1000)


def gradient_difference(trainer, params, key, batch: int = 16) -> float:
    """Relative difference between the trainer's method's gradient of the held-out loss and BPTT's, in
    float64, on ``batch`` episodes drawn from ``key``."""
    task = trainer.task
    with jax.enable_x64(True):
        p64 = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
        episodes = task.eval_episodes(key, batch)

        def loss_fn(h, target):
            y, weight = target
            return jnp.sum(task.loss(readout(p64["readout"], h), y) * weight)

        args = (trainer.cell, p64["cell"], episodes.xs, (episodes.targets, episodes.weights), loss_fn)
        _, reference = rtrl.sequence_grad(*args, method="bptt")
        _, grads = rtrl.sequence_grad(*args, method=trainer.method)
        return rtrl.compare.relative_error(grads, reference)


def add_demo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="runs/demo", type=path, help="the run folder (default %(default)s)")
    p.add_argument("--steps", type=positive_int, default=CONFIG.steps, help="the step budget (default %(default)s)")
    p.add_argument("--overwrite", action="store_true", help="replace a different run already in --out")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def reuse_note(run: Run) -> str:
    """What a second ``make run`` does with the first one's folder, and how to start afresh."""
    step = run.last_checkpoint_step() or 0
    if step >= run.config.steps:
        kept = f"already holds a finished demo run ({step} steps): nothing is retrained, its result is shown again"
    else:
        kept = f"holds a demo run stopped at step {step}: it is continued, not restarted"
    return f"Note: {run.path} {kept}. For a fresh run: rtrl demo --overwrite (or --out ANOTHER_FOLDER)."


def cmd_demo(args) -> int:
    print("Demo: a recurrent network learns to copy bit patterns fully online: exact RTRL, an update after every "
          "step, no back-propagation through time.")
    reused = (Path(args.out) / CONFIG_FILE).exists() and not args.overwrite
    run = Run.create(args.out, CONFIG.replace(steps=args.steps), overwrite=args.overwrite)
    if reused:
        print(reuse_note(run))
    status = train_run(run, args.quiet)
    if status == 0:
        state, _ = checkpoint.load(run.path / CHECKPOINT, run.trainer.init())
        difference = gradient_difference(run.trainer, state.params, jax.random.PRNGKey(run.config.seed + 1))
        print(f"largest relative difference between {run.config.method} and BPTT gradients of the held-out loss "
              f"(T={run.trainer.task.length}, float64): {difference:.2e}")
    return status
