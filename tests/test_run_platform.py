"""Every run header, summary and config.json names the JAX backend and the device kind it computed on; a folder
written before they were recorded reads, loads and resumes as ever (and says them from then on)."""

import json

import jax

import rtrl
from rtrl.cli import main
from rtrl.provenance import platform
from rtrl.run.folder import read_config, read_platform

TRAIN = ("train --task copy --task-arg max_length=2 --cell elman --hidden 3 --method rtrl --batch 2 --eval-every 4 "
         "--eval-size 4 --quiet --steps {steps} --out {out}")
RL = "rl --env tmaze --env-arg length=2 --hidden 3 --envs 2 --record-every 10 --steps 10 --quiet --out {out}"


def test_platform_is_jaxs_backend_and_first_device():
    assert platform() == {"backend": jax.default_backend(), "device": jax.devices()[0].device_kind}
    if jax.default_backend() == "cpu":
        assert platform() == {"backend": "cpu", "device": "cpu"}


def test_header_summary_and_config_name_the_backend_and_device(tmp_path, capsys):
    where = platform()
    said = f"backend {where['backend']}, device {where['device']}"
    for name, command in (("train", TRAIN.format(steps=4, out=tmp_path / "train")), ("rl", RL.format(out=tmp_path /
                                                                                                      "rl"))):
        assert main(command.split()) == 0
        header, summary = capsys.readouterr().out.splitlines()[:2]
        assert header.endswith(f"| {said}") and f" s on {said}" in summary, (header, summary)
        data = json.loads((tmp_path / name / "config.json").read_text())
        assert {k: data[k] for k in ("backend", "device")} == where
        assert read_config(tmp_path / name).stored() == {k: v for k, v in data.items() if k not in where}


def test_a_folder_without_them_loads_and_resumes_and_records_them(tmp_path):
    out = tmp_path / "old"
    assert main(TRAIN.format(steps=4, out=out).split()) == 0
    data = json.loads((out / "config.json").read_text())
    old = {k: v for k, v in data.items() if k not in ("backend", "device")}
    (out / "config.json").write_text(json.dumps(old, indent=2))
    assert read_platform(out) == {"backend": None, "device": None}
    assert rtrl.load(out).step == 4  # read as ever
    assert main(["resume", str(out), "--quiet"]) == 0  # finished, its options unchanged: where it ran is recorded
    assert json.loads((out / "config.json").read_text()) == {**old, **platform()}
    assert main(TRAIN.format(steps=4, out=out).split()) == 0  # the same run: continued (finished), nothing refused
    assert main(["resume", str(out), "--steps", "8", "--quiet"]) == 0
    assert read_platform(out) == platform()
    assert json.loads((out / "config.json").read_text()) == {**old, "steps": 8, **platform()}


def test_a_config_json_reads_back_through_from_dict_as_it_is(tmp_path):
    """``RunConfig.from_dict(json.load(config.json))`` (what a script may do) takes the file with its backend and
    device: they are no options."""
    from rtrl.training.config import RunConfig

    out = tmp_path / "run"
    assert main(TRAIN.format(steps=4, out=out).split()) == 0
    data = json.loads((out / "config.json").read_text())
    assert "backend" in data and RunConfig.from_dict(data, complete=True) == read_config(out)
