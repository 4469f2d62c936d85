"""Option-level refusals of the command line, in process and before anything runs (issue 22's residual audit): an
empty path for any ``--out`` (one argument type, ``rtrl.run.argtypes.path``), ``rtrl bench --out`` a file or a run
folder (refused before the minutes-long benchmarks), an option beside its own ``--no-NAME``, and a key given twice
in ``--task-arg`` / ``--cell-arg`` / ``--env-arg``. Each row is the bad-input table's (``test_cli_bad_input``):
status 2, one line naming the word, nothing under the folder changed.

Mutations tried by hand, each caught: ``type=path`` removed from ``add_run_arguments`` (the train and rl rows run
into the current folder: status 0), from the demo's ``--out`` (likewise) and ``bench_folder`` calling it no more
(bench ``''``: the benchmarks start, which the stub below turns into a failure); ``bench_folder``'s run-folder test
removed (the run-folder row starts the benchmarks); the mutually exclusive group removed from
``add_config_arguments`` (the ``--clip 0.5 --no-clip`` rows train, status 0); the repeated-key test removed from
``parse_options`` (the ``max_length`` rows train, the ``--cell-arg`` row inspects, status 0).
"""

import pytest

from rtrl.benchmarks import suite
from rtrl.cli import parser
from test_cli_bad_input import TINY_ARGS, refused


def a_run_folder(tmp):
    (tmp / "run").mkdir()
    (tmp / "run" / "config.json").write_text("{}")


def a_file(tmp):
    (tmp / "file").write_text("notes")


def nothing(tmp):
    pass


TINY = TINY_ARGS.split()
ROWS = [
    (["train", *TINY, "--out", ""], nothing, "argument --out: must be a path, got an empty one"),
    (["rl", "--steps", "2", "--quiet", "--out", ""], nothing, "argument --out: must be a path"),
    (["demo", "--quiet", "--out", ""], nothing, "argument --out: must be a path"),
    (["bench", "--quick", "--out", ""], nothing, "argument --out: must be a path"),
    (["bench", "--quick", "--out", "run"], a_run_folder, "run is a run folder (it holds config.json)"),
    (["bench", "--quick", "--out", "file"], a_file, "file is a file, not a folder"),
    (["train", *TINY, "--clip", "0.5", "--no-clip", "--out", "new"], nothing,
     "argument --no-clip: not allowed with argument --clip"),
    (["train", *TINY, "--no-clip", "--clip", "0.5", "--out", "new"], nothing,
     "argument --clip: not allowed with argument --no-clip"),
    (["train", *TINY, "--task-arg", "max_length=3", "--task-arg", "max_length=5", "--out", "new"], nothing,
     "--task-arg gives max_length twice (max_length=2 and max_length=3)"),
    (["rl", "--steps", "2", "--env-arg", "length=3", "--env-arg", "length=4", "--out", "new"], nothing,
     "--env-arg gives length twice (length=3 and length=4)"),
    (["inspect", "--cell", "elman", "--cell-arg", "activation=tanh", "--cell-arg", "activation=relu"], nothing,
     "--cell-arg gives activation twice"),
    # a value the cell's, method's or task's own constructor refuses: named as the option it came through
    (["train", *TINY, "--cell", "lif", "--method", "eprop_window", "--method-arg", "chunk=0", "--out", "new"], nothing,
     "argument --method-arg: method 'eprop_window': chunk must be a positive integer, got 0"),
    (["train", *TINY, "--cell", "alif", "--cell-arg", "lif_neurons=50", "--out", "new"], nothing,
     "argument --cell-arg: cell 'alif': lif_neurons must be an integer in 0..hidden_size (3), got 50"),
    # an option the run never reads, given at its default value (construction cannot tell it from one not given)
    (["rl", "--steps", "2", "--algorithm", "q", "--head-init", "glorot", "--out", "new"], nothing,
     "argument --head-init: head_init does nothing here: algorithm 'q' does not read it (only ac); drop it"),
    (["rl", "--steps", "2", "--truncation", "8", "--out", "new"], nothing,
     "argument --truncation: truncation does nothing here: only method tbptt"),
    (["rl", "--steps", "2", "--optimizer", "adam", "--kappa", "2.0", "--out", "new"], nothing,
     "argument --kappa: kappa does nothing here"),
    (["train", *TINY, "--rate-target", "0.01", "--out", "new"], nothing,
     "argument --rate-target: rate_target does nothing here: it shapes the firing-rate regulariser"),
]


def test_a_value_a_constructor_refuses_is_an_option_error_naming_the_option():
    """``make``, the one door every task, cell and method is built through: a ``ValueError`` of the constructor
    becomes an ``OptionError`` of ``KIND_args`` (the command line names ``--KIND-arg``), the kind and name first; an
    ``OptionError`` of its own passes unchanged. [the ``ValueError`` not caught: a bare "pool must divide" naming
    no option, as a bad ``chunk`` was]"""
    from rtrl.config import OptionError, make
    from rtrl.training.tasks import TASKS

    with pytest.raises(OptionError, match=r"^task 'shd': pool must divide 700") as e:
        make("task", TASKS, "shd", {"path": "x.h5", "pool": 3})
    assert e.value.option == "task_args"

    def raises_option_error(**options):
        raise OptionError("inner", "lr")

    with pytest.raises(OptionError, match="^inner$") as e:
        make("thing", {"t": raises_option_error}, "t", {})
    assert e.value.option == "lr"


@pytest.mark.parametrize("argv, setup, word", ROWS, ids=[" ".join(a) for a, *_ in ROWS])
def test_an_option_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch, argv, setup, word):
    def benchmarks_ran(*args, **kwargs):
        raise AssertionError("the benchmarks started: --out was not checked first")

    monkeypatch.setattr(suite, "run", benchmarks_ran)
    monkeypatch.chdir(tmp_path)  # relative --out (and the demo's default) land here
    setup(tmp_path)
    refused(tmp_path, capsys, argv, 2, word)


def test_an_option_the_run_reads_given_at_its_default_and_no_clip_under_a_rule_without_one_are_accepted():
    """Only an option the run never reads is refused when given: ``--kappa`` at its default under ObGD (which reads
    it), ``--truncation 8`` under tbptt, and ``--no-clip`` under ObGD (no clip, as it says) are accepted. [the
    refusal made for every option given at its default, or ``--no-clip`` not excepted: a case raises]"""
    from rtrl.rl.config import RLConfig
    from rtrl.run.options import config_from_args

    cases = {("--optimizer", "obgd", "--kappa", "2.0"): ("kappa", 2.0),
             ("--method", "tbptt", "--truncation", "8"): ("truncation", 8),
             ("--optimizer", "obgd", "--no-clip"): ("clip", None)}
    for argv, (name, value) in cases.items():
        config = config_from_args(parser().parse_args(["rl", *argv, "--out", "o"]), RLConfig)
        assert getattr(config, name) == value


def test_a_negation_repeated_or_alone_is_still_accepted():
    """The group refuses the pair only: ``--no-clip`` twice is no contradiction, ``--clip`` alone is read, and a
    switch beside its negation keeps the usual rule (the last one wins). [The group made for switches too: the
    last assertion fails.]"""
    assert parser().parse_args(["train", "--no-clip", "--no-clip", "--out", "o"]).clip is None
    assert parser().parse_args(["train", "--clip", "0.5", "--out", "o"]).clip == 0.5
    assert parser().parse_args(["rl", "--normalize-obs", "--no-normalize-obs", "--out", "o"]).normalize_obs is False


def test_a_presets_switch_is_turned_off_by_its_no_switch():
    """``popgym-repeat-first`` turns ``extra_inputs`` on; ``--no-extra-inputs`` beside it turns it off (a switch
    that is off by default had no ``--no-`` form, so a preset's could not be undone), and alone it keeps the
    default. [``negated`` back to "a flag that is on": argparse refuses ``--no-extra-inputs``, exit 2]"""
    from rtrl.rl.config import RLConfig
    from rtrl.rl.presets import PRESETS
    from rtrl.run.options import config_from_args

    def config(*argv):
        return config_from_args(parser().parse_args(["rl", *argv, "--out", "o"]), RLConfig, PRESETS)

    assert config("--preset", "popgym-repeat-first").extra_inputs == ("action", "reward")
    assert config("--preset", "popgym-repeat-first", "--no-extra-inputs").extra_inputs == ()
    assert config("--no-extra-inputs").extra_inputs == ()
    assert config("--extra-inputs").extra_inputs == ("action", "reward", "time")


def test_a_presets_optional_value_is_unset_by_its_no_option():
    """``hopper-p`` sets ``critic_lr`` (0.5), whose default is None (one step size for both sides): ``--no-critic-lr``
    beside the preset unsets it, alone it keeps the default, and beside ``--critic-lr`` it is refused as the pair
    contradicts itself. [``negated`` back to "an optional field with a default other than None": argparse refuses
    ``--no-critic-lr``, exit 2]"""
    from rtrl.rl.config import RLConfig
    from rtrl.rl.presets import PRESETS
    from rtrl.run.options import config_from_args
    from rtrl.run.usage import UsageError

    def config(*argv):
        return config_from_args(parser().parse_args(["rl", *argv, "--out", "o"]), RLConfig, PRESETS)

    assert config("--preset", "hopper-p").critic_lr == 0.5
    assert config("--preset", "hopper-p", "--no-critic-lr").critic_lr is None
    assert config("--optimizer", "intentional", "--no-critic-lr").critic_lr is None
    with pytest.raises(UsageError, match="not allowed with argument"):
        parser().parse_args(["rl", "--critic-lr", "0.5", "--no-critic-lr", "--out", "o"])


def test_extra_inputs_take_the_parts_named_in_their_order():
    """``--extra-inputs PARTS`` chooses the extras by name, kept in the order they are appended whatever the order
    given; the flag alone is all three; a name that is no part, or one given twice, is refused naming the flag.
    [the bare flag's const dropped: None; the order kept as given: ('time', 'action')]"""
    from rtrl.rl.config import RLConfig
    from rtrl.rl.presets import PRESETS
    from rtrl.run.options import config_from_args

    def config(*argv):
        return config_from_args(parser().parse_args(["rl", *argv, "--out", "o"]), RLConfig, PRESETS)

    assert config("--extra-inputs", "time").extra_inputs == ("time",)
    assert config("--extra-inputs", "time,action").extra_inputs == ("action", "time")
    assert config("--extra-inputs", "--hidden", "4").extra_inputs == ("action", "reward", "time")
    assert config("--preset", "hopper-p", "--extra-inputs", "reward,time").extra_inputs == ("reward", "time")
    from rtrl.run.usage import UsageError

    for bad in ("velocity", "time,time"):
        with pytest.raises(UsageError, match=r"argument --extra-inputs: must be names from \['action', 'reward', "
                                             r"'time'\].*got '" + bad):
            parser().parse_args(["rl", "--extra-inputs", bad, "--out", "o"])


def test_a_preset_given_twice_is_a_usage_error(tmp_path, capsys):
    """Which preset was meant? (The last one was kept without a word.) [``Once`` not the action: exit 0]"""
    from rtrl.cli import main

    for command in ("train", "rl"):
        preset = {"train": ("copy20", "recall50"), "rl": ("memory-chain", "cartpole-masked")}[command]
        assert main([command, "--preset", preset[0], "--preset", preset[1], "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--preset: given twice" in err[0], err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("value", ["-1e-3", "-1", "-.5", "-2E+1", "-inf"])
def test_a_negative_number_reaches_the_options_own_check(tmp_path, capsys, value):
    """argparse took ``-1e-3`` for an option ("expected one argument"); now the value reaches ``--lr``'s check,
    which names the option and what it must be. [``NEGATIVE_NUMBER`` not set: the first row fails]"""
    from rtrl.cli import main

    assert main(["train", "--lr", value, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"argument --lr: must be a positive finite number, got '{value}'" in err, err
