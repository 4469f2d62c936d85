"""``import rtrl`` needs only jax, optax and numpy: it loads no plotting, progress-bar, Flax, Equinox or
environment library, and it works where they are not installed."""

import importlib.util
import json
import subprocess
import sys

import pytest

OPTIONAL = ("matplotlib", "tqdm", "flax", "equinox", "gymnax", "nir")

# Runs in a fresh interpreter: a meta-path finder makes the packages named in argv[1] look uninstalled, then runs
# the body and reports which OPTIONAL packages got loaded.
SCRIPT = """
import importlib.abc, json, sys

BLOCKED = set(sys.argv[1].split(",")) - {""}
OPTIONAL = set(sys.argv[2].split(","))

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
{body}
print(json.dumps(sorted(m for m in sys.modules if m.partition(".")[0] in OPTIONAL)))
"""

USE_THE_CORE = """
import jax, jax.numpy as jnp, rtrl
cell = rtrl.cells.ELSTM(2, 3)
params = cell.init(jax.random.PRNGKey(0))
xs, ys = jnp.ones((4, 2, 2)), jnp.zeros((4, 2, 3))
loss = lambda h, y: jnp.sum((h - y) ** 2)
for method in ("closed_form", "bptt"):
    rtrl.sequence_grad(cell, params, xs, ys, loss, method=method)
learner = rtrl.online(cell, "closed_form")
state = learner.init(params, batch_shape=(2,))
jax.grad(lambda p: jnp.sum(learner.step(p, state, xs[0])[0]))(params)
"""


def run(body: str, blocked=OPTIONAL) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT.replace("{body}", body), ",".join(blocked),
                           ",".join(OPTIONAL)], capture_output=True, text=True, timeout=300)


def loaded(out: subprocess.CompletedProcess) -> list[str]:
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_the_core_loads_none_of_the_optional_packages():
    """With all of them installed (as here), using the core imports none of them, not even tentatively."""
    assert loaded(run(USE_THE_CORE, blocked=())) == []


def test_the_core_works_without_the_optional_packages():
    assert loaded(run(USE_THE_CORE)) == []


@pytest.mark.parametrize("package", ["matplotlib", "tqdm"])
def test_the_blocker_blocks_an_installed_package(package):
    """The check above can fail: a core that imported an optional package would stop at the import."""
    assert importlib.util.find_spec(package) is not None  # installed here, so only the blocker can stop it
    assert loaded(run(f"import {package}", blocked=())) != []
    out = run(f"import {package}.pyplot" if package == "matplotlib" else f"from {package} import tqdm")
    assert out.returncode != 0 and "blocked by the test" in out.stderr


@pytest.mark.parametrize("module", ["rtrl.benchmarks.suite", "rtrl.reports.fidelity", "rtrl.reports.results",
                                    "rtrl.cli", "rtrl.rl.loop", "rtrl.run"])
def test_each_layer_imports_first_in_a_fresh_interpreter(module):
    """No circular import: each layer's entry module is importable on its own, before anything else."""
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_import_rtrl_loads_no_upper_layer_and_rtrl_load_is_there_on_first_use():
    """``rtrl.load`` lives in the run layer and ``rtrl.rl`` / ``rtrl.training`` are layers above (rtrl/__init__'s
    ``LAZY`` table): ``import rtrl`` imports none of the layers above the public API (tests/test_layers.py), and the
    first use of a name imports it."""
    body = """
import rtrl
above = ("rtrl.training", "rtrl.rl", "rtrl.run", "rtrl.reports", "rtrl.benchmarks", "rtrl.cli")
print(json.dumps(sorted(m for m in sys.modules if m.startswith(above))))
make, training = rtrl.rl.make, rtrl.training  # whole packages of the LAZY table, through rtrl.__getattr__
import rtrl.rl.envs.registry
import rtrl.training as imported_training
assert make is rtrl.rl.envs.registry.make and training is imported_training
from rtrl import load
import rtrl.run.trained
assert load is rtrl.load is rtrl.run.trained.load and "load" in dir(rtrl) and "load" in rtrl.__all__
"""
    out = run(body, blocked=())
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[0]) == []


def test_rtrl_help_and_version_load_no_command():
    """``rtrl --help`` lists the commands from their help lines alone: no command's module, and none of the layers
    above the public API (the run layer, training, RL, optax, matplotlib), is imported, nor by ``rtrl --version``;
    ``rtrl train --help`` imports train's. [Every subcommand's options built for ``--help`` again: the run layer is
    loaded, this fails.]"""
    body = """
from rtrl.cli import main
for argv in (["--help"], ["--version"]):
    try:
        main(argv)
    except SystemExit:
        pass
above = ("rtrl.training", "rtrl.rl", "rtrl.run", "rtrl.reports", "rtrl.benchmarks", "rtrl.cli.", "optax",
         "matplotlib")
print(json.dumps(sorted(m for m in sys.modules if m.startswith(above))))
main(["train", "--help"])
"""
    out = run(body, blocked=())
    assert out.returncode == 0, out.stderr
    assert "usage: rtrl [-h] [--version] COMMAND" in out.stdout and "rtrl 0.1.0" in out.stdout
    printed = [line for line in out.stdout.splitlines() if line.startswith("[")]
    assert printed and json.loads(printed[0]) == [], printed
    assert "usage: rtrl train" in out.stdout and "--task NAME" in out.stdout
