"""The run configuration of ``rtrl train``: every option of a training run once, each with its default, its help
text and its check (``rtrl.config``).

``rtrl train``'s options are built from its fields (``rtrl.run.options``), ``config.json`` is its ``to_dict()``, and
``rtrl resume`` reads it back with ``from_dict``, so there is no second spelling of the schema. Construction checks
each field's type, range and registered name, and builds nothing; ``rtrl.training.assemble`` builds the task, the
cell and the method it names (once), and resolves the defaults that depend on them.
"""

from __future__ import annotations

from rtrl import methods
from rtrl.cells.lookup import cell_import, cell_name
from rtrl.checks import check_shares
from rtrl.config import (
    Config,
    OptionError,
    below_one,
    flag,
    key_values,
    non_negative_float,
    one_of,
    option,
    optional,
    positive_float,
    positive_int,
    random_seed,
    step_count,
    unit_interval,
)
from rtrl.training.model import RATE_FORMS
from rtrl.training.tasks import TASKS

OPTIMIZERS = ("adam", "sgd")
# The firing-rate regulariser's shape, at its defaults: read only where it is on (rate_weight > 0)
REGULARISER = {"rate_target": 0.01, "rate_form": "trial"}


class RunConfig(Config):
    """Everything that defines a training run, as plain data. ``RunConfig(**options)`` raises a ``ValueError``
    naming the first bad option; ``RunConfig.from_dict(d, where)`` also names where ``d`` came from (a file)."""

    task: str = option("copy", "a task from `rtrl list`", one_of(TASKS), "NAME")
    task_args: dict = option({}, "a task option, e.g. max_length=8 (repeatable)", key_values, "KEY=VALUE")
    cell: str = option("elman", "a cell from `rtrl list`, or the import path of any other, e.g. flax.linen:GRUCell",
                       cell_name, "NAME", imports=cell_import)
    cell_args: dict = option({}, "a cell option, e.g. activation=relu (repeatable)", key_values, "KEY=VALUE")
    hidden: int = option(32, "hidden size", positive_int, "N")
    method: str = option("auto", "a gradient method from `rtrl list` (auto: the cheapest exact one for the cell; the "
                         "run header says which)", one_of(methods.REGISTRY), "NAME")
    method_args: dict = option({}, "a method option, e.g. truncation=6 (repeatable)", key_values, "KEY=VALUE")
    trace_dtype: str | None = option(
        None,
        "store the traces in this dtype, e.g. bfloat16 (half the memory; they are updated and contracted in the "
        "parameters' dtype); default: the parameters' dtype",
        optional(one_of(methods.TRACE_DTYPES)),
        "DTYPE",
    )
    batch: int = option(16, "independent streams trained in parallel", positive_int, "B")
    update_every: int | None = option(
        None,
        "an optimiser update every k steps: 1 (fully online) for trace methods, the episode length (full BPTT) "
        "for sequence methods; a shorter k for bptt is truncated BPTT",
        optional(step_count),
        "K",
    )
    readout_decay: float = option(
        0.0, "read the cell's output low-pass filtered, o = decay o + (1 - decay) h (the e-prop paper's readout: "
        "exp(-1/20) for tau_out = 20 steps); 0: as it is", below_one, "KAPPA")
    rate_weight: float = option(
        0.0, "weight c of the firing-rate regulariser c sum_j (rate_j - rate_target)^2 over each episode (the e-prop "
        "paper's; 0: none)", non_negative_float, "C")
    rate_target: float = option(REGULARISER["rate_target"], "the regulariser's target rate in spikes per step (the "
                                "paper's 10 Hz at its millisecond step: a hundredth)", unit_interval, "F")
    rate_form: str = option(
        REGULARISER["rate_form"], "trial: the regulariser squares each stream's rate over its episode, then averages "
        "over the streams; batch: it squares the streams' mean rate (the e-prop paper's code; needs episodes that "
        "start together, no --stagger)", one_of(RATE_FORMS), "FORM")
    optimizer: str = option("adam", "adam or sgd (optax)", one_of(OPTIMIZERS), "NAME")
    lr: float = option(1e-3, "learning rate", positive_float, "LR")
    clip: float | None = option(1.0, "clip the global gradient norm to this (`--no-clip`: do not)",
                                optional(positive_float), "C")
    steps: int = option(10000, "steps per stream, rounded up to whole updates", step_count, "S")
    eval_every: int | None = option(None, "steps between evaluations (default: about 25 per run)",
                                    optional(step_count), "E")
    eval_size: int = option(256, "held-out episodes per evaluation", positive_int, "M")
    stop_at: float | None = option(
        None, "stop at the first evaluation whose held-out metric reaches this value (at or above it; at or below for "
        "a metric where lower is better, e.g. mse): the e-prop paper's stopping rule is `--stop-at 0.93`; default: "
        "train to --steps", optional(non_negative_float), "V")
    stagger: bool = option(False, "start stream b at b/B of an episode (trace methods only)", flag)
    seed: int = option(0, "seed of the parameters and of the data", random_seed, "SEED")
    devices: int = option(1, "devices to split the streams over (the batch a multiple of it; docs/devices.md)",
                          positive_int, "N")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_shares(self.batch, self.devices)
        inert = self.unread_options(self.to_dict())
        if inert:
            one = len(inert) == 1
            raise OptionError(f"{' and '.join(inert)} {'shapes' if one else 'shape'} the firing-rate regulariser, "
                              f"which rate_weight 0 turns off; give rate_weight C > 0 with "
                              f"{'it' if one else 'them'}, or leave {'it' if one else 'them'} out", inert[0])

    @classmethod
    def never_read_options(cls, values: dict) -> dict[str, str]:
        """The regulariser's shape (``REGULARISER``) where it is off (``rate_weight`` 0)."""
        why = "it shapes the firing-rate regulariser, which rate_weight 0 turns off (give --rate-weight C > 0)"
        return dict.fromkeys(REGULARISER, why) if values.get("rate_weight") == 0 else {}

    @classmethod
    def unread_options(cls, values: dict) -> list[str]:
        """The regulariser's shape given other than its default where the regulariser is off: refused at
        construction, set back to its default in a file written before that (``Config.from_dict``)."""
        return [name for name in cls.never_read_options(values) if values.get(name) != REGULARISER[name]]

    def label(self, method: str | None = None) -> str:
        """The legend's name of the run: its cell and method (``method``: what ``auto`` chose, where known), and the
        update interval where one was given other than every step (None: the method's own, not shown)."""
        k = self.update_every
        return f"{self.cell} {method or self.method}" + (f" k={k}" if k is not None and k > 1 else "")
