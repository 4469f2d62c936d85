"""The README's links lead somewhere and its layout is the package's (tests/test_docs_examples.py runs its code)."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchors for the headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", markdown, flags=re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_readme_links_lead_to_files_and_headings():
    """Every relative link names a file of the repository; an ``#anchor`` names a heading of its page (the
    documentation site checks the links between the pages under docs/ when it is built)."""
    text = README.read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", re.sub(r"```.*?```", "", text, flags=re.S))
    assert links, "the README links nowhere"
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else README
        assert target.is_file(), f"README links to {link}, which does not exist"
        if anchor:
            assert anchor in heading_anchors(target.read_text()), f"README links to {link}: no such heading"


def test_readme_layout_names_every_module_and_package():
    """The Layout section's tree lists exactly the modules and packages at the top of ``src/rtrl/``."""
    text = README.read_text()
    section = text[text.index("## Layout"):]
    tree = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    listed = set(re.findall(r"^  (\S+)", tree, re.M))
    package = ROOT / "src" / "rtrl"
    present = {p.name for p in package.glob("*.py")} | {p.name + "/" for p in package.iterdir()
                                                         if (p / "__init__.py").is_file()}
    assert listed == present
