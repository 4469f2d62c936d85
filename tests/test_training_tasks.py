"""Tasks: shapes, determinism, what is asked when, and each documented chance level."""

import atexit
import functools
import pathlib
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rtrl.training.tasks import (
    MNIST1D,
    SHD,
    TASKS,
    Adding,
    Copy,
    Evidence,
    EvidencePoisson,
    Manifolds,
    Recall,
    Sines,
    StoreRecall,
    StoreRecallPoisson,
    stream_chunk,
)
from rtrl.training.tasks.mnist1d import make_dataset
from test_training_tasks_shd import write_shd


def tiny_shd() -> SHD:
    """SHD from a file of 12 examples written here (one spike each), 4 steps of 5 ms, 70 channels."""
    folder = pathlib.Path(tempfile.mkdtemp())
    atexit.register(shutil.rmtree, folder, True)
    path = write_shd(folder / "shd.h5", [[0.002 * i] for i in range(12)], [[50 * i] for i in range(12)],
                     [i % 20 for i in range(12)])
    return SHD(path=path, step_ms=5, duration_ms=20)


SMALL = {
    "copy": Copy(max_length=4),
    "recall": Recall(delay=3, episode_length=10),
    "adding": Adding(sequence_length=10),
    "sines": Sines(patterns=2, waves=2, episode_length=12),
    "mnist1d": MNIST1D(train_size=60, test_size=30),
    "evidence": Evidence(cues=3, cue_steps=2, gap=1, delay=4, decision_steps=2),
    "store_recall": StoreRecall(episode_length=12),
    "manifolds": Manifolds(classes=3, channels=5, pattern_steps=10, answer_steps=2),
    "evidence_poisson": EvidencePoisson(cues=3, cue_steps=2, spacing=3, episode_length=14, recall_steps=2, channels=2,
                                        rate=0.5),
    "store_recall_poisson": StoreRecallPoisson(symbols=5, symbol_steps=2, channels=2, rate=0.5, delay=1.0),
    "shd": tiny_shd(),
}


N = 2000  # held-out episodes for the chance levels: one size, so one compilation per task


@functools.cache
def compiled(task):
    """Jitted episode, evaluation set and metrics of a task, compiled once (eager random code is slow)."""
    return (
        jax.jit(task.episode),
        jax.jit(task.eval_episodes, static_argnums=1),
        jax.jit(task.metrics),
    )


def episode(task, seed):
    return compiled(task)[0](jax.random.PRNGKey(seed))


def eval_set(task, n=N):
    return compiled(task)[1](jax.random.PRNGKey(0), n)


def metrics(task, outputs, batch):
    return {name: float(v) for name, v in compiled(task)[2](outputs, batch).items()}


chunk = jax.jit(stream_chunk, static_argnums=(0, 3))


def test_every_registered_task_is_covered():
    assert set(SMALL) == set(TASKS)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_shapes_and_determinism(name):
    task = SMALL[name]
    ep = episode(task, 1)
    T = task.length
    assert ep.xs.shape == (T, task.input_size)
    assert ep.weights.shape == (T,)
    assert ep.targets.shape[0] == T
    assert float(ep.weights.sum()) > 0
    again = episode(task, 1)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(ep), jax.tree.leaves(again), strict=True))
    batch = eval_set(task)
    n = batch.weights.shape[1]
    assert batch.xs.shape == (T, n, task.input_size)
    assert batch.weights.shape == (T, n)
    outputs = jnp.zeros((T, n, task.output_size))
    assert task.loss(outputs, batch.targets).shape == (T, n)
    assert np.isfinite(metrics(task, outputs, batch)["metric"])
    assert task.name in task.describe() or task.metric_name in task.describe()


@pytest.mark.parametrize("name", ["copy", "recall", "adding", "sines"])
def test_different_keys_give_different_episodes(name):
    batch = eval_set(SMALL[name])
    assert len({np.asarray(batch.xs[:, i]).tobytes() for i in range(8)}) > 1


def perfect_logits(targets):
    return 20.0 * (2.0 * targets - 1.0)


def test_copy_asks_for_the_pattern_after_the_go_signal():
    task = SMALL["copy"]
    for seed in range(5):
        ep = episode(task, seed)
        xs, targets, weights = np.asarray(ep.xs), np.asarray(ep.targets[:, 0]), np.asarray(ep.weights)
        l = int(weights.sum())
        assert 1 <= l <= 4 and xs.shape == (9, 3)
        go = np.flatnonzero(xs[:, 2])
        assert list(go) == [l]
        bits = xs[:l, 0]
        assert np.all(xs[:l, 0] + xs[:l, 1] == 1) and np.all(xs[l:, :2] == 0)
        assert list(np.flatnonzero(weights)) == list(range(l + 1, 2 * l + 1))
        assert np.array_equal(targets[l + 1 : 2 * l + 1], bits)


def test_copy_metrics_and_chance():
    task = SMALL["copy"]
    L = task.max_length
    batch = eval_set(task)
    perfect = metrics(task, perfect_logits(batch.targets), batch)
    assert perfect["metric"] == 1.0 and perfect["sequence_accuracy"] == 1.0
    guessed = metrics(task, jax.random.normal(jax.random.PRNGKey(3), batch.targets.shape), batch)
    assert abs(guessed["metric"] - task.chance) < 0.02
    assert abs(guessed["sequence_accuracy"] - (1 - 2.0**-L) / L) < 0.03


def test_recall_targets_are_the_delayed_inputs():
    task = SMALL["recall"]  # delay 3, episodes of 10
    ep = episode(task, 0)
    bits = (np.asarray(ep.xs[:, 0]) > 0).astype(float)
    assert np.array_equal(np.asarray(ep.targets[3:, 0]), bits[:-3])
    assert np.array_equal(np.asarray(ep.weights), (np.arange(10) >= 3).astype(float))
    batch = eval_set(task)
    assert metrics(task, perfect_logits(batch.targets), batch)["metric"] == 1.0
    assert abs(metrics(task, jnp.ones(batch.targets.shape), batch)["metric"] - task.chance) < 0.02


def test_adding_constant_one_scores_one_sixth():
    task = SMALL["adding"]  # sequences of 10
    batch = eval_set(task)
    marks = np.asarray(batch.xs[..., 1])
    assert np.all(marks[:5].sum(0) == 1) and np.all(marks[5:].sum(0) == 1)
    total = (np.asarray(batch.xs[..., 0]) * marks).sum(0)
    assert np.allclose(np.asarray(batch.targets[-1, :, 0]), total)
    assert np.all(np.asarray(batch.weights[:-1]) == 0) and np.all(np.asarray(batch.weights[-1]) == 1)
    assert metrics(task, batch.targets, batch)["metric"] == 0.0
    assert abs(metrics(task, jnp.ones(batch.targets.shape), batch)["metric"] - 1 / 6) < 0.015
    assert task.chance == pytest.approx(1 / 6)


def test_sines_chance_is_the_best_cue_free_answer():
    task = SMALL["sines"]
    batch = eval_set(task)
    assert np.all(np.asarray(batch.xs[1:]) == 0)  # only the cue is input
    assert metrics(task, batch.targets, batch)["metric"] == 0.0
    assert metrics(task, jnp.zeros(batch.targets.shape), batch)["metric"] == pytest.approx(1.0)
    mean_wave = jnp.mean(batch.targets, axis=1, keepdims=True)  # the best answer that ignores the cue
    blind = metrics(task, jnp.broadcast_to(mean_wave, batch.targets.shape), batch)["metric"]
    assert blind == pytest.approx(task.chance, abs=0.03)
    assert task.chance < 0.9


def test_mnist1d_is_balanced_standardised_and_learnable():
    xs, labels = make_dataset(1500, seed=42)
    assert xs.shape == (1500, 40) and np.all(np.bincount(labels) == 150)
    assert abs(xs.mean()) < 1e-9 and abs(xs.std() - 1) < 1e-9
    # a linear least-squares classifier on 1000 examples beats chance (0.1) clearly: the digits carry signal
    train = np.c_[xs[:1000], np.ones(1000)]
    w = np.linalg.lstsq(train, np.eye(10)[labels[:1000]], rcond=None)[0]
    accuracy = np.mean(np.argmax(np.c_[xs[1000:], np.ones(500)] @ w, axis=1) == labels[1000:])
    assert accuracy > 0.2


def test_mnist1d_is_the_published_dataset_and_leaves_numpys_global_random_state_alone():
    from mnist1d.data import get_dataset_args
    from mnist1d.data import make_dataset as published

    np.random.seed(123)
    before = np.random.get_state()
    signals, labels = MNIST1D().data  # the defaults: 4000 train, 1000 test, seed 42
    after = np.random.get_state()
    assert all(np.array_equal(a, b) for a, b in zip(before[1:], after[1:], strict=True)) and before[0] == after[0]
    reference = published(get_dataset_args())
    assert np.array_equal(signals, np.concatenate([reference["x"], reference["x_test"]]))
    assert np.array_equal(labels, np.concatenate([reference["y"], reference["y_test"]]))


def test_mnist1d_without_its_package_says_what_to_install(monkeypatch):
    import sys

    from rtrl.training.tasks.base import MissingPackage

    monkeypatch.setitem(sys.modules, "mnist1d.data", None)  # as if it were not installed
    with pytest.raises(MissingPackage, match=r"pip install 'rtrl\[mnist1d\]'"):
        make_dataset(10, 0)


def test_mnist1d_episodes_ask_at_the_end_and_evaluate_on_the_test_split():
    task = SMALL["mnist1d"]
    signals, labels = task.data
    batch = eval_set(task)
    assert batch.xs.shape == (40, 30, 1)  # capped at the test split
    assert np.array_equal(np.asarray(batch.xs[:, :, 0]).T, signals[60:])
    assert np.array_equal(np.asarray(batch.targets[-1]), labels[60:])
    assert np.all(np.asarray(batch.weights[:-1]) == 0) and np.all(np.asarray(batch.weights[-1]) == 1)
    logits = 10.0 * jax.nn.one_hot(batch.targets, 10)
    assert metrics(task, logits, batch)["metric"] == 1.0
    assert task.chance == 0.1


def test_streams_are_a_pure_function_of_key_and_position():
    task = Copy(max_length=3)  # episodes of 7 steps
    key, offsets = jax.random.PRNGKey(0), jnp.array([0, 3])
    whole, done = chunk(task, key, 2, 16, offsets)
    first, done_a = chunk(task, key, 2, 8, offsets)
    second, done_b = chunk(task, key, 10, 8, offsets)
    for w, a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(first), jax.tree.leaves(second), strict=True):
        assert np.array_equal(np.asarray(w), np.concatenate([np.asarray(a), np.asarray(b)]))
    assert np.array_equal(np.asarray(done), np.concatenate([np.asarray(done_a), np.asarray(done_b)]))
    # stream b is at position step + offsets[b]; episodes start where that is a multiple of 7
    positions = 2 + np.arange(16)[:, None] + np.array([0, 3])
    assert np.array_equal(np.asarray(done), positions % 7 == 0)
    # the episode that starts at step 5 of stream 0 is episode 1, drawn from fold_in(fold_in(key, 0), 1)
    first_episode = compiled(task)[0](jax.random.fold_in(jax.random.fold_in(key, 0), 1))
    assert np.array_equal(np.asarray(whole.xs[5:12, 0]), np.asarray(first_episode.xs))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Copy(max_length=0), "max_length must be a positive integer"),
        (lambda: Recall(delay=-1), "delay must be a positive integer"),
        (lambda: Recall(delay=5, episode_length=5), "episode_length must exceed delay=5"),
        (lambda: Adding(sequence_length=1), "sequence_length must be at least 2"),
        (lambda: Sines(waves=True), "waves must be a positive integer"),
        (lambda: MNIST1D(data_seed=-1), "data_seed must be a non-negative integer"),
        (lambda: MNIST1D(train_size=61, test_size=30), "must be a multiple of 10"),
    ],
)
def test_bad_task_options_are_named(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_a_size_that_makes_an_episode_too_long_is_refused_before_anything_is_built(tmp_path, capsys):
    """Every task option that scales an episode (delays, lengths, cues) meets one bound, ``MAX_LENGTH`` steps, checked
    as the task is made (so before the run folder): exactly at the bound a task is made, one step past it is refused
    naming the option given; from the command line one line, exit 2, nothing written. [the bound removed:
    ``delay=100000000`` passed every check and grew past 10 GB]"""
    from rtrl.cli import main
    from rtrl.training.tasks import TASKS
    from rtrl.training.tasks.base import MAX_LENGTH

    store_recall = TASKS["store_recall"]
    assert store_recall(episode_length=MAX_LENGTH).length == MAX_LENGTH
    with pytest.raises(ValueError, match=r"episode_length=1048577.*at most 2\*\*20"):
        store_recall(episode_length=MAX_LENGTH + 1)
    evidence = TASKS["evidence"]
    fixed = evidence().length - evidence().delay
    with pytest.raises(ValueError, match="delay="):
        evidence(delay=MAX_LENGTH - fixed + 1)
    assert evidence(delay=MAX_LENGTH - fixed).length == MAX_LENGTH
    for args in (["--task", "evidence", "--task-arg", "delay=100000000"],
                 ["--task", "store_recall", "--task-arg", "episode_length=50000000"],
                 ["--task", "evidence", "--task-arg", "cues=99999999"]):
        assert main(["train", *args, "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and args[-1].partition("=")[0] in err[0] and "2**20" in err[0], err
        assert not (tmp_path / "o").exists()


def test_a_manifolds_task_needs_two_classes():
    """One class leaves nothing to tell apart (accuracy 1 at chance 1). [the check removed: accepted]"""
    from rtrl.training.tasks import TASKS

    with pytest.raises(ValueError, match="classes must be at least 2"):
        TASKS["manifolds"](classes=1)
    assert TASKS["manifolds"](classes=2).chance == 0.5
