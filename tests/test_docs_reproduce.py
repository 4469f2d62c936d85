"""The results pages say what their commands give: the cheapest row of docs/results.md and the exact row of
docs/rl-results.md's memory-chain table are rerun here, in a fresh process with the command's own environment (the
suite's XLA flags, conftest.py, change float32 roundings and so the figure), and compared with the page digit for
digit, as the page prints it. The RL row's figure depends on the CPU's instruction set (XLA's float32 code differs);
where the page names a figure for this machine's CPU model, that one is compared.

Mutation tried by hand: the page's figure edited in its last digit -> this test names the row and both figures.
"""

import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from rtrl.benchmarks.suite import cpu_model

ROOT = Path(__file__).resolve().parent.parent
TRAINING_ROW = "copy/iir2-auto-k1"  # the cheapest row of docs/results.md (about 8 s of training on 2 cores)
RL_ROW, RL_SEEDS = "memory-chain", 3  # its table's seeds 0, 1, 2 in one call, as rtrl results rl runs them (20 s)


def page_row(page: Path, preset: str) -> list[str]:
    """The cells of ``preset``'s row in the tables of ``page``."""
    for line in page.read_text().splitlines():
        if line.startswith(f"| `{preset}` |"):
            return [cell.strip() for cell in line.strip("|").split("|")]
    raise AssertionError(f"{page} has no row for {preset}")


def rerun(argv: list[str], tmp_path: Path) -> Path:
    """``python -m rtrl ARGV --out RUN --quiet`` in a fresh process without the suite's XLA flags; the run folder."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "rtrl", *argv, "--out", str(out), "--quiet"], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.slow
def test_the_cheapest_row_of_the_results_page_reproduces_as_printed(tmp_path):
    cells = page_row(ROOT / "docs" / "results.md", TRAINING_ROW)
    printed = re.match(r"[-0-9.e+]+", cells[4]).group(0)  # "0.9187 (sequence accuracy 0.777)" -> "0.9187"
    run = rerun(["train", "--preset", TRAINING_ROW], tmp_path)
    last = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()][-1]
    assert f"{last['metric']:.4g}" == printed, f"{TRAINING_ROW}: the page says {printed}, the command gives " \
                                               f"{last['metric']:.4g}"


@pytest.mark.slow
def test_the_exact_row_of_the_rl_memory_chain_table_reproduces_as_printed(tmp_path):
    """The row's final return: per seed the mean of its last two records' returns, then mean +- standard deviation
    over the seeds, printed to 3 and 2 significant digits."""
    page = ROOT / "docs" / "rl-results.md"
    printed = page_row(page, RL_ROW)[2]  # "0.956 ± 0.025"
    per_cpu = dict(re.findall(r"On an? `([^`]+)` CPU[^`]*gives `([^`]+)`", page.read_text().replace("\n", " ")))
    printed = per_cpu.get(cpu_model(), printed)
    run = rerun(["rl", "--preset", RL_ROW, "--seeds", str(RL_SEEDS)], tmp_path)
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    finals = [statistics.mean(r["return_per_seed"][seed] for r in records[-2:]) for seed in range(RL_SEEDS)]
    shown = f"{statistics.mean(finals):.3g} ± {statistics.stdev(finals):.2g}"
    assert shown == printed, f"{RL_ROW}: the page says {printed}, the command gives {shown}"
