"""``rtrl bench``: every benchmark in one run, printed as medians and ratios, saved as JSON and a plot.

    rtrl bench [--out bench] [--quick]

Sections (each also runs alone, see its module):
1. per-step cost of every exact element-wise method against a forward-only step (``elementwise``);
2. whole-sequence gradient time and memory against T, RTRL against BPTT (``sequence``);
3. Elman's exact RTRL against N, closed form against generic, with fitted exponents (``scaling``);
4. the memory-traffic bound of the trace methods and the fraction of it reached (``roofline``).
``--quick`` shrinks every section to finish in a minute or two (for a smoke test, not for figures).
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import jax

from rtrl.benchmarks import elementwise, roofline, scaling, sequence
from rtrl.files import atomic_write_text
from rtrl.reports.plot import pyplot, save_png

FULL = {"per_step_sizes": [(64, 256, 32), (32, 64, 8)], "per_step_T": 100, "rtrl_max_hidden": 64,
        "sequence_size": (32, 64, 8), "lengths": [100, 1000, 10000], "scaling_sizes": [8, 16, 32, 64],
        "roofline_size": (64, 256, 32)}
QUICK = {"per_step_sizes": [(8, 16, 4)], "per_step_T": 20, "rtrl_max_hidden": 16,
         "sequence_size": (4, 8, 2), "lengths": [10, 100], "scaling_sizes": [4, 8],
         "roofline_size": (8, 16, 4)}


def per_step_rows(config) -> list[dict]:
    rows = []
    for name, cls in elementwise.CELLS.items():
        for D, N, B in config["per_step_sizes"]:
            rtrl_steps = 10 if N <= config["rtrl_max_hidden"] else None
            t = elementwise.measure(cls(D, N), B, config["per_step_T"], rtrl_steps)
            rows += [{"cell": name, "D": D, "N": N, "B": B, "method": m, "seconds": s,
                      "ratio_to_forward": s / t["forward"]} for m, s in t.items()]
    return rows


def run(config, rss: bool = True) -> dict:
    results = {"machine": {"platform": jax.devices()[0].platform, "processor": platform.processor()
                           or platform.machine(), "jax": jax.__version__}}
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
    times = scaling.measure(sizes, 8, 4, 20)
    results["scaling"] = {"sizes": sizes, "seconds": times,
                          "exponents": {m: scaling.fitted_exponent(sizes, t) for m, t in times.items()}}
    for i, N in enumerate(sizes):
        print(f"  N={N:>4} closed_form {times['closed_form'][i] * 1e3:8.3f} ms, rtrl {times['rtrl'][i] * 1e3:8.3f} "
              f"ms, rtrl / closed_form {times['rtrl'][i] / times['closed_form'][i]:.2f}x")
    print("  fitted exponents: " + ", ".join(f"{m} N^{a:.2f}" for m, a in results["scaling"]["exponents"].items()))
    print("4. memory-traffic bound", flush=True)
    results["roofline"] = [r for name in ("elstm", "adaptive_iir2")
                           for r in roofline.measure(name, *config["roofline_size"], ["closed_form", "diagonal"])]
    roofline.print_rows(results["roofline"])
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
    save_png(fig, out, dpi=110)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="bench", help="folder for bench.json and bench.png (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test, not figures")


def run_command(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = run(QUICK if args.quick else FULL, rss=not args.quick)
    atomic_write_text(out / "bench.json", json.dumps(results, indent=1))
    plot(results, out / "bench.png")
    print(f"wrote {out / 'bench.json'} and {out / 'bench.png'}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.suite", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run_command(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
