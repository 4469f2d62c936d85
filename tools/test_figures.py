"""The README's test figures: how many tests `make test` runs and how long it takes, with a cold compilation cache
and a warm one.

    .venv/bin/python tools/test_figures.py            # cold, then warm (about twice the suite's time)
    .venv/bin/python tools/test_figures.py --warm     # warm only, with the suite's usual cache

The suite keeps JAX's compiled programs in a persistent cache (tests/conftest.py: ``~/.cache/rtrl/jax-tests``, or
``RTRL_TEST_CACHE``). The cold run points it at a fresh empty folder, so every program compiles, as on a new
machine; the warm run then reuses that folder, as every later run on the machine does. Each run is the suite as
`make test` runs it (``python -m pytest``, its default two workers). Prints the figures, the machine (cores, load
average when each run started) and a provenance line to paste under them; exit status 1 where a run fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
USUAL_CACHE = os.environ.get("RTRL_TEST_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "rtrl", "jax-tests"))


def minutes(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s} s" if m else f"{s} s"


def run_suite(cache: str, pytest_args: list[str]) -> tuple[bool, str, float, str]:
    """One ``python -m pytest`` with ``cache`` as its compilation cache: (passed, its summary line, wall seconds,
    the load average when it started)."""
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "unknown"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *pytest_args], cwd=ROOT, text=True,
                          capture_output=True, env={**os.environ, "RTRL_TEST_CACHE": cache})
    wall = time.monotonic() - start
    lines = [line for line in done.stdout.splitlines() if " in " in line and ("passed" in line or "failed" in line)]
    return done.returncode == 0, (lines[-1].strip("= ") if lines else done.stdout[-2000:]), wall, load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm", action="store_true", help="one run, with the suite's usual (warm) cache")
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest (one test file: to try this script)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from rtrl import provenance

    runs = []
    with tempfile.TemporaryDirectory(prefix="rtrl-cold-cache-") as fresh:
        for kind, cache in [("warm", USUAL_CACHE)] if args.warm else [("cold", fresh), ("warm", fresh)]:
            ok, summary, wall, load = run_suite(cache, args.pytest_args)
            runs.append(ok)
            print(f"{kind} cache: {summary}; {minutes(wall)} wall, {os.cpu_count()} cores, load {load} at the start",
                  flush=True)
    command = " ".join(["python tools/test_figures.py", *(["--warm"] if args.warm else []), *args.pytest_args])
    print(provenance.line(command, provenance.commit(ROOT)))
    return 0 if all(runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
