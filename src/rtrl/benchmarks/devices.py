"""Per-step training time against the number of devices the streams are split over (``Trainer(devices=N)``).

    python -m rtrl.benchmarks.devices [--devices 1 2 4] [--cell elstm] [--method closed_form] [--hidden 64]
                                      [--batch 32] [--steps 50]

Each figure is the median over repeats of the trainer's jitted chunk of ``--steps`` online steps (copy task,
float32, a gradient and an Adam update every step) divided by the steps; every device count trains from the same
state, and the parameters after one chunk are compared with the one-device run's (the same training, summed in
another order). On a CPU the devices are forced host devices (``XLA_FLAGS=--xla_force_host_platform_device_count``,
set by ``run`` in a fresh interpreter when fewer are visible): they share this machine's cores, so the
figures are a functional check of the sharded path and its overhead, not a speed-up; that needs several GPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

import jax
from jax.flatten_util import ravel_pytree

from rtrl.benchmarks.timing import interleaved_seconds
from rtrl.compare import relative_error
from rtrl.devices import MORE_CPU_DEVICES
from rtrl.run.argtypes import positive_int
from rtrl.training.assemble import assemble
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
        trainer = assemble(config.replace(devices=n)).trainer()
        state = trainer.init()
        calls[n] = (trainer.train, (state, steps))
        params[n] = ravel_pytree(trainer.train(state, steps)[0].params)[0]  # one vector: no leaf is all zeros
    seconds = interleaved_seconds(calls, repeats=5)
    first = counts[0]
    return [{"devices": n, "seconds": seconds[n] / steps,
             "relative_error": relative_error(params[n], params[first])}
            for n in counts]


def with_host_devices(n: int) -> dict:
    """This process's environment with ``n`` forced host devices (any other XLA flags kept)."""
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(FORCE)]
    return {**os.environ, "XLA_FLAGS": " ".join([*flags, f"{FORCE}={n}"])}


def run(counts, **options) -> list[dict]:
    """``measure(counts, **options)``: here if this process has the devices, else (on a CPU) in a fresh interpreter
    with ``max(counts)`` forced host devices, as the flag counts only before JAX starts."""
    if max(counts) <= jax.device_count():
        return measure(counts, **options)
    if jax.default_backend() != "cpu":
        raise ValueError(f"devices: only {jax.device_count()} {jax.default_backend()} device(s) here, got "
                         f"{max(counts)}")
    command = [sys.executable, "-m", "rtrl.benchmarks.devices", "--json", "--devices", *map(str, counts),
               *(f"--{name}={value}" for name, value in options.items())]
    done = subprocess.run(command, env=with_host_devices(max(counts)), capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.devices", description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=positive_int, nargs="+", default=[1, 2, 4], help="device counts")
    parser.add_argument("--cell", default="elstm")
    parser.add_argument("--method", default="closed_form")
    parser.add_argument("--hidden", type=positive_int, default=64)
    parser.add_argument("--batch", type=positive_int, default=32, help="streams (a multiple of every count)")
    parser.add_argument("--steps", type=positive_int, default=50, help="online steps per timed chunk")
    parser.add_argument("--json", action="store_true", help="print the rows as one JSON line, nothing else")
    args = parser.parse_args(argv)
    rows = run(args.devices, cell=args.cell, method=args.method, hidden=args.hidden, batch=args.batch,
               steps=args.steps)
    if args.json:
        print(json.dumps(rows))
        return 0
    backend, cores = jax.default_backend(), os.cpu_count()
    print(f"copy task, {args.cell} hidden {args.hidden}, {args.method}, batch {args.batch}, float32, {args.steps} "
          f"steps a chunk; {backend} ({platform.processor() or platform.machine()}, {cores} cores)")
    if backend == "cpu" and max(args.devices) > 1:
        print(f"{max(args.devices)} forced host devices ({MORE_CPU_DEVICES}) sharing {cores} cores: a functional "
              "check of the sharded path and its overhead, not a speed-up (that needs several GPUs)")
    print_rows(rows)
    return 0


def print_rows(rows: list[dict]) -> None:
    base = rows[0]["seconds"]
    print(f"{'devices':>7} {'per step (us)':>14} {'vs ' + str(rows[0]['devices']):>7} {'params rel. err.':>17}")
    for r in rows:
        print(f"{r['devices']:>7} {r['seconds'] * 1e6:>14.1f} {r['seconds'] / base:>6.2f}x "
              f"{r['relative_error']:>17.1e}")


if __name__ == "__main__":
    sys.exit(main())
