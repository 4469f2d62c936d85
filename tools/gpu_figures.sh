#!/usr/bin/env bash
# The GPU figures of docs/performance.md ("On a GPU"), in one run: from the repository root, on a machine with an
# NVIDIA GPU and a CUDA-enabled JAX (pip install -e '.[cuda12]', or a JAX already there with PYTHONPATH=src);
# section 04 needs gymnax (the rl extra) for MemoryChain.
# Each section's output goes to $OUT/NN-name.txt (default folder: gpu-figures). A section that fails or runs past
# its time limit is reported and the next one runs, so one failure costs no other figure.
#   bash tools/gpu_figures.sh            # every section, about 6 minutes on an H100
#   QUICK=1 bash tools/gpu_figures.sh    # tiny sizes: checks the script itself on a CPU in a minute
set -u
out=${OUT:-gpu-figures}
mkdir -p "$out"
# no preallocation: section 05 measures each length's peak memory in a child process beside its parent
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
py=${PYTHON:-python3}
if [ -n "${QUICK:-}" ]; then sizes="16x32x4"; cells="LRU"; agent_cells="mingru"; widths=16; kernel_cells="LRU"; else
  sizes="64x256x32 32x64x8"; cells="ELSTM IIR2 AdaptiveIIR2 LRU RTU MinGRU"; agent_cells="mingru lru rtu"; widths=192; kernel_cells="ELSTM IIR2 LRU"; fi

section() {  # section NAME SECONDS COMMAND...: run it under a time limit, its output to the screen and $out/NAME.txt
  local name=$1 limit=$2; shift 2
  echo "== $name: $*" | tee "$out/$name.txt"
  timeout "$limit" "$@" 2>&1 | tee -a "$out/$name.txt"
  echo "== $name: exit ${PIPESTATUS[0]}" | tee -a "$out/$name.txt"
}

section 00-device 60 bash -c "nvidia-smi -L; $py -c 'import jax; print(\"jax\", jax.__version__, jax.devices())'; \
  git log -1 --format='commit %H %cd' 2>/dev/null; cat /proc/loadavg"
# the compiled Pallas path (on a GPU trace_chunk does not interpret) against the tests' NumPy loop and BPTT, float64
section 01-check 150 "$py" tools/gpu_check.py
# whole-sequence gradient per step as a ratio to the forward-only step, BPTT in the same interleaved run
# shellcheck disable=SC2086
section 02-elementwise 270 "$py" -m rtrl.benchmarks.elementwise --cells $cells --sizes $sizes \
  --methods closed_form diagonal chunked bptt
# chunked with its traces run forward: the XLA scan against the Pallas kernel (one launch a chunk and parameter)
# shellcheck disable=SC2086
section 03-kernels 180 "$py" -m rtrl.benchmarks.elementwise --cells $kernel_cells --sizes $sizes \
  --methods chunked chunked-xla chunked-pallas bptt
# the streaming agent's step on MemoryChain against its forward-only step and the memoryless agent's
# shellcheck disable=SC2086
section 04-agent 120 "$py" -m rtrl.benchmarks.agent --cells $agent_cells --widths $widths --envs 1 16
# whole-sequence time and XLA's temporary memory against T: chunked flat, BPTT growing
section 05-sequence 200 "$py" -m rtrl.benchmarks.sequence --cell elstm --size ${sizes%% *} --lengths 100 1000 10000 \
  --methods chunked bptt
