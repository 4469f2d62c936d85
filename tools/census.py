"""Figures of the code's shape (issue 23): imports against the layers, lines per package, the longest functions,
and what a 2-step ``rtrl train --preset copy20`` builds.

    .venv/bin/python tools/census.py [--src src] [--json OUT] [--trace]

``--trace`` runs the 2-step training in this process under ``sys.setprofile`` and counts the calls that build
things: the constructors of cells, tasks and methods, ``rtrl.methods.resolve`` and the rtrl modules imported.
Read-only apart from ``--json`` (and a temporary run folder for ``--trace``). The imports are read, and held to the
layers, by tests/test_layers.py's own functions: the figures are what the suite enforces.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _layers():
    """tests/test_layers.py: its import reader, layer map, violations and loops (one definition, which the suite
    enforces and this tool counts)."""
    spec = importlib.util.spec_from_file_location("test_layers", HERE.parent / "tests" / "test_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


layers = _layers()


def lines_per_package(src: Path) -> dict[str, int]:
    counts: Counter = Counter()
    for p in (src / "rtrl").rglob("*.py"):
        counts[layers.unit(layers.module_name(p, src)) or "__init__"] += len(p.read_text().splitlines())
    return dict(sorted(counts.items()))


def longest_functions(src: Path, n: int = 10) -> list[tuple[int, str]]:
    found = []
    for p in sorted((src / "rtrl").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((node.end_lineno - node.lineno + 1, f"{p.relative_to(src)}:{node.lineno} {node.name}"))
    found.sort(key=lambda f: (-f[0], f[1]))
    return found[:n]


def trace_build() -> dict:
    """Calls that build things during ``rtrl train --preset copy20 --steps 2 --eval-every 2`` in this process."""
    before = set(sys.modules)
    import rtrl.cli  # noqa: F401 (the import itself is part of what is counted below: only what the run adds)

    calls: Counter = Counter()

    def profile(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        name = code.co_name
        if name == "__init__":  # dataclasses' generated __init__ has no file of ours: go by the class built
            cls = type(frame.f_locals.get("self"))
            module = getattr(cls, "__module__", "") or ""
            for kind, prefix in (("cell", "rtrl.cells"), ("task", "rtrl.training.tasks"), ("method", "rtrl.methods"),
                                 ("env", "rtrl.rl.envs"), ("env", "rtrl.rl.tmaze"), ("env", "rtrl.rl.gymnax_env")):
                if module.startswith(prefix):
                    calls[f"{kind} {cls.__name__}()"] += 1
            return
        if "/rtrl/" not in code.co_filename:
            return
        if name == "resolve" and "/methods/" in code.co_filename:
            calls["rtrl.methods.resolve"] += 1
        elif name == "check" and "/methods/" in code.co_filename:
            calls[f"method {type(frame.f_locals.get('self')).__name__}.check"] += 1
        elif name in ("parts", "assemble"):
            calls[f"{name}()"] += 1
        elif name == "bind" and "/methods/" in code.co_filename:
            calls[f"method {type(frame.f_locals.get('self')).__name__}.bind"] += 1

    from rtrl.cli import main

    with tempfile.TemporaryDirectory() as out:
        sys.setprofile(profile)
        try:
            status = main(["train", "--preset", "copy20", "--steps", "2", "--eval-every", "2", "--eval-size", "8",
                           "--out", f"{out}/run", "--quiet"])
        finally:
            sys.setprofile(None)
    modules = sorted(m for m in set(sys.modules) - before if m.startswith("rtrl"))
    return {"status": status, "calls": dict(sorted(calls.items())), "rtrl_modules_imported": len(modules)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default="src", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--trace", action="store_true", help="also trace a 2-step copy20 run (about a minute)")
    args = ap.parse_args(argv)
    graph = layers.graph(args.src.resolve())
    edges = layers.no_rtrl_init(graph)
    report = {
        "modules": len(graph),
        "violations": layers.violations(graph),
        "loops": layers.cycles(edges) + layers.cycles(layers.without_own_packages(edges), group=lambda m: m),
        "lines_per_package": lines_per_package(args.src),
        "longest_functions": [f"{n} lines {where}" for n, where in longest_functions(args.src)],
    }
    if args.trace:
        sys.path.insert(0, str(args.src.resolve()))
        report["copy20_two_steps"] = trace_build()
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
