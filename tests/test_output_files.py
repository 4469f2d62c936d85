"""Where rtrl writes (``rtrl.files.check_output_file``, the one rule of every file a command writes): never through a
symbolic link (even a dangling one), never onto a folder or a device, never over an existing file unless asked to
(``--overwrite``) or unless it is the command's own earlier output; and the commands that write by it: ``rtrl eval
--video``, ``rtrl export --nir``, ``rtrl results training --out``, a run folder's own files."""

from __future__ import annotations

import os
import re

import pytest

from rtrl.files import check_output_file, not_plain


def test_a_new_file_in_an_existing_folder_may_be_written(tmp_path):
    assert check_output_file(tmp_path / "new.txt", "--out") == tmp_path / "new.txt"
    assert check_output_file(str(tmp_path / "a" / "b" / "new.txt"), "--out") == tmp_path / "a" / "b" / "new.txt"


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_link_is_never_written_through_even_with_overwrite(tmp_path, overwrite):
    (tmp_path / "elsewhere").write_text("kept")
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    for name in ("link", "dangling"):
        with pytest.raises(ValueError, match=f"--out {tmp_path / name} is a symbolic link \\(to .*(elsewhere|nowhere)"):
            check_output_file(tmp_path / name, "--out", overwrite)
    assert not_plain(tmp_path / "dangling") == f"is a symbolic link (to {tmp_path / 'nowhere'})"


def test_an_existing_file_is_replaced_only_with_overwrite_or_when_it_is_the_commands_own(tmp_path):
    file = tmp_path / "page.md"
    file.write_text("someone's notes")
    with pytest.raises(ValueError, match="page.md exists; choose another file, or replace it with --overwrite"):
        check_output_file(file, "--out")
    assert check_output_file(file, "--out", overwrite=True) == file
    with pytest.raises(ValueError, match="exists and is not what this command writes; choose another file \\("):
        check_output_file(file, "--out", overwrite=None, ours=lambda p: p.read_text().startswith("# Results"))
    file.write_text("# Results\n")
    assert check_output_file(file, "--out", overwrite=None, ours=lambda p: p.read_text().startswith("# Results"))


def test_a_folder_a_pipe_an_empty_name_and_a_path_under_a_file_are_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "file").write_text("x")
    for path, said in ((tmp_path, "is a folder; name the file to write"),
                       (tmp_path / "pipe", "is not a regular file (a named pipe or a device)"),
                       ("", "--out must name a file, got ''"),
                       (tmp_path / "file" / "deeper" / "x.md", f"{tmp_path / 'file'} is a file, not a folder")):
        with pytest.raises(ValueError, match=said.replace("(", "\\(").replace(")", "\\)")):
            check_output_file(path, "--out", overwrite=True)
    assert (tmp_path / "file").read_text() == "x"


def test_rtrl_results_training_never_replaces_a_file_that_is_not_its_own_page(tmp_path, capsys):
    """``--out RUN/config.json`` (a run's configuration), a file of someone's notes, a non-UTF-8 file, a link: each
    refused in one line before anything runs, the file unchanged; its own page (and a new file) are accepted."""
    from rtrl.cli import main
    from rtrl.reports.training import is_results_page

    notes = tmp_path / "config.json"
    notes.write_text('{"task": "copy"}\n')
    latin = tmp_path / "latin.md"
    latin.write_bytes(b"# R\xe9sultats\n<!-- results:x -->\n")
    os.symlink(tmp_path / "elsewhere.md", tmp_path / "link.md")
    for out, said in ((notes, "exists and is not what this command writes"), (latin, "exists and is not"),
                      (tmp_path / "link.md", "is a symbolic link")):
        before = out.read_bytes() if out.exists() else None
        assert main(["results", "training", "--out", str(out), "--only", "copy"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0] and "Traceback" not in err[0], err
        assert (out.read_bytes() if out.exists() else None) == before
    assert not (tmp_path / "elsewhere.md").exists()
    page = tmp_path / "page.md"
    page.write_text("# Results\n\n<!-- results:copy -->\n| a |\n<!-- /results:copy -->\n")
    assert is_results_page(page)
    page.write_text("# Results\n\nno table yet\n")
    assert not is_results_page(page)
    assert not is_results_page(tmp_path / "missing.md")


@pytest.mark.parametrize("text, said", [
    ('{"lr": 0.1, "lr": 0.2}', "the key 'lr' is given twice"),
    ('{"a": {"b": 1, "b": 1}}', "the key 'b' is given twice"),
    ('{"lr": NaN, "x": [1, -Infinity]}', "lr, x[1] are NaN or infinite"),
    ("\ufeff{}", "it starts with a UTF-8 byte-order mark"),
    ("[" * 100_000 + "]" * 100_000, "its values nest too deeply to be read"),
    ('{"a": 1', "Expecting"),
])
def test_json_from_outside_is_read_strictly_at_one_door(text, said):
    """``rtrl.files.parse_json`` (config.json, records, a checkpoint's meta, ledger lines): each damage a
    ``ValueError`` in a few words [``json.loads``: the last of two keys, NaN, a RecursionError]."""
    from rtrl.files import parse_json

    with pytest.raises(ValueError, match=re.escape(said)):
        parse_json(text)
    assert parse_json('{"a": [1, {"b": null}], "c": 2.5}') == {"a": [1, {"b": None}], "c": 2.5}


def test_a_run_folders_record_nesting_deeply_or_giving_a_key_twice_is_one_line(tmp_path):
    from rtrl.run.folder import RunError, read_config, read_metrics

    (tmp_path / "config.json").write_text('{"env": "tmaze", "env": "tmaze"}')
    with pytest.raises(RunError, match="config.json is not valid JSON \\(the key 'env' is given twice\\)"):
        read_config(tmp_path)
    (tmp_path / "metrics.jsonl").write_text('{"step": 0}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(RunError, match="metrics.jsonl line 2 is damaged \\(its values nest too deeply"):
        read_metrics(tmp_path)
    (tmp_path / "metrics.jsonl").write_text('\ufeff{"step": 0}\n')
    with pytest.raises(RunError, match="line 1 is damaged \\(it starts with a UTF-8 byte-order mark"):
        read_metrics(tmp_path)


def test_two_results_training_commands_on_one_page_keep_each_others_tables(tmp_path, monkeypatch):
    """While this command runs its table, another finishes one of its own into the same page: both are there after
    [the page read once at the start and written whole: the other's table lost]."""
    import argparse

    from rtrl import provenance
    from rtrl.reports import training as page_of

    out = tmp_path / "results.md"
    out.write_text("# Results\n")
    monkeypatch.setattr(provenance, "commit", lambda where=None: "0123abc")

    def meanwhile(experiment, root):  # the other command's table lands while ours runs
        out.write_text(page_of.with_section(out.read_text(), "recall", "### recall\n\n| theirs |\n"))
        return f"### {experiment.name}\n\n| ours |\n"

    monkeypatch.setattr(page_of, "run_experiment", meanwhile)
    page_of.write_tables(argparse.Namespace(only=["copy"], out=str(out), runs=str(tmp_path)))
    page = out.read_text()
    assert "| theirs |" in page and "| ours |" in page
    assert page.index("<!-- results:recall -->") < page.index("<!-- results:copy -->")


def test_a_run_folder_or_output_folder_that_is_a_link_to_nothing_is_refused(tmp_path):
    """``--out`` (a run folder) or ``--video`` naming a dangling link: one error saying so, nothing made where it
    points [mkdir through the link: a folder made elsewhere, or a traceback from RecordVideo]."""
    from rtrl.run.folder import RunError, check_output_folder, check_target
    from rtrl.training.config import RunConfig

    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    with pytest.raises(RunError, match="--out .*dangling is a symbolic link to .*nowhere, which does not exist"):
        check_target(tmp_path / "dangling", RunConfig(), overwrite=True)
    with pytest.raises(ValueError, match="--video .*dangling is a symbolic link to .*nowhere, which does not exist"):
        check_output_folder(tmp_path / "dangling", "--video")
    assert not (tmp_path / "nowhere").exists()
