"""The training run's kind of run folder (``rtrl train``): a model trained online on a task (``rtrl.training``),
evaluated every ``eval_every`` steps and at step 0."""

from __future__ import annotations

from rtrl.devices import check_memory
from rtrl.run.folder import Run, chosen, computed_on, evaluation_options, fmt, read_metrics, register
from rtrl.run.plot import Curve
from rtrl.training.assemble import assemble, task_of
from rtrl.training.config import RunConfig
from rtrl.training.trainer import evaluation, fit, reached


@register
class TrainRun(Run):
    """A run folder of ``rtrl train``; its compiled pieces are a ``Trainer``."""

    name = "train"
    config_class = RunConfig
    assemble = staticmethod(assemble)

    def build(self):
        return self.assembly.trainer()

    def fresh(self):
        return self.trainer.init()

    def fit(self, state, wall_s: float, on_record, on_chunk):
        """Train to ``steps``, or with ``stop_at`` to the first record that reaches it: a run folder whose last
        record already did is done (resumed, it trains no further)."""
        if self.stopped() is not None:
            return state
        return fit(self.trainer, state, self.config.steps, self.config.eval_every, on_eval=on_record,
                   on_chunk=on_chunk, wall_s=wall_s, stop_at=self.config.stop_at)

    def stopped(self) -> dict | None:
        """The last record, where it reached ``stop_at`` (``rtrl.training.trainer.reached``); else ``None``."""
        stop_at = self.config.stop_at
        records = read_metrics(self.path) if stop_at is not None else []
        higher = self.assembly.task.higher_is_better
        return records[-1] if records and reached(records[-1], stop_at, higher) else None

    def trained(self, params):
        return self.assembly.cell, params["cell"]

    def fingerprints(self) -> dict:
        return self.assembly.task.fingerprints()

    def evaluate(self, state, episodes: int | None, seed: int | None, greedy: bool = False, video=None,
                 overwrite: bool = False) -> dict:
        """The task's held-out metrics of ``state``'s parameters on ``episodes`` episodes drawn from ``seed``
        (default: the run's ``eval_size`` and ``seed``, its own held-out episodes), made by the trainer's own
        evaluation (``rtrl.training.trainer.evaluation``: the run's readout, from a zero carry): ``value`` is the
        headline metric, ``metrics`` every figure under the name its records give it. ``greedy`` and ``video``
        belong to RL runs: refused (``overwrite`` too, which replaces videos). A file the task reads (``shd``) must
        be the one the run was trained on, as on resume (``Run.check_data``: ``RunError`` naming the option)."""
        for name, value in (("greedy", greedy), ("video", video is not None), ("overwrite", overwrite)):
            if value:
                raise ValueError(f"{name} applies to RL runs (rtrl rl); {self.path} is a training run")
        self.data = self.fingerprints()
        self.check_data()  # scored on another file under the same name, the figure would be another task's
        config = self.config
        episodes, seed = evaluation_options(episodes, seed, config.eval_size, config.seed)
        same = (episodes, seed) == (config.eval_size, config.seed)
        assembly = self.assembly._replace(config=config.replace(eval_size=episodes, seed=seed, devices=1))
        check_memory(assembly.memory_needed(), 1, "--episodes")
        trainer = self.trainer if same and config.devices == 1 else assembly.trainer()
        metrics = evaluation(trainer, state)
        return {"metric": self.assembly.task.metric_name, "value": metrics["metric"], "episodes": episodes,
                "seed": seed, "metrics": metrics}

    @staticmethod
    def curve_of(config: RunConfig, records: list[dict], label: str | None = None) -> Curve:
        task = task_of(config)  # rtrl's own task: its metric's name and chance level
        return Curve(label or config.label(), records, task.metric_name, task.chance)

    def title(self) -> str:
        config = self.config
        return (f"{self.assembly.task.name}: {config.label(self.method_name())}, hidden {config.hidden}, batch "
                f"{config.batch}")

    def method_name(self) -> str:
        return self.trainer.computed_by.name

    def describe(self) -> str:
        config, task = self.config, self.assembly.task
        return (f"{task.name} ({task.metric_name}, chance {task.chance:.3g}) | {config.cell} hidden {config.hidden} "
                f"| {config.method}{chosen(config.method, self.trainer.computed_by)}, update every "
                f"{config.update_every} | batch {config.batch}, {config.steps} steps | {computed_on()}")

    def status(self, record: dict) -> str:
        return f"loss {fmt(record['loss'])} {self.assembly.task.metric_name} {fmt(record['metric'])}"

    def summary(self) -> str:
        records, task = read_metrics(self.path), self.assembly.task
        first, last = records[0], records[-1]
        extra = ", ".join(f"{k} {fmt(v)}" for k, v in last.items() if k not in ("step", "loss", "metric", "wall_s"))
        stop = f"; stopped: --stop-at {self.config.stop_at:g} reached" if self.stopped() is not None else ""
        return (f"{task.metric_name}: {fmt(first['metric'])} at step {first['step']} -> {fmt(last['metric'])} at "
                f"step {last['step']} (chance {task.chance:.3g}; {extra}{stop}) in {last['wall_s']:.1f} s on "
                f"{computed_on()}")
