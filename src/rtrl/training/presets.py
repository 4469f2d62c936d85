"""Named run configurations: ``rtrl train --preset NAME`` (options given beside it override the preset's).

Every row of the results tables (``docs/results.md``, written by ``rtrl results training``) is a preset, so a row
is rerun alone with ``rtrl train --preset NAME --out DIR``, and the table and the presets cannot drift apart. An
``Experiment`` is one table: a task and a budget shared by its rows; a ``Row`` is what differs (cell, method,
update interval). A row is named ``EXPERIMENT/CELL-METHOD-kK`` unless it has a short name of its own (``copy20``,
``copy5``). ``rtrl list`` shows them all.

Deep networks are named by the import path of a factory (``rtrl.cells.network.lru_network``), since a
``Network``'s layers are not one registered cell.
"""

from __future__ import annotations

import dataclasses
import math

from rtrl.cells.network import lru_network  # noqa: F401  (run folders written before it moved name it here)
from rtrl.config import Preset


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of a results table: what differs from the experiment's budget."""

    cell: str
    method: str  # a method name; "auto": the cell's cheapest exact online method
    update_every: int | None = None  # None: 1 for trace methods, the episode length for bptt (full BPTT)
    note: str = ""
    method_args: tuple[tuple[str, object], ...] = ()
    name: str | None = None  # a short preset name, else EXPERIMENT/CELL-METHOD-kK
    cell_args: tuple[tuple[str, object], ...] = ()

    @property
    def cell_label(self) -> str:
        """The cell as the table shows it: a factory's name (``lru_network``) with its options."""
        name = self.cell.rpartition(":")[2]
        return name + "".join(f" {key}={value}" for key, value in self.cell_args)


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One results table: a task and the budget shared by all its rows. ``long``: minutes a row, so the results
    command runs it only when it is named."""

    name: str
    why: str
    config: dict  # task, task_args, hidden, batch, lr, steps, eval_every, ...
    rows: tuple[Row, ...]
    long: bool = False

    def preset_name(self, row: Row) -> str:
        if row.name:
            return row.name
        options = "".join(f"-{key}{value}" for key, value in row.method_args)
        return f"{self.name}/{row.cell_label.replace(' ', '-')}-{row.method}{options}-k{row.update_every or 'episode'}"

    def options(self, row: Row) -> dict:
        """The ``RunConfig`` options of ``row``."""
        options = {**self.config, "cell": row.cell, "method": row.method, "update_every": row.update_every,
                   "method_args": dict(row.method_args)}
        return options | ({"cell_args": dict(row.cell_args)} if row.cell_args else {})


def exact_online(cells=("elman", "elstm", "iir2", "adaptive_iir2")) -> tuple[Row, ...]:
    """For each cell, its cheapest exact online method: closed-form traces, else diagonal, else dense RTRL."""
    return tuple(Row(cell, "auto", 1) for cell in cells)


FULL_BPTT = "full BPTT: an update per episode"
EPISODE_UPDATES = "exact RTRL updating once per episode: full BPTT's gradient, computed online"


def per_episode(length: int) -> tuple[Row, ...]:
    """Elman updated once per episode of ``length`` steps: by full BPTT, and by exact RTRL (the same gradient)."""
    return Row("elman", "bptt", None, FULL_BPTT), Row("elman", "closed_form", length, EPISODE_UPDATES)


def spiking(experiment: str, cell: str, cell_args: tuple[tuple[str, object], ...], every: int = 1,
            window: bool = False) -> tuple[Row, ...]:
    """A spiking cell under exact RTRL (``auto``: dense ``rtrl`` with recurrent weights, closed-form traces without),
    Bellec et al.'s e-prop (the cell's own, ``rtrl.methods.EProp``), both updating ``every`` steps, and full BPTT, on
    one budget; named ``EXPERIMENT/CELL-rtrl``, ``-eprop``, ``-bptt`` (the cell's options are in the table, not in
    the name). ``window``: also ``-eprop-window``, e-prop's gradient computed over each episode at its end
    (``rtrl.methods.EPropWindow``), where the update closes every episode (``every`` its length)."""
    rows = (Row(cell, "auto", every, "exact RTRL through the surrogate", cell_args=cell_args,
                name=f"{experiment}/{cell}-rtrl"),
            Row(cell, "eprop", every, "e-prop (Bellec et al. 2020): no path through spikes", cell_args=cell_args,
                name=f"{experiment}/{cell}-eprop"),
            Row(cell, "bptt", None, FULL_BPTT, cell_args=cell_args, name=f"{experiment}/{cell}-bptt"))
    if window:
        rows += (Row(cell, "eprop_window", None, "e-prop's gradient (as -eprop's) over each trial, without traces",
                     cell_args=cell_args, name=f"{experiment}/{cell}-eprop-window"),)
    return rows


# A recurrent ALIF remembers beyond the membrane's time constant (leak 0.9: 10 steps) through its spikes and its
# adaptation (decay 0.98: 50 steps); manifolds' patterns last 40 steps and are read as they arrive.
RECURRENT_ALIF = (("recurrent", True), ("adaptation_decay", 0.98))
RECURRENT_LIF = (("recurrent", True),)
SPIKING = {"hidden": 24, "batch": 16, "lr": 1e-3, "steps": 20000, "eval_every": 4000}
NETWORK = "rtrl.cells.network:lru_network"
LAYER_LOCAL = (("inner", "closed_form"),)
# One value per step: a normalisation after the rank-one encoder would keep little more than its sign.
NO_NORM = (("norm", "none"),)
DEEP = {"cell": NETWORK, "hidden": 64, "batch": 16, "lr": 3e-4}
# The e-prop paper's evidence-accumulation network (Bellec et al. 2020; official code, tutorial_evidence_accumulation_
# with_alif.py), at 1 ms a step: 100 recurrent neurons, 50 LIF then 50 ALIF, tau_m 20 ms, tau_a 2,000 ms, threshold
# 0.6, beta = 1.7 (1 - rho) / (1 - leak) (the code's heuristic), the reset subtracting the threshold, the triangle
# pseudo-derivative 0.3 / v_th max(0, 1 - |u| / v_th), a refractory period of 5 steps. Its Adam (lr 0.005) on
# batches of 64 trials, one update per batch, for at most 2,000 batches (it stops below 7% validation error). Its
# readout: the spikes filtered with tau_out 20 ms, and the firing-rate regulariser (weight 1, target 10 Hz; see
# PAPER_EVIDENCE_READOUT); docs/spiking.md, "The e-prop paper's readout". Not here: the removed self-connections (the
# diagonal of R).
PAPER_LEAK = math.exp(-1 / 20)


def paper_alif(tau_a: float, lif_neurons: int, refractory: int) -> tuple[tuple[str, object], ...]:
    """The e-prop code's ALIF population at 1 ms a step: tau_m 20 ms, threshold 0.6, beta = 1.7 (1 - rho) /
    (1 - leak), its triangle pseudo-derivative, the first ``lif_neurons`` not adapting."""
    rho = math.exp(-1 / tau_a)
    return (("recurrent", True), ("lif_neurons", lif_neurons), ("leak", PAPER_LEAK), ("threshold", 0.6),
            ("adaptation", 1.7 * (1 - rho) / (1 - PAPER_LEAK)), ("adaptation_decay", rho),
            ("surrogate", "triangle"), ("surrogate_scale", 1 / 0.6), ("surrogate_height", 0.3 / 0.6),
            ("refractory", refractory))


PAPER_ALIF = paper_alif(2000, 50, 5)
PAPER_TRIAL = 2250
PAPER_READOUT = {"readout_decay": math.exp(-1 / 20), "rate_weight": 1.0, "rate_target": 0.01}
# The paper's evidence loss is the cross-entropy averaged over the 150 ms recall window; the trainer sums it over the
# window's steps, so the regulariser's weight 1 against that mean is 150 against the sum (Adam does not see the
# common scale). At weight 1 against the sum, e-prop ended at 0.66-0.79 where BPTT reached 0.94-0.95; at 150, e-prop
# 0.87-0.93 and BPTT 0.52-0.92, unstable (docs/spiking.md, "At the paper's scale").
PAPER_RECALL_STEPS = 150
PAPER_EVIDENCE_READOUT = {**PAPER_READOUT, "rate_weight": PAPER_READOUT["rate_weight"] * PAPER_RECALL_STEPS}
# Store-recall as the LSNN tutorial (IGITUGraz/LSNN-official, bin/tutorial_storerecall_with_LSNN.py) and the e-prop
# paper set it: 100 inputs, sentences of 12 symbols of 200 ms, an expected delay of 6 symbols; 100 neurons, 40% ALIF
# (tau_a 1,200 ms), 3 ms refractory, the readout filtered with tau_out 20 ms, the rate regulariser 0.01 at 10 Hz;
# Adam 0.01 on batches of 128 trials (the tutorial decays it by 0.3 every 100 batches: not here).
STORE_RECALL_TRIAL = 12 * 200
STORE_RECALL_ALIF = paper_alif(1200, 60, 3)

EXPERIMENTS = (
    Experiment(
        "copy",
        "copy a bit pattern of length 1..5 after a go signal (memory up to 6 steps), fully online (k = 1)",
        {"task": "copy", "task_args": {"max_length": 5}, "hidden": 32, "batch": 16, "lr": 3e-3, "steps": 6000},
        (Row("elman", "closed_form", 1, "the seed's closed-form traces", name="copy5"),)
        + exact_online(("elstm", "iir2", "adaptive_iir2", "gru")) + (Row("elman", "bptt", None, FULL_BPTT),),
    ),
    Experiment(
        "recall",
        "recall the bit from 12 steps ago: RTRL online against truncated BPTT (windows of 6) and full BPTT",
        {"task": "recall", "task_args": {"delay": 12, "episode_length": 48}, "hidden": 32, "batch": 16, "lr": 3e-3,
         "steps": 4800},
        (
            Row("elman", "rtrl", 1, "exact RTRL, dense traces"),
            Row("elman", "closed_form", 1, "exact RTRL, the seed's closed-form traces"),
            Row("elman", "bptt", 6, "truncated BPTT: an update per window of 6 steps < delay"),
            Row("elman", "tbptt", None, "TBPTT(6): chunks of 6 within each episode, an update per episode",
                (("truncation", 6),)),
            Row("elman", "bptt", None, FULL_BPTT),
            Row("elstm", "auto", 1, "exact RTRL"),
            Row("elstm", "bptt", 6, "truncated BPTT: an update per window of 6 steps < delay"),
            Row("elstm", "bptt", None, FULL_BPTT),
            Row("elman", "snap1", 1, "approximate"),
            Row("elman", "eprop", 1, "approximate"),
            Row("elman", "uoro", 1, "approximate"),
        ),
    ),
    Experiment(
        "adding",
        "add the two marked numbers of 20 (memory of ~10 steps; chance 0.167)",
        {"task": "adding", "task_args": {"sequence_length": 20}, "hidden": 32, "batch": 16, "lr": 3e-3,
         "steps": 6000},
        exact_online() + (Row("elman", "bptt", None, FULL_BPTT),),
    ),
    Experiment(
        "sines",
        "generate one of two sums of sines after a one-step cue, for 40 steps",
        {"task": "sines", "hidden": 32, "batch": 16, "lr": 1e-3, "steps": 6000},
        exact_online() + per_episode(40),
    ),
    Experiment(
        "mnist1d",
        "classify MNIST-1D digits read one value per step (40 steps; answer at the end); 6000 steps x 32 "
        "streams is 4800 examples, 1.2 passes over the training split",
        {"task": "mnist1d", "hidden": 32, "batch": 32, "lr": 3e-3, "steps": 6000},
        exact_online() + per_episode(40),
    ),
    Experiment(
        "evidence",
        "spiking: tell which side had more cues after a delay of 30 steps (3 x the membrane's time constant)",
        {"task": "evidence", **SPIKING},
        spiking("evidence", "alif", RECURRENT_ALIF),
    ),
    Experiment(
        "store_recall",
        "spiking: store a bit on command and recall it on command later in episodes of 60 steps",
        {"task": "store_recall", **SPIKING},
        spiking("store_recall", "alif", RECURRENT_ALIF),
    ),
    Experiment(
        "manifolds",
        "spiking: classify spike-time patterns drawn from 4 smooth random curves (40 steps, then the answer)",
        {"task": "manifolds", **SPIKING},
        spiking("manifolds", "lif", RECURRENT_LIF),
    ),
    Experiment(
        "evidence-eprop-paper",
        "spiking, the e-prop paper's scale: 40 Poisson channels, 7 cues of 100 ms, the answer 1,200 ms after the last "
        "cue's start, 100 LIF and ALIF neurons; an update per batch of 64 trials, 2,000 batches at most",
        {"task": "evidence_poisson", "hidden": 100, "batch": 64, "lr": 5e-3, "clip": None,
         "steps": 2000 * PAPER_TRIAL, "eval_every": 50 * PAPER_TRIAL, **PAPER_EVIDENCE_READOUT},
        spiking("evidence-eprop-paper", "alif", PAPER_ALIF, every=PAPER_TRIAL, window=True),
        long=True,
    ),
    Experiment(
        "store-recall-eprop-paper",
        "spiking, the LSNN tutorial's scale: 100 Poisson inputs, 12 symbols of 200 ms, store and recall commands "
        "6 symbols apart on average, 100 LIF and ALIF neurons; an update per batch of 128 trials, 1,000 batches",
        {"task": "store_recall_poisson", "hidden": 100, "batch": 128, "lr": 1e-2, "clip": None,
         "steps": 1000 * STORE_RECALL_TRIAL, "eval_every": 50 * STORE_RECALL_TRIAL, **PAPER_READOUT,
         "rate_weight": 0.01},
        spiking("store-recall-eprop-paper", "alif", STORE_RECALL_ALIF, every=STORE_RECALL_TRIAL, window=True),
        long=True,
    ),
    Experiment(
        "copy20",
        "copy patterns of up to 20 bits (memory up to 21 steps) with a 2-block LRU network (width 64): "
        "layer-local traces fully online against truncated and full BPTT, same architecture and step budget",
        {"task": "copy", "task_args": {"max_length": 20}, **DEEP, "steps": 240000, "eval_every": 4000},
        (
            Row(NETWORK, "layer_local", 1, "fully online: layer-local closed-form traces, an update every step",
                LAYER_LOCAL, name="copy20"),
            Row(NETWORK, "bptt", 10, "truncated BPTT: an update per window of 10 steps"),
            Row(NETWORK, "bptt", None, FULL_BPTT),
        ),
        long=True,
    ),
    Experiment(
        "recall50",
        "recall the bit from 50 steps ago with a 2-block LRU network (width 64): layer-local traces fully online "
        "against truncated BPTT (windows of 10 < delay) and full BPTT",
        {"task": "recall", "task_args": {"delay": 50, "episode_length": 100}, **DEEP, "steps": 30000,
         "eval_every": 2000},
        (
            Row(NETWORK, "layer_local", 1, "fully online: layer-local closed-form traces", LAYER_LOCAL,
                name="recall50"),
            Row(NETWORK, "bptt", 10, "truncated BPTT: an update per window of 10 steps < delay"),
            Row(NETWORK, "bptt", None, FULL_BPTT),
        ),
        long=True,
    ),
    Experiment(
        "mnist1d-deep",
        "classify MNIST-1D digits read one value per step with a 2-block LRU network (width 64): layer-local "
        "traces fully online against full BPTT (no normalisation: the input is one value)",
        {"task": "mnist1d", **DEEP, "batch": 32, "steps": 30000, "eval_every": 2000},
        (
            Row(NETWORK, "layer_local", 1, "fully online: layer-local closed-form traces", LAYER_LOCAL,
                name="mnist1d-deep", cell_args=NO_NORM),
            Row(NETWORK, "bptt", None, FULL_BPTT, cell_args=NO_NORM),
        ),
        long=True,
    ),
)

PRESETS: dict[str, Preset] = {
    experiment.preset_name(row): Preset(
        f"{experiment.name} table: {row.cell_label}, {row.method}"
        + {None: " per episode", 1: " every step"}.get(row.update_every, f" every {row.update_every} steps")
        + (f" ({row.note})" if row.note else ""),
        experiment.options(row))
    for experiment in EXPERIMENTS for row in experiment.rows
}
