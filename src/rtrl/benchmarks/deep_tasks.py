"""Deep LRU/RTU networks trained on the memory tasks with the library's Trainer, under a wall-clock budget.

    python -m rtrl.benchmarks.deep_tasks --task copy --max-length 20 [--method layer_local] [--minutes 10]
    python -m rtrl.benchmarks.deep_tasks --task recall --delay 50 --method bptt --update-every 10
    python -m rtrl.benchmarks.deep_tasks --task mnist1d

Methods: ``layer_local`` (the default: ``closed_form`` traces in every block, an update at every step, fully
online), ``bptt`` (an update per ``--update-every`` steps from BPTT over that window, the carry kept across
windows: truncated BPTT; the episode length, e.g. 41 for copy with patterns up to 20, is full BPTT). Prints one
line per evaluation (step, wall seconds, held-out metric) and stops at the budget or at ``--target``. The lead
wires these as presets; until then this is the command behind every figure quoted from it.
"""

from __future__ import annotations

import argparse
import time

import jax

from rtrl.cells import LRU, RTU, Network
from rtrl.methods import LayerLocal
from rtrl.optim import make_optimizer
from rtrl.training.tasks import MNIST1D, Copy, Recall
from rtrl.training.trainer import Trainer, fit

CELLS = {"lru": LRU, "rtu": RTU}


def make_task(args):
    if args.task == "copy":
        return Copy(max_length=args.max_length)
    if args.task == "recall":
        return Recall(delay=args.delay, episode_length=max(2 * args.delay, 50))
    return MNIST1D()


def make_method(name: str):
    return LayerLocal(inner="closed_form") if name == "layer_local" else name


def run(args) -> dict:
    """Train until the budget or the target; returns the last evaluation record."""
    task = make_task(args)
    cell = CELLS[args.cell]
    net = Network(layers=tuple(cell(args.width, args.width, r_min=args.r_min, r_max=args.r_max)
                               for _ in range(args.depth)), input_size=task.input_size, norm=args.norm)
    trainer = Trainer(task, net, make_method(args.method), batch=args.batch,
                      update_every=args.update_every, optimizer=make_optimizer("adam", args.lr, clip=1.0),
                      seed=args.seed)
    print(f"{task.name} {task}, {args.depth} x {args.cell.upper()} width {args.width}, norm {args.norm}, {args.method} "
          f"(update every {args.update_every}), batch {args.batch}, lr {args.lr}; {jax.devices()[0].platform}",
          flush=True)
    state, last, start = trainer.init(), {}, time.perf_counter()

    def report(state, record):
        last.update(record)
        print(f"step {record['step']:>8}  wall {time.perf_counter() - start:7.1f}s  "
              f"{task.metric_name} {record['metric']:.4f}  train loss {record['loss']}", flush=True)

    while time.perf_counter() - start < 60 * args.minutes and last.get("metric", 0) < args.target:
        state = fit(trainer, state, int(state.step) + args.eval_every, args.eval_every, on_eval=report)
    return last


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.deep_tasks",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=["copy", "recall", "mnist1d"], default="copy")
    parser.add_argument("--max-length", type=int, default=20, help="copy: longest pattern")
    parser.add_argument("--delay", type=int, default=50, help="recall: delay")
    parser.add_argument("--method", choices=["layer_local", "bptt"], default="layer_local")
    parser.add_argument("--update-every", type=int, default=1)
    parser.add_argument("--cell", choices=sorted(CELLS), default="lru")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--norm", choices=["layer", "rms", "none"], default="layer")
    parser.add_argument("--r-min", type=float, default=0.9)
    parser.add_argument("--r-max", type=float, default=0.999)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--eval-every", type=int, default=2000)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--target", type=float, default=0.99)
    parser.add_argument("--seed", type=int, default=0)
    run(parser.parse_args(argv))


if __name__ == "__main__":
    main()
