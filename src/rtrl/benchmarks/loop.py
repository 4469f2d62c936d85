"""The README's online loop: a jitted training step called from Python once per time step, with and without
donating the online state, against the same steps scanned inside one ``jax.jit``.

    python -m rtrl.benchmarks.loop [--cell elstm] [--size 64x256x32] [--method closed_form] [--steps 100]

Each variant takes a gradient of the step's loss through ``learner.step`` and an Adam update after every step,
from the same start; the figure is the median over repeats of the time per step (float32). Without donation
every call writes the next traces to fresh buffers; with it XLA updates them in place; the scan adds no call
overhead at all.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import jax
import optax
from jax import lax

import rtrl
from rtrl.benchmarks.timing import random_problem, squared_error
from rtrl.run.argtypes import positive_int, size3

VARIANTS = ("plain", "donated", "scan")


def train_step_fn(learner, optimizer):
    """``(params, opt_state, state, x, y) -> (params, opt_state, state)``: the README's per-step update."""

    def train_step(params, opt_state, state, x, y):
        def step_loss(p):
            h, next_state = learner.step(p, state, x)
            return squared_error(h, y), next_state

        grads, state = jax.grad(step_loss, has_aux=True)(params)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, state

    return train_step


def variants(train_step) -> dict:
    """Each variant as ``(params, opt_state, state, xs, ys) -> (params, opt_state, state)`` over all steps."""
    plain, donated = jax.jit(train_step), jax.jit(train_step, donate_argnums=2)

    def loop(step, params, opt_state, state, xs, ys):
        for x, y in zip(xs, ys, strict=True):  # xs, ys: lists of per-step arrays, sliced before timing
            params, opt_state, state = step(params, opt_state, state, x, y)
        return params, opt_state, state

    @functools.partial(jax.jit, donate_argnums=2)
    def scanned(params, opt_state, state, xs, ys):
        def body(carry, xy):
            return train_step(*carry, *xy), None

        return lax.scan(body, (params, opt_state, state), (xs, ys))[0]

    return {"plain": functools.partial(loop, plain), "donated": functools.partial(loop, donated), "scan": scanned}


def measure(cell_name: str, D: int, N: int, B: int, method: str = "closed_form", T: int = 100,
            repeats: int = 5) -> dict[str, float]:
    """Median seconds per step of each variant, timed round-robin (every repeat times every variant)."""
    cell = rtrl.cells.CELLS[cell_name](D, N)
    params, xs, ys = random_problem(cell, T, B)
    learner, optimizer = rtrl.online(cell, method), optax.adam(1e-3)
    runs = variants(train_step_fn(learner, optimizer))
    inputs = {"plain": (list(xs), list(ys)), "donated": (list(xs), list(ys)), "scan": (xs, ys)}
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for repeat in range(repeats + 1):  # the first round compiles and is not counted
        for name in VARIANTS:
            state = learner.init(params, batch_shape=(B,))  # a fresh state: a donated one is gone
            jax.block_until_ready(state)
            start = time.perf_counter()
            jax.block_until_ready(runs[name](params, optimizer.init(params), state, *inputs[name]))
            if repeat:
                samples[name].append((time.perf_counter() - start) / T)
    return {name: statistics.median(times) for name, times in samples.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.loop", description=__doc__.splitlines()[0])
    parser.add_argument("--cell", default="elstm", choices=sorted(rtrl.cells.CELLS))
    parser.add_argument("--size", type=size3, default=(64, 256, 32), help="DxNxB")
    parser.add_argument("--method", default="closed_form")
    parser.add_argument("--steps", type=positive_int, default=100, help="time steps per timed run")
    args = parser.parse_args(argv)
    seconds = measure(args.cell, *args.size, args.method, args.steps)
    print(f"{args.cell} {'x'.join(map(str, args.size))} (DxNxB), {args.method}, float32, {jax.default_backend()}")
    for name, s in seconds.items():
        print(f"{name:>8} {s * 1e3:8.3f} ms a step")


if __name__ == "__main__":
    main()
