"""Issue 51's papercuts around using runs: ``rtrl list envs`` (an alias) and the ``popgym:NAME`` / ``gymnasium:ID``
forms, a preset's settings before a run (``rtrl list presets NAME``), ``rtrl resume`` saying where it resumes, and
``rtrl fidelity --help`` showing its defaults."""

import pytest

from rtrl.cli import main
from rtrl.training.presets import PRESETS

TRAIN = ("train --task copy --task-arg max_length=2 --cell elman --hidden 3 --method rtrl --batch 2 --eval-every 4 "
         "--eval-size 4 --quiet --steps {steps} --out {out}")


def test_list_envs_is_list_environments_with_the_popgym_and_gymnasium_forms(capsys):
    assert main(["list", "environments"]) == 0
    full = capsys.readouterr().out
    assert main(["list", "envs"]) == 0
    assert capsys.readouterr().out == full
    assert "  popgym:<Task><Easy|Medium|Hard>\n" in full and "RepeatFirst, CountRecall" in full
    assert "  gymnasium:ID " in full and "any registered Gymnasium environment" in full
    assert main(["list", "environments", "--grep", "gymnasium:"]) == 0
    assert "gymnasium:ID" in capsys.readouterr().out


def test_list_methods_gives_each_method_a_description_of_its_own(capsys):
    """snap1 and snap2 are one class (``SnAp``) with two ``n``: each has its own line, naming its ``n``."""
    assert main(["list", "methods"]) == 0
    out = capsys.readouterr().out
    entries = {}  # name -> its description, the wrapped lines joined
    for line in out.splitlines()[1:]:
        name, text = line[:25].strip(), line[25:].strip()
        if name:
            entries[name] = text
        else:
            entries[list(entries)[-1]] += " " + text
    assert len(set(entries.values())) == len(entries), entries
    assert "SnAp-1: " in entries["snap1"] and "one step" in entries["snap1"]
    assert "SnAp-2: " in entries["snap2"] and "two steps" in entries["snap2"]


def test_list_presets_names_every_option_a_preset_sets(capsys):
    """copy5 sets these options (rtrl.training.presets), each shown as the command line takes it."""
    assert PRESETS["copy5"].options["task_args"] == {"max_length": 5}
    assert main(["list", "presets", "copy5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("copy5 (rtrl train --preset copy5): ")
    assert lines[1:] == ["  --task copy", "  --task-arg max_length=5", "  --hidden 32", "  --batch 16", "  --lr 0.003",
                         "  --steps 6000", "  --cell elman", "  --method closed_form", "  --update-every 1",
                         "  (every other option: its default, `rtrl train --help`)"]
    assert main(["list", "presets", "memory-chain"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("memory-chain (rtrl rl --preset memory-chain): ") and "  --env-arg memory_length=20\n" in out
    assert main(["list", "presets", "no-such-preset"]) == 2
    assert "got 'no-such-preset'" in capsys.readouterr().err


def test_resume_of_a_training_run_says_where_it_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(TRAIN.format(steps=4, out=out).split()) == 0
    assert "resuming" not in capsys.readouterr().out  # a fresh run
    assert main(["resume", str(out), "--steps", "8", "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "resuming at step 4 (its checkpoint), to step 8"
    assert main(["resume", str(out), "--quiet"]) == 0  # finished: nothing to resume
    assert "resuming" not in capsys.readouterr().out


def test_fidelity_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["fidelity", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for said in ("(default: [1, 10, 100])", "(default: 3)", "(default: 16)", "(default: 4)"):
        assert said in text


@pytest.mark.parametrize("command", ["train", "rl"])
def test_the_preset_help_says_where_the_presets_are_shown_not_every_name(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "`rtrl list presets NAME` shows every option NAME sets" in text
    assert "copy20, copy5" not in text and "memory-chain, memory-chain-128" not in text
