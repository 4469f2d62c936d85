"""Several devices: B independent streams split over a one-dimensional mesh of N devices.

A training state is placed by its batch axis: every leaf that has one (carries, traces, environment states, ...)
is split over the mesh's ``"batch"`` axis, every other leaf (parameters, optimiser state, counters, keys) is
replicated. Which axis of a leaf is its batch axis is found from the shapes alone: ``batch_axes(make, B)``
compares the abstract shapes of ``make(B)`` and ``make(B + 1)``, so no layout is assumed (traces may put the batch
anywhere). The jitted step then runs under these shardings and XLA's partitioner inserts the collectives: a
gradient averaged over the streams becomes an all-reduce, nothing is written by hand.

``devices`` counts ``jax.devices()``: the local devices of this process, or, after ``jax.distributed.initialize``,
those of every process (docs/devices.md). One device is no mesh at all (``mesh`` returns ``None``), so a
one-device run is exactly the code and the cost it always was.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from rtrl.checks import check_positive_int, check_shares

AXIS = "batch"
MORE_CPU_DEVICES = "XLA_FLAGS=--xla_force_host_platform_device_count=N"


def mesh(devices: int, batch: int, batch_name: str = "batch", share: str = "streams") -> Mesh | None:
    """The 1-D mesh over the first ``devices`` devices (``None`` for one device); ``ValueError`` when ``devices``
    is not a positive integer, exceeds the devices available, or does not divide ``batch`` (named
    ``batch_name``)."""
    check_shares(batch, check_available(devices), batch_name, share)
    return None if devices == 1 else Mesh(np.array(jax.devices()[:devices]), (AXIS,))


def check_available(devices: int) -> int:
    """``devices`` if it is a positive integer at most ``jax.device_count()`` (every process's devices, after
    ``jax.distributed.initialize``); ``ValueError`` saying what to do otherwise."""
    check_positive_int("devices", devices)
    available = jax.devices()
    if devices > len(available):
        raise ValueError(
            f"devices must be at most the {len(available)} {available[0].platform} device(s) available, got "
            f"{devices}; on CPU, set {MORE_CPU_DEVICES} in the environment before JAX starts for N host devices"
        )
    return devices


def join(coordinator: str | None = None, processes: int | None = None, process_id: int | None = None) -> None:
    """Join the other processes of a run that spans several (``jax.distributed.initialize``; before JAX starts its
    devices): the coordinator's ``HOST:PORT``, the count and this process's id as given, or, where ``None``, as
    JAX finds them in the cluster's environment (SLURM, Open MPI, ...). On CPUs the collectives are gloo's.
    Nothing where this process has joined already."""
    if jax.distributed.is_initialized():
        return
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator, processes, process_id)


def first_process() -> bool:
    """Whether this process writes what a run writes (records, checkpoints, plots): the only one, or the first of
    a run spanning several (the others compute their share and write nothing)."""
    return jax.process_index() == 0


def batch_axes(make: Callable[[int], Any], batch: int):
    """For each leaf of ``make(batch)``, the axis whose length is the batch (``None``: a leaf without one), from
    the abstract shapes of ``make(batch)`` and ``make(batch + 1)`` (nothing is computed)."""
    this, other = (jax.eval_shape(lambda b=b: make(b)) for b in (batch, batch + 1))

    def axis(a, b):
        changed = [i for i, (m, n) in enumerate(zip(a.shape, b.shape, strict=True)) if m != n]
        if len(changed) > 1:
            raise ValueError(f"a leaf of shape {a.shape} has several batch axes {changed}")
        return changed[0] if changed else None

    return jax.tree.map(axis, this, other)


def spec(axis: int | None) -> PartitionSpec:
    """Split ``axis`` over the mesh (``None``: replicated)."""
    return PartitionSpec() if axis is None else PartitionSpec(*([None] * axis), AXIS)


def split(mesh: Mesh, axis: int | None) -> NamedSharding:
    """Every leaf split along ``axis`` over ``mesh`` (``None``: a whole copy on each device)."""
    return NamedSharding(mesh, spec(axis))


def shardings(mesh: Mesh, axes):
    """``NamedSharding``s of a tree from its ``batch_axes``."""
    return jax.tree.map(lambda a: split(mesh, a), axes, is_leaf=lambda a: a is None)


def tracing(mesh: Mesh | None):
    """The context to trace a step in: ``mesh`` made current (``jax.set_mesh``), so that code choosing between
    forms (``rtrl.online.contract_summed``) knows the batch is split; nothing for one device."""
    return contextlib.nullcontext() if mesh is None else jax.set_mesh(mesh)


def gathered(tree):
    """``tree``'s leaves as whole host (NumPy) arrays: a leaf split over the devices of several processes is
    gathered from them (``process_allgather``: collective, so every process must call this then), a replicated one
    read from this process's copy."""
    def leaf(a):
        if not isinstance(a, jax.Array) or a.is_fully_addressable:
            return np.asarray(a)
        if a.is_fully_replicated:
            return np.asarray(a.addressable_data(0))
        return np.asarray(multihost_utils.process_allgather(a, tiled=True))

    return jax.tree.map(leaf, tree)


# -- what a run needs and what the machine has -------------------------------------------------------------------
def floats_of(make: Callable) -> int:
    """Floats in the arrays ``make()`` returns, worked out on shapes alone."""
    return sum(math.prod(a.shape) for a in jax.tree.leaves(jax.eval_shape(make)))


def bytes_of(make: Callable) -> int:
    """Bytes of the arrays ``make()`` returns (each in its own dtype), worked out on shapes alone."""
    return sum(math.prod(a.shape) * a.dtype.itemsize for a in jax.tree.leaves(jax.eval_shape(make)))


def available_memory(devices: int = 1) -> tuple[int, str]:
    """Bytes free for a run on ``devices`` devices, and where the figure comes from: the accelerators' own
    memory, else the host's (``MemAvailable`` in ``/proc/meminfo``, or ``os.sysconf``)."""
    device = jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    if stats and "bytes_limit" in stats:
        free = stats["bytes_limit"] - stats.get("bytes_in_use", 0)
        return free * devices, f"free on {devices} {device.platform} device{'s' * (devices > 1)}"
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/meminfo") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return int(fields["MemAvailable"].split()[0]) * 1024, "available (MemAvailable in /proc/meminfo)"
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "available (free physical memory)"


def gib(n: int) -> str:
    """Bytes for a person: GiB, MiB or bytes."""
    return f"{n / 2**30:,.1f} GiB" if n >= 2**27 else f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n:,} bytes"


def check_memory(needed: int, devices: int = 1, smaller: str = "--hidden, --batch or --eval-size") -> None:
    """A ``ValueError`` saying how much is needed and how much there is, when ``needed`` bytes do not fit."""
    free, where = available_memory(devices)
    if needed > free:
        raise ValueError(f"the run needs at least {gib(needed)} of memory (its parameters with their optimiser state, "
                         f"and what every stream keeps) and this machine has {gib(free)} {where}; "
                         f"choose a smaller {smaller}")


# What a run may ask to do, whatever memory it fits in: a bound on the work counted before anything starts, so that
# a size typed by mistake (--head-hidden 100000000, --seeds 100000) is refused at once instead of running for days.
MAX_UPDATES = 10**14  # floats updated (parameters and traces, each step of each stream): 1,000 times rtrl's largest
# preset (6.8e10, popgym-repeat-first), about a day on a CPU
MAX_RECORDED = 10**7  # per-seed figures the host gathers over a run (seeds x records): each is Python work


def check_work(updates: int, recorded: int = 0, smaller: str = "--hidden, --batch or --steps") -> None:
    """A ``ValueError`` saying how much work the run asks for and the bound, when ``updates`` (floats updated over
    the run) exceeds ``MAX_UPDATES`` or ``recorded`` (figures gathered on the host) exceeds ``MAX_RECORDED``."""
    if updates > MAX_UPDATES:
        raise ValueError(f"the run asks for {updates:.2g} float updates (its parameters and traces, every step of "
                         f"every stream), more than the {MAX_UPDATES:.0e} a run may ({updates / MAX_UPDATES:,.0f} "
                         f"times as many: days or more of computing); choose a smaller {smaller}")
    if recorded > MAX_RECORDED:
        raise ValueError(f"the run asks the host to gather {recorded:,} per-seed figures (seeds x records), more than "
                         f"the {MAX_RECORDED:,} a run may; choose a smaller {smaller}, or a larger --record-every")
