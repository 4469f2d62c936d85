"""Small things a newcomer meets first: `rtrl list` (filterable, plain text, every cell it shows taken by --cell),
the help of ``--no-NAME`` switches, and run headers that say what ``auto`` chose."""

import pytest

from rtrl.cells.lookup import cell_name, make_cell
from rtrl.cli import main, parser
from rtrl.rl.assemble import assemble as assemble_rl
from rtrl.rl.config import RLConfig
from rtrl.rl.presets import PRESETS as RL_PRESETS
from rtrl.run.options import config_from_args
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
    ("rl", "--no-extra-inputs", "turn --extra-inputs off (where a preset turns it on)"),
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


def test_train_and_rl_default_to_the_same_method_and_their_headers_say_what_it_chose(tmp_path):
    """``rtrl train`` defaulted to ``rtrl`` and ``rtrl rl`` to ``auto``: one default now, read from the parsers."""
    train_config = config_from_args(parser().parse_args(["train", "--out", str(tmp_path / "t")]))
    rl_config = config_from_args(parser().parse_args(["rl", "--out", str(tmp_path / "r")]), RLConfig, RL_PRESETS)
    assert train_config.method == rl_config.method == "auto"
    train = assemble(RunConfig(task="copy", cell="gru", hidden=3))  # a dense cell: auto is dense RTRL
    assert "| auto (rtrl), update every" in TrainRun(tmp_path, train).describe()
    rl = assemble_rl(RLConfig(env="tmaze", cell="elman", hidden=3))
    assert "elman auto (closed_form) hidden 3" in RLRun(tmp_path, rl).describe()


@pytest.mark.parametrize("env, says", [("gymnasium:CartPole-v1", True), ("tmaze", False)])
def test_a_resumed_run_on_host_environments_says_they_are_re_seeded(tmp_path, capsys, env, says):
    """A host environment's state is not in the checkpoint: its resumed run re-seeds the environments (a new
    episode in each) and says so in one line; a jitted one resumes bit for bit and says nothing."""
    if env.startswith("gymnasium:"):
        pytest.importorskip("gymnasium")
    out = tmp_path / "run"
    assert main(["rl", "--env", env, "--steps", "8", "--hidden", "3", "--envs", "2", "--record-every", "4",
                 "--fidelity-every", "0", "--quiet", "--out", str(out)]) == 0
    assert "re-seeded" not in capsys.readouterr().out  # a fresh run
    assert main(["resume", str(out), "--steps", "12", "--quiet"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "re-seeded" in line]
    assert len(lines) == int(says)
    if says:
        assert lines[0].startswith("resuming at step 8 (its checkpoint) on a host environment (gymnasium:CartPole-v1)")
    assert main(["resume", str(out), "--quiet"]) == 0  # finished: nothing is resumed, nothing to say
    assert "re-seeded" not in capsys.readouterr().out
