"""Figures of the code's shape (issue 23): imports against the layers, lines per package, the longest functions,
and what a 2-step ``rtrl train --preset copy20`` builds.

    .venv/bin/python tools/census.py [--src src] [--json OUT] [--trace]

``--trace`` runs the 2-step training in this process under ``sys.setprofile`` and counts the calls that build
things: the constructors of cells, tasks and methods, ``rtrl.methods.resolve`` and the rtrl modules imported.
Read-only apart from ``--json`` (and a temporary run folder for ``--trace``). The layer map is this tool's own
reading of DESIGN.md's round-3 layers; tests/test_layers.py holds the code to its own copy of it.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

# Bottom up. A module imports only from its own layer or lower ones, and the sibling packages of a layer
# (cells and methods; training and rl; reports and benchmarks) do not import each other.
LAYERS = (
    ("frozen", "checks", "files", "compare", "structure", "devices", "startup", "interrupts", "validate", "config",
     "capabilities", "kernels"),
    ("cells", "methods"),
    ("online", "sequence", "inspection", "optim", "driver", "export", "__init__"),
    ("training", "rl"),
    ("run",),
    ("reports", "benchmarks"),
    ("cli", "__main__"),
)
IMPORT_PATH = re.compile(r"rtrl(\.\w+)+:\w+")  # a cell named by import path, imported when the string is used
SIBLINGS = ({"cells", "methods"}, {"training", "rl"}, {"reports", "benchmarks"})  # may not import each other


def unit(module: str) -> str:
    """The unit of the layer map a module belongs to: ``rtrl.cells.lru`` -> ``cells``, ``rtrl.online`` -> ``online``."""
    if module.endswith(".__main__"):  # an entry point: nothing imports it
        return "__main__"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(name: str) -> int | None:
    for i, names in enumerate(LAYERS):
        if name in names:
            return i
    return None


def module_name(path: Path, src: Path) -> str:
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, module: str) -> list[str]:
    """Every rtrl module ``path`` imports (at the top or inside functions, relative imports resolved, and
    ``"rtrl.x:Name"`` import-path strings)."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found += [f"{base}.{a.name}" for a in node.names] + [base]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and IMPORT_PATH.fullmatch(node.value):
            found.append(node.value.split(":")[0])
    return [f for f in found if f == "rtrl" or f.startswith("rtrl.")]


def import_graph(src: Path) -> dict[str, set[str]]:
    modules = {module_name(p, src): p for p in sorted((src / "rtrl").rglob("*.py"))}
    graph = {}
    for module, path in modules.items():
        targets = set()
        for name in imports_of(path, module):
            while name not in modules and "." in name:  # ``from rtrl.x import function``: the module rtrl.x
                name = name.rpartition(".")[0]
            if name in modules and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def violations(graph: dict[str, set[str]]) -> list[tuple[str, str, str]]:
    """``(importer, imported, why)`` for each import against the layers (``rtrl/__init__`` re-exports aside)."""
    bad = []
    for a, targets in graph.items():
        ua = unit(a)
        for b in sorted(targets):
            ub = unit(b)
            if ua == ub or ub == "__init__":
                continue
            la, lb = layer_of(ua), layer_of(ub)
            if la is None or lb is None:
                bad.append((a, b, "outside the layer map"))
            elif lb > la:
                bad.append((a, b, "upward"))
            elif {ua, ub} in SIBLINGS:
                bad.append((a, b, "between siblings"))
    return bad


def package_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of more than one unit in the graph of units (a loop of imports between packages),
    and loops between the modules of one package."""
    edges: dict[str, set[str]] = {}
    for a, targets in graph.items():
        for b in targets:
            if unit(a) != unit(b) and unit(b) != "__init__" and unit(a) != "__init__":
                edges.setdefault(unit(a), set()).add(unit(b))
    loops = [c for c in strongly_connected(edges) if len(c) > 1]
    # within a package; a module's import of its own package (an ancestor, which has run already) is no loop
    module_edges = {a: {b for b in t if unit(a) == unit(b) and not a.startswith(b + ".")} for a, t in graph.items()}
    loops += [c for c in strongly_connected(module_edges) if len(c) > 1]
    return loops


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative enough for this size."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(set(edges) | {w for t in edges.values() for w in t}):
        if v not in index:
            visit(v)
    return out


def lines_per_package(src: Path) -> dict[str, int]:
    counts: Counter = Counter()
    for p in (src / "rtrl").rglob("*.py"):
        counts[unit(module_name(p, src))] += len(p.read_text().splitlines())
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
    graph = import_graph(args.src)
    bad = violations(graph)
    report = {
        "modules": len(graph),
        "violations": [f"{a} -> {b} ({why})" for a, b, why in bad],
        "loops": package_cycles(graph),
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
