"""Every python block of README.md and docs/*.md runs as written, a page's blocks in order in one namespace (as a
reader would paste them), in a fresh folder; figures in the prose are not checked here.

What the line right before a block's fence may say (an HTML comment: the rendered page does not show it, and the
page says so in words where it matters):

* ``<!-- test: skip: REASON -->``: not run (it needs a cluster, a download, ...); its ``import`` lines of rtrl still
  are, so a module that moved is caught;
* ``<!-- test: NAME=VALUE, ... -->``: run with a smaller budget: each ``NAME = number`` / ``NAME=number`` /
  ``"NAME": number`` in the block becomes ``VALUE`` (each NAME must occur); ``host_devices=N`` runs the block in a
  fresh interpreter with N host devices (``XLA_FLAGS``);
* ``<!-- test: run -->`` before a ``bash`` block: its ``rtrl ...`` lines are run through ``rtrl.cli.main`` (each must
  exit 0); other shell blocks are not run.

Pages whose blocks another test runs are listed in ``ELSEWHERE`` with that test.
"""

import ast
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ELSEWHERE = {"spiking.md": ("test_cells_spiking.py", "test_the_docs_examples_run")}
FENCE = re.compile(r"(?:<!-- test: (?P<directive>.*?) -->\n)?```(?P<lang>\w*)\n(?P<code>.*?)```", re.S)


def blocks(page: pathlib.Path) -> list[tuple[str, str, str]]:
    """``(language, directive, code)`` of each fenced block of ``page``."""
    return [(m["lang"], (m["directive"] or "").strip(), m["code"]) for m in FENCE.finditer(page.read_text())]


def budgeted(code: str, directive: str) -> tuple[str, int]:
    """``code`` with the directive's ``NAME=VALUE`` budgets put in; the host devices it asks for (0: none)."""
    devices = 0
    for item in filter(None, (s.strip() for s in directive.split(","))):
        name, _, value = item.partition("=")
        if name == "host_devices":
            devices = int(value)
            continue
        pattern = rf'(\b{name}\s*=\s*|"{name}"\s*:\s*)[\d_.e+-]+'
        assert re.search(pattern, code), f"the directive sets {name}, which the block does not: {code[:80]!r}"
        code = re.sub(pattern, lambda m, v=value: m.group(1) + v, code)
    return code, devices


def imports_of(code: str) -> str:
    """The top-level import statements of ``code`` that import rtrl."""
    lines = code.splitlines()
    return "\n".join("\n".join(lines[n.lineno - 1:n.end_lineno]) for n in ast.parse(code).body
                     if isinstance(n, ast.Import | ast.ImportFrom) and "rtrl" in ast.unparse(n))


def commands(code: str) -> list[list[str]]:
    """The ``rtrl`` command lines of a shell block (continuations joined, comments dropped)."""
    joined = code.replace("\\\n", " ")
    return [shlex.split(line, comments=True)[1:] for line in joined.splitlines() if line.strip().startswith("rtrl ")]


def run_in_fresh_interpreter(code: str, devices: int, cwd: pathlib.Path) -> None:
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]


def run_page(page: pathlib.Path, tmp_path, monkeypatch) -> dict:
    from rtrl.cli import main

    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    for i, (lang, directive, code) in enumerate(blocks(page)):
        where = f"{page.name} block {i}"
        if lang == "python":
            if directive.startswith("skip:"):
                exec(compile(imports_of(code), where, "exec"), {})
                continue
            code, devices = budgeted(code, directive)
            if devices:
                run_in_fresh_interpreter(code, devices, tmp_path)
            else:
                exec(compile(code, where, "exec"), namespace)
        elif lang in ("bash", "sh") and directive == "run":
            for argv in commands(code):
                assert main(argv) == 0, f"{where}: rtrl {' '.join(argv)}"
    return namespace


RUN = [p for p in PAGES if p.name not in ELSEWHERE and any(lang == "python" or d == "run" for lang, d, _ in blocks(p))]


@pytest.mark.parametrize("page", RUN, ids=[p.name for p in RUN])
def test_the_pages_examples_run(page, tmp_path, monkeypatch):
    run_page(page, tmp_path, monkeypatch)


def test_pages_run_elsewhere_are_run_there():
    for page, (file, name) in ELSEWHERE.items():
        assert (ROOT / "docs" / page).is_file() and f"def {name}(" in (ROOT / "tests" / file).read_text()


def test_every_directive_is_one_the_runner_knows():
    for page in PAGES:
        for lang, directive, code in blocks(page):
            if not directive:
                continue
            if lang == "python" and not directive.startswith("skip:"):
                budgeted(code, directive)  # every name it sets is in the block
            else:
                assert (lang == "python" and len(directive) > len("skip:") + 3) or \
                       (lang in ("bash", "sh") and directive == "run" and commands(code)), (page.name, directive)


def test_the_runner_sets_budgets_and_fails_on_a_stale_directive():
    code = 'steps = 10_000\nfit(t, s, steps=10_000, eval_every=1_000)\nd = {"steps": 5}\n'
    assert budgeted(code, "steps=8, eval_every=4, host_devices=4") == (
        'steps = 8\nfit(t, s, steps=8, eval_every=4)\nd = {"steps": 8}\n', 4)
    with pytest.raises(AssertionError, match="sets lr"):
        budgeted(code, "lr=0.1")
    assert imports_of("import jax\nfrom rtrl.run import checkpoint\nx = 1\n") == "from rtrl.run import checkpoint"
    assert commands("rtrl train --task copy \\\n  --steps 8   # a comment\nmake run\n") == [
        ["train", "--task", "copy", "--steps", "8"]]


def test_no_power_renders_as_bold():
    """``2**31 - 1`` outside a code span is Markdown's bold (``**31 - 1 ... 2**``)."""
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        prose = "".join(text.split("`")[::2])
        assert not re.search(r"\d\*\*\d", prose), f"{page.name}: a power outside a code span"


def test_the_bring_your_own_cell_page_has_an_example_per_framework():
    code = [c for lang, _, c in blocks(ROOT / "docs" / "bring-your-own-cell.md") if lang == "python"]
    assert len(code) >= 5
    for word in ("from_flax", "from_nnx", "from_equinox", "from_function", "SimpleCell"):
        assert any(word in block for block in code), word


# Modules of the library that the API reference leaves out, each with why; every other module is on a page.
NOT_IN_THE_REFERENCE = {
    "rtrl.files": "atomic writes, an implementation detail",
    "rtrl.interrupts": "the command's Ctrl-C handling",
    "rtrl.kernels": "kernel selection, an implementation detail",
    "rtrl.startup": "the command's start-up checks",
}
COMMANDS = ("rtrl.cli", "rtrl.reports", "rtrl.benchmarks")  # commands: docs/cli.md, not the API


def test_the_api_reference_has_every_module_of_the_library():
    """A module added without its page (the spiking tasks and the Gymnasium environment were) fails here."""
    src = ROOT / "src"
    modules = set()
    for file in (src / "rtrl").rglob("*.py"):
        parts = list(file.relative_to(src).with_suffix("").parts)
        if parts[-1] in ("__init__", "__main__"):
            continue  # a package's own docstring is on its page where it says something; entry points are commands
        modules.add(".".join(parts))
    documented = {m for page in (ROOT / "docs" / "api").glob("*.md")
                  for m in re.findall(r"^::: (\S+)", page.read_text(), re.M)}
    missing = sorted(m for m in modules - documented - set(NOT_IN_THE_REFERENCE) if not m.startswith(COMMANDS))
    assert not missing, f"add these modules to a page of docs/api (or to NOT_IN_THE_REFERENCE, saying why): {missing}"


def test_the_index_lists_every_page_of_the_api_reference():
    """docs/index.md's "API reference" links each page of docs/api (the RL and run-folder pages were left out)."""
    index = (ROOT / "docs" / "index.md").read_text()
    section = index.split("## API reference", 1)[1].split("\n## ", 1)[0]
    linked = set(re.findall(r"\]\((api/[\w-]+\.md)\)", section))
    pages = {f"api/{page.name}" for page in (ROOT / "docs" / "api").glob("*.md")}
    assert pages - linked == set(), f"add these pages to docs/index.md's API reference: {sorted(pages - linked)}"
    assert linked <= pages
