import os

# Four forced host devices for the sharded tests (test_devices.py): the flag counts only if it is set before JAX
# starts its backend. The other tests keep running on the first device; measured, the flag does not slow them
# (tests/test_training_trainer.py and tests/test_online.py, -n 2: 153 s and 154 s of CPU without it, 160 s and
# 148 s with it).
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
# The suite compiles thousands of small programs and runs each briefly, so XLA's CPU backend is asked not to
# optimise the machine code it emits (LLVM's passes, not XLA's: the programs, their fusions and buffers are the
# same). Measured on tests/test_cells_elementwise.py and tests/test_cells_elman.py, -n 2: 122 s -> 75 s.
if "xla_backend_optimization_level" not in os.environ["XLA_FLAGS"]:
    os.environ["XLA_FLAGS"] += " --xla_backend_optimization_level=0"
# And to emit its fused loops with its older, quicker emitters (the elemental IR emitter, not the MLIR fusion
# emitters), as one LLVM module rather than split for parallel compilation (each worker has about one core):
# the same programs, compiled in about a quarter of the time. Measured on one oracle program of
# tests/test_cells_elementwise.py (four methods' gradients of IIR2, 100 steps): 1.9 s -> 0.5 s of CPU.
for flag in ("--xla_cpu_use_fusion_emitters=false", "--xla_cpu_parallel_codegen_split_count=1"):
    if flag.split("=")[0] not in os.environ["XLA_FLAGS"]:
        os.environ["XLA_FLAGS"] += " " + flag

import jax  # noqa: E402
import pytest  # noqa: E402

# float64 is the oracle's precision; float32 tests ask for it explicitly.
jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True, scope="module")
def release_compiled_code():
    """Drop the compiled executables after each module: XLA's CPU backend maps every executable's kernels into
    memory, and a worker holding the whole suite's at once nears the kernel's limit on mappings (vm.max_map_count,
    65530 here: one process running every test reached about 30000 by half-way), past which compiling fails."""
    yield
    jax.clear_caches()

# A persistent compilation cache: the suite compiles thousands of small programs, the same ones at every run, so a
# second run (a developer's, or CI on the same machine) loads them from disk instead of compiling them again. Its
# folder is outside the checkout (a fresh clone finds the cache of earlier ones); RTRL_TEST_CACHE names another,
# or "off" runs without one. The cache's key covers the program, the XLA flags above and the jaxlib version.
_cache = os.environ.get("RTRL_TEST_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "rtrl", "jax-tests"))
if _cache != "off":
    jax.config.update("jax_compilation_cache_dir", _cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
