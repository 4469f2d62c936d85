"""Are two versions of the RL layer's runs bit-identical? Save every leaf of the final parameters of a few short
float64 runs (both normalisation options on), then compare two such files leaf by leaf.

    PYTHONPATH=<tree A>/src python tools/rl_leaves.py save a.npz
    PYTHONPATH=<tree B>/src python tools/rl_leaves.py save b.npz
    python tools/rl_leaves.py compare a.npz b.npz          # per run: leaves bit-identical, worst relative difference

(A tree of an earlier commit: ``git archive COMMIT src | tar -x -C /tmp/old``.) ``save FILE RUN ...`` saves only
the runs named. About four minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import sys

import numpy as np

RUNS = {
    "memory-chain": dict(env="memory-chain", steps=300),
    "tmaze": dict(env="tmaze", steps=300),
    "tmaze-extra-seeds": dict(env="tmaze", steps=300, extra_inputs=True, seeds=2, envs=4),
    "cartpole-trunc": dict(env="cartpole", env_args=(("max_steps_in_episode", 7),), steps=300, envs=4),
    "cartpole-host": dict(env="gymnasium:CartPole-v1", steps=50, envs=4),
    "cartpole-host-trunc": dict(env="gymnasium:CartPole-v1", env_args=(("max_episode_steps", 7),), steps=50, envs=4),
}


def save(path: str, names: list[str]) -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    from rtrl.rl import RLConfig, train

    out = {}
    for name in names or RUNS:
        options = RUNS[name]
        config = RLConfig(**options, dtype="float64", record_every=options["steps"] // 2, normalize_obs=True,
                          scale_rewards=True)
        state, records = train(config, quiet=True)
        params = state.runs.params if hasattr(state, "runs") else state.params
        for where, leaf in jax.tree_util.tree_leaves_with_path(params):
            out[f"{name}/params{jax.tree_util.keystr(where)}"] = np.asarray(leaf)
        out[f"{name}/returns"] = np.array([np.nan if r["return"] is None else r["return"] for r in records])
        print(name, records[-1]["return"], flush=True)
    np.savez(path, **out)


def compare(path_a: str, path_b: str) -> None:
    a, b = np.load(path_a), np.load(path_b)
    runs: dict[str, list] = {}
    for key in sorted(set(a.files) | set(b.files)):
        run = runs.setdefault(key.split("/")[0], [0, 0, 0.0])
        run[0] += 1
        if key not in a.files or key not in b.files or a[key].shape != b[key].shape:
            run[2] = np.inf
            continue
        x, y = a[key], b[key]
        if np.array_equal(x, y, equal_nan=True):
            run[1] += 1
        else:
            run[2] = max(run[2], float(np.nanmax(np.abs(x - y)) / max(np.nanmax(np.abs(x)), 1e-300)))
    for name, (count, same, worst) in runs.items():
        print(f"{name}: {same}/{count} leaves bit-identical; worst relative difference {worst:.3g}")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "save":
        save(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
