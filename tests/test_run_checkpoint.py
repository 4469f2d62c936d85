"""Checkpoints: a round trip of the whole training state, atomic writes, and resumed runs that replay the
uninterrupted run exactly."""

import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.run import checkpoint
from rtrl.run.folder import CHECKPOINT, METRICS, Run, read_metrics

CONFIG = {
    "task": "copy",
    "task_args": {"max_length": 2},
    "cell": "elman",
    "hidden": 3,
    "method": "closed_form",
    "batch": 2,
    "lr": 0.05,
    "eval_every": 4,
    "eval_size": 8,
}


def tree():
    return {
        "params": {"W": jnp.arange(6.0).reshape(2, 3), "b": jnp.zeros(3)},
        "count": jnp.array(7, jnp.int32),
        "key": jax.random.PRNGKey(3),
        "typed_key": jax.random.key(4),
        "nothing": None,
    }


def same(a, b) -> bool:
    def data(x):
        return np.asarray(jax.random.key_data(x) if checkpoint.is_key(x) else x)

    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(
        data(x).dtype == data(y).dtype and np.array_equal(data(x), data(y)) for x, y in zip(la, lb, strict=True)
    )


def test_round_trip_keeps_every_leaf_and_the_meta(tmp_path):
    path = tmp_path / "c.npz"
    checkpoint.save(path, tree(), {"step": 12, "wall_s": 1.5})
    template = jax.tree.map(jnp.zeros_like, tree())
    restored, meta = checkpoint.load(path, template)
    assert same(restored, tree())
    assert checkpoint.is_key(restored["typed_key"])
    assert meta == {"step": 12, "wall_s": 1.5} == checkpoint.read_meta(path)


def test_load_rejects_a_checkpoint_of_another_model(tmp_path):
    path = tmp_path / "c.npz"
    checkpoint.save(path, tree())
    wrong_shape = {**tree(), "params": {"W": jnp.zeros((3, 3)), "b": jnp.zeros(3)}}
    expected = "['params']['W'] is float64[2, 3], the model expects float64[3, 3]"
    with pytest.raises(ValueError, match=re.escape(expected)):
        checkpoint.load(path, wrong_shape)
    expected = "missing ['only']; unexpected ['count'], ['key'], ['params']['W']"
    with pytest.raises(ValueError, match=re.escape(expected)):
        checkpoint.load(path, {"only": jnp.zeros(2)})
    many = {f"leaf{i}": jnp.zeros(1) for i in range(8)}  # an older version's state: the names, then a count
    expected = "(it was written for another model, or by a version of rtrl whose state differs): missing ['leaf0'], " \
               "['leaf1'], ['leaf2'], ['leaf3'], ['leaf4'] and 3 more; unexpected ['count']"
    with pytest.raises(ValueError, match=re.escape(expected)):
        checkpoint.load(path, many)
    wrong_dtype = {**tree(), "count": jnp.array(7, jnp.int64)}
    with pytest.raises(ValueError, match=re.escape("['count'] is int32[], the model expects int64[]")):
        checkpoint.load(path, wrong_dtype)


def test_the_file_names_every_leaf_by_its_tree_path(tmp_path):
    path = tmp_path / "c.npz"
    checkpoint.save(path, tree())
    with np.load(path) as data:
        names = set(data.files)
    assert names == {"['params']['W']", "['params']['b']", "['count']", "['key']", "['typed_key']", "meta"}


def test_a_crash_while_writing_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "c.npz"
    checkpoint.save(path, tree(), {"step": 1})
    before = path.read_bytes()

    def dies_halfway(file, **arrays):
        file.write(b"PK\x03\x04 half an archive")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", dies_halfway)
    changed = {**tree(), "count": jnp.array(8, jnp.int32)}
    with pytest.raises(OSError, match="disk full"):
        checkpoint.save(path, changed, {"step": 2})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["c.npz"]  # no temporary file left behind
    restored, meta = checkpoint.load(path, tree())
    assert same(restored, tree()) and meta == {"step": 1}


def without_wall_time(records):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in records]


@pytest.mark.parametrize("method, update_every", [("closed_form", 1), ("bptt", 2)])
def test_stopped_and_resumed_run_reproduces_the_uninterrupted_run(tmp_path, method, update_every):
    config = {**CONFIG, "method": method, "update_every": update_every}
    whole = Run.create(tmp_path / "whole", {**config, "steps": 16})
    whole.train()

    # stop with an interruption after step 8's checkpoint, once steps 9..12 are done but not yet evaluated; the
    # three runs have one configuration, so they share one trainer (and its compilations)
    parts = Run.create(tmp_path / "parts", {**config, "steps": 16}, trainer=whole.trainer)

    def interrupt(state, n):
        if int(state.step) == 12:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        parts.train(on_chunk=interrupt)
    assert parts.last_checkpoint_step() == 8
    resumed = Run.open(tmp_path / "parts", trainer=whole.trainer)
    final = resumed.train()

    assert without_wall_time(read_metrics(resumed.path)) == without_wall_time(read_metrics(whole.path))
    assert [r["step"] for r in read_metrics(whole.path)] == [0, 4, 8, 12, 16]
    restored, meta = checkpoint.load(whole.path / CHECKPOINT, final)
    assert meta["step"] == 16 and same(restored, final)


def test_metrics_written_after_the_last_checkpoint_are_replaced_on_resume(tmp_path):
    run = Run.create(tmp_path / "run", {**CONFIG, "steps": 8})
    run.train()
    good = read_metrics(run.path)
    # a crash between writing a metrics line and its checkpoint leaves a line the checkpoint does not cover
    with open(run.path / METRICS, "a") as f:
        f.write(json.dumps({"step": 12, "loss": 0.0, "metric": 1.0, "wall_s": 0.0}) + "\n")
    Run.open(run.path, trainer=run.trainer).load()
    assert read_metrics(run.path) == good


def test_a_checkpoint_missing_a_leaf_is_refused_even_with_nothing_unexpected(tmp_path):
    """The template has one leaf more than the file (a plain array, or a PRNG key): refused, naming it, with no
    'unexpected' part (nothing in the file is extra). [guards: ``if missing or extra`` loosened to ``if extra``:
    a raw KeyError, or a leaf left at the template's value]"""
    path = tmp_path / "c.npz"
    checkpoint.save(path, tree())
    for extra_leaf in (jnp.zeros(2), jax.random.PRNGKey(0), jax.random.key(1)):
        template = {**tree(), "later": extra_leaf}
        with pytest.raises(checkpoint.CheckpointError, match=re.escape("differs): missing ['later']")) as info:
            checkpoint.load(path, template)
        assert "unexpected" not in str(info.value)


def test_a_key_of_another_shape_is_refused_whatever_its_rank(tmp_path):
    """The file's typed key (``jax.random.key``) or raw key (``PRNGKey``) holds keys of another shape than the
    template's one key, (2,) uint32: a batch of keys (3, 2) or (1, 2), a flat (4,) or a scalar, or the right shape
    in another dtype: each refused, naming the leaf; the same file with the right keys loads. [guards: the typed
    key's check loosened to the last axis only, or to any rank]"""
    path = tmp_path / "c.npz"
    template = jax.tree.map(jnp.zeros_like, tree())
    for wrong in (jnp.zeros((3, 2), jnp.uint32), jnp.zeros((4,), jnp.uint32), jnp.zeros((), jnp.uint32),
                  jnp.zeros((1, 2), jnp.uint32), jnp.zeros((2,), jnp.int32)):
        checkpoint.save(path, {**tree(), "key": wrong})
        with pytest.raises(checkpoint.CheckpointError, match=re.escape(f"['key'] is {wrong.dtype}{list(wrong.shape)}")):
            checkpoint.load(path, template)
        checkpoint.save(path, {**tree(), "typed_key": wrong})
        with pytest.raises(checkpoint.CheckpointError, match=re.escape("['typed_key'] is not a key of")):
            checkpoint.load(path, template)
    checkpoint.save(path, tree())
    restored, _ = checkpoint.load(path, template)
    assert same(restored, tree())
