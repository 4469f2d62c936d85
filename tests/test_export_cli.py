"""``rtrl export RUN --nir FILE [--target nir|snntorch|norse] [--dt SECONDS]``: the target's graph, its dt and units
in the metadata, the line that says how to load it; what the target cannot run refused by name; a run folder's own
files never written over, even with ``--overwrite``."""

import argparse

import numpy as np
import pytest

from rtrl.cli import main

nir = pytest.importorskip("nir")

TRAIN = ("train --task copy --task-arg max_length=2 --cell lif --hidden 3 --method rtrl --batch 2 --lr 0.05 "
         "--eval-every 4 --eval-size 8 --quiet --steps 4 --out {out}")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    assert main(TRAIN.format(out=root / "subtract").split()) == 0
    assert main(TRAIN.format(out=root / "value").split() + ["--cell-arg", "reset=value",
                                                              "--cell-arg", "leak=[0.9,0.8,0.7]"]) == 0
    return root


@pytest.mark.parametrize("name", ["checkpoint.npz", "config.json", "metrics.jsonl", "curve.png", ".lock"])
def test_a_run_folders_own_file_is_never_written_over(runs, name, capsys):
    file = runs / "value" / name
    before = file.read_bytes() if file.exists() else None
    assert main(["export", str(runs / "value"), "--nir", str(file), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert f"names {file}, a file of the run folder {runs / 'value'}" in err and err.count("\n") == 1, err
    assert (file.read_bytes() if file.exists() else None) == before


def test_the_run_folder_itself_and_a_link_to_its_checkpoint_are_refused(runs, tmp_path, capsys):
    assert main(["export", str(runs / "value"), "--nir", str(runs / "value"), "--overwrite"]) == 2
    assert "is a folder; name the file to write" in capsys.readouterr().err
    link = tmp_path / "model.nir"
    link.symlink_to(runs / "value" / "checkpoint.npz")
    before = (runs / "value" / "checkpoint.npz").read_bytes()
    assert main(["export", str(runs / "value"), "--nir", str(link), "--overwrite"]) == 2
    assert "checkpoint.npz, a file of the run folder" in capsys.readouterr().err
    assert (runs / "value" / "checkpoint.npz").read_bytes() == before


def test_a_new_file_in_the_run_folder_is_fine(runs, capsys):
    out = runs / "value" / "model.nir"
    assert main(["export", str(runs / "value"), "--nir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "for nir, dt = 1 s: load with nir.read(" in printed and "--target snntorch or --target norse" in printed
    graph = nir.read(out)
    assert graph.metadata["dt"] == 1.0 and graph.metadata["time_unit"] == "s"
    out.unlink()


@pytest.mark.parametrize(("target", "dt", "loader"), [
    ("snntorch", 1e-4, "snntorch.import_nir.import_from_nir(nir.read("),
    ("norse", 1e-3, "norse.torch.from_nir(nir.read("),
])
def test_each_target_gets_its_own_dt_and_says_how_to_load_it(runs, tmp_path, capsys, target, dt, loader):
    out = tmp_path / f"{target}.nir"
    assert main(["export", str(runs / "value"), "--nir", str(out), "--target", target]) == 0
    printed = capsys.readouterr().out
    assert loader in printed and f"dt = {dt:g} s" in printed
    graph = nir.read(out)
    assert (graph.metadata["dt"], graph.metadata["target"]) == (dt, target)
    neuron = graph.nodes["neuron"]
    np.testing.assert_allclose(neuron.tau, dt / (1 - np.array([0.9, 0.8, 0.7])))
    np.testing.assert_allclose(neuron.r, 1.0 if target == "norse" else neuron.tau / dt)


def test_what_a_target_cannot_run_is_one_line_naming_it(runs, tmp_path, capsys):
    out = tmp_path / "x.nir"
    assert main(["export", str(runs / "subtract"), "--nir", str(out), "--target", "snntorch"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "reset='subtract'" in err and "--cell-arg reset=value" in err, err
    assert main(["export", str(runs / "value"), "--nir", str(out), "--target", "snntorch", "--dt", "0.001"]) == 2
    assert "runs at dt = 1e-4 s whatever the file says" in capsys.readouterr().err
    assert not out.exists()


def test_every_target_of_to_nir_is_offered_and_says_how_to_load_it():
    """The command's --target choices are rtrl.export's targets, each with a loader line [a target added to
    to_nir but not to the command (spikingjelly and spyx were): the parser refuses it, or the loader is missing]."""
    from rtrl.cli import export as command
    from rtrl.export import TARGETS

    assert set(command.LOADERS) == set(TARGETS)
    parser = argparse.ArgumentParser()
    command.add_export_arguments(parser)
    for target in TARGETS:
        assert parser.parse_args(["run", "--nir", "f.nir", "--target", target]).target == target
