"""The hand audit of four surfaces (docs/reliability.md, "Four surfaces audited by hand"): each case is run and its
outcome printed on one line (exit status, seconds, the last lines of stderr, the last record); the classes in the
page (clear, acceptable, poor, traceback, silent, lost, hang) were read from these lines by hand.

    python tools/surface_audit.py box            # custom Box environments: rtrl rl --env gymnasium:MODULE:ID
    python tools/surface_audit.py eprop-window   # rtrl train --method eprop_window command lines
    python tools/surface_audit.py nir            # rtrl's NIR graphs in snnTorch and Norse (the interop extra)
    python tools/surface_audit.py ctrl-c         # SIGINT to rtrl results training|rl|popgym at several moments

Each writes under a temporary folder and removes it; nothing in the repository is written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "JAX_PLATFORMS": "cpu"}

BOX_ENVS = '''
import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Base(gym.Env):
    def __init__(self, obs_shape=(3,), obs_low=-np.inf, obs_high=np.inf, obs_dtype=np.float32, act_shape=(2,),
                 act_low=-1.0, act_high=1.0, act_dtype=np.float32, nan_obs_at=None, nan_reward_at=None,
                 inf_reward_at=None, bad_obs=None, reward_kind=None):
        self.observation_space = spaces.Box(obs_low, obs_high, obs_shape, obs_dtype)
        self.action_space = spaces.Box(act_low, act_high, act_shape, act_dtype)
        self.nan_obs_at, self.nan_reward_at, self.inf_reward_at = nan_obs_at, nan_reward_at, inf_reward_at
        self.bad_obs, self.reward_kind, self.t = bad_obs, reward_kind, 0

    def obs(self):
        o = np.full(self.observation_space.shape, 0.5, self.observation_space.dtype)
        if self.bad_obs == "shape":
            return np.zeros(7, np.float32)
        if self.bad_obs == "list":
            return o.tolist()
        if self.nan_obs_at is not None and self.t == self.nan_obs_at:
            o = o.astype(np.float32)
            o.flat[0] = np.nan
        return o

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.obs(), {}

    def step(self, action):
        self.t += 1
        r = float(np.sum(np.asarray(action, np.float64)))
        if self.t == self.nan_reward_at:
            r = float("nan")
        if self.t == self.inf_reward_at:
            r = float("inf")
        r = {"array": np.array([r]), "none": None}.get(self.reward_kind, r)
        return self.obs(), r, False, self.t >= 10, {}


def reg(name, **kw):
    gym.register(name, entry_point=Base, kwargs=kw, max_episode_steps=10)


reg("InfObs-v0")
reg("InfAct-v0", act_low=-np.inf, act_high=np.inf)
reg("HalfInfAct-v0", act_low=0.0, act_high=np.inf)
reg("MixedAct-v0", act_low=np.array([-1.0, -np.inf], np.float32), act_high=np.array([1.0, 5.0], np.float32))
reg("Act2D-v0", act_shape=(2, 3))
reg("IntAct-v0", act_low=0, act_high=5, act_dtype=np.int64)
reg("NanObs-v0", nan_obs_at=3)
reg("NanObsReset-v0", nan_obs_at=0)
reg("NanReward-v0", nan_reward_at=2)
reg("InfReward-v0", inf_reward_at=2)
reg("FlatAct-v0", act_low=1.0, act_high=1.0)
reg("ScalarAct-v0", act_shape=())
reg("EmptyAct-v0", act_shape=(0,))
reg("EmptyObs-v0", obs_shape=(0,))
reg("ImageObs-v0", obs_shape=(4, 4, 3), obs_low=0, obs_high=255, obs_dtype=np.uint8)
reg("WrongShapeObs-v0", bad_obs="shape")
reg("ListObs-v0", bad_obs="list")
reg("ArrayReward-v0", reward_kind="array")
reg("NoneReward-v0", reward_kind="none")
reg("HugeBounds-v0", act_low=-3e38, act_high=3e38)
reg("NanBounds-v0", act_low=np.array([np.nan, -1], np.float32), act_high=np.array([1, 1], np.float32))
reg("Float64Act-v0", act_dtype=np.float64)
'''
BOX_CASES = [(name, []) for name in (
    "InfObs", "InfAct", "HalfInfAct", "MixedAct", "Act2D", "IntAct", "NanObs", "NanObsReset", "NanReward", "InfReward",
    "FlatAct", "ScalarAct", "EmptyAct", "EmptyObs", "ImageObs", "WrongShapeObs", "ListObs", "ArrayReward",
    "NoneReward", "HugeBounds", "NanBounds", "Float64Act")] + [
    ("InfAct", ["--algorithm", "q"]), ("Act2D", ["--algorithm", "sarsa"]), ("IntAct", ["--dtype", "float64"])]

EPROP_WINDOW_CASES = [
    "--cell lif", "--cell elman", "--cell alif", "--cell lif --cell-arg reset=value",
    "--cell lif --method-arg chunk=0", "--cell lif --method-arg chunk=-1", "--cell lif --method-arg chunk=2.5",
    "--cell lif --method-arg chunk=10000000000000", "--cell lif --method-arg truncation=4",
    "--cell lif --update-every 3", "--cell lif --readout-decay 0.9", "--cell lif --rate-weight 0.1",
    "--cell lif --stagger", "--cell lif --trace-dtype bfloat16", "--cell lif --cell-arg learn_leak=true",
    "--cell mingru", "--cell lif --method-arg chunk=1", "--cell lif --cell-arg learn_tau=true",
    "--cell lif --cell-arg leak=[0.9,0.8,0.7,0.6]", "--cell lif --cell-arg recurrent=false",
    "--cell lif --update-every 100", "--cell lif --devices 2", "--cell lif --method-arg chunk=abc",
    "--cell lif --method-arg chunk=2 --method-arg chunk=3",
    "--cell lif --readout-decay 0.9 --rate-weight 1 --rate-form batch", "--cell lif --method-arg chunk=1e3",
    "--cell lif --steps 1", "--cell lif --rate-target 0.5"]
EPROP_WINDOW_PRESET = "evidence-eprop-paper/alif-eprop-window"


def show(label: str, result: subprocess.CompletedProcess, seconds: float, records: Path | None = None) -> None:
    err = [line for line in result.stderr.strip().splitlines() if line.strip()]
    last = ""
    if records is not None and records.is_file() and records.read_text().strip():
        last = records.read_text().strip().splitlines()[-1][:160]
    traceback = " TRACEBACK" if "Traceback" in result.stderr else ""
    print(f"{label}: exit {result.returncode} in {seconds:.0f} s{traceback} | {' / '.join(err[-2:])[:400]} | {last}",
          flush=True)


def rtrl(args: list[str], cwd: Path, extra_path: Path | None = None, timeout: float = 300):
    env = dict(ENV)
    if extra_path is not None:
        env["PYTHONPATH"] = f"{extra_path}{os.pathsep}{env['PYTHONPATH']}"
    start = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-m", "rtrl", *args], cwd=cwd, env=env, capture_output=True,
                                text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, "HANG", "", "hang"), timeout
    return result, time.monotonic() - start


def box(tmp: Path) -> None:
    (tmp / "audenvs.py").write_text(BOX_ENVS)
    for name, extra in BOX_CASES:
        out = tmp / "out" / f"{name}{'-'.join(extra)}"
        result, seconds = rtrl(["rl", "--env", f"gymnasium:audenvs:{name}-v0", "--hidden", "4", "--envs", "2",
                                "--steps", "40", "--record-every", "20", "--quiet", "--out", str(out), *extra],
                               tmp, extra_path=tmp)
        show(f"{name} {' '.join(extra)}".strip(), result, seconds, out / "metrics.jsonl")


def eprop_window(tmp: Path) -> None:
    common = ("train --task-arg max_length=3 --hidden 4 --batch 2 --steps 4 --eval-every 2 --eval-size 2 --quiet "
              "--method eprop_window").split()
    for i, case in enumerate(EPROP_WINDOW_CASES):
        out = tmp / f"run{i}"
        result, seconds = rtrl([*common, *case.split(), "--out", str(out)], tmp)
        show(case, result, seconds, out / "metrics.jsonl")
    first = tmp / "run0"
    result, seconds = rtrl(["resume", str(first), "--steps", "14", "--quiet"], tmp)
    show("resume of the first to 14 steps", result, seconds, first / "metrics.jsonl")
    for extra in (["--hidden", "8"], []):
        out = tmp / f"preset{len(extra)}"
        result, seconds = rtrl(["train", "--preset", EPROP_WINDOW_PRESET, "--batch", "2", "--steps", "1",
                                "--eval-size", "2", "--quiet", *extra, "--out", str(out)], tmp)
        show(f"--preset {EPROP_WINDOW_PRESET} {' '.join(extra)}", result, seconds, out / "metrics.jsonl")


NIR = '''
import sys, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, sys.argv[1])
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np, torch, nir
import norse.torch as nt
from snntorch.import_nir import import_from_nir
from test_interop import CELLS, network, inputs, rtrl_spikes, torch_spikes
from rtrl.export import to_nir, from_nir

def compare(got, expected):
    if np.array_equal(got, expected):
        return "identical"
    share = np.mean(got != expected)
    return f"different: {share:.3f} of the spikes, rate {got.mean():.3f} against {expected.mean():.3f}"

def case(label, run):
    try:
        print(f"{label}: {run()}", flush=True)
    except Exception as e:
        print(f"{label}: {type(e).__name__}: {str(e)[:200]}", flush=True)

for name in ("lif", "lif_recurrent", "cuba", "cuba_recurrent", "if", "lif_thresholds"):
    cell, adjust = CELLS[name]()
    params = network(cell, 1)
    params = adjust(params, cell.hidden_size) if adjust else params
    xs = inputs(cell, 2)
    expected = rtrl_spikes(cell, params, xs)
    fresh = lambda target: to_nir(cell, params, target=target)
    if name in ("lif", "lif_recurrent", "cuba"):
        for label, build, dtype in (
                ("snntorch file in snnTorch, float32", lambda: import_from_nir(fresh("snntorch")), torch.float32),
                ("snntorch file in snnTorch, float64", lambda: import_from_nir(fresh("snntorch")), torch.float64),
                ("norse file in Norse at its dt", lambda: nt.from_nir(fresh("norse"), dt=1e-3), torch.float64),
                ("norse file in Norse, dt not given", lambda: nt.from_nir(fresh("norse")), torch.float64),
                ("norse file in Norse at dt 1e-4", lambda: nt.from_nir(fresh("norse"), dt=1e-4), torch.float64),
                ("nir file in snnTorch", lambda: import_from_nir(fresh("nir")), torch.float32),
                ("nir file in Norse", lambda: nt.from_nir(fresh("nir"), dt=1.0), torch.float64),
                ("snntorch file in Norse", lambda: nt.from_nir(fresh("snntorch"), dt=1e-4), torch.float64),
                ("norse file in snnTorch", lambda: import_from_nir(fresh("norse")), torch.float32)):
            case(f"{name}: {label}",
                 lambda build=build, dtype=dtype: compare(torch_spikes(build(), xs, dtype), expected))
    for target in ("snntorch", "norse", "nir"):
        def back(target=target):
            path = f"{sys.argv[2]}/{name}-{target}.nir"
            nir.write(path, fresh(target))
            return compare(rtrl_spikes(*from_nir(path), xs), expected)
        case(f"{name}: {target} file read back by from_nir", back)
cell, _ = CELLS["lif_recurrent"]()
params = network(cell, 1)
graph = to_nir(cell, params, target="nir")
import_from_nir(graph)  # snnTorch rewrites the recurrent loop in the graph it is given
case("lif_recurrent: from_nir of a nir graph snnTorch rewrote on import",
     lambda: compare(rtrl_spikes(*from_nir(graph), inputs(cell, 2)), rtrl_spikes(cell, params, inputs(cell, 2))))
'''


def nir_audit(tmp: Path) -> None:
    result = subprocess.run([sys.executable, "-c", NIR, str(ROOT / "tests"), str(tmp)], env=ENV, capture_output=True,
                            text=True, timeout=900)
    print("\n".join(line for line in result.stdout.splitlines() if ": " in line) or result.stderr[-2000:])
    run = tmp / "lif"
    rtrl(["train", "--task", "copy", "--task-arg", "max_length=2", "--hidden", "6", "--method", "rtrl", "--batch",
          "2", "--eval-every", "4", "--eval-size", "2", "--quiet", "--steps", "4", "--cell", "lif", "--cell-arg",
          "reset=value", "--cell-arg", "recurrent=true", "--out", str(run)], tmp)
    rtrl(["train", "--task", "copy", "--task-arg", "max_length=2", "--hidden", "6", "--batch", "2", "--eval-every",
          "4", "--eval-size", "2", "--quiet", "--steps", "4", "--cell", "alif", "--out", str(tmp / "alif")], tmp)
    for args in (["lif", "--nir", "g.nir"], ["lif", "--nir", "g.nir", "--target", "snntorch"],
                 ["lif", "--nir", "g.nir", "--target", "norse"], ["lif", "--nir", "g.nir", "--target", "norse",
                                                                   "--overwrite"],
                 ["lif", "--nir", "lif/config.json"], ["lif", "--nir", "graph.txt"], ["alif", "--nir", "a.nir"],
                 ["alif", "--nir", "a.nir", "--target", "snntorch"]):
        result, seconds = rtrl(["export", *args], tmp)
        result.stderr = result.stderr or result.stdout
        show("rtrl export " + " ".join(args), result, seconds)


def ctrl_c(tmp: Path) -> None:
    kinds = {
        "rl": ["results", "rl", "--tables", "memory-chain-16", "--rows", "memoryless", "--seeds", "1", "--out"],
        "popgym": ["results", "popgym", "--tasks", "RepeatPrevious", "--seeds", "1", "--steps", "20000", "--rows",
                   "uniform", "memoryless", "--out"],
        "training": ["results", "training", "--only", "copy", "--runs", "runs", "--out"],
    }
    moments = {"rl": (0.15, 0.3, 0.6, 1.0, 2.0, 12.0), "popgym": (0.3, 2.0, 12.0), "training": (3.0, 15.0)}
    for kind, args in kinds.items():
        for at in moments[kind]:
            folder = tmp / f"{kind}-{at}"
            folder.mkdir()
            out = folder / "page.md" if kind == "training" else folder
            run = subprocess.Popen([sys.executable, "-m", "rtrl", *args, str(out)], cwd=folder, env=ENV,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
            time.sleep(at)
            sent = time.monotonic()
            os.killpg(run.pid, signal.SIGINT)
            try:
                stdout, stderr = run.communicate(timeout=60)
                took = f"{time.monotonic() - sent:.1f} s"
            except subprocess.TimeoutExpired:
                os.killpg(run.pid, signal.SIGKILL)
                stdout, stderr = run.communicate()
                took = "HANG"
            left = ""
            for _ in range(50):  # the process group gone within 5 s
                try:
                    os.killpg(run.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                left, _ = " PROCESSES LEFT", os.killpg(run.pid, signal.SIGKILL)
            ledgers = []
            for file in folder.rglob("*.jsonl"):
                text = file.read_text()
                try:
                    whole = all(json.loads(line) is not None for line in text.splitlines()) and text.endswith("\n")
                except ValueError:
                    whole = False
                ledgers.append(f"{file.name} {len(text.splitlines())} lines{'' if whole or not text else ' TORN'}")
            temporary = [p.name for p in folder.rglob(".*.tmp")]
            lines = [line for line in stderr.strip().splitlines() if line.strip()]
            print(f"{kind} at {at} s: exit {run.returncode}, stopped in {took}{left}"
                  f"{' TRACEBACK' if 'Traceback' in stderr else ''} | ledgers {ledgers} | temporary {temporary} | "
                  f"{lines[-1] if lines else ''} | {stdout.strip().splitlines()[-1:] if stdout.strip() else ''}",
                  flush=True)


AUDITS = {"box": box, "eprop-window": eprop_window, "nir": nir_audit, "ctrl-c": ctrl_c}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in AUDITS:
        raise SystemExit(f"usage: python tools/surface_audit.py {{{','.join(AUDITS)}}}")
    with tempfile.TemporaryDirectory() as folder:
        AUDITS[sys.argv[1]](Path(folder))
