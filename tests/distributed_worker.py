"""One process of a multi-process run on this machine: ``python distributed_worker.py ID PROCESSES PORT DIR [rl]``.

Each process has 2 forced CPU devices and joins the others through ``jax.distributed.initialize`` (gloo
collectives), so the mesh spans 2 * PROCESSES devices in as many processes, as on several hosts. The run trains
``test_devices.trainer()`` for ``HALF`` steps, checkpoints (every process gathers, the first writes), loads
the checkpoint back onto the devices and trains to ``2 * HALF``; the first process writes the final parameters
and what it saw of the shardings to ``DIR``. With ``rl``: ``rtrl rl --distributed`` of ``test_devices.SEEDS`` on
every device there is (the seeds split over them) into the run folder ``DIR/run``, which the first process writes.
"""

import json
import os
import sys

# 2 host devices, and tests/conftest.py's flags that make compiling quick
os.environ["XLA_FLAGS"] = ("--xla_force_host_platform_device_count=2 --xla_backend_optimization_level=0 "
                           "--xla_cpu_use_fusion_emitters=false --xla_cpu_parallel_codegen_split_count=1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_cpu_collectives_implementation", "gloo")


def main(process: int, processes: int, port: int, out: str, mode: str = "trainer") -> None:
    if mode == "rl":
        return rl(process, processes, port, out)
    jax.distributed.initialize(f"localhost:{port}", num_processes=processes, process_id=process)
    import numpy as np

    from rtrl.run import checkpoint
    from rtrl.training.trainer import fit
    from test_devices import HALF, trainer

    tr = trainer(devices=jax.device_count())
    state = fit(tr, tr.init(), HALF, HALF)
    checkpoint.save(f"{out}/half.npz", state, {"step": HALF})
    state, _ = checkpoint.load(f"{out}/half.npz", tr.init())
    state = fit(tr, state, 2 * HALF, HALF)
    carry = state.memory.carry
    seen = {"devices": jax.device_count(), "local": jax.local_device_count(),
            "carry_devices": len(carry.sharding.device_set), "carry_spec": str(carry.sharding.spec),
            "carry_local_shards": [list(s.data.shape) for s in carry.addressable_shards]}
    params = [np.asarray(p) for p in jax.tree.leaves(state.params)]  # replicated: whole on every process
    if process == 0:
        np.savez(f"{out}/params.npz", *params)
        with open(f"{out}/seen.json", "w") as f:
            json.dump(seen, f)


def rl(process: int, processes: int, port: int, out: str) -> None:
    from rtrl import cli
    from test_devices import SEEDS_FLAGS

    status = cli.main(["rl", *SEEDS_FLAGS, "--devices", "4", "--out", f"{out}/run", "--quiet", "--distributed",
                       "--coordinator", f"127.0.0.1:{port}", "--processes", str(processes),
                       "--process-id", str(process)])
    print(f"process {jax.process_index()} of {jax.process_count()}, {jax.local_device_count()} of "
          f"{jax.device_count()} devices: exit status {status}", flush=True)
    sys.exit(status)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:])
