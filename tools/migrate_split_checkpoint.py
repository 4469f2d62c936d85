"""Migrate a run folder written before fe9ec5d whose update rule kept its critic's and actor's sets apart
(``--critic-lr``) to the state of fe9ec5d onward, so that ``rtrl resume`` continues it:

    python tools/migrate_split_checkpoint.py OLD_DIR NEW_DIR

Two things changed at fe9ec5d: encoder blocks of two networks (``--critic-network``) became a stack each
(``encoder.part0``, ``encoder.part1``) instead of blocks with a leading parts axis, and each side of the split rule
keeps its traces and statistics on the leaves its gradient reaches (``agent.reaches``). The new state's leaves are
read from the old ones (a part taken from the old parts axis); every old leaf, or part of one, that the new state
drops must be zero, which is the claim the restriction rests on (a gradient that never reaches a leaf leaves its
trace and second moment at zero), and the migration refuses a checkpoint where one is not. OLD_DIR is copied to
NEW_DIR and left as it is."""

from __future__ import annotations

import json
import re
import shutil
import sys

import jax
import numpy as np

from rtrl.rl.config import RLConfig
from rtrl.rl.loop import OnlineActorCritic
from rtrl.run.checkpoint import named_leaves

PART = re.compile(r"\['encoder'\]\['part(\d+)'\]\[(\d+)\]\['(\w+)'\]")


def source(name: str) -> tuple[str, int | None, int]:
    """The old leaf a new leaf ``name`` is read from, the part it takes (None: the whole leaf) and the rank of the
    block's own array (``W`` 2, ``b`` 1), so the parts axis is the one before it."""
    found = PART.search(name)
    if not found:
        return name, None, 0
    part, block, leaf = found.groups()
    return name.replace(found.group(0), f"['encoder'][{block}]['{leaf}']"), int(part), 2 if leaf == "W" else 1


def migrate(old: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    """The new state's arrays by name from the old state's; ``ValueError`` naming an old leaf (or part) dropped
    that is not zero."""
    new, taken = {}, {}
    for name in names:
        old_name, part, rank = source(name)
        array = old[old_name]
        if part is None:
            new[name] = array
        else:
            new[name] = np.take(array, part, axis=array.ndim - rank - 1)
            taken.setdefault(old_name, (set(), rank))[0].add(part)
    for old_name, array in old.items():
        if old_name in taken:
            parts, rank = taken[old_name]
            axis = array.ndim - rank - 1
            dropped = [p for p in range(array.shape[axis]) if p not in parts and np.any(np.take(array, p, axis=axis))]
        else:
            dropped = [None] if old_name not in new and np.any(array) else []
        if dropped:
            raise ValueError(f"{old_name} is dropped but not zero (part {dropped[0]}): not a state this migrates")
    return new


def main(old_dir: str, new_dir: str) -> None:
    shutil.copytree(old_dir, new_dir)
    config = RLConfig.from_dict(json.load(open(f"{new_dir}/config.json")))
    template = OnlineActorCritic(config).init(config.seed)
    with np.load(f"{old_dir}/checkpoint.npz") as data:
        old = {name: data[name] for name in data.files}
    meta = old.pop("meta")
    new = migrate(old, [name for name, _ in named_leaves(template)])
    np.savez(f"{new_dir}/checkpoint.npz", meta=meta, **new)
    print(f"{new_dir}: {len(new)} leaves, {len(set(old) - {source(n)[0] for n in new})} dropped (all zero)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    jax.config.update("jax_enable_x64", True)
    main(*sys.argv[1:])
