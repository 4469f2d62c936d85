"""How far two runs of one e-prop preset drift apart when only the order of a sum differs.

    .venv/bin/python tools/eprop_rounding.py [--preset manifolds/lif-eprop] [--steps 1000] [--every 100] [--x64]

Trains the preset twice from the same seed: under e-prop on the cells' factorised traces (what ``eprop`` binds to)
and on their per-synapse hooks (``rtrl.benchmarks.eprop.SynapticEProp``). The two compute the same gradient (equal
to 1e-9 relative in float64, tests/test_eprop_factored.py) with sums in another order, so they differ by rounding
only. Prints the largest parameter difference every ``--every`` steps: growth by a constant factor per step is
the training's sensitivity to rounding (chaos), not a difference of the rules.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="manifolds/lif-eprop")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--x64", action="store_true", help="float64 parameters (jax_enable_x64)")
    args = parser.parse_args(argv)
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    from rtrl.benchmarks.eprop import SynapticEProp
    from rtrl.training.assemble import assemble
    from rtrl.training.config import RunConfig
    from rtrl.training.presets import PRESETS

    options = {**PRESETS[args.preset].options, "steps": args.steps, "eval_every": args.steps}
    params = {}
    for kind in ("factorised", "per-synapse"):
        assembly = assemble(RunConfig(**options))
        if kind == "per-synapse":
            assembly = assembly._replace(method=SynapticEProp())
        trainer = assembly.trainer()
        state = trainer.init()
        for _ in range(args.steps // args.every):
            state, _ = trainer.train(state, args.every)
            params.setdefault(kind, []).append(state.params)
    dtype = jax.tree.leaves(params["factorised"][0])[0].dtype
    print(f"{args.preset}, {dtype}: the largest parameter difference of the two runs")
    for k, (a, b) in enumerate(zip(params["factorised"], params["per-synapse"], strict=True)):
        gap = max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))
        print(f"  step {(k + 1) * args.every:6d}: {gap:.3g}")


if __name__ == "__main__":
    main()
