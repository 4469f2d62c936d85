"""A cell named by import path (``--cell module:Name``), what a run folder's ``config.json`` may import, and sizes
that cannot fit: each refused before anything is written, in one line (``refused``: exit status, one line on
stderr naming a word, every file byte for byte unchanged, no folder made).

The factories below are the cells the rows name (``--cell test_cells_lookup:NAME``: this folder is on ``sys.path``).
"""

import sys

import jax
import pytest

from rtrl import devices
from rtrl.cells import Elman
from rtrl.cells import lookup as configs
from rtrl.cli import main
from rtrl.run.folder import Run, read_config
from rtrl.run.training import TrainRun
from rtrl.training.assemble import assemble, state_bytes
from rtrl.training.config import RunConfig
from test_cli_bad_input import TINY_ARGS, copy_run, edit_config, nothing, refused, snapshot

HERE = "test_cells_lookup"
USER_TINY = {"task": "copy", "task_args": {"max_length": 2}, "cell": f"{HERE}:tiny", "hidden": 3,
             "method": "closed_form", "batch": 2, "lr": 0.05, "eval_every": 4, "eval_size": 8, "steps": 8}


# -- cells a user might name ---------------------------------------------------------------------------------------
def tiny(input_size, hidden_size, activation="tanh"):
    """A well-behaved factory: an Elman cell."""
    return Elman(input_size, hidden_size, activation=activation)


def wrong_input(input_size, hidden_size):
    return Elman(input_size + 1, hidden_size)


def wrong_hidden(input_size, hidden_size):
    return Elman(input_size, hidden_size + 1)


def raises(input_size, hidden_size):
    raise RuntimeError("the constructor failed\nover two lines")


def exits(input_size, hidden_size):
    sys.exit("a constructor that ends the program")


def returns_none(input_size, hidden_size):
    return None


class WideStep(Elman):
    """Steps to an h twice as wide as its hidden size."""

    def step(self, params, carry, x):
        carry, h = super().step(params, carry, x)
        return carry, jax.numpy.concatenate([h, h], -1)


class BadInit(Elman):
    def init(self, key, dtype=None):
        raise KeyError("W")


# -- a run folder whose config.json names a user's cell ------------------------------------------------------------
@pytest.fixture(scope="module")
def user_run(tmp_path_factory):
    """A run of ``--cell test_cells_lookup:tiny``, not started (its config.json: what every row here reads first)."""
    path = tmp_path_factory.mktemp("user") / "run"
    Run.create(path, USER_TINY)
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run of the registered Elman cell, not started (the rows edit its config.json)."""
    from test_cli_bad_input import TINY

    path = tmp_path_factory.mktemp("trained") / "run"
    Run.create(path, TINY)
    return path


def copy_user_run(tmp, user_run):
    copy_run(tmp, user_run)


CELL_ROWS = [
    # not a cell class or factory, or nothing there
    ("train --cell os:getcwd --out {tmp}/new", nothing, 2, "--cell"),
    ("train --cell jax.numpy:zeros --out {tmp}/new", nothing, 2, "--cell"),
    ("train --cell equinox.nn:MLP --out {tmp}/new", nothing, 2, "--cell"),
    ("train --cell test_cells_lookup:returns_none --out {tmp}/new", nothing, 2, "neither a cell class"),
    ("train --cell test_cells_lookup:raises --out {tmp}/new", nothing, 2, "RuntimeError: the constructor failed"),
    ("train --cell test_cells_lookup:BadInit --out {tmp}/new", nothing, 2, "KeyError"),
    ("train --cell rtrl.cells:Cell --out {tmp}/new", nothing, 2, "NotImplementedError"),
    ("train --cell rtrl.cells.adapters:AdaptedCell --out {tmp}/new", nothing, 2, "--cell"),
    ("train --cell no.such.module:Cell --out {tmp}/new", nothing, 2, "cannot import"),
    ("train --cell rtrl.cells:Nope --out {tmp}/new", nothing, 2, "cannot import"),
    ("train --cell :Elman --out {tmp}/new", nothing, 2, "module.path:Name"),
    ("train --cell rtrl.cells: --out {tmp}/new", nothing, 2, "module.path:Name"),
    # options it does not take
    ("train --cell flax.linen:GRUCell --cell-arg nope=1 --out {tmp}/new", nothing, 2, "--cell-arg"),
    ("train --cell equinox.nn:GRUCell --cell-arg nope=1 --out {tmp}/new", nothing, 2, "--cell-arg"),
    ("train --cell test_cells_lookup:tiny --cell-arg nope=1 --out {tmp}/new", nothing, 2, "--cell-arg"),
    ("train --cell test_cells_lookup:tiny --cell-arg hidden_size=4 --out {tmp}/new", nothing, 2, "no option"),
    ("train --cell test_cells_lookup:tiny --cell-arg activation=3 --out {tmp}/new", nothing, 2, "activation"),
    # sizes that contradict the task or the options, a step of the wrong shape
    ("train --cell test_cells_lookup:wrong_input --out {tmp}/new", nothing, 2, "input"),
    ("train --cell test_cells_lookup:wrong_hidden --out {tmp}/new", nothing, 2, "hidden size"),
    ("train --cell test_cells_lookup:WideStep --out {tmp}/new", nothing, 2, "must step one example"),
    # the same in the other commands that build a cell
    ("rl --cell equinox.nn:MLP --out {tmp}/new", nothing, 2, "--cell"),
    ("rl --cell rtrl.cells:Cell --out {tmp}/new", nothing, 2, "NotImplementedError"),
    ("rl --cell test_cells_lookup:wrong_input --out {tmp}/new", nothing, 2, "input"),
    ("rl --cell test_cells_lookup:tiny --cell-arg nope=1 --out {tmp}/new", nothing, 2, "--cell-arg"),
    ("inspect --cell os:getcwd", nothing, 2, "os:getcwd"),
    ("inspect --cell rtrl.cells:Cell", nothing, 2, "NotImplementedError"),
    ("inspect --cell test_cells_lookup:wrong_hidden", nothing, 2, "hidden size"),
    ("inspect --cell test_cells_lookup:exits", nothing, 2, "SystemExit"),
    ("inspect --cell elman --hidden 3000000000", nothing, 2, "--hidden"),
    ("resume {run}", edit_config(cell="equinox.nn:MLP"), 2, "building the cell"),
    ("resume {run}", edit_config(cell="rtrl.cells:Cell"), 2, "NotImplementedError"),
    ("resume {run}", edit_config(cell_args={"nope": 1}), 2, "no option"),
    # config.json names code that the user did not allow: refused before it is imported
    ("resume {run}", edit_config(cell="os:system"), 2, "--allow-import os:system"),
    ("resume {run}", edit_config(cell="test_cells_lookup:tiny"), 2, "RTRL_ALLOW_IMPORT"),
    ("resume {run}", edit_config(cell="rtrl.cells.adapters:from_import_path"), 2, "--allow-import"),
    ("resume {run}", edit_config(cell="equinox:filter_jit"), 2, "--allow-import"),
    ("resume {run} --allow-import os:getcwd", edit_config(cell="os:system"), 2, "--allow-import os:system"),
    ("resume {run}", copy_user_run, 2, "--allow-import test_cells_lookup:tiny"),
    ("resume {run} --allow-import test_cells_lookup", copy_user_run, 2, "--allow-import"),
    # plot imports nothing (it reads the metrics): these folders, never started, are refused for having none
    ("plot {run} --out {tmp}/x.png", copy_user_run, 2, "no metrics yet"),
    ("plot {run} {run} --out {tmp}/x.png", edit_config(cell="os:system"), 2, "no metrics yet"),
    ("train {tiny} --out {run}", copy_user_run, 2, "--allow-import"),
    ("train {tiny} --cell test_cells_lookup:wrong_input --out {run}", copy_user_run, 2, "input"),
    # sizes out of range or beyond any memory
    ("train --hidden 99999999999999999999 --out {tmp}/new", nothing, 2, "--hidden"),
    ("train --batch 2147483648 --out {tmp}/new", nothing, 2, "--batch"),
    ("train --steps 2000000000 --out {tmp}/new", nothing, 2, "2**30"),
    ("train --eval-every 2000000000 --out {tmp}/new", nothing, 2, "2**30"),
    ("train --hidden 100000 --out {tmp}/new", nothing, 2, "needs at least"),
    ("train --batch 100000000 --out {tmp}/new", nothing, 2, "--batch"),
    ("train --method bptt --hidden 3 --batch 2000000000 --out {tmp}/new", nothing, 2, "memory"),
    ("rl --hidden 100000 --out {tmp}/new", nothing, 2, "needs at least"),
    ("rl --envs 100000000 --out {tmp}/new", nothing, 2, "--envs"),
    ("rl --hidden 99999999999999999999 --out {tmp}/new", nothing, 2, "--hidden"),
    ("rl --method tbptt --truncation 1000000000 --out {tmp}/new", nothing, 2, "--truncation"),
    ("rl --fidelity-every 1 --env-arg length=100000000 --out {tmp}/new", nothing, 2, "needs at least"),
]


@pytest.mark.parametrize("command, setup, status, word", CELL_ROWS,
                         ids=[f"{c} [{getattr(s, '__name__', '')}]" for c, s, _, _ in CELL_ROWS])
def test_a_bad_cell_or_size_is_one_line_and_changes_nothing(tmp_path, trained, user_run, capsys, monkeypatch,
                                                           command, setup, status, word):
    """[``from_import_path`` without its catch-all around the constructor: the ``os:getcwd``, ``raises`` and
    ``MLP`` rows fail with a traceback; without ``check_imported_cell``: ``rtrl.cells:Cell`` left config.json and .lock
    behind; ``from_dict`` without ``check_importable``: the ``os:system`` row ran ``os.system(3, 3)`` and the
    ``test_cells_lookup:tiny`` rows resumed; ``is_trusted`` taking any callable of a trusted module: the
    ``from_import_path`` and ``filter_jit`` rows fail; ``fits`` not called: the memory rows made the
    folder and failed in XLA]"""
    monkeypatch.delenv(configs.ALLOW_IMPORT, raising=False)
    monkeypatch.chdir(tmp_path)
    setup(tmp_path, user_run if setup is copy_user_run else trained)
    refused(tmp_path, capsys, command.format(tmp=tmp_path, run=tmp_path / "run", tiny=TINY_ARGS).split(), status,
            word)


def test_a_run_of_a_users_cell_resumes_when_the_user_names_it_again(tmp_path, user_run, capsys, monkeypatch):
    """The same folder: refused above without a word from the user; with ``--allow-import`` it is trained, and
    with the same ``--cell`` on ``rtrl train`` or the environment variable it is read (continued: already
    finished; plotted), nothing changed. [``allowed_imports`` not entered by ``cmd_resume``: the first call exits
    2; by ``Run.create``: the second]"""
    monkeypatch.delenv(configs.ALLOW_IMPORT, raising=False)
    run = tmp_path / "run"
    copy_run(tmp_path, user_run)
    assert main(["resume", str(run), "--quiet", "--allow-import", f"{HERE}:tiny"]) == 0, capsys.readouterr().err
    before = snapshot(run)
    assert main(f"train {TINY_ARGS} --steps 8 --cell {HERE}:tiny --out {run}".split()) == 0, capsys.readouterr().err
    monkeypatch.setenv(configs.ALLOW_IMPORT, f"os:getcwd, {HERE}:tiny")
    assert main(["plot", str(run), "--out", str(tmp_path / "x.png")]) == 0, capsys.readouterr().err
    assert (tmp_path / "x.png").stat().st_size > 0
    assert {k: v for k, v in snapshot(run).items() if k != "curve.png"} == \
        {k: v for k, v in before.items() if k != "curve.png"}


def test_what_a_run_folder_may_import_without_the_user(tmp_path, monkeypatch):
    """Cell classes of rtrl.cells and of Flax's and Equinox's own modules; nothing else, and a module outside
    those is never imported to find out. [``is_trusted`` importing the module before checking its name: the
    marker file appears]"""
    monkeypatch.delenv(configs.ALLOW_IMPORT, raising=False)
    marker = tmp_path / "imported"
    (tmp_path / "sneaky_cells.py").write_text(f"open({str(marker)!r}, 'w').close()\nfrom rtrl.cells import Elman\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for path in ("rtrl.cells:Elman", "rtrl.cells.gru:GRU", "flax.linen:GRUCell", "flax.nnx:GRUCell",
                 "equinox.nn:GRUCell"):
        assert configs.importable(path), path
    for path in ("os:system", "rtrl.cells:activation", "rtrl.cells.adapters:from_function", "flax.linen:jit",
                 "equinox:filter_jit", "rtrl.cells:Nope", "rtrl.cells.lookup:make_cell", f"{HERE}:tiny",
                 "rtrl.cellsX:Elman", "sneaky_cells:Elman"):
        assert not configs.importable(path), path
    assert "sneaky_cells" not in sys.modules and not marker.exists()
    with configs.allowed_imports([f"{HERE}:tiny"]):
        assert configs.importable(f"{HERE}:tiny") and not configs.importable(f"{HERE}:raises")
    assert not configs.importable(f"{HERE}:tiny")
    monkeypatch.setenv(configs.ALLOW_IMPORT, f"os:getcwd,{HERE}:tiny")
    assert configs.importable(f"{HERE}:tiny") and not configs.importable("os:system")


def test_the_python_api_reads_back_the_cell_it_names(tmp_path, monkeypatch):
    """``Run.create`` of a user's cell into its own folder again continues it (the caller names the cell now);
    a folder of another cell is still refused. [``Run.create`` reading back without ``allowed_imports``: fails]"""
    monkeypatch.delenv(configs.ALLOW_IMPORT, raising=False)
    Run.create(tmp_path / "run", USER_TINY)
    assert Run.create(tmp_path / "run", {**USER_TINY, "steps": 16}).config.cell == f"{HERE}:tiny"
    with pytest.raises(ValueError, match="--allow-import test_cells_lookup:tiny"):
        Run.create(tmp_path / "run", {**USER_TINY, "cell": "elman"})


def test_an_old_config_json_of_a_registered_cell_still_reads(trained):
    """config.json files written before this change carry no new field: one of a registered cell reads as it
    did, with no flag."""
    assert read_config(trained).cell == "elman"


def test_memory_is_checked_against_what_the_machine_has(monkeypatch):
    """The boundary, with the machine's memory given: exactly enough passes, one byte short is refused naming
    both figures. [``>`` in ``check_memory`` made ``>=``: the first call raises]"""
    monkeypatch.setattr(devices, "available_memory", lambda devices=1: (1000, "available (test)"))
    devices.check_memory(1000)
    with pytest.raises(ValueError, match=r"needs at least 1,001 bytes.*has 1,000 bytes available \(test\)"):
        devices.check_memory(1001)


def test_the_memory_estimate_is_a_lower_bound_of_the_trainers_state():
    """``state_bytes`` (what ``fits`` compares) never exceeds the bytes of the state the trainer really makes, so
    a run that fits is never refused for it; and it counts the traces, batch times what ``rtrl.inspect`` says.
    [traces counted once per stream twice: the first assertion fails; the batch left out: the second fails]"""
    import rtrl

    parts = assemble(RunConfig(task="copy", task_args={"max_length": 2}, hidden=5, method="rtrl", batch=3,
                               eval_size=4))
    config, task, cell, method = parts
    state = parts.trainer().init()
    real = sum(a.nbytes for a in jax.tree.leaves(state))
    estimate = state_bytes(cell, method, config.batch, config.update_every)
    assert estimate <= real
    traces = rtrl.inspect(cell).memory["rtrl"] * 8  # float64 under the tests
    assert estimate >= config.batch * traces


def test_running_out_of_memory_outside_a_run_is_one_line(capsys, monkeypatch):
    """numpy's own MemoryError (``rtrl inspect`` of a huge cell probes real arrays) is one line, exit 2.
    [the out-of-memory branch of ``rtrl.cli.main`` removed: a traceback]"""
    import rtrl

    def huge(cell, params=None):
        raise MemoryError("Unable to allocate 95.4 GiB for an array with shape (32, 20000, 20000)")

    monkeypatch.setattr(rtrl, "inspect", huge)
    assert main(["inspect", "--cell", "elman"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rtrl: error: out of memory: Unable to allocate 95.4 GiB"), err


def test_running_out_of_memory_while_training_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    """What the estimate cannot foresee (XLA's RESOURCE_EXHAUSTED at run time, or a MemoryError): one line, exit 2,
    and the run this command made is gone again, folders and all. [``start`` without the ``OutOfMemory``
    clean-up: config.json, .lock and three folders are left]"""
    from jax.errors import JaxRuntimeError

    monkeypatch.setattr(TrainRun, "load", lambda self: (None, 0.0))  # no compilation: the failure comes at once
    for error in (MemoryError(), JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 2045 bytes.\nmore")):
        def fail(self, *args, error=error):
            raise error

        monkeypatch.setattr(TrainRun, "fit", fail)
        out = tmp_path / "a" / "b" / "run"
        code = main(f"train {TINY_ARGS} --out {out}".split())
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert "out of memory" in err and "nothing was kept" in err
        assert list(tmp_path.iterdir()) == []
