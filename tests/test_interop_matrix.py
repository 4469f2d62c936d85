"""docs/interop.md is what tests/interop_matrix.py generates from its matrix and the installed versions (``python
tests/interop_matrix.py`` rewrites it), so the page says what tests/test_interop_<framework>.py establish; and the
generator writes every cell. Skipped where the ``interop`` extra is not installed (the page names its versions)."""

import pytest

import interop_matrix
from interop_matrix import DIRECTIONS, FRAMEWORKS, MATRIX, PAGE, cells, page, versions


def test_the_page_is_what_the_matrix_generates():
    found = versions()
    missing = [name for name, version in found.items() if version is None]
    if missing:
        pytest.skip(f"needs the interop extra: pip install 'rtrl[interop]' ({missing} not installed)")
    assert PAGE.read_text() == page(found), "docs/interop.md is stale: run python tests/interop_matrix.py"


def test_every_cell_is_on_the_page_and_each_outcome_is_one_of_five():
    text = page({name: "0.0" for name in versions()})
    kinds = (interop_matrix.IDENTICAL, interop_matrix.SHIFTED, interop_matrix.CLOSE)
    for framework in FRAMEWORKS:
        assert len(cells(framework)) == len(MATRIX[framework]) * len(DIRECTIONS)
        for row, outcomes in MATRIX[framework].items():
            assert f"| {row} | {outcomes[0]} | {outcomes[1]} |" in text
            assert all(o in kinds or o.startswith(("refused: ", "none: ")) for o in outcomes), (framework, row)
