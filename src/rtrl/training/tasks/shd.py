"""The Spiking Heidelberg Digits (SHD; Cramer et al. 2020) from a local file in the HDF5 layout that Tonic reads
(``tonic.datasets.SHD``, the dataset's own files ``shd_train.h5`` / ``shd_test.h5``): ``spikes/times`` (each
example's spike times in seconds), ``spikes/units`` (their channels, 0 .. 699) and ``labels`` (0 .. 19). Nothing is
downloaded: the user names the files (``--task-arg path=shd_train.h5 --task-arg test_path=shd_test.h5``), and
reading them needs ``h5py`` (the ``shd`` extra: ``rtrl.extras.install``).

Input: the spike counts of ``700 / pool`` channels (each the sum of ``pool`` neighbouring units) in bins of
``step_ms`` milliseconds, ``duration_ms / step_ms`` steps (spikes after ``duration_ms`` are dropped; SHD's examples
last up to about 1.4 s). Target: the digit's class, scored at every step of the second half of the episode (softmax
cross-entropy over 20 logits). Metric: ``accuracy`` over those steps on the held-out examples: ``test_path``'s, or,
without one, the last tenth of ``path``'s (training then draws from the first nine tenths); chance 0.05 (SHD's
classes are about balanced; the metric of the most frequent class of the held-out set is what it is). The binned
data is held in memory as bytes, ``examples x steps x channels``: 57 MB for SHD's training file at the defaults.
"""

from __future__ import annotations

import functools
import hashlib
import os

import jax
import jax.numpy as jnp
import numpy as np

from rtrl.checks import default_dtype
from rtrl.extras import install
from rtrl.training.tasks.base import Classification, Episodes, MissingPackage, below

UNITS, CLASSES = 700, 20


def read_hdf5(path: str, argument: str) -> tuple[list, list, np.ndarray]:
    """Spike times, units and labels of a file in Tonic's SHD layout; ``ValueError`` naming ``argument`` if the file
    is missing, not HDF5, or not in that layout."""
    try:
        import h5py
    except ImportError:
        raise MissingPackage(f"the shd task reads HDF5 files with `h5py`: {install('shd')}") from None
    if not isinstance(path, str) or not path:
        raise ValueError(f"{argument} must name a local SHD file in Tonic's HDF5 layout (e.g. "
                         f"{argument}=shd_train.h5), got {path!r}")
    if not os.path.isfile(path):
        raise ValueError(f"{argument}: no file {path!r} (the shd task reads a local file and downloads nothing)")
    try:
        with h5py.File(path, "r") as f:
            for name in ("spikes/times", "spikes/units", "labels"):
                if name not in f:
                    raise ValueError(f"{argument}: {path!r} has no dataset {name!r}; expected Tonic's SHD layout "
                                     "(spikes/times, spikes/units, labels)")
            times, units = list(f["spikes/times"][:]), list(f["spikes/units"][:])
            labels = np.asarray(f["labels"][:])
    except OSError as e:
        raise ValueError(f"{argument}: {path!r} is not an HDF5 file ({e})") from None
    check_layout(path, argument, times, units, labels)
    return times, units, labels


def sha256(path: str) -> str:
    """The SHA-256 of the file at ``path``, read a mebibyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(2**20):
            digest.update(chunk)
    return digest.hexdigest()


def check_layout(path, argument, times, units, labels) -> None:
    if not (len(times) == len(units) == len(labels)) or len(labels) == 0:
        raise ValueError(f"{argument}: {path!r} must hold as many spike-time lists, unit lists and labels (at least "
                         f"one), got {len(times)}, {len(units)} and {len(labels)}")
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer) or labels.min() < 0 or labels.max() >= CLASSES:
        raise ValueError(f"{argument}: {path!r}: labels must be integers in 0..{CLASSES - 1}")
    for i, (t, u) in enumerate(zip(times, units, strict=True)):
        t, u = np.asarray(t), np.asarray(u)
        if t.shape != u.shape or t.ndim != 1:
            raise ValueError(f"{argument}: {path!r}: example {i} has {t.size} spike times and {u.size} units")
        if not np.all(np.isfinite(t)) or (t.size and t.min() < 0):
            raise ValueError(f"{argument}: {path!r}: example {i} has a negative or non-finite spike time")
        if u.size and (not np.issubdtype(u.dtype, np.integer) or u.min() < 0 or u.max() >= UNITS):
            raise ValueError(f"{argument}: {path!r}: example {i} has units outside 0..{UNITS - 1}")


def binned(times, units, steps: int, step_ms: float, pool: int) -> np.ndarray:
    """``(examples, steps, 700 / pool)`` spike counts (uint8, saturating at 255)."""
    out = np.zeros((len(times), steps, UNITS // pool), np.int32)
    for i, (t, u) in enumerate(zip(times, units, strict=True)):
        step = np.floor(np.asarray(t, float) * 1000.0 / step_ms)
        keep = step < steps  # spikes past the window dropped before the cast (1e30 s would overflow int64)
        np.add.at(out[i], (step[keep].astype(np.int64), np.asarray(u, np.int64)[keep] // pool), 1)
    return np.minimum(out, 255).astype(np.uint8)


class SHD(Classification):
    path: str = ""
    test_path: str = ""
    step_ms: int = 10
    duration_ms: int = 1000
    pool: int = 10

    name = "shd"
    summary = ("Classify a spoken digit (Spiking Heidelberg Digits, 20 classes) from a local HDF5 file in Tonic's "
               "layout, read as binned spike counts.")
    output_size = CLASSES

    def __post_init__(self) -> None:
        super().__post_init__()
        if UNITS % self.pool:
            raise ValueError(f"pool must divide {UNITS} (the units pooled into one channel), got {self.pool}")
        if self.duration_ms < 2 * self.step_ms:
            raise ValueError(f"duration_ms must be at least two steps of step_ms={self.step_ms}, got "
                             f"{self.duration_ms}")

    def load(self) -> None:
        """Read and bin the files now: a missing or malformed file is a ``ValueError`` naming ``path`` or
        ``test_path`` (``rtrl train`` calls this before it writes anything)."""
        self.data  # noqa: B018

    def fingerprints(self) -> dict[str, dict[str, str]]:
        """``path``'s file (and ``test_path``'s, if given) with its SHA-256: a resume compares them with those its
        checkpoint recorded, so that the same name for another file is refused."""
        return {option: {"file": name, "sha256": sha256(name)}
                for option, name in (("path", self.path), ("test_path", self.test_path)) if name}

    @property
    def input_size(self) -> int:
        return UNITS // self.pool

    @property
    def length(self) -> int:
        return self.duration_ms // self.step_ms

    @property
    def chance(self) -> float:
        return 1.0 / CLASSES

    @functools.cached_property
    def data(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Training inputs and labels, held-out inputs and labels (binned once per task object)."""
        times, units, labels = read_hdf5(self.path, "path")
        xs = binned(times, units, self.length, self.step_ms, self.pool)
        if self.test_path:
            t, u, test_labels = read_hdf5(self.test_path, "test_path")
            return xs, labels, binned(t, u, self.length, self.step_ms, self.pool), test_labels
        cut = len(labels) - len(labels) // 10
        if cut in (0, len(labels)):
            raise ValueError(f"path: {self.path!r} has {len(labels)} examples, too few to hold out a tenth; give "
                             "test_path")
        return xs[:cut], labels[:cut], xs[cut:], labels[cut:]

    def as_episodes(self, xs, labels) -> Episodes:
        """Time-major episodes of binned inputs ``(..., steps, channels)``, scored over the second half."""
        dtype = default_dtype()
        xs = jnp.moveaxis(jnp.asarray(xs).astype(dtype), -2, 0)
        scored = (jnp.arange(self.length) >= self.length // 2).astype(dtype)
        scored = jnp.broadcast_to(scored.reshape((-1,) + (1,) * (xs.ndim - 2)), xs.shape[:-1])
        return Episodes(xs, jnp.broadcast_to(jnp.asarray(labels), xs.shape[:-1]), scored)

    def episode(self, key: jax.Array) -> Episodes:
        xs, labels, _, _ = self.data
        i = below(jax.random.uniform(key, ()), len(labels))
        return self.as_episodes(jnp.asarray(xs)[i], jnp.asarray(labels)[i])

    def eval_episodes(self, key: jax.Array, n: int) -> Episodes:
        """The first ``n`` held-out examples (``key`` is unused: the split is fixed)."""
        _, _, xs, labels = self.data
        return self.as_episodes(xs[:n], labels[:n])
