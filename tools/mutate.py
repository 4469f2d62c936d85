"""Mutation check: apply one plausible bug at a time to a copy of the source tree and run the tests meant to catch it.

The mutants are data (tools/mutants.toml). Each names a file under src/rtrl, a snippet that must occur there
exactly once (so a mutant whose code has changed is refused rather than silently skipped), its replacement, a
one-line description of the bug, and the test files that should kill it. The working tree is never written:
each mutant runs in its own temporary copy of the repository (without .git and caches), with PYTHONPATH
pointing at that copy's src.

    python tools/mutate.py --check            # every mutant applies; no tests run
    python tools/mutate.py                    # run them all, one at a time
    python tools/mutate.py --only ID ... --jobs 2 --json results.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib  # Python 3.11+
except ModuleNotFoundError:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
SKIP = shutil.ignore_patterns(".git", ".venv", "runs", "__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache",
                              ".hypothesis", "build", "dist", "*.egg-info")
FIELDS = ("id", "file", "original", "replacement", "description", "tests")


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    original: str
    replacement: str
    description: str
    tests: tuple[str, ...]


def load_mutants(path: Path) -> list[Mutant]:
    """The mutants in `path`, each with every field; ids unique."""
    with open(path, "rb") as f:
        rows = tomllib.load(f).get("mutant", [])
    mutants, seen = [], set()
    for i, row in enumerate(rows):
        missing = [k for k in FIELDS if k not in row]
        if missing:
            raise SystemExit(f"{path}: mutant #{i} ({row.get('id', '?')}) lacks {', '.join(missing)}")
        if row["id"] in seen:
            raise SystemExit(f"{path}: mutant id {row['id']!r} appears twice")
        seen.add(row["id"])
        if row["original"] == row["replacement"]:
            raise SystemExit(f"{path}: mutant {row['id']!r} replaces its snippet with itself")
        mutants.append(Mutant(**{k: row[k] for k in FIELDS[:-1]}, tests=tuple(row["tests"])))
    return mutants


def mutated_text(repo: Path, mutant: Mutant) -> str:
    """The mutant's file with its one change applied; refuses a snippet that is absent or not unique."""
    source = repo / "src" / "rtrl" / mutant.file
    if not source.is_file():
        raise ValueError(f"{mutant.id}: no file src/rtrl/{mutant.file}")
    text = source.read_text()
    count = text.count(mutant.original)
    if count != 1:
        raise ValueError(f"{mutant.id}: snippet occurs {count} times in src/rtrl/{mutant.file} (expected once)")
    for test in mutant.tests:
        if not (repo / test).exists():
            raise ValueError(f"{mutant.id}: no test file {test}")
    return text.replace(mutant.original, mutant.replacement)


def run_mutant(repo: Path, mutant: Mutant | None, tests: tuple[str, ...], timeout: float, python: str) -> dict:
    """Apply `mutant` in a temporary copy of `repo` and run `tests` there: killed when they fail. With no mutant,
    the baseline: the unchanged copy, whose tests must pass for any kill to mean something."""
    name = mutant.id if mutant else "baseline"
    start = time.monotonic()
    try:
        text = mutated_text(repo, mutant) if mutant else None
    except ValueError as e:
        return {"id": name, "status": "error", "seconds": 0.0, "detail": str(e)}
    with tempfile.TemporaryDirectory(prefix=f"mutant-{name}-") as tmp:
        tree = Path(tmp) / "repo"
        shutil.copytree(repo, tree, ignore=SKIP)
        if mutant:
            (tree / "src" / "rtrl" / mutant.file).write_text(text)
        env = {**os.environ, "PYTHONPATH": str(tree / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
        command = [python, "-m", "pytest", *tests, "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
        try:
            done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout,
                                  start_new_session=True)
        except subprocess.TimeoutExpired:
            return {"id": name, "status": "timeout", "seconds": round(time.monotonic() - start, 1),
                    "detail": f"tests ran past {timeout:.0f} s"}
    seconds = round(time.monotonic() - start, 1)
    tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
    # pytest: 0 all passed, 1 some test failed; anything else (collection or usage error, interrupted) is an error,
    # since a mutant that breaks the import of a test module is not "caught" by that test's assertions.
    status = {0: "survived", 1: "killed"}.get(done.returncode, "error")
    return {"id": name, "status": status, "seconds": seconds, "detail": " | ".join(tail)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=HERE.parent, help="repository root (default: this script's)")
    parser.add_argument("--mutants", type=Path, default=None, help="mutant file (default: tools/mutants.toml)")
    parser.add_argument("--only", nargs="+", metavar="ID", help="run only these mutants")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant (default 300)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the results here")
    parser.add_argument("--check", action="store_true", help="only check that every mutant applies")
    parser.add_argument("--baseline", action="store_true",
                        help="run the selected mutants' test files on the unchanged tree (they must pass)")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs pytest (default: this one)")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    mutants = load_mutants(args.mutants or repo / "tools" / "mutants.toml")
    if args.only:
        unknown = set(args.only) - {m.id for m in mutants}
        if unknown:
            parser.error(f"--only: unknown mutant ids {sorted(unknown)}")
        mutants = [m for m in mutants if m.id in args.only]
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")

    if args.check:
        bad = []
        for m in mutants:
            try:
                mutated_text(repo, m)
            except ValueError as e:
                bad.append(str(e))
        print("\n".join(bad) if bad else f"all {len(mutants)} mutants apply")
        return 1 if bad else 0

    if args.baseline:
        tests = tuple(dict.fromkeys(t for m in mutants for t in m.tests))
        result = run_mutant(repo, None, tests, args.timeout * len(tests), args.python)
        verdict = {"survived": "passed", "killed": "FAILED"}.get(result["status"], result["status"])
        print(f"baseline, {len(tests)} test files unchanged: {verdict} in {result['seconds']} s [{result['detail']}]")
        return 0 if result["status"] == "survived" else 1

    def one(m: Mutant) -> dict:
        result = run_mutant(repo, m, m.tests, args.timeout, args.python)
        print(f"{result['status']:9} {result['seconds']:7.1f} s  {m.id}", flush=True)
        return result

    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(one, mutants))
    print(f"\n{'id':32} {'file':26} {'status':9} {'s':>7}")
    for m, r in zip(mutants, results, strict=True):
        print(f"{m.id:32} {m.file:26} {r['status']:9} {r['seconds']:7.1f}")
    counts = {s: sum(r["status"] == s for r in results) for s in ("killed", "survived", "timeout", "error")}
    decided = counts["killed"] + counts["survived"]
    rate = counts["killed"] / decided if decided else 0.0
    print(f"\nkilled {counts['killed']} of {decided} ({rate:.0%}); timeouts {counts['timeout']}, "
          f"errors {counts['error']}")
    for m, r in zip(mutants, results, strict=True):
        if r["status"] != "killed":
            print(f"  {r['status']}: {m.id}: {m.description} [{r['detail']}]")
    if args.json:
        by_id = {m.id: m for m in mutants}
        rows = [{**r, "file": by_id[r["id"]].file, "tests": list(by_id[r["id"]].tests)} for r in results]
        args.json.write_text(json.dumps({"counts": counts, "kill_rate": round(rate, 4), "results": rows}, indent=1)
                             + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
