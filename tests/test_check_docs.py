"""tools/check_docs.py (``make docs``): what a reader of the pages cannot follow is found, by page and line."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("check_docs", ROOT / "tools" / "check_docs.py")
check_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_docs)


def test_a_machine_path_an_issue_number_and_dead_links_are_found_by_line(tmp_path):
    """Hand-made pages: each bad line is named once; a live link, a live heading anchor (either site's form), a web
    address, a relative ``runs/`` path and a link inside a code block are not [the path pattern, the issue pattern,
    the file check or the anchor check left out: a line below is missing and this fails]."""
    (tmp_path / "other.md").write_text("# Other\n\n## Continuous control and the -P / -V masks\n\n## Same\n\n## Same\n")
    page = tmp_path / "page.md"
    page.write_text("\n".join([
        "# Page",
        "Run `rtrl bench --out runs/bench` and see [other](other.md) or [the web](https://example.org/a/tmp/b).",
        "python3 -m venv /work/btvenv",  # 3
        "As issue 53 asked, and the issue's 15 minutes.",  # 4
        "[gone](missing.md)",  # 5
        "[masks](other.md#continuous-control-and-the-p-v-masks) [again](other.md#same_1) [gh](other.md#same-1)",
        "[no such heading](other.md#nowhere)",  # 7
        "```",
        "[inside a code block](missing.md)",
        "cat /tmp/x",  # 10: a path in a code block is still a path (it is copied)
        "```",
        "[here](#page)",
        "the issue-22 rows, and issues #40 and 41",  # 13
        "an issue of 40 tests; tissue 5",
    ]) + "\n")
    found = check_docs.findings(page)
    assert [f.split(":", 2)[1] for f in found] == ["3", "4", "5", "7", "10", "13"], found
    assert "a path of one machine (/work/...)" in found[0] and "'issue 53'" in found[1] and "'issue-22'" in found[5]
    assert "no file missing.md" in found[2] and "has no heading with the anchor #nowhere" in found[3]


def test_the_repositorys_pages_have_no_finding():
    assert check_docs.main([]) == 0
