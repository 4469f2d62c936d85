"""Named online-RL configurations: ``rtrl rl --preset NAME`` (options given beside it override the preset's).

Every row of the results tables in docs/rl-results.md is one preset, and ``rtrl results rl`` runs exactly
these (over seeds), so the tables and the presets cannot drift apart. A table is a setting (an environment, a budget, a
network) and its rows are the methods compared on it: the row of online exact RTRL is named after the table
(``memory-chain``), the others add the method (``memory-chain-tbptt``), or ``memoryless``: the same budget, heads and
update with a torso that has no recurrence (``rtrl.cells.FeedForward``), the floor a memory task must beat. Every
preset logs the gradient fidelity (``fidelity_every``), as the tables show it, but those of ``LONG_RUNS``: studies of
whether learning holds over a long run, whose records carry the learner's health instead (and run faster).
"""

from __future__ import annotations

from typing import NamedTuple

from rtrl.config import Preset
from rtrl.rl import control_presets

FIDELITY_EVERY = 250
LONG_RUNS = ("memory-chain-40-long",)
METHODS = ("rtrl", "tbptt", "snap1", "eprop", "uoro")
BASELINES = ("rtrl", "tbptt", "memoryless")  # the rows of the round-3 tables: exact RTRL beside TBPTT(K) and no memory
ROW_OPTIONS = {  # rows that are not a method's own
    # auto: a torso without recurrence has no traces to keep (diagonal's are empty), where dense rtrl would carry a
    # width x parameters matrix per environment (no first record in 16 minutes at width 192)
    "memoryless": {"method": "auto", "cell": "feedforward", "cell_args": {}},
    "raw-obs": {"method": "rtrl", "normalize_obs": False},  # exact RTRL on the observations as the env gives them
    "small-lr": {"method": "rtrl", "lr": 3e-4},  # exact RTRL with Adam's step a third of the default's
}
# The POPGym tables' setting (issue 24): Adam at 3e-4, the step that holds (docs/rl-history.md: at 1e-3 runs reach the
# target and fall back, on memory-chain-40-long and on popgym-repeat-first alike).
POPGYM = {"hidden": 16, "envs": 16, "steps": 400_000, "truncation": 16, "record_every": 40_000, "lr": 3e-4,
          "fidelity_every": FIDELITY_EVERY}
# The round-4 streaming agent (issue 40): a width-192 minGRU torso under its exact closed-form traces (``auto``),
# its gate's bias chrono-initialised to timescales up to twice the chain, AC(lambda 0.8) with Adam at 1e-3, no
# entropy bonus. Measured on MemoryChain (docs/rl-history.md): MemoryChain-bsuite marks the answer step only by its time
# input (1 - t/L, at L the chain's end: no query bit with one context bit), so the policy at the answer is the policy
# at the steps just before it, and any entropy bonus, paid at every step, caps the answer's certainty: at 0.01 every
# run held at chance or at 0.63-0.68 (L = 128), at 0.001 at 0.98 (L = 128) and 0.88 (L = 256, 4 seeds of 5: one
# wrong answer in 16, in either context alike); without it every seed reaches 0.98 at both lengths. Gamma 0.9, not
# Farr et al.'s 0.999, because only the answer is rewarded: with 0.999 (and 0.99 with Adam at 1e-3) the value ran
# away (to thousands) and the entropy collapsed; ObGD (lr 1, kappa 2) stayed bounded but barely moved the
# parameters (the torso's small state against its traces' l1 norm).
STREAMING = {"cell": "mingru", "hidden": 192, "envs": 16, "gamma": 0.9, "lam": 0.8, "optimizer": "adam", "lr": 1e-3,
             "entropy": 0.0, "fidelity_every": 1000}
WINDOW = 32  # the TBPTT row's window in the streaming agent's tables (a table's ``truncation``)
# The streaming agent on POPGym (issue 36): the same torso and update with a tanh layer of 64 units shared by the
# heads (``head_hidden``) and the entropy bonus at 0.01. Measured on RepeatPrevious (docs/rl-history.md, three seeds,
# 100k steps): linear heads held every seed at 0.03 (a bank of input-gated filters read linearly picks the card four
# steps back only approximately); the layer took every seed to 0.85; without the bonus one seed of three stalled.
# The previous action and reward as inputs (``extra_inputs``), as Farr et al. give every POPGym task (and no time):
# on RepeatFirst every seed stayed below -0.25 for 200k steps without extras and passed 0.89 by 20k with them (the
# time beside them then), the gate seeing the first step (its extras are zeros only there).
POPGYM_STREAMING = {**STREAMING, "head_hidden": 64, "entropy": 0.01, "extra_inputs": ("action", "reward"),
                    "steps": 200_000, "record_every": 20_000}


class Table(NamedTuple):
    """A setting of the results tables: what it tests, its ``RLConfig`` options (``truncation``: the window of its
    TBPTT row, given to that row only), the target return and the methods (its rows)."""

    what: str
    options: dict
    target: float
    methods: tuple[str, ...] = METHODS
    exact: str = "rtrl"  # the method of the row of online exact RTRL (auto: the cheapest exact traces of the torso)


def chain(length: int, steps: int, lr: float) -> Table:
    """MemoryChain with the cue ``length`` steps before the answer, the streaming agent's setting (``STREAMING``),
    ``steps`` per environment, ten records."""
    return Table(f"MemoryChain-bsuite, the cue {length} steps before the answer",
                 {"env": "memory-chain", "env_args": {"memory_length": length}, **STREAMING, "truncation": WINDOW,
                  "lr": lr,
                  "cell_args": {"max_timescale": 2 * length}, "steps": steps, "record_every": steps // 10},
                 0.9, BASELINES, "auto")


def learned_by(algorithm: str, options: dict, steps: int) -> dict:
    """The actor-critic's ``options`` learned by another algorithm (``Q_ALGORITHMS``) over ``steps`` steps: its
    options over them (the tanh layer before the heads too, where it has one), the entropy bonus, which only the
    actor-critic reads, dropped, epsilon decaying over the first tenth of the run."""
    kept = {k: v for k, v in options.items() if k != "entropy"}
    return {**kept, **Q_ALGORITHMS[algorithm], "explore_steps": max(1, steps // 10)}


def chain_of(algorithm: str, length: int, steps: int, lr: float) -> Table:
    """``chain(length, steps, lr)``'s setting (the streaming agent's torso, budget and records) learned by another
    algorithm (``Q_ALGORITHMS``, ``learned_by``)."""
    table = chain(length, steps, lr)
    return table._replace(what=f"{table.what}, {Q_NAMES[algorithm]}",
                          options=learned_by(algorithm, table.options, steps))


# Q-learning on MemoryChain (issue 48), the epsilon schedule of Farr et al. 2026 (noahfarr/recurrent-streaming-rl,
# config/algorithm/intentional_q.yaml and qrc_lambda.yaml: epsilon from 1 to 0.01 over the first tenth of the run,
# ``explore_steps``). ``q``: intentional Q(lambda) as they run it, eta 0.5, gamma 0.99, lambda 0.8 (exact RTRL:
# ``auto`` on the minGRU). ``qrc``: QRC(lambda) with the streaming agent's Adam step and gamma, h's step and
# regulariser theirs (the defaults); their SGD at 1e-4 is a step per environment where ours averages 16. Neither
# tuned yet (docs/rl-results.md).
Q_ALGORITHMS = {"q": {"algorithm": "q", "optimizer": "intentional", "lr": 0.5, "gamma": 0.99, "lam": 0.8,
                      "epsilon": 0.01},
                "qrc": {"algorithm": "qrc", "epsilon": 0.01}}
Q_NAMES = {"q": "intentional Q(lambda)", "qrc": "QRC(lambda)"}

# The streaming agent's MemoryChain lengths (issue 40): (length, steps per environment, Adam's step). Adam at 3e-4
# from 192 on: at 1e-3 with the entropy bonus, seeds at 256 reached 0.95 and fell back (to 0.52 in one) by 240k.
CHAINS = ((16, 20_000, 1e-3), (32, 20_000, 1e-3), (64, 40_000, 1e-3), (128, 60_000, 1e-3), (192, 100_000, 3e-4),
          (256, 120_000, 3e-4))
TABLES = {
    "memory-chain": Table(
        "MemoryChain-bsuite, the cue 20 steps before the answer",
        {"env": "memory-chain", "env_args": {"memory_length": 20}, "hidden": 16, "envs": 16, "steps": 20_000,
         "truncation": 10, "record_every": 2_000, "fidelity_every": FIDELITY_EVERY}, 0.8),
    "cartpole-masked": Table(
        "CartPole-v1 with its velocities hidden (a POMDP)",
        {"env": "cartpole-masked", "hidden": 16, "envs": 16, "steps": 80_000, "lr": 3e-4, "entropy": 0.001,
         "record_every": 8_000, "fidelity_every": FIDELITY_EVERY}, 400.0),
    "memory-chain-40": Table(
        "MemoryChain-bsuite, the cue 40 steps before the answer",
        {"env": "memory-chain", "env_args": {"memory_length": 40}, "hidden": 16, "envs": 16, "steps": 120_000,
         "truncation": 20, "record_every": 12_000, "fidelity_every": FIDELITY_EVERY}, 0.8, ("rtrl", "tbptt")),
    "memory-chain-40-long": Table(
        "MemoryChain-bsuite, the cue 40 steps before the answer, three times memory-chain-40's budget (does it hold?)",
        {"env": "memory-chain", "env_args": {"memory_length": 40}, "hidden": 16, "envs": 16, "steps": 360_000,
         "truncation": 20, "record_every": 12_000}, 0.8, ("rtrl", "raw-obs", "small-lr")),
    **{f"memory-chain-{length}": chain(length, steps, lr) for length, steps, lr in CHAINS},
    **{f"memory-chain-{length}-{algorithm}": chain_of(algorithm, length, steps, lr)
       for algorithm in Q_ALGORITHMS for length, steps, lr in CHAINS},
    "popgym-repeat-first": Table(
        "POPGym RepeatFirstEasy: repeat the first card of the episode at every step",
        {"env": "popgym:RepeatFirstEasy", **POPGYM_STREAMING, "truncation": WINDOW}, 0.9, BASELINES, "auto"),
    "popgym-repeat-previous": Table(
        "POPGym RepeatPreviousEasy: repeat the card seen 4 steps ago",
        {"env": "popgym:RepeatPreviousEasy", **POPGYM_STREAMING, "truncation": WINDOW}, 0.9, BASELINES, "auto"),
    "popgym-count-recall": Table(
        "POPGym CountRecallEasy: how often the card shown now was shown before",
        {"env": "popgym:CountRecallEasy", **POPGYM}, 0.0, BASELINES),
    "popgym-autoencode": Table(
        "POPGym AutoencodeEasy: watch a sequence of cards, then play it back in reverse",
        {"env": "popgym:AutoencodeEasy", **POPGYM}, 0.0, BASELINES),
}
TABLES.update({name: Table(**fields) for name, fields in control_presets.TABLES.items()})  # continuous control


def preset_name(table: str, method: str) -> str:
    return table if method == "rtrl" else f"{table}-{method}"


def describe(method: str, options: dict) -> str:
    if method == "memoryless":
        return "a memoryless feed-forward torso (no recurrence)"
    if method == "raw-obs":
        return "online exact RTRL on the raw observations (not normalised)"
    if method == "small-lr":
        return "online exact RTRL with a learning rate of 3e-4"
    if method == "tbptt":
        return f"rolling truncated BPTT over the last {options.get('truncation', 8)} steps"
    return {"rtrl": "online exact RTRL", "snap1": "SnAp-1 traces", "eprop": "e-prop traces",
            "uoro": "UORO's rank-one traces"}.get(method, method)


def row_options(table: Table, method: str) -> dict:
    """The ``RLConfig`` options of ``table``'s row ``method``: the table's, the row's own over them, the table's
    ``truncation`` only where the row reads it (``tbptt``; ``RLConfig`` refuses it elsewhere)."""
    options = {**table.options, **ROW_OPTIONS.get(method, {"method": table.exact if method == "rtrl" else method})}
    return options if options.get("method") == "tbptt" else {k: v for k, v in options.items() if k != "truncation"}


# name -> Preset(summary, RLConfig options); the rows of TABLES, table by table.
ROWS: dict[str, tuple[str, str]] = {preset_name(t, m): (t, m) for t, table in TABLES.items() for m in table.methods}
PRESETS: dict[str, Preset] = {
    name: Preset(f"{TABLES[t].what}: {describe(m, TABLES[t].options)}, hidden {TABLES[t].options['hidden']}",
                 row_options(TABLES[t], m))
    for name, (t, m) in ROWS.items()
}
# The POPGym suite's agent (``rtrl results popgym``, the POPGym benchmark): the popgym-repeat-* presets' streaming
# agent without their budget and records, which the suite sets per run.
POPGYM_AGENT = {k: v for k, v in POPGYM_STREAMING.items() if k not in ("steps", "record_every", "fidelity_every")}
