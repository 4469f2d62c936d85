"""The package's layers hold: every module imports only from its own layer's package or below, siblings that must
stay apart (cells | methods, training | rl, reports | benchmarks) never import each other, and no two packages
import each other (directly or round a loop). Read from the source with ``ast``: ``import`` statements anywhere
(inside functions too), ``importlib.import_module("...")`` literals, and import-path strings ``"rtrl.x.y:Name"``.

Bottom up (README "Layout"; docs/design.md):

0. foundation: frozen, checks, files, compare, structure, devices, startup, interrupts, validate, config, kernels,
   capabilities, provenance, ledger, extras, usage
1. cells, methods (apart from each other)
2. the public API: online, sequence, inspection, optim, driver, export (and ``rtrl/__init__``)
3. training, rl (apart from each other)
4. run (the run folder, checkpoint, the driver, the command line's options and argument types, presets)
5. reports, benchmarks (apart from each other)
6. cli (dispatching to reports and benchmarks), and every ``__main__`` module (an entry point: nothing imports it)

One exception, declared: ``rtrl/__init__``'s ``LAZY`` table names what the package re-exports from the layers above
it (``rtrl.load``, from the run layer), imported by its ``__getattr__`` on first use, never by ``import rtrl``
(tests/test_imports.py holds that); an edge from ``rtrl`` upward that the table does not name is still a violation.

Importing any ``rtrl.x`` runs ``rtrl/__init__`` first; that edge is not an import of the module's own (and, for the
loops between modules, neither is a module's import of its own package's ``__init__``, which has run already).
Mutation tried: ``from rtrl.training import trainer`` added to ``rtrl/rl/loop.py`` -> the suite test names it.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("frozen", "checks", "files", "compare", "structure", "devices", "startup", "interrupts", "validate", "config",
     "kernels", "capabilities", "provenance", "ledger", "extras", "usage"),
    ("cells", "methods"),
    ("online", "sequence", "inspection", "optim", "driver", "export", ""),  # "": the package itself (rtrl/__init__)
    ("training", "rl"),
    ("run",),
    ("reports", "benchmarks"),
    ("cli", "__main__"),
)
APART = ({"cells", "methods"}, {"training", "rl"}, {"reports", "benchmarks"})


def unit(module: str) -> str:
    """The part of the package a module belongs to: ``rtrl.training.tasks.copy`` -> ``training``; ``rtrl`` -> ``""``;
    an entry point ``rtrl.__main__`` -> ``__main__``."""
    if module.endswith(".__main__"):
        return "__main__"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer(module: str) -> int:
    name = unit(module)
    for i, names in enumerate(LAYERS):
        if name in names:
            return i
    raise AssertionError(f"{module} is in no layer of tests/test_layers.py: add its package to LAYERS")


def module_name(file: Path, root: Path = SRC) -> str:
    parts = list(file.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source: str, module: str, is_package: bool, known) -> set[str]:
    """The rtrl modules that ``source`` (the module ``module``) imports, each resolved to the deepest known module:
    ``from rtrl.cells import Elman`` -> ``rtrl.cells``, ``from rtrl import cells`` -> ``rtrl.cells``."""
    names: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) \
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names.add(node.args[0].value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and ":" in node.value:
            path, _, name = node.value.partition(":")
            if path.startswith("rtrl") and name.isidentifier() and all(p.isidentifier() for p in path.split(".")):
                names.add(path)
    resolved = set()
    for name in names:
        if name != "rtrl" and not name.startswith("rtrl."):
            continue
        while name not in known and "." in name:
            name = name.rpartition(".")[0]
        if name in known and name != module:
            resolved.add(name)
    return resolved


@functools.cache
def graph(root: Path = SRC) -> dict[str, set[str]]:
    """Every module of ``root``/rtrl and the rtrl modules it imports."""
    files = {module_name(f, root): f for f in sorted((root / "rtrl").rglob("*.py"))}
    return {m: imported(f.read_text(), m, f.name == "__init__.py", files) for m, f in files.items()}


def lazy_exports(root: Path = SRC) -> set[str]:
    """The modules of the ``LAZY`` table of ``rtrl/__init__`` (``{"load": "rtrl.run.trained:load"}``): names the
    package re-exports from above, imported on first use only."""
    for node in ast.parse((root / "rtrl" / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["LAZY"]:
            return {path.partition(":")[0] for path in ast.literal_eval(node.value).values()}
    return set()


def violations(edges: dict[str, set[str]], lazy: set[str] = frozenset()) -> list[str]:
    """Upward imports and imports between siblings kept apart, one line each (but the package's ``lazy``
    re-exports)."""
    found = []
    for module, targets in sorted(edges.items()):
        for target in sorted(targets):
            if target == "rtrl" and layer(module) >= layer(target):  # rtrl/__init__: re-exports, below the importer
                continue
            if module == "rtrl" and target in lazy:  # rtrl/__init__'s LAZY table: imported on first use
                continue
            a, b = unit(module), unit(target)
            if layer(target) > layer(module):
                found.append(f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)}): upward")
            elif a != b and {a, b} in APART:
                found.append(f"{module} imports {target}: {a} and {b} are siblings that must not import each other")
    return found


def cycles(edges: dict[str, set[str]], group=unit) -> list[list[str]]:
    """The import loops between groups of modules (by default packages: ``training``, ``rl``, ...), each as the
    sorted list of the groups that reach each other (Tarjan's strongly connected components)."""
    between: dict[str, set[str]] = {}
    for module, targets in edges.items():
        between.setdefault(group(module), set()).update(group(t) for t in targets if group(t) != group(module))
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(between.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(between):
        if v not in index:
            visit(v)
    return found


def no_rtrl_init(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: t - {"rtrl"} for m, t in edges.items()}


# -- the package ----------------------------------------------------------------------------------------------------
def test_every_import_points_down_or_within_its_package():
    found = violations(graph(), lazy_exports())
    assert not found, "imports that break the layers:\n" + "\n".join(found)


def test_no_import_loop_between_packages():
    found = cycles(no_rtrl_init(graph()))
    assert not found, f"packages that import each other (round a loop): {found}"


def without_own_packages(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Each module's imports less those of the packages it is in (``rtrl.methods.auto`` -> ``rtrl.methods``)."""
    return {m: {t for t in targets if not m.startswith(t + ".")} for m, targets in edges.items()}


def test_no_import_loop_between_modules():
    """Not even inside a package (``rl/envs`` was one: the registry, gymnax's adapter and the T-maze)."""
    found = cycles(without_own_packages(no_rtrl_init(graph())), group=lambda m: m)
    assert not found, f"modules that import each other (round a loop): {found}"


# -- the checker itself, on a made-up package -----------------------------------------------------------------------
def fake(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for name, source in files.items():
        file = tmp_path / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(source)
    return graph(tmp_path)


def test_the_checker_catches_an_upward_import_in_any_form(tmp_path):
    """A cell that reaches up into training, four ways (a function's import, ``from rtrl import``, importlib, an
    import-path string), each named; an import from below is not."""
    edges = fake(tmp_path, {
        "rtrl/__init__.py": "",
        "rtrl/checks.py": "",
        "rtrl/cells/__init__.py": "from rtrl.checks import x\n",
        "rtrl/cells/a.py": "def f():\n    from rtrl.training.presets import lru\n",
        "rtrl/cells/b.py": "from rtrl import training\n",
        "rtrl/cells/c.py": "import importlib\nimportlib.import_module('rtrl.training')\n",
        "rtrl/cells/d.py": "NETWORK = 'rtrl.training.presets:lru_network'\nTEXT = 'see rtrl: words'\n",
        "rtrl/training/__init__.py": "",
        "rtrl/training/presets.py": "from . import tasks\nfrom ..cells import a\n",
        "rtrl/training/tasks.py": "",
    })
    found = violations(edges)
    assert found == [f"rtrl.cells.{m} (layer 1) imports {t} (layer 3): upward" for m, t in
                     [("a", "rtrl.training.presets"), ("b", "rtrl.training"), ("c", "rtrl.training"),
                      ("d", "rtrl.training.presets")]]
    assert edges["rtrl.training.presets"] == {"rtrl.training.tasks", "rtrl.cells.a"}  # relative imports resolved
    assert edges["rtrl.cells"] == {"rtrl.checks"}


def test_only_the_lazy_table_lets_the_package_reach_up(tmp_path):
    """``rtrl/__init__`` may name a module above it in its ``LAZY`` table; the same import anywhere else in it, or
    of a module the table does not name, is upward."""
    tree = {"rtrl/__init__.py": "LAZY = {'load': 'rtrl.run.trained:load'}\ndef f():\n    import rtrl.training\n",
            "rtrl/run/__init__.py": "", "rtrl/run/trained.py": "", "rtrl/training/__init__.py": ""}
    edges = fake(tmp_path, tree)
    assert lazy_exports(tmp_path) == {"rtrl.run.trained"}
    assert violations(edges, lazy_exports(tmp_path)) == ["rtrl (layer 2) imports rtrl.training (layer 3): upward"]
    assert "rtrl (layer 2) imports rtrl.run.trained (layer 4): upward" in violations(edges)


def test_the_checker_catches_siblings_and_loops(tmp_path):
    edges = fake(tmp_path, {
        "rtrl/__init__.py": "",
        "rtrl/rl/__init__.py": "from rtrl.training import x\n",
        "rtrl/training/__init__.py": "from rtrl.rl import y\n",
        "rtrl/cells/__init__.py": "",
        "rtrl/cells/a.py": "from rtrl.cells import b\n",
        "rtrl/cells/b.py": "from rtrl.cells import a\n",
    })
    assert violations(edges) == [
        "rtrl.rl imports rtrl.training: rl and training are siblings that must not import each other",
        "rtrl.training imports rtrl.rl: training and rl are siblings that must not import each other"]
    assert cycles(edges) == [["rl", "training"]]
    assert cycles(edges, group=lambda m: m) == [["rtrl.cells.a", "rtrl.cells.b"], ["rtrl.rl", "rtrl.training"]]
