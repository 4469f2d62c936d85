"""Beside a peer: our exact online step and braintrace's D_RTRL on the same element-wise tanh network.

    python -m rtrl.benchmarks.peers [--sizes 64x256x32 32x64x8] [--steps 100]

The network is a tanh IndRNN, ``h' = tanh(x @ W + w * h + b)`` with a diagonal recurrence ``w`` (N,) and no
readout, the loss ``sum_t |h_t - y_t|^2``: ours is ``ElementwiseTanh`` of ``rtrl.benchmarks.elementwise`` under
``diagonal``; braintrace's is the same step written with its ETP operators (``braintrace.matmul`` for ``x @ W +
b``, ``braintrace.element_wise`` for ``w``) under ``braintrace.D_RTRL``, in both of its modes (``vjp_method``
``single-step``, its default, and ``multi-step``). Both are exact on this network, so, first, each gradient
over a sequence (float64, from a zero state) is checked against BPTT (``jax.grad`` through ``lax.scan`` of the
same step); then, in float32, one online step of each is timed (median of repeated jitted calls, taken
round-robin so the ratios hold on a busy machine): a whole sequence's online gradient in one jitted call divided
by T (each library's own driver: ``rtrl.sequence_grad``, braintrace's ``etrace_grad``), and a single step as one
jitted call (a gradient and the next state), with our BPTT and forward step beside them.

braintrace is not a dependency of rtrl, and it may move JAX; install it in a separate virtual environment::

    python3 -m venv /work/btvenv
    /work/btvenv/bin/pip install braintrace brainstate "jax==0.10.2" "jaxlib==0.10.2" -e .
    /work/btvenv/bin/python -m rtrl.benchmarks.peers

Where braintrace cannot be imported this prints one line saying so and exits 0.
"""

from __future__ import annotations

import argparse
import importlib
import platform

import jax
import jax.numpy as jnp
from jax import lax

import rtrl
from rtrl.benchmarks.elementwise import tanh_cell, tanh_step
from rtrl.benchmarks.timing import forward_fn, gradient_fn, interleaved_seconds
from rtrl.compare import relative_error, squared_error
from rtrl.run.argtypes import size3

MODES = ("single-step", "multi-step")  # braintrace's vjp_method
EXACT = 1e-9  # the house tolerance of an exact gradient against BPTT, float64
SKIPPED = "peers: skipped, braintrace is not importable here (see `python -m rtrl.benchmarks.peers --help`)"


def peer_modules():
    """``(brainstate, braintrace)``, or ``None`` where either cannot be imported."""
    try:
        return importlib.import_module("brainstate"), importlib.import_module("braintrace")
    except ImportError:
        return None


def problem(D: int, N: int, B: int, T: int, dtype, seed: int = 0):
    """``(cell, params, xs, ys)``: the tanh IndRNN and a random sequence, in ``dtype``."""
    cell = tanh_cell(D, N)
    k_p, k_x, k_y = jax.random.split(jax.random.PRNGKey(seed), 3)
    params = jax.tree.map(lambda a: a.astype(dtype), cell.init(k_p))
    return (cell, params, jax.random.normal(k_x, (T, B, D), dtype), jax.random.normal(k_y, (T, B, N), dtype))


def bptt_grad(params, xs, ys):
    """The oracle: ``jax.grad`` through ``lax.scan`` of the step, from a zero state."""

    def loss(p):
        def body(h, xy):
            h, _ = tanh_step(p, h, xy[0])
            return h, squared_error(h, xy[1])

        return jnp.sum(lax.scan(body, jnp.zeros(ys.shape[1:], ys.dtype), (xs, ys))[1])

    return jax.grad(loss)(params)


def peer_learner(modules, params, x0, mode: str):
    """braintrace's D_RTRL on the IndRNN with our ``params``, compiled for ``x0``'s batch (states zeroed)."""
    brainstate, braintrace = modules
    N = params["w"].shape[0]

    class IndRNN(brainstate.nn.Module):
        def __init__(self):
            super().__init__()
            self.W, self.w, self.b = (brainstate.ParamState(params[k]) for k in ("W", "w", "b"))

        def init_state(self, batch_size=None, **kwargs):
            self.h = brainstate.HiddenState(jnp.zeros((batch_size, N), params["w"].dtype))

        def update(self, x):
            recurrent = braintrace.element_wise(self.w.value) * self.h.value
            self.h.value = jnp.tanh(braintrace.matmul(x, self.W.value, self.b.value) + recurrent)
            return self.h.value

    return braintrace.compile(IndRNN(), braintrace.D_RTRL, x0, batch_size=x0.shape[0], vjp_method=mode)


def peer_sequence_fn(modules, learner):
    """``(xs, ys) -> grads`` (keyed like ours): braintrace's ``etrace_grad``, the loss summed, jitted."""
    brainstate, _ = modules

    def step_loss(x, y):
        return squared_error(learner(x), y)

    @brainstate.transform.jit
    def run(xs, ys):
        grads = learner.etrace_grad(xs, ys, step_fn=step_loss, reduction="sum")
        return {path[-1]: g for path, g in grads.items()}

    return run


def peer_step_fn(modules, learner):
    """``(x, y) -> grads``: one online step of braintrace (its gradient; the state advances), jitted."""
    brainstate, _ = modules
    grad = brainstate.transform.grad(lambda x, y: squared_error(learner(x), y), learner.param_states)
    return brainstate.transform.jit(grad)


def our_step_fn(cell):
    """``(params, state, x, y) -> (grads, next state)``: one online step of ours, jitted."""
    learner = rtrl.online(cell, "diagonal")

    @jax.jit
    def step(params, state, x, y):
        def step_loss(p):
            h, next_state = learner.step(p, state, x)
            return squared_error(h, y), next_state

        grads, next_state = jax.grad(step_loss, has_aux=True)(params)
        return grads, next_state

    return learner, step


def check(modules, D: int, N: int, B: int, T: int, seed: int = 0) -> dict[str, float]:
    """Relative error against BPTT of each gradient over a sequence from a zero state, float64."""
    brainstate, _ = modules
    brainstate.environ.set(precision=64)  # braintrace's states follow brainstate's precision
    try:
        cell, params, xs, ys = problem(D, N, B, T, jnp.float64, seed)
        expected = bptt_grad(params, xs, ys)
        _, ours = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method="diagonal")
        errors = {"rtrl diagonal": relative_error(ours, expected)}
        for mode in MODES:
            learner = peer_learner(modules, params, xs[0], mode)
            errors[f"braintrace D_RTRL {mode}"] = relative_error(peer_sequence_fn(modules, learner)(xs, ys), expected)
    finally:
        brainstate.environ.set(precision=32)
    return {name: float(e) for name, e in errors.items()}


def measure(modules, D: int, N: int, B: int, T: int, seed: int = 0) -> dict[str, float]:
    """Seconds per step of each variant, float32, measured round-robin in one run."""
    cell, params, xs, ys = problem(D, N, B, T, jnp.float32, seed)
    learner, ours = our_step_fn(cell)
    calls = {"rtrl forward, scan": (forward_fn(cell), (params, xs, ys)),
             "rtrl bptt, scan": (gradient_fn(cell, "bptt"), (params, xs, ys)),
             "rtrl diagonal, scan": (gradient_fn(cell, "diagonal"), (params, xs, ys)),
             "rtrl diagonal, one call": (ours, (params, learner.init(params, (B,)), xs[0], ys[0]))}
    for mode in MODES:
        peer = peer_learner(modules, params, xs[0], mode)
        calls[f"braintrace D_RTRL {mode}, scan"] = (peer_sequence_fn(modules, peer), (xs, ys))
        calls[f"braintrace D_RTRL {mode}, one call"] = (peer_step_fn(modules, peer), (xs[0], ys[0]))
    seconds = interleaved_seconds(calls)
    return {name: s / (1 if name.endswith("one call") else T) for name, s in seconds.items()}


def run(sizes, T: int, check_T: int) -> dict | None:
    """At each size (D, N, B), the gradient check, then (where every gradient is BPTT's) the timings;
    ``None`` where braintrace cannot be imported. Printed as it goes."""
    modules = peer_modules()
    if modules is None:
        print(SKIPPED)
        return None
    result = {"braintrace": modules[1].__version__, "brainstate": modules[0].__version__, "rows": []}
    print(f"  tanh IndRNN, our diagonal against braintrace {result['braintrace']} (brainstate "
          f"{result['brainstate']}), JAX {jax.__version__} on {jax.default_backend()} "
          f"({platform.processor() or platform.machine()})")
    for D, N, B in sizes:
        errors = check(modules, D, N, B, check_T)
        print(f"  {D}x{N}x{B}: gradient against BPTT (float64, T={check_T}): "
              + ", ".join(f"{name} {e:.1e}" for name, e in errors.items()), flush=True)
        seconds = measure(modules, D, N, B, T) if max(errors.values()) <= EXACT else {}
        if not seconds:
            print("  a gradient is not BPTT's: no timing at this size")
        for name, s in seconds.items():
            print(f"  {D}x{N}x{B} {name:>40} {s * 1e6:10.2f} us a step {s / ours(seconds, name):6.2f}x ours",
                  flush=True)
        result["rows"].append({"D": D, "N": N, "B": B, "T": T, "check_T": check_T, "errors": errors,
                               "seconds": seconds})
    return result


def ours(seconds: dict[str, float], name: str) -> float:
    """Our step measured the same way as ``name`` (scanned, or one call)."""
    return seconds["rtrl diagonal, one call" if name.endswith("one call") else "rtrl diagonal, scan"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.peers", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=size3, nargs="+", default=[(64, 256, 32), (32, 64, 8)],
                        help="DxNxB: input size, hidden size, batch")
    parser.add_argument("--steps", type=int, default=100, help="sequence length T of the timed sequences")
    parser.add_argument("--check-steps", type=int, default=50, help="sequence length T of the gradient check")
    args = parser.parse_args(argv)
    run(args.sizes, args.steps, args.check_steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
