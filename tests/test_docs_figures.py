"""Every figure quoted in README.md and docs/*.md says where it came from: a line

    Measured with `COMMAND` at commit HASH on YYYY-MM-DD.

(``rtrl.provenance.PATTERN``) in the same section of the page (the text between two headings). The commands that
write figures into pages write that line themselves (``rtrl.provenance.line``); a figure quoted by hand gets one
written by hand. The rule, with what counts as a figure, is docs/reliability.md's "Every figure says where it came
from"; in short, outside code blocks, code spans and HTML comments:

* in a table row: a decimal number (``0.9571``, ``4.2e-16``), a percentage, or a time or ratio (below);
* anywhere else: a time (a number with ``s``, ``ms``, ``us``, ``µs``, ``min``, ``minutes``, ``seconds``, ``hours``)
  or a ratio (``2.4x``).

A table or paragraph whose numbers are not measured (a task's parameters, a tolerance, a chance level) is preceded
by ``<!-- figures: none: REASON -->``, which exempts that one block (up to the next blank line).
"""

import pathlib
import re

import pytest

from rtrl.provenance import PATTERN

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

NUMBER = r"(?<![\w.])\d[\d,]*(?:\.\d+)?"
TIMING = re.compile(rf"{NUMBER}(?:\s?(?:ms|us|µs|s|min|minutes|seconds|hours)|x)(?![\w/])")
DECIMAL = re.compile(r"(?<![\w.])(?:\d+\.\d+(?:e[+-]?\d+)?|\d+e[+-]?\d+)(?![\w.])|\d%")
NOT_TEXT = re.compile(r"`[^`\n]*`|<!--.*?-->|arXiv \S+")  # code spans, comments, paper identifiers
EXEMPT = re.compile(r"<!-- figures: none: \S.*-->")
HEADING = re.compile(r"#{1,6} ")


def sections(text: str) -> list[list[tuple[int, str]]]:
    """The page's sections, each a list of ``(line number, line)``; lines inside fenced code blocks are blanked."""
    found, section, fenced = [], [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            line = ""
        elif fenced:
            line = ""
        elif HEADING.match(line):
            found.append(section)
            section = []
        section.append((n, line))
    return [*found, section]


def figures(section: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """``(line number, figure)`` of the first figure on each line of ``section`` that quotes one (not exempted)."""
    found, exempt = [], False
    for n, line in section:
        if EXEMPT.search(line):
            exempt = True
            continue
        if not line.strip():
            exempt = False
        text = NOT_TEXT.sub("", line)
        match = (DECIMAL.search(text) or TIMING.search(text)) if text.lstrip().startswith("|") else TIMING.search(text)
        if match and not exempt:
            found.append((n, match.group(0)))
    return found


def unsourced(text: str) -> list[tuple[int, str]]:
    """The figures of ``text`` whose section has no provenance line."""
    return [f for s in sections(text) if not any(PATTERN.search(line) for _, line in s) for f in figures(s)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_figure_on_the_page_says_which_command_commit_and_date_produced_it(page):
    missing = unsourced(page.read_text())
    assert not missing, (f"{page.name}: figures in a section without a 'Measured with `COMMAND` at commit HASH on "
                         f"DATE' line (docs/reliability.md): " + ", ".join(f"line {n}: {f!r}" for n, f in missing))


SOURCE = "Measured with `rtrl bench` at commit 0123abc on 2026-11-26."


@pytest.mark.parametrize("text, expected", [
    ("## A\n\nThe demo takes about 10 s.\n", [(3, "10 s")]),
    ("## A\n\nBPTT was 8.3x the forward step.\n", [(3, "8.3x")]),
    ("## A\n\n| cell | accuracy |\n|---|---|\n| GRU | 0.9581 |\n| Elman | 97% |\n", [(5, "0.9581"), (6, "7%")]),
    ("## A\n\n| size | steps |\n|---|---|\n| 64 x 256 | 6000 |\n", []),  # integers in a table: sizes, counts
    ("## A\n\nlearning rate 0.003, 6000 steps of 52 x 3 cells\n", []),  # decimals in prose: settings
    ("## A\n\n```bash\nsleep 10s  # 10 s\n```\n`2.5x` and <!-- 3 s -->\n", []),  # code and comments
    ("## A\n\n<!-- figures: none: task parameters -->\ncues of 100 ms\nspaced 150 ms\n\ntook 9 s\n", [(7, "9 s")]),
])
def test_what_counts_as_a_figure(text, expected):
    assert [f for s in sections(text) for f in figures(s)] == expected


def test_a_provenance_line_covers_the_figures_of_its_own_section_only():
    text = f"# P\n\n## A\n\ntook 9 s\n\n{SOURCE}\n\n## B\n\ntook 12 s\n\n### C\n\n| x | 0.5 |\n"
    assert unsourced(text) == [(11, "12 s"), (15, "0.5")]
    assert unsourced(text.replace("## B\n", "")) == [(14, "0.5")]  # B's figure now in A's section


@pytest.mark.parametrize("line", [
    "Measured with `rtrl bench` at commit 0123ab on 2026-11-26.",  # 6 hex digits: not a commit
    "Measured with `rtrl bench` at commit unknown on 2026-11-26.",
    "Measured with `rtrl bench` at commit 0123abc on 26.11.2026.",
    "Measured with rtrl bench at commit 0123abc on 2026-11-26.",  # the command not in a code span
])
def test_a_provenance_line_without_a_commit_date_or_command_covers_nothing(line):
    assert unsourced(f"## A\n\ntook 9 s\n\n{line}\n") == [(3, "9 s")]
