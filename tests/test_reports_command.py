"""``rtrl results KIND``: the one front end of the result tables runs each kind with the options after KIND (the RL
kinds through the one results runner), names itself in the tables' provenance, and resumes what is already done."""

import json

from rtrl.cli import main


def test_results_popgym_runs_the_suite_writes_its_table_and_resumes(tmp_path, capsys):
    out = tmp_path / "suite"
    argv = ["results", "popgym", "--out", str(out), "--tasks", "RepeatPrevious", "--rows", "uniform", "--seeds", "2"]
    assert main(argv) == 0
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["table"], r["row"], r["seed"]) for r in runs] == [("popgym", "RepeatPrevious", "uniform", s)
                                                                          for s in (0, 1)]
    table = (out / "suite.md").read_text()
    assert table.startswith("**Protocol**: only fixed policies ran (no agent).")  # no agent's card
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
    assert main(["results", "popgym", "--seeds", "2"]) == 2  # --out is required: one line, the kind's name
    assert capsys.readouterr().err.strip() == ("rtrl results popgym: error: the following arguments are required: "
                                               "--out")


def test_a_damaged_ledger_is_one_line_naming_file_and_line_and_nothing_runs(tmp_path, capsys):
    out = tmp_path / "suite"
    out.mkdir()
    good = {"kind": "popgym", "table": "RepeatPrevious", "row": "uniform", "seed": 0, "options": {},
            "records": [{"step": 1, "return": 0.1, "wall_s": 1.0}]}
    torn = '{"kind": "popgym", "table": "RepeatFirst", "row": "unif\n'
    (out / "runs.jsonl").write_text(json.dumps(good) + "\n" + torn)
    argv = ["results", "popgym", "--out", str(out), "--tasks", "RepeatFirst", "--rows", "uniform", "--seeds", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"rtrl results popgym: error: {out / 'runs.jsonl'}, line 2: not a")
    assert not (out / "suite.md").exists()


def test_a_second_command_on_the_same_results_folder_is_refused(tmp_path, capsys):
    from rtrl import ledger

    out = tmp_path / "suite"
    out.mkdir()
    with ledger.locked(out):  # another command holds the folder
        argv = ["results", "popgym", "--out", str(out), "--tasks", "RepeatFirst", "--rows", "uniform"]
        assert main(argv) == 2
    assert "another command is writing these results" in capsys.readouterr().err
    assert not (out / "runs.jsonl").exists()


def test_a_folder_of_another_kinds_results_is_refused_by_name(tmp_path, capsys):
    """One ledger schema for every kind: a POPGym line read by ``rtrl results rl`` names both kinds and the way
    out (another --out), and nothing runs."""
    out = tmp_path / "suite"
    out.mkdir()
    line = {"kind": "popgym", "table": "RepeatPrevious", "row": "uniform", "seed": 0, "options": {},
            "records": [{"step": 1, "return": 0.1, "wall_s": 1.0}]}
    (out / "runs.jsonl").write_text(json.dumps(line) + "\n")
    assert main(["results", "rl", "--out", str(out), "--tables", "memory-chain-16", "--seeds", "1"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"rtrl results rl: error: {out / 'runs.jsonl'}, line 1: a line of rtrl results popgym, not of rtrl results "
        "rl: give this command another --out")
    assert not (out / "results.md").exists()
