"""Per-step training time against the number of devices the streams are split over (``Trainer(devices=N)``).

    python -m rtrl.benchmarks.devices [--devices 1 2 4] [--cell elstm] [--method closed_form] [--hidden 64]
                                      [--batch 32] [--steps 50]

Each figure is the median over repeats of the trainer's jitted chunk of ``--steps`` online steps (copy task,
float32, a gradient and an Adam update every step) divided by the steps; every device count trains from the same
state, and the parameters after one chunk are compared with the one-device run's (the same training, summed in
another order). On a CPU the devices are forced host devices (``XLA_FLAGS=--xla_force_host_platform_device_count``,
set by re-running this module in a subprocess when fewer are visible): they share this machine's cores, so the
figures are a functional check of the sharded path and its overhead, not a speed-up; that needs several GPUs.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys

import jax
import numpy as np

from rtrl.benchmarks.timing import interleaved_seconds
from rtrl.cli.argtypes import positive_int
from rtrl.compare import relative_error
from rtrl.devices import MORE_CPU_DEVICES
from rtrl.training.config import RunConfig

FORCE = "--xla_force_host_platform_device_count"


def measure(counts, cell: str = "elstm", method: str = "closed_form", hidden: int = 64, batch: int = 32,
            steps: int = 50) -> list[dict]:
    """One row per device count: ``devices``, ``seconds`` per step, and ``relative_error`` of the parameters after
    one chunk against the first count's. Needs ``max(counts)`` devices in this process."""
    config = RunConfig(task="copy", cell=cell, method=method, hidden=hidden, batch=batch, steps=steps,
                       update_every=1)
    calls, params = {}, {}
    for n in counts:
        trainer = config.replace(devices=n).trainer()
        state = trainer.init()
        calls[n] = (trainer.train, (state, steps))
        params[n] = jax.tree.leaves(trainer.train(state, steps)[0].params)
    seconds = interleaved_seconds(calls, repeats=5)
    first = counts[0]
    return [{"devices": n, "seconds": seconds[n] / steps,
             "relative_error": max(float(relative_error(a, b)) for a, b in zip(params[n], params[first], strict=True))}
            for n in counts]


def with_host_devices(n: int) -> dict:
    """This process's environment with ``n`` forced host devices (any other XLA flags kept)."""
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(FORCE)]
    return {**os.environ, "XLA_FLAGS": " ".join([*flags, f"{FORCE}={n}"])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.devices", description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=positive_int, nargs="+", default=[1, 2, 4], help="device counts")
    parser.add_argument("--cell", default="elstm")
    parser.add_argument("--method", default="closed_form")
    parser.add_argument("--hidden", type=positive_int, default=64)
    parser.add_argument("--batch", type=positive_int, default=32, help="streams (a multiple of every count)")
    parser.add_argument("--steps", type=positive_int, default=50, help="online steps per timed chunk")
    args = parser.parse_args(argv)
    backend, available = jax.default_backend(), jax.device_count()
    if max(args.devices) > available:
        if backend != "cpu":
            parser.error(f"--devices {max(args.devices)}: only {available} {backend} device(s) here")
        # the flag must be set before JAX starts: run again in a fresh interpreter
        command = [sys.executable, "-m", "rtrl.benchmarks.devices", *(argv if argv is not None else sys.argv[1:])]
        return subprocess.run(command, env=with_host_devices(max(args.devices))).returncode
    forced = backend == "cpu" and available > 1
    print(f"copy task, {args.cell} hidden {args.hidden}, {args.method}, batch {args.batch}, float32, {args.steps} "
          f"steps a chunk; {backend} ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)")
    if forced:
        print(f"{available} forced host devices ({MORE_CPU_DEVICES}) sharing {os.cpu_count()} cores: a functional "
              "check of the sharded path and its overhead, not a speed-up (that needs several GPUs)")
    rows = measure(args.devices, args.cell, args.method, args.hidden, args.batch, args.steps)
    base = rows[0]["seconds"]
    print(f"{'devices':>7} {'per step (us)':>14} {'vs ' + str(rows[0]['devices']):>7} {'params rel. err.':>17}")
    for r in rows:
        print(f"{r['devices']:>7} {r['seconds'] * 1e6:>14.1f} {r['seconds'] / base:>6.2f}x "
              f"{r['relative_error']:>17.1e}")
    return 0 if all(np.isfinite(r["relative_error"]) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
