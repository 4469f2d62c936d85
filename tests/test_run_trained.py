"""``rtrl.load(run_dir)`` (the trained cell and its parameters from a run folder, an RL run's torso) and ``rtrl export
RUN --nir FILE``; a run folder is untrusted: ``load`` imports no code it names that ``rtrl resume`` would not."""

import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rtrl
from rtrl.cli import main
from rtrl.run.folder import RunError

TRAIN = ("train --task copy --task-arg max_length=2 --cell {cell} --hidden 3 --method rtrl --batch 2 --lr 0.05 "
         "--eval-every 4 --eval-size 8 --quiet --steps 8 --out {out}")
RL = "rl --env tmaze --env-arg length=2 --hidden 4 --envs 2 --record-every 20 --steps 40 --seed 3 --quiet --out {out}"


def checkpointed(path, prefix: str) -> dict[str, np.ndarray]:
    """The arrays of the run's checkpoint under ``prefix`` (``.params['cell']``), read with NumPy alone, by the
    name each leaf is stored under."""
    with np.load(path / "checkpoint.npz") as data:
        return {name[len(prefix):]: data[name] for name in data.files if name.startswith(prefix)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for command in (TRAIN.format(cell="lif", out=root / "lif"), RL.format(out=root / "rl")):
        assert main(command.split()) == 0
    return root


def test_a_training_run_gives_its_cell_and_the_cells_trained_parameters(runs):
    trained = rtrl.load(runs / "lif")
    cell, params = trained  # unpacks as (cell, params)
    assert cell is trained.cell and params is trained.params
    assert isinstance(cell, rtrl.cells.LIF) and (cell.input_size, cell.hidden_size) == (3, 3)
    stored = checkpointed(runs / "lif", ".params['cell']")
    assert set(stored) == {f"['{k}']" for k in params}
    for name, value in params.items():
        np.testing.assert_array_equal(np.asarray(value), stored[f"['{name}']"])
    assert trained.step == 8 and trained.config.steps == 8 and trained.config.cell == "lif"
    assert set(trained.model_params) == {"cell", "readout"}
    h = cell.step(params, cell.initial_carry((2,)), jnp.ones((2, 3)))[1]  # usable as is
    assert h.shape == (2, 3)


def test_an_rl_run_gives_its_torso(runs):
    trained = rtrl.load(str(runs / "rl"))
    stored = checkpointed(runs / "rl", ".params['torso']")
    assert set(stored) == {f"['{k}']" for k in trained.params}
    for name, value in trained.params.items():
        np.testing.assert_array_equal(np.asarray(value), stored[f"['{name}']"])
    assert trained.cell.hidden_size == 4 and trained.step == 40
    assert set(trained.model_params) == {"torso", "policy", "value"}


def test_a_run_folder_naming_foreign_code_is_refused_without_importing_it(runs, tmp_path, monkeypatch):
    """A config.json edited to name a cell by an import path that is not rtrl's, Flax's or Equinox's: refused, and
    the module is never imported (it would leave a file behind)."""
    marker = tmp_path / "imported"
    (tmp_path / "evil_cell.py").write_text(f"open({str(marker)!r}, 'w').close()\nCell = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.json", "metrics.jsonl", "checkpoint.npz"):
        (run / name).write_bytes((runs / "lif" / name).read_bytes())
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "cell": "evil_cell:Cell"}))
    with pytest.raises(RunError, match="evil_cell:Cell.*--allow-import"):
        rtrl.load(run)
    assert not marker.exists() and "evil_cell" not in sys.modules


def test_bad_input_is_one_clear_error(runs, tmp_path):
    with pytest.raises(RunError, match="holds no run"):
        rtrl.load(tmp_path)
    with pytest.raises(TypeError, match="run_dir must be a path"):
        rtrl.load(3)
    with pytest.raises(TypeError, match="allow_import must be a list"):
        rtrl.load(runs / "lif", allow_import="mod:Cell")
    run = tmp_path / "started"
    run.mkdir()
    (run / "config.json").write_bytes((runs / "lif" / "config.json").read_bytes())
    with pytest.raises(RunError, match="no checkpoint.npz"):
        rtrl.load(run)


def test_export_writes_the_trained_lif_as_nir_and_it_reads_back_with_the_same_output(runs, tmp_path, capsys):
    nir = pytest.importorskip("nir")
    from rtrl.export import from_nir

    out = tmp_path / "lif.nir"
    assert main(["export", str(runs / "lif"), "--nir", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    cell, params = rtrl.load(runs / "lif")
    back, back_params = from_nir(nir.read(out))
    xs = jax.random.normal(jax.random.PRNGKey(1), (12, 2, cell.input_size)) * 3

    def spikes(c, p):
        return jax.lax.scan(lambda carry, x: c.step(p, carry, x), c.initial_carry((2,)), xs)[1]

    expected = spikes(cell, params)
    assert float(expected.sum()) > 0  # some spikes, so the comparison says something
    np.testing.assert_array_equal(spikes(back, back_params), expected)

    before = out.read_bytes()  # an existing file is kept unless --overwrite
    assert main(["export", str(runs / "lif"), "--nir", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err and out.read_bytes() == before
    assert main(["export", str(runs / "lif"), "--nir", str(out), "--overwrite"]) == 0


def test_export_of_a_non_spiking_cell_is_one_line_naming_it(runs, tmp_path, capsys):
    """The RL run's torso is an Elman cell."""
    pytest.importorskip("nir")
    out = tmp_path / "elman.nir"
    assert main(["export", str(runs / "rl"), "--nir", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Elman" in err[0] and "no NIR counterpart" in err[0], err
    assert not out.exists()


def test_allow_import_loads_a_run_of_a_users_cell_and_only_within_the_call(tmp_path, monkeypatch):
    """A run trained with ``--cell test_cells_lookup:tiny`` (a factory of an Elman cell in tests/): refused without
    a word from the user, loaded with ``allow_import=[that path]`` (a list or a tuple; the cell and its parameters
    those of the checkpoint), refused with another path allowed, and refused again after the call (the allowance
    does not outlive it). [guards: ``load`` opening the folder without ``allowed_imports(allow_import)``]"""
    monkeypatch.delenv("RTRL_ALLOW_IMPORT", raising=False)
    run = tmp_path / "user"
    assert main(TRAIN.format(cell="test_cells_lookup:tiny", out=run).split()) == 0
    with pytest.raises(RunError, match="--allow-import test_cells_lookup:tiny"):
        rtrl.load(run)
    with pytest.raises(RunError, match="--allow-import test_cells_lookup:tiny"):
        rtrl.load(run, allow_import=["test_cells_lookup:wrong_input"])
    for allowed in (["test_cells_lookup:tiny"], ("os:getcwd", "test_cells_lookup:tiny")):
        trained = rtrl.load(run, allow_import=allowed)
        assert isinstance(trained.cell, rtrl.cells.Elman) and trained.config.cell == "test_cells_lookup:tiny"
        stored = checkpointed(run, ".params['cell']")
        assert set(stored) == {f"['{k}']" for k in trained.params} and trained.step == 8
        for name, value in trained.params.items():
            np.testing.assert_array_equal(np.asarray(value), stored[f"['{name}']"])
    with pytest.raises(RunError, match="--allow-import test_cells_lookup:tiny"):
        rtrl.load(run)


@pytest.mark.parametrize("kind", ["lif", "rl"])
def test_a_run_folder_moved_elsewhere_loads_and_evaluates_as_before(runs, tmp_path, kind):
    """The folder copied to another place and the original taken away while it is read: the same parameters, step
    and evaluation as from where it was trained (nothing of the folder is read through the path it was made at)."""
    import shutil

    original = runs / kind
    here = rtrl.load(original)
    figures = here.evaluate(episodes=2, seed=1)
    moved = tmp_path / "elsewhere" / "deeper" / "run"
    shutil.copytree(original, moved)
    away = runs / f"{kind}-away"
    original.rename(away)
    try:
        there = rtrl.load(moved)
        assert there.step == here.step and there.config == here.config
        for a, b in zip(jax.tree.leaves(there.model_params), jax.tree.leaves(here.model_params), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert there.evaluate(episodes=2, seed=1) == figures
        assert not original.exists()
    finally:
        away.rename(original)


def test_a_config_with_an_option_of_a_newer_rtrl_is_refused_by_name(runs, tmp_path):
    """A ``config.json`` holding an option this rtrl does not know (as a newer release would write): ``rtrl.load``
    names the file and the option and says it may be a newer rtrl's, rather than dropping what it cannot read."""
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.json", "metrics.jsonl", "checkpoint.npz"):
        (run / name).write_bytes((runs / "lif" / name).read_bytes())
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "warmup_steps": 10}))
    with pytest.raises(RunError, match=r"config.json has unknown options \['warmup_steps'\] \(written by a newer "
                                       r"rtrl\?"):
        rtrl.load(run)
