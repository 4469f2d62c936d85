"""The gradient-fidelity report: rows, skipped methods, the files it writes and its bad arguments."""

import csv
import json

import jax
import pytest

from rtrl.cells import GRU, IIR2, LRU, Elman, Network, Stack
from rtrl.reports import fidelity


def test_report_rows_and_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(fidelity, "default_cells", lambda D, N: [Elman(D, N)])
    argv = ["--out", str(tmp_path), "--lengths", "3", "--seeds", "2", "--hidden", "3", "--input", "2",
            "--methods", "rtrl", "uoro", "layer_local"]
    assert fidelity.main(argv) == 0
    rows = json.loads((tmp_path / "fidelity.json").read_text())
    assert [(r["cell"], r["method"], r["T"], r["seeds"]) for r in rows] == [("Elman", "rtrl", 3, 2),
                                                                           ("Elman", "uoro", 3, 2)]
    exact, uoro = rows  # layer_local does not apply to a single cell: skipped
    assert exact["cosine_min"] > 1 - 1e-12 and exact["relative_error"] < 1e-12
    assert uoro["cosine"] < 1 - 1e-6 and uoro["relative_error"] > 1e-6
    with open(tmp_path / "fidelity.csv") as f:
        assert [r["method"] for r in csv.DictReader(f)] == ["rtrl", "uoro"]
    assert (tmp_path / "fidelity.png").read_bytes().startswith(b"\x89PNG")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fidelity.csv", "fidelity.json", "fidelity.png"]
    assert "| Elman | uoro |" in capsys.readouterr().out


def test_a_single_problem_is_deterministic():
    assert fidelity.gradient_fidelity(Elman(2, 3), "uoro", 3, seed=1) == fidelity.gradient_fidelity(
        Elman(2, 3), "uoro", 3, seed=1)


@pytest.mark.parametrize("bad", [["--seeds", "0"], ["--lengths", "0"], []])
def test_bad_arguments(bad, tmp_path):
    with pytest.raises(SystemExit):
        fidelity.main((["--out", str(tmp_path)] if bad else []) + bad)


def test_needs_float64():
    with jax.enable_x64(False), pytest.raises(ValueError, match="needs float64"):
        fidelity.fidelity_table([Elman(2, 3)], ["rtrl"], [2], 1)


def test_cell_labels_tell_variants_of_one_cell_apart():
    labels = [fidelity.cell_label(IIR2(2, 3)), fidelity.cell_label(IIR2(2, 3, parameterisation="stable")),
              fidelity.cell_label(Stack((Elman(2, 3), Elman(3, 3, activation="relu"))))]
    assert labels == ["IIR2", "IIR2(parameterisation='stable')", "Stack(Elman+Elman(activation='relu'))"]
    networks = [Network(layers=(LRU(3, 3), LRU(3, 3))), Network(layers=(LRU(3, 3), GRU(3, 3)), norm="rms")]
    assert [fidelity.cell_label(n) for n in networks] == ["Network(2 x LRU)", "Network(LRU+GRU, norm='rms')"]


def test_the_report_holds_deep_networks_of_each_long_memory_cell():
    deep = [c for c in fidelity.default_cells(3, 4) if isinstance(c, Network)]
    assert sorted((type(c.layers[0]).__name__, len(c.layers)) for c in deep) == [
        ("LRU", 2), ("LRU", 4), ("RTU", 2), ("RTU", 4)]
    assert all(c.input_size == 3 and c.hidden_size == 4 for c in deep)
    (row,) = fidelity.fidelity_table([deep[0]], ["layer_local"], [6], seeds=1)
    assert row["cell"] == "Network(2 x LRU)" and 0.5 < row["cosine"] < 1 - 1e-6  # approximate, not unrelated


def test_markdown_page_holds_the_table_and_the_command_that_wrote_it(tmp_path, monkeypatch):
    monkeypatch.setattr(fidelity, "default_cells", lambda D, N: [Elman(D, N)])
    page = tmp_path / "docs" / "fidelity.md"
    page.parent.mkdir()
    argv = ["--out", str(tmp_path / "run"), "--lengths", "1", "4", "--seeds", "2", "--hidden", "3", "--input", "2",
            "--methods", "rtrl", "eprop", "--markdown", str(page)]
    assert fidelity.main(argv) == 0
    text = page.read_text()
    rows = json.loads((tmp_path / "run" / "fidelity.json").read_text())
    assert fidelity.markdown(rows) in text
    assert "| Elman | eprop | 1.0000 / 0 | " in text  # at T = 1 every method is exact
    assert f"rtrl fidelity --out {tmp_path / 'run'} --lengths 1 4 --seeds 2 --hidden 3 --input 2 --methods rtrl " \
           f"eprop --markdown {page}" in text
    eprop = fidelity.resolve("eprop")
    assert "problems per entry: 2; hidden size 3, input size 2" in text and f"`eprop` = `{eprop!r}`" in text
    assert "at every T): `rtrl` on every cell. Every other row is an approximation." in text  # eprop is not


def test_markdown_page_in_a_missing_folder_is_refused_before_computing(tmp_path, capsys):
    with pytest.raises(SystemExit):
        fidelity.main(["--out", str(tmp_path), "--markdown", str(tmp_path / "nowhere" / "fidelity.md")])
    assert "does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
