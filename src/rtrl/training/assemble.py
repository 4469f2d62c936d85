"""``assemble(config)``: the task, the cell and the method that a ``RunConfig`` names, each built once, and the
configuration resolved against them.

Resolving fills the defaults that depend on the parts (``update_every``: 1 for a trace method, the episode length
for a sequence method; ``eval_every``: about 25 evaluations per run) and rounds the budgets up to whole updates.
Every error is an ``OptionError`` or ``ValueError`` naming the option (a usage error on the command line), raised
before anything is written; the run folder and the trainer take the assembly and build nothing again.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax

from rtrl import methods
from rtrl.cells.lookup import make_cell
from rtrl.checks import default_dtype
from rtrl.config import make
from rtrl.devices import floats_of
from rtrl.optim import make_optimizer
from rtrl.training.config import RunConfig
from rtrl.training.model import Readout, ReadoutModel
from rtrl.training.tasks import TASKS, Task
from rtrl.training.trainer import Trainer
from rtrl.validate import applies, what


class Assembly(NamedTuple):
    """A training run's parts: the resolved configuration and the task, cell and method it names."""

    config: RunConfig
    task: Task
    cell: object
    method: methods.Method

    def trainer(self) -> Trainer:
        """The trainer of these parts; a new one each call (each compiles its own)."""
        c = self.config
        return Trainer(self.task, self.cell, self.method, batch=c.batch, update_every=c.update_every,
                       optimizer=make_optimizer(c.optimizer, c.lr, c.clip), eval_size=c.eval_size, stagger=c.stagger,
                       seed=c.seed, devices=c.devices, readout_decay=c.readout_decay, rate_weight=c.rate_weight,
                       rate_target=c.rate_target, rate_form=c.rate_form)

    def memory_needed(self) -> int:
        """A lower bound of the bytes the run holds at once (``rtrl.devices.check_memory``): the model's state and,
        per stream, its carry and traces (``state_bytes``), the held-out episodes' inputs and carries, and the
        inputs of the streams' episodes (each made whole)."""
        c, task = self.config, self.task
        cell = readout_of(c, task).learned(self.cell)
        held_out = c.eval_size * (task.length * task.input_size + floats_of(lambda: cell.initial_carry(())))
        streams = c.batch * task.length * task.input_size
        return state_bytes(cell, self.method, c.batch, c.update_every) + (held_out + streams) * default_dtype().itemsize


def assemble(config: RunConfig) -> Assembly:
    """The parts of ``config``, built once, and ``config`` resolved; ``OptionError`` / ``ValueError`` naming an
    unknown option, or a method that does not apply to the cell or its windows."""
    if not isinstance(config, RunConfig):
        raise TypeError(f"config must be a RunConfig, e.g. assemble(RunConfig(task='copy')), got {what(config)}")
    task = task_of(config)
    cell = make_cell(config.cell, config.cell_args, task.input_size, config.hidden)
    readout = readout_of(config, task)
    method = methods.resolve(make("method", methods.REGISTRY, config.method, config.method_args),
                             readout.learned(cell))
    if config.trace_dtype is not None:
        method = _with_trace_dtype(method, config.trace_dtype, config.method_args)
    if not method.online and not applies(method, ReadoutModel.of(readout.learned(cell), task.output_size, readout)):
        raise ValueError(f"method {method.name!r} does not apply to the trainer's windows (the cell behind resets and "
                         "a readout); use 'bptt', 'tbptt' or a trace method")
    if config.stagger and not method.online:
        raise ValueError(f"stagger needs a trace method; {config.method!r} updates on aligned windows")
    readout.check_streams(config.stagger)
    k = config.update_every or (1 if method.online else task.length)
    every = config.eval_every or k * max(1, round(config.steps / 25 / k))
    resolved = config.replace(update_every=k, steps=-(-config.steps // k) * k, eval_every=-(-every // k) * k)
    return Assembly(resolved, task, cell, method)


def readout_of(config: RunConfig, task: Task) -> Readout:
    """The trainer's readout that ``config`` asks for (``rtrl.training.model.Readout``)."""
    return Readout(config.readout_decay, config.rate_weight, config.rate_target, task.length, config.rate_form)


def task_of(config: RunConfig) -> Task:
    """The task ``config`` names, with its options (``OptionError`` naming one it does not have), its files read
    (``Task.load``)."""
    task = make("task", TASKS, config.task, config.task_args)
    task.load()
    return task


def _with_trace_dtype(method, trace_dtype: str, method_args: dict):
    """``method`` storing its traces in ``trace_dtype``; ``ValueError`` for a method without traces, or when the
    method's own option says otherwise."""
    if not method.online:
        raise ValueError(f"trace_dtype needs a trace method; {method.name!r} keeps no traces")
    if method_args.get("trace_dtype", trace_dtype) != trace_dtype:
        raise ValueError(f"trace_dtype is given twice, {trace_dtype!r} and method option "
                         f"{method_args['trace_dtype']!r}")
    return dataclasses.replace(method, trace_dtype=trace_dtype)


def state_bytes(cell, method, streams: int, window: int) -> int:
    """A lower bound of the bytes of a model's state: the parameters three times (with their gradient and an
    optimiser moment) and, per stream, the carry and the traces an online method keeps (what ``rtrl.inspect``
    counts as trace floats per example) or the ``window`` of carries a sequence method keeps."""
    itemsize = default_dtype().itemsize
    params = floats_of(lambda: cell.init(jax.random.PRNGKey(0)))
    carry = floats_of(lambda: cell.initial_carry(()))
    if not method.online:
        traces = window * carry * itemsize
    else:  # None where the shapes would cost a probe of the cell (a large SnAp pattern): counted as none
        shapes = method.trace_shapes(cell)
        traces = sum(math.prod(a.shape) * a.dtype.itemsize for a in jax.tree.leaves(shapes))
    return itemsize * (3 * params + streams * carry) + streams * traces
