"""``tools/shd_like.py`` (the SHD stand-in): bad counts and an output that cannot be a folder are one usage line
(exit 2), nothing written; good ones write both files."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

pytest.importorskip("h5py")


def shd_like():
    path = Path(__file__).resolve().parents[1] / "tools" / "shd_like.py"
    spec = importlib.util.spec_from_file_location("shd_like", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("argv, said", [
    (["--train", "-5"], "argument --train: expected an integer of at least 1, got -5"),
    (["--test", "0"], "argument --test: expected an integer of at least 1, got 0"),
    (["--seed", "-1"], "argument --seed: expected an integer of at least 0, got -1"),
    (["--train", "x"], "argument --train: expected an integer of at least 1, got 'x'"),
])
def test_a_bad_count_is_one_usage_line(tmp_path, capsys, argv, said):
    with pytest.raises(SystemExit) as e:
        shd_like().main([str(tmp_path / "out"), *argv])
    assert e.value.code == 2 and said in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_output_that_is_a_file_or_holds_a_link_is_refused_and_a_good_one_is_written(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit):
        shd_like().main([str(tmp_path / "file"), "--train", "1", "--test", "1"])
    assert f"{tmp_path / 'file'} is a file, not a folder" in capsys.readouterr().err
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(tmp_path / "elsewhere.h5", out / "shd_test.h5")
    with pytest.raises(SystemExit):
        shd_like().main([str(out), "--train", "1", "--test", "1"])
    assert "shd_test.h5 is a symbolic link" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere.h5").exists() and sorted(os.listdir(out)) == ["shd_test.h5"]
    (out / "shd_test.h5").unlink()
    shd_like().main([str(out), "--train", "2", "--test", "1"])
    import h5py

    with h5py.File(out / "shd_train.h5") as f:
        assert len(f["labels"]) == 2
    with h5py.File(out / "shd_test.h5") as f:
        assert len(f["labels"]) == 1
