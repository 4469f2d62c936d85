"""One batch of the e-prop paper's evidence accumulation under e-prop against BPTT, timed side by side.

    python -m rtrl.benchmarks.eprop [--trial 2250] [--repeats 3] [--update-every K]
                                    [--methods eprop-synaptic eprop-traces eprop eprop-window bptt] [--plain]

Each method is the preset ``evidence-eprop-paper/alif-METHOD`` (100 LIF and ALIF neurons, recurrent, batches of 64
trials, one update per trial, the paper's filtered readout and rate regulariser) trained for one batch (one call of
``Trainer.train`` over one trial) after a first, compiling call; the calls of every method are interleaved, and the
least and the median time of ``--repeats`` are reported, each with its ratio to ``bptt``'s. ``--trial`` below 2250
shortens each trial (one cue, ``episode_length`` = the trial; the cost per step does not depend on the cues).
``eprop`` is the preset's row as the trainer runs it: every window (a trial) starts an episode, so the trainer
computes it as ``EPropWindow`` does (``rtrl.training.windows.window_for``). ``eprop-traces`` is the same gradient from
the factorised per-step traces (``EProp(window=False)``), ``eprop-synaptic`` from the cells' per-synapse hooks
(``eprop_init / update / contract``, one contraction per example): the rule before the factorised traces
(``rtrl.capabilities.FactoredEProp``). ``eprop-window`` is the preset's row ``alif-eprop-window``
(``rtrl.methods.EPropWindow`` named: a forward scan, backward scans of per-neuron vectors and a matrix product per
parameter). ``--update-every K`` (a divisor of the trial) updates every ``K`` steps instead, so windows start inside a
trial: ``bptt`` is then truncated at the windows' bounds, and ``eprop`` carries its traces from window to window
(``rtrl.training.windows.CarriedWindow``); ``eprop-window`` needs windows that start a trial. ``--plain`` reads the
spikes as they are (no filtered readout, no rate regulariser: ``readout_decay`` and ``rate_weight`` 0), which leaves
e-prop no per-synapse trace but ALIF's adaptation vectors.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import jax

from rtrl.methods import EProp
from rtrl.methods.base import TraceRule
from rtrl.provenance import line
from rtrl.training.assemble import assemble
from rtrl.training.config import RunConfig
from rtrl.training.presets import PAPER_TRIAL, PRESETS


class SynapticEProp(EProp):
    """e-prop on the cell's per-synapse hooks, one contraction per example."""

    def bind(self, cell, params=None, carry=None) -> TraceRule:
        return TraceRule(self, cell.eprop_init, cell.eprop_update, cell.eprop_contract, new_traces=True)


# e-prop in another form, on its preset, with per-step traces
VARIANTS = {"eprop-synaptic": lambda: SynapticEProp(window=False), "eprop-traces": lambda: EProp(window=False)}


def trainer_of(method: str, trial: int, plain: bool = False, update_every: int | None = None):
    """The preset's trainer of ``method`` (``eprop``, ``bptt``, ``eprop-window`` or a variant) with trials of
    ``trial``, updating every ``update_every`` steps (``None``: every trial)."""
    preset = f"evidence-eprop-paper/alif-{method}"  # eprop-window is the preset's own row
    options = dict(PRESETS[preset if preset in PRESETS else "evidence-eprop-paper/alif-eprop"].options)
    task_args = {} if trial == PAPER_TRIAL else {"episode_length": trial, "cues": 1}
    options.update(task_args=task_args, steps=trial, eval_every=trial,
                   update_every=update_every or (trial if options.get("update_every") else None))
    if plain:
        options.update(readout_decay=0.0, rate_weight=0.0)
    assembly = assemble(RunConfig(**options))
    if method in VARIANTS:
        assembly = assembly._replace(method=VARIANTS[method]())
    return assembly.trainer()


def measure(methods, trial: int, repeats: int, plain: bool = False, update_every: int | None = None) -> dict[str, dict]:
    """Per method: the compiling call's seconds and the least and median seconds of one batch over ``repeats``."""
    if update_every is not None and (update_every <= 0 or trial % update_every):
        raise ValueError(f"update_every must divide the trial ({trial} steps), got {update_every}")
    runs = {}
    for method in methods:
        trainer = trainer_of(method, trial, plain, update_every)
        start = time.perf_counter()
        state = jax.block_until_ready(trainer.train(trainer.init(), trial)[0])
        runs[method] = {"trainer": trainer, "state": state, "first_s": time.perf_counter() - start, "times": []}
    for _ in range(repeats):
        for run in runs.values():
            start = time.perf_counter()
            jax.block_until_ready(run["trainer"].train(run["state"], trial)[0])
            run["times"].append(time.perf_counter() - start)
    return {m: {"first_s": r["first_s"], "batch_s": min(r["times"]), "median_s": statistics.median(r["times"]),
                "times": r["times"]} for m, r in runs.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trial", type=int, default=PAPER_TRIAL)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", choices=["eprop", "eprop-window", "bptt", *VARIANTS],
                        default=["eprop-synaptic", "eprop-traces", "eprop", "eprop-window", "bptt"])
    parser.add_argument("--update-every", type=int, default=None,
                        help="steps between updates, a divisor of the trial (default: the trial)")
    parser.add_argument("--plain", action="store_true", help="the spikes read as they are (no filtered readout)")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    results = measure(args.methods, args.trial, args.repeats, args.plain, args.update_every)
    base = results.get("bptt")
    every = f"an update every {args.update_every} steps" if args.update_every else "an update a trial"
    print(f"trial {args.trial} steps, batch 64, {every}; load average {load:.1f} before, {os.getloadavg()[0]:.1f} "
          f"after")
    for method, r in results.items():
        ratio = f"{r['batch_s'] / base['batch_s']:.2f}x / {r['median_s'] / base['median_s']:.2f}x bptt" if base else ""
        times = ", ".join(f"{t:.2f}" for t in r["times"])
        print(f"{method:16s} {r['batch_s']:7.3f} s / {r['median_s']:7.3f} s a batch, least / median (of {times}; "
              f"first call {r['first_s']:.1f} s) {ratio}")
    command = "python -m rtrl.benchmarks.eprop " + " ".join(argv if argv is not None else sys.argv[1:])
    print(line(command.strip()))


if __name__ == "__main__":
    main()
