"""``--log tensorboard`` and ``--log wandb``: every record of ``metrics.jsonl`` read back from the logger's own files
(TensorBoard's reader; the W&B run's record log, parsed here) with the same scalars at the same steps."""

import json
import struct
import sys

import numpy as np
import pytest

from rtrl.cli import main
from rtrl.run.folder import read_metrics
from rtrl.run.loggers import scalars

TINY = ("--task copy --task-arg max_length=2 --cell elman --hidden 3 --method closed_form --batch 2 --lr 0.05 "
        "--eval-every 4 --eval-size 8 --quiet").split()
RL = "--env tmaze --env-arg length=2 --hidden 4 --envs 2 --record-every 20 --seed 3 --quiet".split()


def expected(records) -> dict[str, dict[int, float]]:
    """The numbers of the records by name and step, as JSON holds them (no code shared with the logger)."""
    out: dict[str, dict[int, float]] = {}
    for r in records:
        for k, v in r.items():
            if k != "step" and isinstance(v, int | float) and not isinstance(v, bool):
                out.setdefault(k, {})[r["step"]] = v
    return out


def tensorboard_scalars(path) -> dict[str, dict[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(path), size_guidance={"scalars": 0})
    events.Reload()
    out = {}
    for tag in events.Tags()["scalars"]:
        steps = [e.step for e in events.Scalars(tag)]
        assert len(steps) == len(set(steps)), f"{tag}: a step logged twice {steps}"
        out[tag] = {e.step: e.value for e in events.Scalars(tag)}
    return out


def same(logged, records, dtype=np.float64):
    want = expected(records)
    assert set(logged) == set(want)
    for tag, values in want.items():
        assert logged[tag] == {s: float(dtype(v)) for s, v in values.items()}, tag


def test_scalars_of_a_record():
    assert scalars({"step": 3, "loss": None, "metric": 0.5, "episodes": 2, "return": [1.0, -1], "done": True,
                    "name": "x"}) == {"metric": 0.5, "episodes": 2.0, "return/0": 1.0, "return/1": -1.0}


def test_both_loggers_read_back_the_records_of_a_run_and_tensorboard_of_its_resumption(tmp_path, monkeypatch):
    """W&B offline by default (no network, no account); TensorBoard also where a crash had logged steps past the
    checkpoint, which the resumed run writes again: each is read back once, with the resumed run's value."""
    pytest.importorskip("tensorboard")
    pytest.importorskip("wandb")
    tensorboardX = pytest.importorskip("tensorboardX")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_API_KEY", "")
    out = tmp_path / "run"
    assert main(["train", *TINY, "--steps", "8", "--out", str(out), "--log", "tensorboard", "--log", "wandb"]) == 0
    assert list(out.glob("events.out.tfevents.*"))
    same(tensorboard_scalars(out), read_metrics(out), np.float32)  # TensorBoard keeps float32
    same(wandb_history(out), read_metrics(out))
    with tensorboardX.SummaryWriter(str(out)) as stale:  # what a run killed past step 8 had logged
        stale.add_scalar("metric", -5.0, global_step=12)
    assert main(["resume", str(out), "--steps", "12", "--quiet", "--log", "tensorboard"]) == 0
    records = read_metrics(out)
    assert [r["step"] for r in records] == [0, 4, 8, 12]
    logged = tensorboard_scalars(out)
    assert logged["metric"][12] != -5.0
    same(logged, records, np.float32)


def test_tensorboard_logs_an_rl_runs_records(tmp_path):
    pytest.importorskip("tensorboardX")
    pytest.importorskip("tensorboard")
    out = tmp_path / "rl"
    assert main(["rl", *RL, "--steps", "40", "--out", str(out), "--log", "tensorboard"]) == 0
    logged = tensorboard_scalars(out)
    assert "return" in logged
    same(logged, read_metrics(out), np.float32)


def wandb_history(path) -> dict[str, dict[int, float]]:
    """The history rows of the offline W&B run in ``path``/wandb: its ``.wandb`` file is a LevelDB-style log (a
    7-byte file header, 32 KiB blocks of records, each with a 7-byte header: checksum, length, type (1 whole,
    2 first, 3 middle, 4 last part)) of ``Record`` protocol buffers."""
    from wandb.proto import wandb_internal_pb2

    (file,) = (path / "wandb").glob("offline-run-*/run-*.wandb")
    data, block = file.read_bytes(), 32768
    assert data[:4] == b":W&B"
    pos, pieces, raw = 7, b"", []
    while pos + 7 <= len(data):
        left = block - pos % block
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if left < 7 or kind == 0:
            pos += left
            continue
        pieces = (b"" if kind in (1, 2) else pieces) + data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            raw.append(pieces)
    out: dict[str, dict[int, float]] = {}
    for r in raw:
        record = wandb_internal_pb2.Record()
        record.ParseFromString(r)
        if record.WhichOneof("record_type") == "history":
            row = {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item}
            for k, v in row.items():
                if not k.startswith("_"):
                    out.setdefault(k, {})[row["_step"]] = v
    return out


def test_a_missing_logger_package_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # as if not installed
    out = tmp_path / "run"
    assert main(["train", *TINY, "--steps", "8", "--out", str(out), "--log", "tensorboard"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'rtrl[tensorboard]'" in err[0], err
    assert not out.exists()


def test_overwrite_removes_what_the_loggers_wrote_and_nothing_else(tmp_path, monkeypatch):
    """An overwritten run's event files would read back as the new run's (and its W&B runs beside it): --overwrite
    removes them with the run's files, whether or not the new run logs; a link goes, not what it points to, and a
    file of the user's in ``wandb/`` stays (with the folder)."""
    pytest.importorskip("tensorboard")
    pytest.importorskip("tensorboardX")
    pytest.importorskip("wandb")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_API_KEY", "")
    out = tmp_path / "run"
    assert main(["train", *TINY, "--steps", "4", "--out", str(out), "--log", "tensorboard", "--log", "wandb"]) == 0
    assert list(out.glob("events.out.tfevents.*")) and list((out / "wandb").glob("offline-run-*/run-*.wandb"))
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not the run's\n")
    (out / "events.out.tfevents.1.link").symlink_to(outside)
    (out / "wandb" / "notes.txt").write_text("the user's\n")
    (out / "notes.txt").write_text("the user's\n")
    assert main(["train", *TINY, "--steps", "4", "--lr", "0.01", "--out", str(out), "--overwrite"]) == 0
    assert not list(out.glob("events.out.tfevents.*")) and not any(out.glob("*.link"))
    assert sorted(p.name for p in (out / "wandb").iterdir()) == ["notes.txt"]
    assert outside.read_text() == "not the run's\n" and (out / "notes.txt").exists()
    assert read_metrics(out)[0]["step"] == 0  # the new run's records
    (out / "wandb" / "notes.txt").unlink()
    assert main(["train", *TINY, "--steps", "4", "--out", str(out), "--overwrite"]) == 0
    assert not (out / "wandb").exists()  # empty once the loggers' files went: removed


@pytest.mark.parametrize("mode, expected", [
    ("bogus", "WANDB_MODE must be one of offline, online, disabled, dryrun for --log wandb, got 'bogus'"),
    ("online", "WANDB_MODE=online needs a W&B API key"),
])
def test_an_unusable_wandb_mode_is_refused_before_the_run_folder_is_made(tmp_path, monkeypatch, capsys, mode,
                                                                         expected):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", mode)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    out = tmp_path / "run"
    assert main(["train", *TINY, "--steps", "4", "--out", str(out), "--log", "wandb"]) == 2
    assert expected in capsys.readouterr().err
    assert not out.exists()


def test_a_wandb_folder_linking_out_of_the_run_folder_is_refused_and_nothing_is_written_there(tmp_path, capsys):
    """``RUN/wandb`` a link to a folder elsewhere: ``--overwrite --log wandb`` and ``rtrl resume --log wandb`` refuse
    it by name, the folder it points to stays empty and the run's own files stay as they were."""
    pytest.importorskip("wandb")
    out, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    assert main(["train", *TINY, "--steps", "4", "--out", str(out)]) == 0
    elsewhere.mkdir()
    (out / "wandb").symlink_to(elsewhere)
    before = (out / "metrics.jsonl").read_text()
    capsys.readouterr()
    for argv in (["train", *TINY, "--steps", "4", "--out", str(out), "--overwrite", "--log", "wandb"],
                 ["resume", str(out), "--steps", "8", "--log", "wandb", "--quiet"]):
        assert main(argv) == 2
        assert "a link leading out of the run folder" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []
    assert (out / "metrics.jsonl").read_text() == before


def test_which_wandb_modes_and_logins_are_usable(tmp_path):
    """``check_wandb_mode`` on hand-made environments: offline without ``WANDB_MODE``; offline, disabled and dryrun
    as given; online with ``WANDB_API_KEY``, or with a ``~/.netrc`` (``NETRC``) holding a login to api.wandb.ai;
    online refused with no key and no netrc, or a netrc of another site only. [guards: online refused with a key, or
    with a W&B login in netrc; any netrc taken for a W&B login; the default online]"""
    from rtrl.run.loggers import check_wandb_mode
    from rtrl.run.usage import UsageError

    none, other, login = tmp_path / "none", tmp_path / "other", tmp_path / "login"
    other.write_text("machine github.com login me password x\n")
    login.write_text("machine api.wandb.ai\n  login user\n  password 0123456789abcdef\n")
    assert check_wandb_mode({"NETRC": str(none)}) == "offline"
    for mode in ("offline", "disabled", "dryrun"):
        assert check_wandb_mode({"WANDB_MODE": mode, "NETRC": str(none)}) == mode
    assert check_wandb_mode({"WANDB_MODE": "online", "WANDB_API_KEY": "k" * 40, "NETRC": str(none)}) == "online"
    assert check_wandb_mode({"WANDB_MODE": "online", "NETRC": str(login)}) == "online"
    for netrc in (none, other):
        with pytest.raises(UsageError, match="WANDB_MODE=online needs a W&B API key"):
            check_wandb_mode({"WANDB_MODE": "online", "NETRC": str(netrc)})


def test_a_wandb_file_where_its_folder_belongs_is_refused_before_the_run_starts(tmp_path, capsys, monkeypatch):
    """``RUN/wandb`` a file (not a folder): ``--overwrite --log wandb`` refuses it by name, the file and the run's
    records unchanged; a real ``wandb/`` folder inside the run folder is accepted by the check. [guards: the file
    not refused (W&B fails at the first record, with the run already writing)]"""
    pytest.importorskip("wandb")
    from rtrl.run.loggers import check_wandb_folder

    monkeypatch.delenv("WANDB_MODE", raising=False)
    out = tmp_path / "run"
    assert main(["train", *TINY, "--steps", "4", "--out", str(out)]) == 0
    (out / "wandb").write_text("a note of the user's")
    before = (out / "metrics.jsonl").read_text()
    capsys.readouterr()
    assert main(["train", *TINY, "--steps", "4", "--out", str(out), "--overwrite", "--log", "wandb"]) == 2
    assert "which is a file, not a folder" in capsys.readouterr().err
    assert (out / "wandb").read_text() == "a note of the user's"
    assert (out / "metrics.jsonl").read_text() == before
    (out / "wandb").unlink()
    (out / "wandb").mkdir()
    assert check_wandb_folder(out) == out / "wandb"
