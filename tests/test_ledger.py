"""``rtrl.ledger``: a results folder's runs.jsonl read line by line with every damage named (file, line, field),
written atomically without NaN, and locked against a second writer."""

import json
import math
import os
import re

import pytest

from rtrl import ledger
from rtrl.ledger import LedgerError

FIELDS = {"task": ledger.text, "row": ledger.text, "finals": ledger.numbers_or_none, "wall_s": ledger.number}
GOOD = {"task": "RepeatPrevious", "row": "rtrl", "finals": [0.5, None, -1], "wall_s": 3.5}


def key(row):
    return row["task"], row["row"]


def write_lines(path, *lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_a_missing_ledger_has_no_rows_and_good_rows_read_back_in_order(tmp_path):
    assert ledger.read(tmp_path / "runs.jsonl", FIELDS) == []
    other = {**GOOD, "row": "memoryless"}
    path = write_lines(tmp_path / "runs.jsonl", json.dumps(GOOD), "", json.dumps(other))  # blank lines pass
    assert ledger.read(path, FIELDS, key) == [GOOD, other]


@pytest.mark.parametrize("line, expected", [
    ('{"task": "RepeatPrevious", "row": "rt', "line 2: not a JSON object"),  # torn write
    ("garbage", "line 2: not a JSON object"),
    ("[1, 2]", "line 2: expected a JSON object, got list"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "finals"}), "line 2: the field 'finals' is missing"),
    (json.dumps({**GOOD, "wall_s": "3.5"}), "line 2: the field 'wall_s' must be a finite number, got '3.5'"),
    (json.dumps({**GOOD, "wall_s": True}), "line 2: the field 'wall_s' must be a finite number"),
    (json.dumps({**GOOD, "finals": [0.5, "x"]}), "line 2: the field 'finals' must be a list of finite numbers"),
    ('{"task": "A", "row": "rtrl", "finals": [NaN], "wall_s": 1}', "line 2: finals[0] is NaN or infinite"),
    ('{"task": "A", "row": "rtrl", "finals": [1], "wall_s": Infinity}', "line 2: wall_s is NaN or infinite"),
    # a key given twice: refused as the module says, not read as its last value
    ('{"task": "A", "row": "rtrl", "finals": [1], "wall_s": 1, "wall_s": 2}', "line 2: the key 'wall_s' is given "
                                                                              "twice; not a result"),
    ("\ufeff" + json.dumps({**GOOD, "row": "x"}), "line 2: it starts with a UTF-8 byte-order mark"),  # not torn
    ("[" * 100_000 + "]" * 100_000, "line 2: its values nest too deeply to be read"),  # not a RecursionError
    (json.dumps(GOOD), "line 2: repeats the row of line 1 (('RepeatPrevious', 'rtrl'))"),
])
def test_every_damaged_line_is_one_error_naming_the_file_the_line_and_the_field(tmp_path, line, expected):
    path = write_lines(tmp_path / "runs.jsonl", json.dumps(GOOD), line)
    with pytest.raises(LedgerError) as e:
        ledger.read(path, FIELDS, key)
    assert str(e.value).startswith(f"{path}, {expected}")


def test_a_row_the_reader_does_not_know_is_refused_with_the_readers_reason(tmp_path):
    path = write_lines(tmp_path / "runs.jsonl", json.dumps({**GOOD, "task": "Chess"}))
    with pytest.raises(LedgerError, match=r"line 1: unknown task 'Chess'"):
        ledger.read(path, FIELDS, known=lambda r: f"unknown task {r['task']!r}" if r["task"] == "Chess" else None)


def test_a_folder_where_the_ledger_belongs_is_refused_by_name(tmp_path):
    (tmp_path / "runs.jsonl").mkdir()
    with pytest.raises(LedgerError, match="runs.jsonl: expected a file"):
        ledger.read(tmp_path / "runs.jsonl", FIELDS)


def test_write_is_whole_lines_and_refuses_a_non_finite_number(tmp_path):
    path = tmp_path / "runs.jsonl"
    ledger.write(path, [GOOD])
    assert path.read_text() == json.dumps(GOOD) + "\n"
    with pytest.raises(ValueError):
        ledger.write(path, [{**GOOD, "wall_s": math.nan}])
    assert path.read_text() == json.dumps(GOOD) + "\n"  # the old ledger is untouched


def test_a_second_writer_is_refused_while_the_first_holds_the_lock_and_admitted_after(tmp_path):
    with ledger.locked(tmp_path):
        with pytest.raises(LedgerError, match="another command is writing these results"):
            with ledger.locked(tmp_path):
                pass
    with ledger.locked(tmp_path):  # released: the next command goes ahead
        pass


def test_a_number_json_reads_as_infinite_a_bool_for_an_integer_and_bytes_not_utf8_are_refused(tmp_path):
    """``1e999`` is a valid JSON number that Python reads as inf: not a result; ``true`` where an integer belongs
    (``whole``) is not one; ``{}`` and ``[]`` only where an object or a list belongs; a line of bytes that are not
    UTF-8 (a torn multi-byte write) is named by its line, never a raw UnicodeDecodeError. [guards: ``number``
    without ``isfinite``; ``whole`` taking bools; the file opened without ``errors="replace"``]"""
    fields = {**FIELDS, "seeds": ledger.whole, "options": ledger.a_dict, "steps": ledger.a_list}
    good = {**GOOD, "seeds": 3, "options": {"lr": 0.1}, "steps": [10, 20]}
    path = write_lines(tmp_path / "runs.jsonl", json.dumps(good))
    assert ledger.read(path, fields, key) == [good]
    for line, expected in [
        ('{"task": "A", "row": "rtrl", "finals": [1], "wall_s": 1e999, "seeds": 3, "options": {}, "steps": []}',
         "the field 'wall_s' must be a finite number, got inf"),
        ('{"task": "A", "row": "rtrl", "finals": [-1e999], "wall_s": 1, "seeds": 3, "options": {}, "steps": []}',
         "the field 'finals' must be a list of finite numbers (or null), got [-inf]"),
        (json.dumps({**good, "row": "b", "seeds": True}), "the field 'seeds' must be an integer, got True"),
        (json.dumps({**good, "row": "b", "seeds": 3.0}), "the field 'seeds' must be an integer, got 3.0"),
        (json.dumps({**good, "row": "b", "options": []}), "the field 'options' must be an object, got []"),
        (json.dumps({**good, "row": "b", "steps": {}}), "the field 'steps' must be a list, got {}"),
    ]:
        path = write_lines(tmp_path / "runs.jsonl", json.dumps(good), line)
        with pytest.raises(LedgerError) as e:
            ledger.read(path, fields, key)
        assert str(e.value) == f"{path}, line 2: {expected}"
    path = tmp_path / "runs.jsonl"
    path.write_bytes(json.dumps(good).encode() + b"\n" + b'{"task": "\xff\xfe' + b"\n")
    with pytest.raises(LedgerError, match=r"runs.jsonl, line 2: not a JSON object"):
        ledger.read(path, fields, key)
    accented = json.dumps({**good, "row": "\u00e9"}, ensure_ascii=False)
    path.write_bytes((json.dumps(good) + "\n" + accented + "\n").encode())
    assert ledger.read(path, fields, key)[1]["row"] == "\u00e9"  # UTF-8 itself reads


def test_a_second_writer_is_refused_at_once_not_after_waiting(tmp_path):
    """The lock is tried once (``timeout=0``): the refusal comes in well under the half second a wait of even one
    second would take. [guards: a lock that waits for the first writer: a command that hangs, or is refused late]"""
    import time

    with ledger.locked(tmp_path):
        start = time.monotonic()
        with pytest.raises(LedgerError, match="another command is writing these results"):
            with ledger.locked(tmp_path):
                pass
        assert time.monotonic() - start < 0.5


@pytest.mark.parametrize("value, ok", [
    ([{"step": 1, "wall_s": 2.0, "return": None}], True),
    ([{"step": 1, "wall_s": 2.0, "return": 0.5, "return_per_seed": [0.5, None], "cos_value": 0.9}], True),
    ([], False),  # no records: table() took records[-1], an IndexError
    ([{"step": 1, "wall_s": 2.0}], False),  # no return
    ([{"step": 1.5, "wall_s": 2.0, "return": 1}], False),
    ([{"step": 1, "wall_s": None, "return": 1}], False),
    ([{"step": 1, "wall_s": 1, "return": 1, "cos_value": "high"}], False),
    ([{"step": 1, "wall_s": 1, "return": 1}, 3], False),
])
def test_a_runs_records_are_a_non_empty_list_of_records(value, ok):
    assert ledger.records(value) is ok


def test_an_rl_results_row_without_records_is_one_line_not_a_traceback(tmp_path, capsys):
    from rtrl.cli import main

    line = {"kind": "rl", "table": "memory-chain", "row": "rtrl", "seed": 0, "options": {}, "records": []}
    write_lines(tmp_path / "runs.jsonl", json.dumps(line))
    assert main(["results", "rl", "--out", str(tmp_path), "--seeds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and "line 1: the field 'records' must be a non-empty list of records" in err


def test_a_results_folder_that_cannot_be_one_is_refused_before_anything_is_made(tmp_path):
    """``--out`` a file, under a file, empty, or a link to nothing: one ``LedgerError`` saying which ("s: File
    exists", "No such file or directory" before); a new nested folder is made."""
    (tmp_path / "file").write_text("x")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    for folder, said in ((tmp_path / "file", "is a file, not a folder"),
                         (tmp_path / "file" / "sub", f"{tmp_path / 'file'} is a file, not a folder"),
                         ("", "--out must name a folder for the results, got ''"),
                         (tmp_path / "dangling", "is a symbolic link to")):
        with pytest.raises(LedgerError, match=re.escape(said)):
            ledger.make_folder(folder)
    assert not (tmp_path / "nowhere").exists() and (tmp_path / "file").read_text() == "x"
    assert ledger.make_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b" and (tmp_path / "a" / "b").is_dir()


def test_a_runners_python_m_entry_says_a_ledger_error_in_one_line(capsys):
    def damaged():
        raise LedgerError("runs.jsonl, line 3: not a JSON object")

    assert ledger.entry(damaged) == 2
    assert capsys.readouterr().err == "error: runs.jsonl, line 3: not a JSON object\n"
    assert ledger.entry(lambda: None) == 0 and ledger.entry(lambda: 130) == 130


def test_an_atomic_write_onto_a_folder_names_the_folder_not_a_temporary_file(tmp_path):
    from rtrl.files import atomic_write_text

    (tmp_path / "suite.md").mkdir()
    with pytest.raises(IsADirectoryError, match=re.escape(f"a folder is there, not a file: '{tmp_path / 'suite.md'}'")):
        atomic_write_text(tmp_path / "suite.md", "table")
    assert os.listdir(tmp_path / "suite.md") == [] and sorted(os.listdir(tmp_path)) == ["suite.md"]
