"""The SHD task from a local HDF5 file in Tonic's layout: a tiny file written here (h5py), its binned inputs worked
out by hand, the split, and every missing or malformed file refused with the argument named.

Mutations tried by hand (each fails a test here): seconds read as milliseconds (the hand case); units pooled by
``%`` instead of ``//`` (the hand case); the held-out tenth taken from the start (the split test).
"""

import jax
import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

from rtrl.training.assemble import assemble  # noqa: E402
from rtrl.training.config import RunConfig  # noqa: E402
from rtrl.training.tasks import SHD, TASKS  # noqa: E402


def write_shd(path, times, units, labels, drop=None):
    """A file in Tonic's SHD layout: variable-length ``spikes/times`` (seconds) and ``spikes/units``, ``labels``."""
    with h5py.File(path, "w") as f:
        if drop != "spikes/times":
            t = f.create_dataset("spikes/times", (len(times),), dtype=h5py.vlen_dtype(np.float32))
            for i, a in enumerate(times):
                t[i] = np.asarray(a, np.float32)
        if drop != "spikes/units":
            u = f.create_dataset("spikes/units", (len(units),), dtype=h5py.vlen_dtype(np.uint16))
            for i, a in enumerate(units):
                u[i] = np.asarray(a, np.uint16)
        if drop != "labels":
            f.create_dataset("labels", data=np.asarray(labels, np.uint16))
    return str(path)


TIMES = [[0.001, 0.004, 0.0045, 0.019], [0.0, 0.0301], [0.012]]
UNITS = [[0, 350, 359, 699], [5, 10], [3]]
LABELS = [7, 19, 0]


def test_binned_counts_by_hand(tmp_path):
    """Bins of 5 ms over 20 ms (4 steps), 350 units a channel (2 inputs). Example 0: 1 ms unit 0 -> step 0 channel
    0; 4 and 4.5 ms units 350, 359 -> step 0 channel 1 (twice); 19 ms unit 699 -> step 3 channel 1. Example 1: 0 ms
    unit 5 -> step 0 channel 0; 30.1 ms is past the end, dropped. Scored: the second half (steps 2, 3)."""
    path = write_shd(tmp_path / "train.h5", TIMES, UNITS, LABELS)
    test = write_shd(tmp_path / "test.h5", TIMES[2:], UNITS[2:], LABELS[2:])
    task = SHD(path=path, test_path=test, step_ms=5, duration_ms=20, pool=350)
    task.load()
    xs, labels, held_xs, held_labels = task.data
    np.testing.assert_array_equal(xs[0], [[1, 2], [0, 0], [0, 0], [0, 1]])
    np.testing.assert_array_equal(xs[1], [[1, 0], [0, 0], [0, 0], [0, 0]])
    np.testing.assert_array_equal(held_xs[0], [[0, 0], [0, 0], [1, 0], [0, 0]])  # 12 ms: step 2
    np.testing.assert_array_equal(labels, LABELS)
    assert (task.input_size, task.length, task.output_size) == (2, 4, 20)
    ep = task.eval_episodes(jax.random.PRNGKey(0), 5)
    assert ep.xs.shape == (4, 1, 2) and int(ep.targets[0, 0]) == 0
    np.testing.assert_array_equal(ep.weights[:, 0], [0, 0, 1, 1])
    drawn = jax.vmap(task.episode)(jax.random.split(jax.random.PRNGKey(1), 8))
    for x, y in zip(np.asarray(drawn.xs), np.asarray(drawn.targets)[:, 0], strict=True):
        assert any((x == xs[i]).all() and y == LABELS[i] for i in range(3))


def test_without_a_test_file_the_last_tenth_is_held_out(tmp_path):
    """20 examples, each one spike in its own bin: the first 18 train, the last 2 are the held-out set."""
    times = [[0.001 * (i % 10)] for i in range(20)]
    path = write_shd(tmp_path / "train.h5", times, [[i] for i in range(20)], [i for i in range(20)])
    task = SHD(path=path, step_ms=1, duration_ms=10, pool=1)
    xs, labels, held_xs, held_labels = task.data
    np.testing.assert_array_equal(labels, range(18))
    np.testing.assert_array_equal(held_labels, [18, 19])
    assert held_xs[0, 8, 18] == 1 and held_xs.sum() == 2


@pytest.mark.parametrize("case", ["empty", "missing", "not_hdf5", "no_labels", "unit_range", "lengths"])
def test_a_missing_or_malformed_file_is_refused_naming_the_argument(tmp_path, case):
    text = tmp_path / "notes.txt"
    text.write_text("not a file of spikes")
    path = {"empty": "", "missing": str(tmp_path / "nowhere.h5"), "not_hdf5": str(text),
            "no_labels": write_shd(tmp_path / "a.h5", TIMES, UNITS, LABELS, drop="labels"),
            "unit_range": write_shd(tmp_path / "b.h5", [[0.001]], [[700]], [1]),
            "lengths": write_shd(tmp_path / "c.h5", TIMES, UNITS, LABELS[:2])}[case]
    with pytest.raises(ValueError, match="^path"):
        SHD(path=path).load()
    good = write_shd(tmp_path / "good.h5", TIMES, UNITS, LABELS)
    with pytest.raises(ValueError, match="^test_path"):
        SHD(path=good, test_path=path or str(tmp_path / "nowhere.h5")).load()


def test_rtrl_train_refuses_a_missing_file_before_it_starts(tmp_path):
    """``assemble`` (what ``rtrl train`` runs before writing anything) reads the file; the task is listed without
    one."""
    with pytest.raises(ValueError, match="path"):
        assemble(RunConfig(task="shd", task_args={"path": str(tmp_path / "nowhere.h5")}))
    assert "Spiking Heidelberg" in TASKS["shd"]().describe()
    with pytest.raises(ValueError, match="pool"):
        SHD(pool=3)


def test_a_spike_time_far_past_the_window_is_dropped_not_overflowed(tmp_path):
    """1e30 s is past any window: dropped like 30.1 ms above (cast to int64 first, it overflowed into an index)."""
    times = [[0.001, 1e30], [0.0], [0.012]]
    path = write_shd(tmp_path / "train.h5", times, [[0, 5], [5], [3]], LABELS)
    task = SHD(path=path, test_path=write_shd(tmp_path / "test.h5", times[2:], UNITS[2:], LABELS[2:]), step_ms=5,
               duration_ms=20, pool=350)
    task.load()
    np.testing.assert_array_equal(task.data[0][0], [[1, 0], [0, 0], [0, 0], [0, 0]])


def test_a_resume_refuses_another_file_under_the_same_name(tmp_path, capsys):
    """A run of two steps records its files' SHA-256 in its checkpoint; the training file replaced by another (the
    labels changed) under the same name, ``rtrl resume`` is one line naming ``path`` and the folder is left as it
    was; the same bytes written anew (a new mtime) resume; a changed ``test_path`` is refused by its name
    [``check_data`` not called: the resume trains on the other file; the digest left out of the checkpoint: the
    same]."""
    from rtrl.cli import main

    train = write_shd(tmp_path / "train.h5", TIMES, UNITS, LABELS)
    test = write_shd(tmp_path / "test.h5", TIMES[2:], UNITS[2:], LABELS[2:])
    run = tmp_path / "run"
    args = (f"train --task shd --task-arg path={train} --task-arg test_path={test} --task-arg step_ms=5 "
            f"--task-arg duration_ms=20 --task-arg pool=350 --cell elman --hidden 2 --batch 2 --eval-every 1 "
            f"--eval-size 1 --steps 1 --quiet --out {run}").split()
    assert main(args) == 0
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    write_shd(tmp_path / "train.h5", TIMES, UNITS, [1, 2, 3])
    capsys.readouterr()
    assert main(["resume", str(run), "--steps", "2", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and err.startswith(f"rtrl: error: path: {train!r} is not the file this run was "
                                                        "trained on (its SHA-256 differs from the one"), err
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before  # nothing was changed
    write_shd(tmp_path / "train.h5", TIMES, UNITS, LABELS)  # the same bytes again
    write_shd(tmp_path / "test.h5", TIMES[:1], UNITS[:1], LABELS[:1])
    assert main(["resume", str(run), "--steps", "2", "--quiet"]) == 2
    assert f"test_path: {test!r} is not the file" in capsys.readouterr().err
    write_shd(tmp_path / "test.h5", TIMES[2:], UNITS[2:], LABELS[2:])
    assert main(["resume", str(run), "--steps", "2", "--quiet"]) == 0


def shd_run(tmp_path):
    """A run of one step on a training and a test file: ``(run folder, train file, test file)``."""
    from rtrl.cli import main

    train = write_shd(tmp_path / "train.h5", TIMES, UNITS, LABELS)
    test = write_shd(tmp_path / "test.h5", TIMES[2:], UNITS[2:], LABELS[2:])
    run = tmp_path / "run"
    assert main(f"train --task shd --task-arg path={train} --task-arg test_path={test} --task-arg step_ms=5 "
                f"--task-arg duration_ms=20 --task-arg pool=350 --cell elman --hidden 2 --batch 2 --eval-every 1 "
                f"--eval-size 1 --steps 1 --quiet --out {run}".split()) == 0
    return run, train, test


def test_evaluation_refuses_another_file_under_the_same_name_as_resume_does(tmp_path, capsys):
    """``rtrl eval`` and ``load().evaluate()`` of an ``shd`` run whose test file was replaced under its name (the
    labels changed) are refused naming ``test_path``, as a resume is; the file put back, both score again
    [``check_data`` not called on evaluation: the run is scored on the other file, exit 0]."""
    import rtrl
    from rtrl.cli import main
    from rtrl.run.folder import RunError

    run, _, test = shd_run(tmp_path)
    write_shd(tmp_path / "test.h5", TIMES[2:], UNITS[2:], [5])
    capsys.readouterr()
    assert main(["eval", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and f"test_path: {test!r} is not the file this run was trained on" in err, err
    with pytest.raises(RunError, match="test_path: .* is not the file this run was trained on"):
        rtrl.load(run).evaluate()
    write_shd(tmp_path / "test.h5", TIMES[2:], UNITS[2:], LABELS[2:])  # the same bytes again
    assert rtrl.load(run).evaluate()["episodes"] == 1
    assert main(["eval", str(run)]) == 0


def test_a_changed_file_of_the_same_size_and_time_is_refused(tmp_path, capsys):
    """The test file rewritten with one label changed: the same number of bytes, its modification time set back
    to the old one, so only its contents tell it apart. ``rtrl eval``, ``load().evaluate()`` and ``rtrl resume``
    each refuse it naming ``test_path``, and nothing in the folder changes [a fingerprint of the size and the
    time would take it]."""
    import os

    import rtrl
    from rtrl.cli import main
    from rtrl.run.folder import RunError

    run, _, test = shd_run(tmp_path)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    was = os.stat(test)
    write_shd(tmp_path / "test.h5", TIMES[2:], UNITS[2:], [5])
    os.utime(test, ns=(was.st_atime_ns, was.st_mtime_ns))
    now = os.stat(test)
    assert (now.st_size, now.st_mtime_ns) == (was.st_size, was.st_mtime_ns)
    capsys.readouterr()
    for command in (["eval", str(run)], ["resume", str(run), "--steps", "2", "--quiet"]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert err.splitlines() == [err] and f"test_path: {test!r} is not the file this run was trained on" in err
    with pytest.raises(RunError, match="test_path: .* is not the file this run was trained on"):
        rtrl.load(run).evaluate()
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


def test_a_missing_data_file_is_one_line_naming_it(tmp_path, capsys):
    """The training file gone: ``rtrl eval``, ``rtrl resume`` and ``rtrl.load`` each name ``path`` and the file, no
    traceback, nothing in the folder changed; put back, the run evaluates again."""
    import rtrl
    from rtrl.cli import main
    from rtrl.run.folder import RunError

    run, train, _ = shd_run(tmp_path)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    saved = (tmp_path / "train.h5").read_bytes()
    (tmp_path / "train.h5").unlink()
    capsys.readouterr()
    for command in (["eval", str(run)], ["resume", str(run), "--steps", "2", "--quiet"]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert err.splitlines() == [err] and f"path: no file {train!r}" in err, err
    with pytest.raises(RunError, match="path: no file"):
        rtrl.load(run)
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    (tmp_path / "train.h5").write_bytes(saved)
    assert rtrl.load(run).evaluate()["episodes"] == 1


def test_the_fingerprint_reads_the_whole_file(tmp_path):
    """``sha256`` of a file of two and a half mebibytes (three of its reads) is the digest of all its bytes, and a
    change of its last byte alone changes it [the digest of the first read only: both fail]."""
    import hashlib

    from rtrl.training.tasks.shd import sha256

    data = bytes(range(256)) * (10 * 2**10) + b"x"
    (tmp_path / "f").write_bytes(data)
    assert len(data) == 5 * 2**19 + 1
    assert sha256(str(tmp_path / "f")) == hashlib.sha256(data).hexdigest()
    (tmp_path / "g").write_bytes(data[:-1] + b"y")
    assert sha256(str(tmp_path / "g")) != sha256(str(tmp_path / "f"))
