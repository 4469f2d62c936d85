"""Long commands talk and stop: ``rtrl fidelity`` and ``rtrl results training`` show progress, and a Ctrl-C
(``rtrl.interrupts``: the flag its signal watcher sets, then the next safe point) stops them with status 130 and
nothing written after it; fidelity.png is a grid, readable with any number of cells."""

import struct

import pytest

from rtrl import interrupts
from rtrl.cells import Elman
from rtrl.reports import fidelity
from rtrl.reports import training as results
from rtrl.training.presets import EXPERIMENTS


def ctrl_c():
    """What the watcher thread does on SIGINT inside a deferred block (outside one it would end the process)."""
    assert interrupts._State.deferring, "a Ctrl-C here would end the process at once"
    interrupts.on_interrupt()


def test_fidelity_shows_progress_and_a_ctrl_c_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(fidelity, "default_cells", lambda D, N: [Elman(D, N)])
    real, calls = fidelity.gradient_fidelity, []

    def counted(*args):
        calls.append(args)
        if len(calls) == 2:  # in the second entry's computation
            ctrl_c()
        return real(*args)

    monkeypatch.setattr(fidelity, "gradient_fidelity", counted)
    out, page = tmp_path / "out", tmp_path / "page.md"
    argv = ["--out", str(out), "--lengths", "2", "3", "4", "--seeds", "1", "--hidden", "2", "--input", "2",
            "--methods", "rtrl", "--markdown", str(page)]
    assert fidelity.main(argv) == interrupts.STATUS == 130
    assert len(calls) == 2  # stopped after the entry under way, not at the end
    assert list(out.iterdir()) == [] and not page.exists()
    captured = capsys.readouterr()
    assert "interrupted: nothing was written" in captured.out and "entry" in captured.err  # the bar
    assert not interrupts._State.pending and not interrupts._State.deferring

    calls.clear()
    monkeypatch.setattr(fidelity, "gradient_fidelity", real)
    assert fidelity.main(argv) == 0 and page.exists()  # the same command, uninterrupted, writes everything


def fake_rows(monkeypatch, interrupt_at: int | None):
    """``run_row`` without training (every row skipped), with a Ctrl-C during row ``interrupt_at``."""
    seen = []

    def run_row(experiment, row, root):
        seen.append(row)
        if len(seen) == interrupt_at:
            ctrl_c()
        return {"row": row, "name": experiment.preset_name(row), "skipped": "not run by the test"}

    monkeypatch.setattr(results, "run_row", run_row)
    return seen


def test_results_stop_at_the_next_row_and_keep_only_the_tables_finished_before(tmp_path, monkeypatch, capsys):
    first, second = [e for e in EXPERIMENTS if len(e.rows) >= 2][:2]
    page = tmp_path / "results.md"
    # a page of its own (one table between its markers), with text of the user's to keep
    page.write_text("# Results\n\nkept\n\n<!-- results:other -->\n| x |\n<!-- /results:other -->\n")
    argv = ["--only", first.name, second.name, "--out", str(page), "--runs", str(tmp_path / "runs")]
    seen = fake_rows(monkeypatch, interrupt_at=len(first.rows) + 1)  # in the second table's first row
    assert results.main(argv) == 130
    assert len(seen) == len(first.rows) + 1  # no row after the Ctrl-C
    text = page.read_text()
    assert "kept" in text and f"<!-- results:{first.name} -->" in text
    assert f"<!-- results:{second.name} -->" not in text
    assert "interrupted" in capsys.readouterr().out

    fake_rows(monkeypatch, interrupt_at=None)
    assert results.main(argv) == 0 and f"<!-- results:{second.name} -->" in page.read_text()


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("cells", [1, 9])
def test_fidelity_png_is_a_grid(tmp_path, cells):
    """18 cells were 18 panels in one row, 7,200 px wide; now at most four cells across, more on further rows."""
    rows = [{"cell": f"cell {c}", "method": m, "T": T, "cosine": 1.0, "relative_error": 1e-3}
            for c in range(cells) for m in ("rtrl", "snap1") for T in (1, 10)]
    fidelity.plot(rows, str(tmp_path / "f.png"))
    width, height = png_size(tmp_path / "f.png")
    columns = min(cells, 4)
    assert (width, height) == (450 * columns, 600 * -(-cells // columns))  # 4.5 x 6 inches a cell, at 100 dpi
