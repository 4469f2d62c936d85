"""``rtrl bench``: every benchmark in one run, printed as medians and ratios, saved as JSON and a plot.

    rtrl bench [--out bench] [--quick] [--markdown docs/performance.md]

Sections (each also runs alone, see its module):
1. per-step cost of every exact element-wise method against a forward-only step (``elementwise``);
2. whole-sequence gradient time and memory against T, RTRL against BPTT (``sequence``);
3. Elman's exact RTRL against N, closed form against generic, with fitted exponents (``scaling``);
4. the memory-traffic bound of the trace methods, the trace-traffic floor of an exact step (forward, backward of
   what does not recur, one read and one write of the traces) and the fractions of both reached (``roofline``);
5. the README's per-step Python loop, with and without donating the state, against a scan (``loop``);
6. a deep LRU network trained online with layer-local traces against its forward step and its BPTT (``deep``);
7. exact element-wise RTRL against the streams B, the width N and the input size D, float32 and bfloat16
   traces, with the traces' size against the caches (``streams``);
8. trace precision: per-step time and gradient fidelity of bfloat16 and float16 traces (``precision``);
9. training split over 1, 2 and 4 devices (``devices``; forced host devices on a CPU: a functional check);
10. kernels per step of each cell and method, read from the compiled program (``kernels``; deterministic);
11. our exact online step beside braintrace's D_RTRL, gradients checked against BPTT first (``peers``; skipped
    where braintrace is not installed);
12. the streaming RL agent's step against its forward-only step, torsos x widths x environments (``agent``).
``--quick`` shrinks every section to tiny sizes (a smoke test of the whole suite, not figures).
``--markdown PAGE`` writes the figures, with the machine and the date, into the documentation page between its
``BEGIN`` and ``END`` markers; the text around them (what the figures mean) is kept.
Each section prints its figures as it finishes them. Ctrl-C while measuring stops at once (exit status 130)
with nothing written; the outputs are written together at the end, and a Ctrl-C then waits for the last of them.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
from pathlib import Path

import jax

from rtrl import interrupts, provenance
from rtrl.benchmarks import (
    agent,
    deep,
    devices,
    elementwise,
    kernels,
    loop,
    peers,
    precision,
    roofline,
    scaling,
    sequence,
    streams,
)
from rtrl.files import atomic_write_text
from rtrl.run.argtypes import path
from rtrl.run.folder import CONFIG
from rtrl.run.plot import pyplot, save_figure

FULL = {"per_step_cells": list(elementwise.PER_STEP_CELLS), "per_step_sizes": [(64, 256, 32), (32, 64, 8)],
        "per_step_T": 100, "rtrl_max_hidden": 64,
        "sequence_size": (32, 64, 8), "lengths": [100, 1000, 10000], "scaling_sizes": [8, 16, 32, 64],
        "roofline_size": (64, 256, 32), "loop_size": (64, 256, 32), "loop_T": 100,
        "deep": {"depth": 4, "width": 128, "input": 8, "batch": 32, "T": 100},
        "streams": {"center": (64, 256, 32), "streams": [1, 4, 32, 128, 512, 1024], "widths": [64, 256, 1024],
                    "inputs": [8, 64, 256], "T": 10},
        "precision": {"size": (64, 256, 32), "T": 100, "fidelity_T": 100, "seeds": 3},
        "devices": {"counts": [1, 2, 4], "hidden": 64, "batch": 32, "steps": 50},
        "kernels": {"sizes": [(64, 256, 32), (32, 64, 8)], "T": 100},
        "peers": {"sizes": [(64, 256, 32), (32, 64, 8)], "T": 100, "check_T": 50},
        "agent": {"cells": list(agent.CELLS), "widths": [16, 64, 192], "envs": [1, 16, 64], "steps": 50}}
QUICK = {"per_step_cells": list(elementwise.CELLS), "per_step_sizes": [(8, 16, 4)], "per_step_T": 20,
         "rtrl_max_hidden": 16,
         "sequence_size": (4, 8, 2), "lengths": [10, 100], "scaling_sizes": [4, 8],
         "roofline_size": (8, 16, 4), "loop_size": (8, 16, 4), "loop_T": 20,
         "deep": {"depth": 2, "width": 8, "input": 4, "batch": 2, "T": 20},
         "streams": {"center": (4, 8, 2), "streams": [1, 2], "widths": [8], "inputs": [4], "T": 5},
         "precision": {"size": (4, 8, 2), "T": 10, "fidelity_T": 10, "seeds": 1},
         "devices": {"counts": [1, 2], "hidden": 4, "batch": 4, "steps": 5},
         "kernels": {"sizes": [(4, 8, 2)], "T": 10},
         "peers": {"sizes": [(4, 8, 2)], "T": 10, "check_T": 10},
         "agent": {"cells": ["mingru"], "widths": [4], "envs": [1, 2], "steps": 5}}


def per_step_rows(config) -> list[dict]:
    rows = []
    for name in config["per_step_cells"]:
        cls = elementwise.PER_STEP_CELLS[name]
        for D, N, B in config["per_step_sizes"]:
            rtrl_steps = 10 if N <= config["rtrl_max_hidden"] else None
            t = elementwise.measure(cls(D, N), B, config["per_step_T"], rtrl_steps)
            rows += [{"cell": name, "D": D, "N": N, "B": B, "method": m, "seconds": s,
                      "ratio_to_forward": s / t["forward"]} for m, s in t.items()]
    return rows


SCALING = {"D": 8, "B": 4, "T": 20}
BEGIN = "<!-- BEGIN: written by `rtrl bench --markdown`; edit outside these markers -->"
END = "<!-- END: written by `rtrl bench --markdown` -->"


def cpu_model() -> str:
    """The CPU's marketing name (Linux's /proc/cpuinfo), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def machine() -> dict:
    """What the figures were measured on, and when."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"platform": jax.default_backend(), "device": jax.devices()[0].device_kind, "processor": cpu_model(),
            "cores": cores, "jax": jax.__version__, "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": provenance.commit()}


def run(config, rss: bool = True) -> dict:
    results = {"machine": machine(), "config": config}
    print("1. per-step time, float32, ratio to the forward-only step", flush=True)
    results["per_step"] = per_step_rows(config)
    for r in results["per_step"]:
        print(f"  {r['cell']:>13} {r['D']}x{r['N']}x{r['B']} {r['method']:>12} {r['seconds'] * 1e6:10.1f} us "
              f"{r['ratio_to_forward']:8.1f}x", flush=True)
    print("2. whole-sequence gradient against T (ELSTM)", flush=True)
    results["sequence"] = sequence.measure("elstm", *config["sequence_size"], config["lengths"], rss=rss)
    sequence.print_rows(results["sequence"])
    print("3. Elman: closed form against generic rtrl", flush=True)
    sizes = config["scaling_sizes"]
    times = scaling.measure(sizes, SCALING["D"], SCALING["B"], SCALING["T"])
    results["scaling"] = {**SCALING, "sizes": sizes, "seconds": times,
                          "exponents": {m: scaling.fitted_exponent(sizes, t) for m, t in times.items()}}
    for i, N in enumerate(sizes):
        print(f"  N={N:>4} closed_form {times['closed_form'][i] * 1e3:8.3f} ms, rtrl {times['rtrl'][i] * 1e3:8.3f} "
              f"ms, rtrl / closed_form {times['rtrl'][i] / times['closed_form'][i]:.2f}x")
    print("  fitted exponents: " + ", ".join(f"{m} N^{a:.2f}" for m, a in results["scaling"]["exponents"].items()))
    print("4. memory-traffic bound", flush=True)
    results["roofline"] = [r for name in ("elstm", "adaptive_iir2")
                           for r in roofline.measure(name, *config["roofline_size"], ["closed_form", "diagonal"])]
    roofline.print_rows(results["roofline"])
    print("5. the per-step Python loop (ELSTM, closed_form)", flush=True)
    results["loop"] = loop.measure("elstm", *config["loop_size"], "closed_form", config["loop_T"])
    for name, seconds in results["loop"].items():
        print(f"  {name:>8} {seconds * 1e3:8.3f} ms a step")
    print("6. deep LRU network, layer-local traces", flush=True)
    d = config["deep"]
    results["deep"] = deep.measure(deep.network("lru", d["depth"], d["width"], d["input"]), d["batch"], d["T"])
    for name, seconds in results["deep"].items():
        print(f"  {name:>24} {seconds * 1e6:10.1f} us {seconds / results['deep']['forward']:6.1f}x forward "
              f"{seconds / results['deep']['bptt']:5.2f}x bptt", flush=True)
    print("7. exact element-wise RTRL against B, N and D (float32 and bfloat16 traces)", flush=True)
    st = config["streams"]
    results["streams"] = {"caches": streams.cache_sizes(), "rows": streams.measure_all(
        elementwise.CELLS, st["center"], st["streams"], st["widths"], st["inputs"], st["T"])}
    streams.print_rows(results["streams"]["rows"], results["streams"]["caches"])
    print("8. trace precision: bfloat16 and float16 traces against float32", flush=True)
    pr = config["precision"]
    results["precision"] = precision.measure(elementwise.CELLS, pr["size"], pr["T"], pr["fidelity_T"], pr["seeds"])
    precision.print_rows(results["precision"])
    print("9. training split over devices", flush=True)
    dv = config["devices"]
    results["devices"] = devices.run(dv["counts"], hidden=dv["hidden"], batch=dv["batch"], steps=dv["steps"])
    devices.print_rows(results["devices"])
    print("10. kernels per step, from the compiled program", flush=True)
    kn = config["kernels"]
    results["kernels"] = [r for name in kernels.CELLS for D, N, B in kn["sizes"]
                          for r in kernels.measure(name, D, N, B, kn["T"])]
    kernels.print_rows(results["kernels"])
    print("11. beside braintrace's D_RTRL", flush=True)
    pe = config["peers"]
    results["peers"] = peers.run(pe["sizes"], pe["T"], pe["check_T"])
    print("12. the streaming RL agent's step against its forward-only step", flush=True)
    ag = config["agent"]
    results["agent"] = agent.measure_all(ag["cells"], ag["widths"], ag["envs"], ag["steps"])
    return results


def plot(results: dict, out: Path) -> None:
    """PNG at ``out``: gradient time and compiled temporary memory against T."""
    fig, (ax_t, ax_m) = pyplot().subplots(1, 2, figsize=(11, 4))
    for method in sorted({r["method"] for r in results["sequence"]}):
        rows = [r for r in results["sequence"] if r["method"] == method]
        T = [r["T"] for r in rows]
        ax_t.loglog(T, [r["seconds"] for r in rows], "o-", label=method)
        ax_m.loglog(T, [max(r["temp_bytes"], 1) / 2**20 for r in rows], "o-", label=method)
    ax_t.set(xlabel="sequence length T", ylabel="gradient time (s)", title="ELSTM: whole-sequence gradient time")
    ax_m.set(xlabel="sequence length T", ylabel="XLA temporary memory (MiB)", title="ELSTM: compiled temp memory")
    for ax in (ax_t, ax_m):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    save_figure(fig, out, dpi=110)


def duration(seconds: float) -> str:
    """Three significant digits in us, ms or s, whichever keeps them without an exponent."""
    for unit, scale in (("us", 1e6), ("ms", 1e3)):
        if seconds * scale < 999.5:
            return f"{seconds * scale:.3g} {unit}"
    return f"{seconds:.3g} s"


def table(header: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(map(str, row)) + " |" for row in rows]


def per_step_markdown(results: dict) -> list[str]:
    config, rows = results["config"], results["per_step"]
    methods = list(dict.fromkeys(r["method"] for r in rows if r["method"] != "forward"))
    against_bptt = [m for m in methods if m in elementwise.EXACT_ELEMENTWISE]
    body = []
    for (cell, D, N, B), group in itertools.groupby(rows, key=lambda r: (r["cell"], r["D"], r["N"], r["B"])):
        by_method = {r["method"]: r for r in group}
        body.append([cell, f"{D} x {N} x {B}", duration(by_method["forward"]["seconds"])]
                    + [f"{by_method[m]['ratio_to_forward']:.3g}x" if m in by_method else "-" for m in methods]
                    + [f"{by_method[m]['seconds'] / by_method['bptt']['seconds']:.2f}x"
                       if m in by_method and "bptt" in by_method else "-" for m in against_bptt])
    return [f"**Per step**, as a ratio to the forward-only step of the same cell: the cell scanned with the same "
            f"per-step loss and no gradient (T = {config['per_step_T']}; dense `rtrl` on 10 steps, only up to N = "
            f"{config['rtrl_max_hidden']}); the last columns give the exact element-wise methods against BPTT:", "",
            *table(["cell", "D x N x B", "forward", *(f"`{m}`" for m in methods),
                    *(f"`{m}` / `bptt`" for m in against_bptt)], body)]


def sequence_markdown(results: dict) -> list[str]:
    rows, (D, N, B) = results["sequence"], results["config"]["sequence_size"]
    bptt = {r["T"]: r["seconds"] for r in rows if r["method"] == "bptt"}
    body = [[r["T"], f"`{r['method']}`", duration(r["seconds"]),
             f"{r['seconds'] / bptt[r['T']]:.2f}x" if r["T"] in bptt else "-", f"{r['temp_bytes'] / 2**20:.3g} MiB",
             f"{r['peak_rss_bytes'] / 2**20:.0f} MiB" if "peak_rss_bytes" in r else "-"] for r in rows]
    return [f"**Whole-sequence gradient** of ELSTM ({D} x {N} x {B}) against the sequence length T: its time, XLA's "
            "compiled temporary memory, and the peak resident memory of a fresh process that computes it once:", "",
            *table(["T", "method", "time", "vs `bptt`", "XLA temporary", "peak RSS"], body)]


def scaling_markdown(results: dict) -> list[str]:
    sc = results["scaling"]
    cf, dense = sc["seconds"]["closed_form"], sc["seconds"]["rtrl"]
    body = [[N, duration(c), duration(d), f"{d / c:.2f}x"]
            for N, c, d in zip(sc["sizes"], cf, dense, strict=True)]
    fits = ", ".join(f"`{m}` as N^{a:.2f}" for m, a in sc["exponents"].items())
    return [f"**Elman, exact RTRL against N** (D = {sc['D']}, B = {sc['B']}, T = {sc['T']}): closed-form traces "
            f"against generic `rtrl`, time of a whole-sequence gradient; fitted, {fits}:", "",
            *table(["N", "`closed_form`", "`rtrl`", "`rtrl` / `closed_form`"], body)]


def roofline_markdown(results: dict) -> list[str]:
    rows, (D, N, B) = results["roofline"], results["config"]["roofline_size"]
    body = [[r["cell"], f"`{r['method']}`", f"{r['trace_traffic_bytes'] / 2**20:.3g} MiB",
             f"{r['bandwidth'] / 1e9:.3g} GB/s", duration(r["bound_seconds"]), duration(r["nonrecurrent_seconds"]),
             duration(r["floor_seconds"]), duration(r["step_seconds"]), f"{r['fraction_of_bound']:.0%}",
             f"{r['fraction_of_floor']:.0%}", duration(r["bptt_seconds"])] for r in rows]
    return [f"**Memory traffic and the floor** ({D} x {N} x {B}): a trace method reads its traces and writes them back "
            "every step; at the bandwidth measured updating a buffer of that size in place "
            f"({rows[0]['dram_bandwidth'] / 1e9:.3g} GB/s from DRAM) that bounds its step time from below. The floor "
            "adds the forward step and the backward pass of what does not recur (`output`), timed alone; BPTT's "
            "step beside it:", "",
            *table(["cell", "method", "traces read + written", "bandwidth", "bound", "forward + non-recurrent",
                    "floor", "step", "of bound", "of floor", "`bptt`"], body)]


def loop_markdown(results: dict) -> list[str]:
    D, N, B = results["config"]["loop_size"]
    body = [[f"`{name}`", duration(s)] for name, s in results["loop"].items()]
    return [f"**A per-step loop in Python** (ELSTM {D} x {N} x {B}, `closed_form`, a gradient and an Adam update "
            "every step, as in the README): the jitted step called once a step, then the same calling with the "
            "state donated, then the steps scanned inside one `jax.jit`:", "",
            *table(["variant", "per step"], body)]


def deep_markdown(results: dict) -> list[str]:
    d, t = results["config"]["deep"], results["deep"]
    body = [[f"`{name}`", duration(s), f"{s / t['forward']:.3g}x", f"{s / t['bptt']:.2f}x"] for name, s in t.items()]
    return [f"**A deep network online**: {d['depth']} LRU blocks of width {d['width']} (input {d['input']}, batch "
            f"{d['batch']}, T = {d['T']}), per step; layer-local traces (exact inside each block, back-propagated "
            "through the stack in space only) against the forward step and BPTT:", "",
            *table(["method", "per step", "vs forward", "vs `bptt`"], body)]


def streams_markdown(results: dict) -> list[str]:
    st, caches, rows = results["config"]["streams"], results["streams"]["caches"], results["streams"]["rows"]
    body = [[r["cell"], r["sweep"], f"{r['D']} x {r['N']} x {r['B']}", f"`{r['method']}`",
             duration(r["forward_seconds"]), duration(r["seconds"]["float32"]),
             f"{streams.per_entry_seconds(r) * 1e9:.3g} ns",
             streams.size_text(r["trace_bytes"]["float32"]), streams.resident_in(r["trace_bytes"]["float32"], caches),
             duration(r["seconds"]["bfloat16"]), f"{r['seconds']['bfloat16'] / r['seconds']['float32']:.2f}x"]
            for r in rows]
    fits = ", ".join(f"{cell} {axis}^{a:.2f}" for (cell, axis), a in streams.exponents(rows).items())
    known = ", ".join(f"{name} {streams.size_text(size)}" for name, size in caches.items()) or "unknown"
    return [f"**Streams, width and input size**: the exact method per step (T = {st['T']}) sweeping B, N and D in turn "
            f"around {' x '.join(map(str, st['center']))} (D x N x B); per trace entry (time / (B D N)), the float32 "
            f"traces' size and the smallest cache that holds them (this machine: {known}), and the step with "
            f"bfloat16 traces. Fitted exponents of the float32 step time against the swept size: {fits}:", "",
            *table(["cell", "sweep", "D x N x B", "method", "forward", "float32 traces", "per entry", "traces",
                    "fit in", "bfloat16 traces", "bf16 / f32"], body)]


def precision_markdown(results: dict) -> list[str]:
    rows, pr = results["precision"], results["config"]["precision"]
    body = []
    for r in rows:
        t = r["seconds"]
        for dtype, f in r["fidelity"].items():
            body.append([r["cell"], f"`{r['method']}`", dtype, duration(t[dtype]), f"{t[dtype] / t['float32']:.2f}x",
                         f"{t[dtype] / t['bptt']:.2f}x", f"{f['cosine_bptt']:.6f}", f"{f['error_bptt']:.2g}",
                         f"{f['cosine_float32']:.6f}", f"{f['error_float32']:.2g}"])
    D, N, B = pr["size"]
    return [f"**Trace precision**: each cell's exact method with its traces stored in float32, bfloat16 and float16 "
            f"(`trace_dtype`), per step at {D} x {N} x {B} (T = {pr['T']}), and the worst gradient fidelity over "
            f"{pr['seeds']} fidelity problems (4 inputs, 16 neurons, batch 2, T = {pr['fidelity_T']}, float32) "
            "against BPTT and against float32 traces:", "",
            *table(["cell", "method", "traces", "per step", "vs float32 traces", "vs `bptt`", "cosine to `bptt`",
                    "rel. err.", "cosine to float32", "rel. err."], body)]


def devices_markdown(results: dict) -> list[str]:
    dv, rows, m = results["config"]["devices"], results["devices"], results["machine"]
    base = rows[0]["seconds"]
    body = [[r["devices"], duration(r["seconds"]), f"{r['seconds'] / base:.2f}x", f"{r['relative_error']:.1e}"]
            for r in rows]
    forced = (f" These are forced host devices sharing the {m['cores']} cores: a functional check of the sharded "
              "path and its overhead, not a speed-up." if m["platform"] == "cpu" else "")
    return [f"**Several devices**: the trainer's online step (copy task, ELSTM hidden {dv['hidden']}, `closed_form`, "
            f"batch {dv['batch']} split over the devices, a gradient and an Adam update every step) against the "
            f"device count, and the parameters after one chunk of {dv['steps']} steps against the one-device "
            f"run's.{forced}", "",
            *table(["devices", "per step", "vs 1 device", "params rel. err."], body)]


def kernels_markdown(results: dict) -> list[str]:
    rows = results["kernels"]
    body = [[r["cell"], f"{r['D']} x {r['N']} x {r['B']}", f"`{r['method']}`", f"{r['fusions']:.3g}",
             f"{r['library']:.3g}", f"{r['other']:.3g}", f"{r['total']:.3g}", f"{r['nested']:.3g}",
             " + ".join(str(n) for n in r["trip_counts"])] for r in rows]
    return [f"**Kernels per step** (T = {results['config']['kernels']['T']}, float32): what XLA's compiled "
            "whole-sequence program launches per scanned step, read from its optimised HLO "
            "(`python -m rtrl.benchmarks.kernels`): generated fusions, library calls (matrix products) and other "
            "kernels (copies), how many of them run in loops nested in the step (the contraction's loop over the "
            "streams), and the iterations of each scan (100 a step; 50: two steps a loop body; BPTT scans twice):",
            "", *table(["cell", "D x N x B", "method", "fusions", "library", "other", "total", "nested",
                        "loop iterations"], body)]


def peers_markdown(results: dict) -> list[str]:
    found, pe = results["peers"], results["config"]["peers"]
    if found is None:
        return ["**Beside braintrace**: not measured in this run (braintrace is not installed here; "
                "`python -m rtrl.benchmarks.peers --help` says how)."]
    names = list(dict.fromkeys(n for r in found["rows"] for n in r["seconds"]))
    body = [[f"{r['D']} x {r['N']} x {r['B']}", name, duration(s), f"{s / peers.ours(r['seconds'], name):.2f}x"]
            for r in found["rows"] for name in names if (s := r["seconds"].get(name)) is not None]
    errors = "; ".join(f"{r['D']} x {r['N']} x {r['B']}: " + ", ".join(f"{n} {e:.1e}" for n, e in r["errors"].items())
                       for r in found["rows"])
    return [f"**Beside braintrace** {found['braintrace']} (brainstate {found['brainstate']}): a tanh IndRNN, our "
            "`diagonal` against braintrace's `D_RTRL` in its two modes, per step: a whole sequence's online "
            f"gradient in one call over T = {pe['T']} (`scan`) and a single step as one call; against ours "
            f"measured the same way. Each gradient was first checked against BPTT (float64, T = {pe['check_T']}, "
            f"relative error: {errors}):", "",
            *table(["D x N x B", "variant", "per step", "vs ours"], body)]


def agent_markdown(results: dict) -> list[str]:
    rows = results.get("agent")
    if rows is None:
        return ["**The streaming RL agent's step**: not measured in this run."]
    body = [[r["cell"], r["width"], r["envs"], f"`{r['method']}`", duration(r["full_seconds"]),
             duration(r["forward_seconds"]), f"{r['ratio_to_forward']:.3g}x", f"{r['vs_memoryless']:.3g}x",
             f"{r['env_steps_per_second']:,.0f}", f"{r['vs_first']:.3g}x" if r["envs"] != r["first_envs"] else "-"]
            for r in rows]
    return ["**The streaming RL agent's step** (`python -m rtrl.benchmarks.agent`; MemoryChain, float32): `rtrl rl`'s "
            "whole jitted step (the torso's exact traces, the gradients, the TD update, the environments) against the "
            "forward-only agent step (the cell's step, the heads, the action, the environments), per step, and "
            "against the memoryless agent's whole step with as many environments; environment steps a second, and "
            "that figure over one environment's (all timed in the same interleaved call):", "",
            *table(["torso", "width", "envs", "method", "agent step", "forward-only", "ratio", "x memoryless",
                    "env steps/s", "vs 1 env"], body)]


def markdown(results: dict, quick: bool = False, command: str = "rtrl bench --markdown docs/performance.md") -> str:
    """The figures of one ``run`` as Markdown: the command, commit, date and machine (``rtrl.provenance``), then one
    table per section."""
    m = results["machine"]
    head = (f"{provenance.line(command, m.get('commit', 'unknown'), m['date'])[:-1]}, on {m['processor']} "
            f"({m['cores']} cores available), JAX {m['jax']} on the "
            f"{m['platform']} backend ({m['device']}), float32; every figure a median of repeated jitted calls.")
    if quick:
        head += " **`--quick` sizes: a smoke test, not figures.**"
    sections = [per_step_markdown, sequence_markdown, scaling_markdown, roofline_markdown, loop_markdown,
                deep_markdown, streams_markdown, precision_markdown, devices_markdown, kernels_markdown,
                peers_markdown, agent_markdown]
    return "\n\n".join([head] + ["\n".join(section(results)) for section in sections])


def new_page(title: str = "Performance") -> str:
    return f"# {title}\n\n{BEGIN}\n{END}\n"


def figures_page(path: str) -> Path:
    """``--markdown``: a page with the markers once each, or a new page in an existing folder (an argparse type,
    so a wrong page is refused before the benchmarks run)."""
    page = Path(path)
    if not page.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: the folder {str(page.parent)!r} does not exist")
    if page.exists():
        text = page.read_text()
        if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
            raise argparse.ArgumentTypeError(f"{path} must hold the line {BEGIN!r} once, then {END!r} once")
    return page


def bench_folder(text: str) -> Path:
    """``--out``: a path (``argtypes.path``) that is not a file, nor a run folder whose files the benchmark's
    would sit among (an argparse type, so a wrong folder is refused before the benchmarks run)."""
    folder = Path(path(text))
    if folder.exists() and not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    if (folder / CONFIG).exists():
        raise argparse.ArgumentTypeError(f"{text} is a run folder (it holds {CONFIG}); choose another folder")
    return folder


def with_figures(text: str, figures: str) -> str:
    """``text`` with what lies between its markers replaced by ``figures``."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + figures.strip("\n") + "\n" + text[end:]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="bench", type=bench_folder,
                        help="folder for bench.json and bench.png (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test, not figures")
    parser.add_argument("--markdown", type=figures_page, metavar="PAGE",
                        help="write the figures between the markers of this page (docs/performance.md)")


def run_command(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = run(QUICK if args.quick else FULL, rss=not args.quick)  # a Ctrl-C here: nothing written
    with interrupts.deferred():  # the outputs are written together: a Ctrl-C now waits for the last of them
        atomic_write_text(out / "bench.json", json.dumps(results, indent=1))
        plot(results, out / "bench.png")
        print(f"wrote {out / 'bench.json'} and {out / 'bench.png'}")
        if args.markdown is not None:
            page = args.markdown
            text = page.read_text() if page.exists() else new_page()
            command = f"rtrl bench --markdown {page}" + (" --quick" if args.quick else "")
            atomic_write_text(page, with_figures(text, markdown(results, quick=args.quick, command=command)))
            print(f"wrote the figures into {page}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.suite", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run_command(parser.parse_args(argv))


if __name__ == "__main__":
    interrupts.install()  # as in the rtrl command: a Ctrl-C while measuring ends it at once, writing nothing
    raise SystemExit(main())
