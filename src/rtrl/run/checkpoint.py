"""Checkpoints: any pytree of arrays saved atomically as one ``.npz`` file, restored into a template's structure.

Each leaf is stored under its tree path (``jax.tree_util.keystr``: ``.params['cell']['W']``), beside a JSON
``meta`` entry. Loading needs a template of the same structure (for a training run: ``Trainer.init()``), which
fixes the tree; every leaf is looked up by its path and checked (present, shape, dtype), and every error names
the path, so nothing but plain arrays is ever unpickled or trusted. A file that is not a readable checkpoint
(truncated, garbage) is a ``CheckpointError`` naming the file, never a raw ``zipfile`` or ``numpy`` error.

The file holds whole host arrays whatever devices the state was on: a leaf split over several devices (or
processes) is gathered when saved, and a loaded leaf is placed as the template's leaf is (split or replicated
over its devices), so a run saved on N devices resumes on any other number. Across processes every process
calls ``save`` (the gather is collective), the first one writes the file, and all return once it is written.
"""

from __future__ import annotations

import json
import os
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

from rtrl.devices import gathered
from rtrl.files import atomic_write, parse_json

META = "meta"


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, or does not fit the model it is loaded into."""


def is_key(leaf) -> bool:
    return jax.dtypes.issubdtype(jnp.asarray(leaf).dtype, jax.dtypes.prng_key)


def named_leaves(tree) -> list[tuple[str, object]]:
    """``(path, leaf)`` pairs in ``jax.tree.leaves`` order; a bare leaf is named ``<root>``."""
    return [(jax.tree_util.keystr(path) or "<root>", leaf) for path, leaf in jax.tree_util.tree_leaves_with_path(tree)]


def host(leaf) -> np.ndarray:
    """A leaf as one host array, gathered from the other processes where it is split over them."""
    return gathered(jax.random.key_data(leaf) if is_key(leaf) else leaf)


def placed(array: np.ndarray, like):
    """``array`` on the devices of the template leaf ``like``, laid out as it is; on one device as before."""
    sharding = getattr(like, "sharding", None)
    if sharding is None or len(sharding.device_set) == 1:
        return jnp.asarray(array)
    return jax.make_array_from_callback(array.shape, sharding, lambda index: array[index])


def save(path: str | os.PathLike, tree, meta: dict | None = None) -> None:
    """Write ``tree``'s leaves (by path) and ``meta`` (JSON-able) to ``path`` atomically (by the first process
    where there are several: all of them must call it)."""
    arrays = {name: host(a) for name, a in named_leaves(tree)}
    arrays[META] = np.frombuffer(json.dumps(meta or {}, allow_nan=False).encode(), np.uint8)
    if jax.process_index() == 0:
        atomic_write(path, lambda f: np.savez(f, **arrays))
    if jax.process_count() > 1:  # no process reads it before it is written
        multihost_utils.sync_global_devices(f"checkpoint {path}")


def read(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """Every array of the file by name, and its meta; ``CheckpointError`` if it is not a readable checkpoint."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        meta = parse_json(arrays.pop(META).tobytes().decode())  # strict, as every JSON text from outside
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as e:
        raise CheckpointError(f"checkpoint {path} is damaged or not a checkpoint ({type(e).__name__}: {e})") from None
    if not isinstance(meta, dict):
        raise CheckpointError(f"checkpoint {path} is damaged: its meta is not a JSON object")
    return arrays, meta


def read_meta(path: str | os.PathLike) -> dict:
    return read(path)[1]


def listed(names: list[str], at_most: int = 5) -> str:
    """The first ``at_most`` names and how many more (a state of another version can differ in hundreds)."""
    more = f" and {len(names) - at_most} more" if len(names) > at_most else ""
    return ", ".join(names[:at_most]) + more


def load(path: str | os.PathLike, template):
    """``(tree, meta)``: the leaves saved at ``path`` in the structure of ``template``, each placed on the devices
    of the template's leaf."""
    arrays, meta = read(path)
    leaves = named_leaves(template)
    names = [name for name, _ in leaves]
    missing, extra = [n for n in names if n not in arrays], sorted(set(arrays) - set(names))
    if missing or extra:
        raise CheckpointError(
            f"checkpoint {path} does not fit the model (it was written for another model, or by a version of rtrl "
            "whose state differs): "
            + "; ".join(f"{what} {listed(names)}" for what, names in (("missing", missing), ("unexpected", extra))
                        if names)
        )
    restored = []
    for name, like in leaves:
        array = arrays[name]
        if is_key(like):
            like_data = jax.random.key_data(like)
            if array.shape != like_data.shape or array.dtype != like_data.dtype:
                raise CheckpointError(f"checkpoint {path}: {name} is not a key of {jax.random.key_impl(like)}")
            restored.append(jax.random.wrap_key_data(placed(array, like_data), impl=jax.random.key_impl(like)))
            continue
        like = like if isinstance(like, jax.Array) else np.asarray(like)  # a jax.Array's shape needs no gather
        if array.shape != like.shape or array.dtype != like.dtype:
            raise CheckpointError(
                f"checkpoint {path}: {name} is {array.dtype}{list(array.shape)}, "
                f"the model expects {like.dtype}{list(like.shape)}"
            )
        restored.append(placed(array, like))
    return jax.tree.unflatten(jax.tree.structure(template), restored), meta
