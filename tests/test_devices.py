"""Several devices (``rtrl.devices``): B streams split over a 1-D mesh of 4 forced host devices (tests/conftest.py)
train exactly as on one device, with the state's carries and traces split over the devices and the parameters
replicated; a checkpoint moves between device counts; the RL agent splits its environments; several processes
joined by ``jax.distributed`` train as one; bad device counts are refused with a message that says what to do."""

import functools
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

from rtrl import cli
from rtrl.benchmarks import devices as bench
from rtrl.cells import ELSTM, Elman
from rtrl.compare import relative_error
from rtrl.devices import batch_axes, tracing
from rtrl.optim import make_optimizer
from rtrl.rl.config import RLConfig
from rtrl.rl.loop import runner, train
from rtrl.run import checkpoint
from rtrl.run.folder import read_config, read_metrics
from rtrl.training.assemble import assemble
from rtrl.training.config import RunConfig
from rtrl.training.tasks import Copy
from rtrl.training.trainer import Trainer

TASK = Copy(max_length=2)  # episodes of 5 steps
B, HALF, TOL = 8, 10, 1e-9
# (method, update_every, stagger): dense exact traces on staggered streams (TraceWindow), and BPTT over windows of
# whole episodes (SequenceWindow)
SETUPS = {"rtrl": ("rtrl", 1, True), "bptt": ("bptt", 5, False)}
RL = {"env": "tmaze", "env_args": (("length", 3),), "hidden": 4, "envs": B, "steps": 2 * HALF, "record_every": HALF,
      "dtype": "float64", "fidelity_every": 5}  # the fidelity check keeps a history (H, E, obs)
# 8 seeds of a tiny agent, 2 environments each: split over 4 devices, 2 seeds on each
SEEDS = {"env": "tmaze", "env_args": (("length", 2),), "hidden": 2, "envs": 2, "seeds": 8, "steps": 8,
         "record_every": 4, "dtype": "float64", "health_every": 1}
SEEDS_FLAGS = ["--env", "tmaze", "--env-arg", "length=2", "--hidden", "2", "--envs", "2", "--seeds", "8",
               "--steps", "8", "--record-every", "4", "--dtype", "float64", "--health-every", "1"]  # SEEDS, as flags


@functools.cache
def trainer(setup: str = "rtrl", devices: int = 1) -> Trainer:
    method, k, stagger = SETUPS[setup]
    return Trainer(TASK, Elman(TASK.input_size, 4), method, batch=B, update_every=k, stagger=stagger, eval_size=8,
                   optimizer=make_optimizer("adam", 0.05), devices=devices)


@functools.cache
def uninterrupted(setup: str = "rtrl"):
    """The one-device run: two chunks of HALF steps."""
    one = trainer(setup)
    return one.train(one.train(one.init(), HALF)[0], HALF)[0]


def worst(a, b) -> float:
    return max(float(relative_error(x, y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def split(tree, n: int, batch: int = B) -> bool:
    """Every leaf split over ``n`` devices along one axis, of length ``batch``: a 1/n slice of it on each."""

    def leaf(a):
        s = a.sharding
        if not isinstance(s, NamedSharding) or len(s.device_set) != n or list(s.spec).count("batch") != 1:
            return False
        axis = list(s.spec).index("batch")
        expected = a.shape[:axis] + (batch // n,) + a.shape[axis + 1:]
        return a.shape[axis] == batch and all(shard.data.shape == expected for shard in a.addressable_shards)

    return all(leaf(a) for a in jax.tree.leaves(tree))


def replicated(tree, n: int) -> bool:
    """Every leaf whole on each of ``n`` devices."""
    return all(len(a.sharding.device_set) == n and a.sharding.is_fully_replicated
               and all(s.data.shape == a.shape for s in a.addressable_shards) for a in jax.tree.leaves(tree))


def close(a, b) -> bool:
    return a == b or (a is not None and b is not None and abs(a - b) <= TOL * abs(b))


def on_one_device(tree) -> bool:
    return all(isinstance(a.sharding, SingleDeviceSharding) for a in jax.tree.leaves(tree))


@pytest.mark.parametrize("setup", SETUPS)
def test_four_devices_train_as_one_with_carries_and_traces_split_over_them(setup, tmp_path):
    four = trainer(setup, 4)
    half = four.train(four.init(), HALF)[0]
    state = four.train(half, HALF)[0]
    assert worst(state.params, uninterrupted(setup).params) <= TOL
    memory = state.memory
    if setup == "rtrl":
        assert split(memory.carry, 4) and split(memory.traces, 4)
    else:
        assert split(memory, 4)  # BPTT windows carry only the carry
    assert replicated(state.params, 4) and replicated(state.opt_state, 4) and replicated(state.key, 4)
    assert on_one_device(uninterrupted(setup))  # one device: no mesh at all
    if setup == "rtrl":  # held-out episodes split over the devices; parameters from one device are copied over
        theirs, ours = (tr.evaluate(uninterrupted(setup).params) for tr in (trainer(setup), four))
        assert ours.keys() == theirs.keys() and all(close(ours[k], theirs[k]) for k in ours)
    # checkpointed halfway (whole host arrays, not shards), resumed on one device (on two: the next test)
    checkpoint.save(tmp_path / "half.npz", half)
    with np.load(tmp_path / "half.npz") as data:
        assert data[".memory.carry" if setup == "rtrl" else ".memory"].shape == (B, 4)
    one = trainer(setup)
    resumed, _ = checkpoint.load(tmp_path / "half.npz", one.init())
    assert on_one_device(resumed)
    assert worst(one.train(resumed, HALF)[0].params, uninterrupted(setup).params) <= TOL


def collectives(text: str, op: str) -> int:
    """How many ``op`` (e.g. ``all-gather``) a compiled HLO text holds, started or whole."""
    return len(re.findall(rf" {op}(-start)?\(", text))


MOVES = ("all-gather", "all-to-all", "collective-permute", "reduce-scatter", "collective-broadcast")


def reduced_shapes(text: str) -> list[str]:
    """The result shapes of every all-reduce of a compiled HLO text (a tuple's elements one by one), sorted."""
    shapes = []
    for line in text.splitlines():
        match = re.search(r"= (\(.*?\)|\S+) all-reduce(-start)?\(", line)
        if match:
            shapes += re.findall(r"[a-z]+\d*\[[\d,]*\]", match.group(1))
    return sorted(shapes)


def moves(text: str) -> dict[str, int]:
    """How many collectives other than all-reduce a compiled HLO text holds (data moved between devices)."""
    return {op: collectives(text, op) for op in MOVES}


def reduced_size(text: str) -> int:
    """Elements that the all-reduces of a compiled HLO text carry, all together."""
    return sum(int(np.prod([int(d) for d in re.findall(r"\d+", s.split("[")[1])])) for s in reduced_shapes(text))


@pytest.mark.parametrize("cell, method", [(Elman, "rtrl"), (ELSTM, "diagonal"), (ELSTM, "closed_form")])
def test_a_sharded_step_reduces_the_gradient_and_gathers_no_traces(cell, method):
    """Each device contracts its own streams' traces; only the gradient crosses devices (a loop over the examples
    would gather every device's traces onto each one at every step): one all-reduce, of exactly the parameters'
    elements and the loss's two sums (never data, carries or traces), and no other collective. Mutations tried by
    hand, each killed: ``rtrl.devices.tracing`` making no mesh current (the contraction then loops over examples
    and gathers the traces); every leaf replicated (``spec`` returning ``PartitionSpec()``: no all-reduce at all,
    every device doing every stream)."""
    four = Trainer(TASK, cell(TASK.input_size, 4), method, batch=B, eval_size=8, devices=4)
    with tracing(four.mesh):
        text = four._train.lower(four.init(), 2).compile().as_text()
    assert moves(text) == dict.fromkeys(MOVES, 0)
    assert collectives(text, "all-reduce") == 1
    assert reduced_size(text) == sum(a.size for a in jax.tree.leaves(four.init().params)) + 2


def test_the_agents_sharded_step_reduces_only_what_does_not_grow_with_the_environments():
    """The RL step on 4 devices: the ascent, the overshoot, the running statistics and the tallies are
    all-reduced, the same shapes for 8 environments as for 16; environment states, torso memory and traces
    (which grow with them) never leave their device, and nothing is gathered or exchanged. Mutation of
    rtrl/devices.py tried by hand, killed: leaves of three or more dimensions (the traces) left replicated by
    ``batch_axes`` (each device then gathers every environment's gradients)."""
    texts = []
    for envs in (8, 16):
        run = runner(RLConfig(**{**RL, "envs": envs, "fidelity_every": 0}, devices=4))
        with tracing(run.mesh):
            texts.append(run.compiled.lower(run.init(0), 2).compile().as_text())
    assert all(moves(text) == dict.fromkeys(MOVES, 0) for text in texts)
    assert reduced_shapes(texts[0]) and reduced_shapes(texts[0]) == reduced_shapes(texts[1])


def layout_is_contiguous(a, n: int, axis: int) -> bool:
    """``a`` split along ``axis`` over the first ``n`` devices in order: device ``i`` holds slice ``i`` of ``n``
    equal, contiguous ones (and nothing else), and each shard's data is that slice of the whole array."""
    size = a.shape[axis] // n
    expected = {d: tuple(slice(i * size, (i + 1) * size) if k == axis else slice(None) for k in range(a.ndim))
                for i, d in enumerate(jax.devices()[:n])}

    def normal(index):
        return tuple(slice(*s.indices(length)) for s, length in zip(index, a.shape, strict=True))

    indices = a.sharding.devices_indices_map(a.shape)
    whole = np.asarray(a)
    return ({d: normal(i) for d, i in indices.items()} == {d: normal(i) for d, i in expected.items()}
            and all(np.array_equal(s.data, whole[normal(expected[s.device])]) for s in a.addressable_shards))


@pytest.mark.parametrize("setup", SETUPS)
def test_each_device_holds_a_contiguous_slice_of_the_streams_and_each_stream_is_the_one_device_runs(setup):
    """Stream ``b`` lives on device ``b // (B / 4)``, and there it is the same stream as on one device: its carry
    and traces equal the one-device run's row ``b`` (the parameters, an average over the streams, would not see
    streams exchanged or one stream's data given to all of a device's). Mutation of rtrl/devices.py tried by
    hand, killed: the mesh's devices in reverse order (the numbers unchanged, the layout not the documented one)."""
    four = trainer(setup, 4)
    state = four.train(four.train(four.init(), HALF)[0], HALF)[0]
    axes = batch_axes(lambda b: Trainer(TASK, Elman(TASK.input_size, 4), SETUPS[setup][0], batch=b,
                                        update_every=SETUPS[setup][1], stagger=SETUPS[setup][2], eval_size=8,
                                        optimizer=make_optimizer("adam", 0.05)).init().memory, B)
    for a, axis in zip(jax.tree.leaves(state.memory), jax.tree.leaves(axes), strict=True):
        assert layout_is_contiguous(a, 4, axis)
    assert worst(state.memory, uninterrupted(setup).memory) <= TOL


def test_rtrl_train_on_four_devices_and_resume_on_two_replays_the_one_device_run(tmp_path):
    """The CLI's run folder: ``trainer("rtrl")``'s configuration trained to HALF on 4 devices, resumed to
    2 * HALF on 2, ends where the one-device run does, its state split over the 2 devices."""
    run = str(tmp_path / "run")
    options = ["--task", "copy", "--task-arg", "max_length=2", "--hidden", "4", "--batch", str(B), "--lr", "0.05",
               "--method", "rtrl", "--eval-every", "5", "--eval-size", "8", "--stagger", "--quiet"]
    assert cli.main(["train", *options, "--steps", str(HALF), "--devices", "4", "--out", run]) == 0
    assert read_config(run).devices == 4
    assert cli.main(["resume", run, "--steps", str(2 * HALF), "--devices", "2", "--quiet"]) == 0
    assert read_config(run).devices == 2
    saved, _ = checkpoint.load(f"{run}/checkpoint.npz", trainer("rtrl", 2).init())
    assert split(saved.memory, 2) and replicated(saved.params, 2)
    assert worst(saved.params, uninterrupted().params) <= TOL
    assert [r["step"] for r in read_metrics(run)] == [0, 5, 10, 15, 20]


def test_the_agent_on_four_devices_acts_as_on_one_with_its_environments_split(tmp_path):
    configs = {n: RLConfig(**RL, devices=n) for n in (1, 4)}
    whole, records = train(configs[1])
    four, four_records = train(configs[4])
    assert worst(four.params, whole.params) <= TOL
    assert [r["episodes"] for r in four_records] == [r["episodes"] for r in records]
    scale = four.wrappers[1]  # the reward scaler's (rtrl.rl.envs.normalize): its returns per environment split
    for part in (four.memory, four.env_state, four.traces, four.obs, four.pending.transition.terminated, four.age,
                 scale.discounted, scale.ended):
        assert split(part, 4)
        assert all(layout_is_contiguous(a, 4, 0) for a in jax.tree.leaves(part))
    # environment e is environment e of the one-device run: its memory, traces and state (not only the mean)
    for name in ("memory", "traces", "env_state", "obs"):
        assert worst(getattr(four, name), getattr(whole, name)) <= TOL, name
    assert worst(scale.discounted, whole.wrappers[1].discounted) <= TOL
    assert np.array_equal(scale.ended, whole.wrappers[1].ended)
    assert split(four.history, 4) and layout_is_contiguous(four.history, 4, 1)  # (H, E, obs): E found where it lies
    # the update rule's state: its eligibility traces split along E (above), everything else replicated
    traces = {id(a) for a in jax.tree.leaves(four.traces)}
    rule = [a for a in jax.tree.leaves(four.opt_state) if id(a) not in traces]
    assert len(rule) < len(jax.tree.leaves(four.opt_state))
    assert replicated(four.params, 4) and replicated(rule, 4) and replicated(four.wrappers[0], 4)
    half, _ = train(RLConfig(**{**RL, "steps": HALF}, devices=4))
    checkpoint.save(tmp_path / "half.npz", half)
    state, _ = checkpoint.load(tmp_path / "half.npz", runner(configs[1]).init(0))
    assert on_one_device(state)
    assert worst(train(configs[1], state)[0].params, whole.params) <= TOL


def same_records(these: list[dict], those: list[dict]) -> bool:
    """The same records but for their wall times: every figure equal to 1e-9, the per-seed lists item by item."""
    def same(a, b):
        return (all(close(x, y) for x, y in zip(a, b, strict=True)) if isinstance(a, list) and len(a) == len(b)
                else close(a, b))

    return len(these) == len(those) and all(
        a.keys() == b.keys() and all(same(a[k], b[k]) for k in a if k != "wall_s")
        for a, b in zip(these, those, strict=True))


@functools.cache
def seeds_run(devices: int):
    """``SEEDS`` trained on ``devices`` devices: its final state and records."""
    return train(RLConfig(**SEEDS, devices=devices))


@pytest.mark.slow
def test_eight_seeds_on_four_devices_run_as_on_one_two_seeds_on_each():
    """``--seeds 8 --devices 4``: every leaf of the seeds' states split along the seeds (device ``i`` holds seeds
    ``2i`` and ``2i + 1`` with their environments, though 2 environments do not split over 4 devices), the
    parameters and records those of the one-device run, and a compiled step that moves nothing between devices
    (the seeds never meet). Mutation tried by hand, killed: the seeds' states replicated (``Program.sharding``
    giving every leaf of ``Seeds`` ``PartitionSpec()``)."""
    (one, one_records), (four, four_records) = seeds_run(1), seeds_run(4)
    assert worst(four.runs.params, one.runs.params) <= TOL
    assert worst(four.runs.opt_state, one.runs.opt_state) <= TOL
    assert same_records(four_records, one_records)
    held = [a for a in jax.tree.leaves(four.runs) if a.size]  # XLA places an empty leaf (no history) as it likes
    assert split(held, 4, SEEDS["seeds"]) and replicated(four.step, 4)
    assert all(layout_is_contiguous(a, 4, 0) for a in held)
    assert on_one_device(one)
    run = runner(RLConfig(**SEEDS, devices=4))
    with tracing(run.mesh):
        text = run.compiled.lower(run.init(0), 2).compile().as_text()
    assert moves(text) == dict.fromkeys(MOVES, 0) and collectives(text, "all-reduce") == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_two_processes_with_two_devices_each_train_as_one_device(tmp_path):
    """As on two hosts: jax.distributed over gloo, a mesh of 4 devices in 2 processes, a checkpoint gathered
    from both and loaded back onto them."""
    worker, port = Path(__file__).with_name("distributed_worker.py"), free_port()
    processes = [subprocess.Popen([sys.executable, str(worker), str(i), "2", str(port), str(tmp_path)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(2)]
    outputs = [p.communicate(timeout=300)[0] for p in processes]
    assert all(p.returncode == 0 for p in processes), "\n".join(outputs)
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["devices"] == 4 and seen["local"] == 2
    assert seen["carry_devices"] == 4 and seen["carry_spec"] == str(PartitionSpec("batch"))
    assert seen["carry_local_shards"] == [[B // 4, 4]] * 2
    with np.load(tmp_path / "params.npz") as data:
        params = [data[f"arr_{i}"] for i in range(len(data.files))]
    assert worst(params, jax.tree.leaves(uninterrupted().params)) <= TOL


def joined(processes: list[subprocess.Popen], timeout: float) -> list[str]:
    """Each process's output once it has exited (within ``timeout`` seconds of waiting, all together: past it,
    every one still running is killed and the test fails with what they wrote)."""
    try:
        return [p.communicate(timeout=timeout)[0] for p in processes]
    except subprocess.TimeoutExpired:
        for p in processes:
            p.kill()
        outputs = [p.communicate()[0] for p in processes]
        pytest.fail(f"the processes did not finish within {timeout} s:\n" + "\n".join(outputs))


@pytest.mark.slow
def test_two_processes_of_two_devices_run_eight_seeds_as_one_device(tmp_path):
    """``rtrl rl --distributed`` of ``SEEDS`` (``SEEDS_FLAGS``) on 4 devices in 2 processes joined over localhost
    (jax.distributed, gloo): the run folder, written by the first process alone (the other prints nothing of the
    run), holds the one-device run's records and, in its checkpoint gathered from both, its parameters."""
    worker, port = Path(__file__).with_name("distributed_worker.py"), free_port()
    processes = [subprocess.Popen([sys.executable, str(worker), str(i), "2", str(port), str(tmp_path), "rl"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(2)]
    outputs = joined(processes, 240)
    assert all(p.returncode == 0 for p in processes), "\n".join(outputs)
    for i, output in enumerate(outputs):
        assert f"process {i} of 2, 2 of 4 devices: exit status 0" in output, output
    run = tmp_path / "run"
    assert f"{run}: " in outputs[0] and "mean return" in outputs[0]  # the first reports the run ...
    assert str(run) not in outputs[1]  # ... the other does not
    one, records = seeds_run(1)
    assert same_records(read_metrics(run), records)
    state, _ = checkpoint.load(run / "checkpoint.npz", runner(RLConfig(**SEEDS)).init(0))
    assert worst(state.runs.params, one.runs.params) <= TOL
    assert worst(state.runs.opt_state, one.runs.opt_state) <= TOL
    assert read_config(run) == RLConfig(**SEEDS, devices=4)


def test_batch_axes_are_found_from_the_shapes_wherever_they_lie():
    def make(b):
        return {"lead": jnp.zeros((b, 3)), "middle": jnp.zeros((2, b, 3)), "last": jnp.zeros((3, b)),
                "none": jnp.zeros((3, 3)), "scalar": jnp.zeros(()), "same": jnp.zeros((b, b - b + 8))}

    assert batch_axes(make, 8) == {"lead": 0, "middle": 1, "last": 1, "none": None, "scalar": None, "same": 0}
    with pytest.raises(ValueError, match="several batch axes"):
        batch_axes(lambda b: jnp.zeros((b, b)), 4)


@pytest.mark.parametrize("make, message", [
    (lambda: Trainer(TASK, Elman(TASK.input_size, 4), batch=6, devices=4),
     "batch must be a multiple of devices=4 (each device takes an equal share of the streams), got 6"),
    (lambda: Trainer(TASK, Elman(TASK.input_size, 4), batch=8, devices=8),
     "devices must be at most the 4 cpu device(s) available, got 8; on CPU, set "
     "XLA_FLAGS=--xla_force_host_platform_device_count=N"),
    (lambda: Trainer(TASK, Elman(TASK.input_size, 4), devices=0), "devices must be a positive integer, got 0"),
    (lambda: Trainer(TASK, Elman(TASK.input_size, 4), devices=True), "devices must be a positive integer, got True"),
    (lambda: RunConfig(batch=16, devices=3), "batch must be a multiple of devices=3"),
    (lambda: RunConfig(devices=0), "devices must be a positive integer, got 0"),
    (lambda: RLConfig(envs=6, devices=4), "envs must be a multiple of devices=4"),
    (lambda: RLConfig(seeds=6, devices=4), "seeds must be a multiple of devices=4 when there are several (the "
     "devices split the seeds, each device an equal share of them with their environments), got seeds 6; choose "
     "--seeds a multiple of --devices, or --devices a divisor of 6"),
    (lambda: runner(RLConfig(envs=8, devices=8)), "devices must be at most the 4 cpu device(s) available"),
])
def test_bad_device_counts_are_refused_saying_what_to_do(make, message):
    with pytest.raises(ValueError) as info:
        make()
    assert message in str(info.value)


def test_a_run_folder_from_before_devices_existed_resumes_on_one_device():
    written = assemble(RunConfig(batch=4)).config.to_dict()
    del written["devices"]
    assert RunConfig.from_dict(written, complete=True).devices == 1


def test_the_cli_refuses_more_devices_than_there_are_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["train", "--batch", "8", "--devices", "8", "--steps", "5", "--out", str(out)]) == 2
    assert "devices must be at most the 4 cpu device(s) available" in capsys.readouterr().err
    assert not out.exists()
    assert cli.main(["train", "--batch", "6", "--devices", "4", "--out", str(out)]) == 2
    assert "batch must be a multiple of devices=4" in capsys.readouterr().err


def test_the_options_of_several_processes_need_distributed_and_write_nothing(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["rl", "--coordinator", "127.0.0.1:1234", "--process-id", "0", "--out", str(out)]) == 2
    assert "--coordinator, --process-id: only with --distributed" in capsys.readouterr().err
    assert cli.main(["resume", str(out), "--processes", "2"]) == 2
    assert "--processes: only with --distributed" in capsys.readouterr().err
    assert not out.exists()


def test_the_benchmark_reruns_itself_with_the_host_devices_it_needs_and_keeps_other_flags(monkeypatch):
    monkeypatch.setattr(jax, "device_count", lambda: 1)  # as in a plain interpreter: 2 devices are not here
    (row,) = bench.run([2], cell="elman", method="rtrl", hidden=2, batch=2, steps=2)
    assert row["devices"] == 2 and row["seconds"] > 0 and row["relative_error"] == 0
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_thunk_runtime=false --xla_force_host_platform_device_count=4")
    flags = bench.with_host_devices(2)["XLA_FLAGS"].split()
    assert flags == ["--xla_cpu_use_thunk_runtime=false", f"{bench.FORCE}=2"]
