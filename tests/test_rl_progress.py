"""``rtrl.rl.train`` from Python says how far it is on standard error (``rtrl.rl.progress``): a bar on a terminal,
else a line per record at most every few seconds and the last; ``quiet=True`` says nothing."""

from __future__ import annotations

import io

from rtrl import rl
from rtrl.rl.progress import Progress

TINY = rl.RLConfig(env="tmaze", hidden=4, envs=2, steps=20, record_every=10)


def test_train_says_its_progress_on_standard_error_by_default(capsys):
    records = rl.train(TINY)[1]
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    # pytest's standard error is no terminal: a line per record (the first, and the last whatever the time)
    assert [line.split(":")[1] for line in lines] == [" step 10 of 20", " step 20 of 20"], lines
    assert lines[-1].startswith("rtrl.rl.train: step 20 of 20: return ") and "episodes)" in lines[-1]
    assert [r["step"] for r in records] == [10, 20]


def test_quiet_says_nothing(capsys):
    rl.train(TINY, quiet=True)
    assert capsys.readouterr() == ("", "")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_bar_with_the_last_return():
    stream = Terminal()
    shown = Progress(30, stream=stream)
    shown.chunk(None, 10)
    shown.record(None, {"step": 10, "return": 0.5, "episodes": 3})
    shown.close()
    text = stream.getvalue()
    assert "rtrl.rl.train" in text and "10/30" in text and "return 0.5 (3 episodes)" in text


def test_elsewhere_a_line_at_most_every_every_s_and_the_last():
    stream = io.StringIO()
    shown = Progress(30, stream=stream, every_s=3600.0)
    for step in (10, 20, 30):
        shown.record(None, {"step": step, "return": None, "episodes": 0, "cos_value": 0.25})
    assert stream.getvalue().splitlines() == [
        "rtrl.rl.train: step 10 of 30: return - (0 episodes) cos_value 0.25",
        "rtrl.rl.train: step 30 of 30: return - (0 episodes) cos_value 0.25",
    ]
