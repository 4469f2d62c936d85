"""Checkpoints: any pytree of arrays saved atomically as one ``.npz`` file, restored into a template's structure.

The file holds the leaves in ``jax.tree.leaves`` order (``leaf_00000``, ...) and a JSON ``meta`` dict. Loading
needs a template of the same structure (for a training run: ``Trainer.init()``), which fixes the tree and is
checked leaf by leaf (count, shape, dtype), so nothing but plain arrays is ever unpickled or trusted."""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from rtrl.files import atomic_write


class CheckpointError(ValueError):
    """A checkpoint that does not fit the model it is loaded into."""


def is_key(leaf) -> bool:
    return jax.dtypes.issubdtype(jnp.asarray(leaf).dtype, jax.dtypes.prng_key)


def save(path: str | os.PathLike, tree, meta: dict | None = None) -> None:
    """Write ``tree``'s leaves and ``meta`` (JSON-able) to ``path`` atomically."""
    leaves = [jax.random.key_data(a) if is_key(a) else a for a in jax.tree.leaves(tree)]
    arrays = {f"leaf_{i:05d}": np.asarray(a) for i, a in enumerate(leaves)}
    arrays["meta"] = np.frombuffer(json.dumps(meta or {}).encode(), np.uint8)
    atomic_write(path, lambda f: np.savez(f, **arrays))


def read_meta(path: str | os.PathLike) -> dict:
    with np.load(path, allow_pickle=False) as data:
        return json.loads(data["meta"].tobytes().decode())


def load(path: str | os.PathLike, template):
    """``(tree, meta)``: the leaves saved at ``path`` in the structure of ``template``."""
    leaves, treedef = jax.tree.flatten(template)
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(data["meta"].tobytes().decode())
        saved = [data[f"leaf_{i:05d}"] for i in range(len(data.files) - 1)]
    if len(saved) != len(leaves):
        raise CheckpointError(f"checkpoint {path} holds {len(saved)} arrays, the model expects {len(leaves)}")
    restored = []
    for i, (array, like) in enumerate(zip(saved, leaves, strict=True)):
        if is_key(like):
            restored.append(jax.random.wrap_key_data(array, impl=jax.random.key_impl(like)))
            continue
        like = np.asarray(like)
        if array.shape != like.shape or array.dtype != like.dtype:
            raise CheckpointError(
                f"checkpoint {path}: array {i} is {array.dtype}{list(array.shape)}, "
                f"the model expects {like.dtype}{list(like.shape)}"
            )
        restored.append(jnp.asarray(array))
    return jax.tree.unflatten(treedef, restored), meta
