"""What a reader of the pages cannot follow, found before the site is built (``make docs`` runs this first).

    python tools/check_docs.py [PAGE ...]     # default: README.md and docs/*.md; exit status 1 on a finding

Each finding is one line, ``page:line: what``:

* a path of one machine (``/root/``, ``/home/``, ``/work/``, ``/tmp/``): a reader's machine has none of them (an
  example command writes under ``runs/``);
* an issue number (``issue 53``, ``issue-22``, ``issues #40``) or "the issue's ...": the tracker is not part of the
  repository;
* a relative link to a file that does not exist, or to a heading (``page.md#anchor``) the page does not have.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:root|home|work|tmp)/")
ISSUE = re.compile(r"\bissues?[ -]#?\d+|\bthe issue's\b", re.IGNORECASE)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def slugs(heading: str) -> tuple[str, str]:
    """A heading's anchor as MkDocs makes it (runs of hyphens and spaces made one hyphen) and as GitHub does (each
    space a hyphen): lower case, code marks and punctuation dropped."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return re.sub(r"[-\s]+", "-", text), text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings (outside fenced code blocks), either site's; a repeated heading's later
    ones get ``_1``, ``_2``, ... (MkDocs) or ``-1``, ``-2``, ... (GitHub)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose(text):
        match = HEADING.match(line)
        if match:
            for base, joint in zip(slugs(match.group(1)), ("_", "-"), strict=True):
                n = seen.get(base + joint, 0)
                found.add(f"{base}{joint}{n}" if n else base)
                seen[base + joint] = n + 1
    return found


def prose(text: str) -> list[str]:
    """The page's lines with those inside fenced code blocks blanked (their line numbers kept)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            lines.append("")
            continue
        lines.append("" if fenced else line)
    return lines


def dead_link(page: Path, target: str) -> str | None:
    """Why ``target``, a link on ``page``, leads nowhere, or ``None`` (web addresses are not followed)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # https:, mailto:, ...
        return None
    path, _, anchor = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    if not file.exists():
        return f"dead link {target!r}: no file {path}"
    if anchor and file.suffix == ".md" and anchor not in anchors(file.read_text(encoding="utf-8")):
        return f"dead link {target!r}: {file.name} has no heading with the anchor #{anchor}"
    return None


def findings(page: Path) -> list[str]:
    """Every finding on ``page``, ``page:line: what``."""
    text = page.read_text(encoding="utf-8")
    name = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
    found = []  # (line, what)
    for n, line in enumerate(text.splitlines(), 1):  # paths and issue numbers: code blocks too (they are copied)
        if MACHINE_PATH.search(line):
            found.append((n, f"a path of one machine ({MACHINE_PATH.search(line).group(0)}...)"))
        if ISSUE.search(line):
            found.append((n, f"an issue reference ({ISSUE.search(line).group(0)!r})"))
    for n, line in enumerate(prose(text), 1):
        for target in LINK.findall(line):
            why = dead_link(page, target)
            if why:
                found.append((n, why))
    return [f"{name}:{n}: {what}" for n, what in sorted(found, key=lambda f: f[0])]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    pages = [Path(a).resolve() for a in args] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [f for page in pages for f in findings(page)]
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} finding(s) in the pages (tools/check_docs.py)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
