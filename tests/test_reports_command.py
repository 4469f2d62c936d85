"""``rtrl results KIND``: the one front end of the result tables dispatches to each kind's own runner, with the
options after KIND, names itself in the tables' provenance, and resumes what is already done."""

import json

import pytest

from rtrl.cli import main


def test_results_popgym_runs_the_suite_writes_its_table_and_resumes(tmp_path, capsys):
    out = tmp_path / "suite"
    argv = ["results", "popgym", "--out", str(out), "--tasks", "RepeatPrevious", "--rows", "uniform", "--seeds", "2"]
    assert main(argv) == 0
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert [(r["task"], r["row"], len(r["finals"])) for r in runs] == [("RepeatPrevious", "uniform", 2)]
    table = (out / "suite.md").read_text()
    assert "| RepeatPreviousEasy |" in table
    assert "`rtrl results popgym --out" in table  # the provenance names the command that was run
    before = (out / "runs.jsonl").stat().st_mtime_ns
    capsys.readouterr()
    assert main(argv) == 0  # everything is done already: nothing runs, nothing is printed for a row
    assert "uniform: normalised" not in capsys.readouterr().out
    assert (out / "runs.jsonl").stat().st_mtime_ns == before


def test_results_refuses_an_unknown_kind_and_passes_a_kinds_bad_option_to_its_parser(capsys):
    assert main(["results", "bogus"]) == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # the kind's own parser: its usage line, under the front end's name
        main(["results", "popgym", "--seeds", "2"])  # --out is required
    assert stop.value.code == 2
    assert "rtrl results popgym" in capsys.readouterr().err
