"""The examples of docs/bring-your-own-cell.md run as written."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "bring-your-own-cell.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_page_has_an_example_per_framework():
    assert len(BLOCKS) >= 5
    for word in ("from_flax", "from_nnx", "from_equinox", "from_function", "SimpleCell"):
        assert any(word in block for block in BLOCKS), word


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index):
    namespace: dict = {}
    exec(compile(BLOCKS[index], f"{DOC.name} block {index}", "exec"), namespace)
    assert "cell" in namespace
