"""Small things a newcomer meets first: `rtrl list` (filterable, plain text, every cell it shows taken by --cell),
the help of ``--no-NAME`` switches, and run headers that say what ``auto`` chose."""

import pytest

from rtrl.cells.lookup import cell_name, make_cell
from rtrl.cli import main, parser
from rtrl.rl.assemble import assemble as assemble_rl
from rtrl.rl.config import RLConfig
from rtrl.run.rl import RLRun
from rtrl.run.training import TrainRun
from rtrl.training.assemble import assemble
from rtrl.training.config import RunConfig


def listed(capsys, *argv) -> tuple[list[str], dict[str, list[str]]]:
    """The headings and, under each, the names of its rows (a row's first line starts with two spaces; a long name
    stands alone on its line)."""
    assert main(["list", *argv]) == 0
    out = capsys.readouterr().out
    sections: dict[str, list[str]] = {}
    heading = None
    for line in out.splitlines():
        if not line.startswith(" "):
            heading = line
            sections[heading] = []
        elif not line.startswith("   "):
            sections[heading].append(line.split()[0])
    return out, sections


def test_list_shows_plain_text_and_filters_by_section_and_text(capsys):
    everything, sections = listed(capsys)
    assert "``" not in everything and len(sections) == 8  # rtrl rl: algorithms, update rules
    _, cells = listed(capsys, "cells")
    assert list(cells) == ["cells:"] and cells["cells:"] == sections["cells:"]
    _, some = listed(capsys, "cells", "methods", "--grep", "LIF")
    assert set(some) == {"cells:"} and {"lif", "alif"} <= set(some["cells:"]) and "gru" not in some["cells:"]
    assert main(["list", "--grep", "no such thing anywhere"]) == 2
    assert main(["list", "nonsense"]) == 2
    assert "SECTION must be among" in capsys.readouterr().err


def test_every_cell_that_list_shows_is_taken_by_cell(capsys):
    """``lru_network`` was shown by its bare name, which ``--cell`` refuses: a cell is shown as ``--cell`` takes it."""
    _, sections = listed(capsys, "cells")
    assert any(":" in name for name in sections["cells:"])  # the factory the presets use, by its import path
    for name in sections["cells:"]:
        assert cell_name(name) == name
        cell = make_cell(name, {}, 3, 8)
        assert cell.input_size == 3 and cell.hidden_size == 8


@pytest.mark.parametrize("command, switch, says", [
    ("rl", "--no-normalize-obs", "turn --normalize-obs off (it is on by default)"),
    ("train", "--no-clip", "no --clip at all (instead of the default"),
])
def test_the_help_of_a_no_switch_is_a_sentence(command, switch, says):
    sub = next(a for a in parser()._subparsers._group_actions[0].choices.items() if a[0] == command)[1]
    (action,) = [a for a in sub._actions if switch in a.option_strings]
    assert action.help.startswith(says), action.help
    assert "_" not in action.help


def test_run_headers_say_what_auto_chose(tmp_path):
    train = assemble(RunConfig(task="copy", cell="elman", method="auto", hidden=3))
    assert "| auto (closed_form), update every" in TrainRun(tmp_path, train).describe()
    given = assemble(RunConfig(task="copy", cell="elman", method="rtrl", hidden=3))
    assert "| rtrl, update every" in TrainRun(tmp_path, given).describe()
    rl = assemble_rl(RLConfig(env="tmaze", cell="elman", method="auto", hidden=3))
    assert "elman auto (closed_form) hidden 3" in RLRun(tmp_path, rl).describe()
