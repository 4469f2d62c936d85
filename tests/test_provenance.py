"""``rtrl.provenance``: the line beside written figures, and that every command that writes figures writes it
(tests/test_docs_figures.py holds the pages to it)."""

import argparse
import re
import shutil
import subprocess

import pytest

from rtrl import provenance
from rtrl.benchmarks import suite
from rtrl.reports import fidelity
from rtrl.reports import rl as rl_results
from rtrl.reports import training as results_page


def git(folder, *args):
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_commit_is_the_checkouts_and_marked_dirty_when_a_tracked_file_of_the_code_changed(tmp_path):
    assert provenance.commit(tmp_path) == "unknown"  # not a checkout
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git(tmp_path, "add", "a.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    found = provenance.commit(tmp_path)
    assert len(found) >= 7 and head.startswith(found)
    (tmp_path / "new.txt").write_text("untracked: not a change to the measured code\n")
    assert provenance.commit(tmp_path) == found
    (tmp_path / "a.py").write_text("x = 2\n")
    assert provenance.commit(tmp_path) == found + "-dirty"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "b.py").write_text("y = 1\n")
    assert provenance.commit(tmp_path / "pkg") == "unknown"  # not tracked: another project's checkout
    git(tmp_path, "add", "pkg")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two")
    assert re.fullmatch("[0-9a-f]{7,40}", provenance.commit(tmp_path / "pkg"))  # a.py changed: not pkg's code


def test_the_line_reads_back_as_its_command_commit_and_date():
    text = provenance.line("rtrl bench --markdown docs/performance.md", "0123abc-dirty", "2026-11-26")
    assert text == "Measured with `rtrl bench --markdown docs/performance.md` at commit 0123abc-dirty on 2026-11-26."
    found = provenance.PATTERN.search(text)
    assert (found["command"], found["commit"], found["date"]) == ("rtrl bench --markdown docs/performance.md",
                                                                   "0123abc-dirty", "2026-11-26")
    assert provenance.PATTERN.search(provenance.line("rtrl demo"))["date"] == provenance.today()


@pytest.mark.parametrize("command", ["echo `date`", "a\nb"])
def test_a_command_that_would_break_the_line_is_refused(command):
    with pytest.raises(ValueError, match="command"):
        provenance.line(command, "0123abc", "2026-11-26")


def test_rtrl_bench_writes_the_line_with_the_commit_it_measured_on():
    from test_benchmarks import fake_results  # the suite's results with round numbers

    fake = fake_results()
    fake["machine"] = {**fake["machine"], "commit": "0123abc", "date": "2026-11-24 19:01 UTC"}
    found = provenance.PATTERN.search(suite.markdown(fake, command="rtrl bench --markdown docs/x.md"))
    assert (found["command"], found["commit"], found["date"]) == ("rtrl bench --markdown docs/x.md", "0123abc",
                                                                   "2026-11-24")
    assert suite.machine()["commit"] == provenance.commit()


def test_rtrl_fidelity_writes_the_line_with_its_own_command(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "commit", lambda where=None: "0123abc")
    args = argparse.Namespace(out="runs/f", lengths=[1], seeds=1, hidden=16, input=4, methods=["rtrl"],
                              markdown="docs/fidelity.md")
    rows = [{"cell": "Elman", "method": "rtrl", "T": 1, "cosine": 1.0, "relative_error": 0.0}]
    found = provenance.PATTERN.search(fidelity.page(rows, args))
    assert (found["command"], found["commit"]) == (fidelity.command_line(args), "0123abc")
    assert "--lengths 1 --seeds 1" in found["command"]


def test_make_results_writes_the_line_under_each_table_with_the_command_that_reruns_it(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "commit", lambda where=None: "0123abc")
    monkeypatch.setattr(results_page, "run_experiment", lambda experiment, root: f"### {experiment.name}\n\n| 0.5 |\n")
    out = tmp_path / "results.md"
    results_page.write_tables(argparse.Namespace(only=["copy", "recall"], out=str(out), runs=str(tmp_path)))
    found = [m.groupdict() for m in provenance.PATTERN.finditer(out.read_text())]
    assert [(f["command"], f["commit"]) for f in found] == [
        ("rtrl results training --only copy", "0123abc"),
        ("rtrl results training --only recall", "0123abc")]


def test_the_rl_tables_carry_the_line_that_reruns_them():
    records = [{"step": 1, "return": 0.5, "wall_s": 2.0}]
    runs = [{"kind": "rl", "table": "memory-chain-40-long", "row": "rtrl", "seed": s,
             "options": rl_results.options("memory-chain-40-long", "rtrl"), "records": records} for s in (0, 1)]
    text = rl_results.table(runs, argparse.Namespace(out="runs/rl"), "0123abc")
    found = provenance.PATTERN.search(text)
    assert (found["command"], found["commit"]) == (
        "rtrl results rl --out runs/rl --tables memory-chain-40-long --rows rtrl --seeds 2", "0123abc")  # one row ran


def test_the_popgym_suite_table_carries_the_line_that_reruns_it():
    from rtrl.reports import popgym

    runs = [{"kind": "popgym", "table": "RepeatPrevious", "row": "rtrl", "seed": s,
             "options": popgym.stored("RepeatPrevious", "rtrl", 4),
             "records": [{"step": 4, "return": v, "wall_s": 1.0}]} for s, v in enumerate((0.5, 1.0))]
    args = argparse.Namespace(prog="rtrl results popgym", out="runs/s", tasks=["RepeatPrevious"], rows=["rtrl"],
                              seeds=2, seed=0, steps=4)
    found = provenance.PATTERN.search(popgym.table(runs, args, "0123abc"))
    assert (found["command"], found["commit"]) == (
        "rtrl results popgym --out runs/s --tasks RepeatPrevious --rows rtrl --seeds 2 --seed 0 --steps 4", "0123abc")
