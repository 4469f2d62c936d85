"""An agent whose torso is a registered LRU or RTU builds it without its N x N output matrix (``output_map="concat"``:
every head's first map on the torso is linear and absorbs it) and says so in its configuration; the matrix where the
user names it, where the heads read halves of the torso (``split_torso``) or where ``hidden`` is odd. A config.json
from before agents named the form reads back as the matrix its run had, and resumes."""

from __future__ import annotations

import json

import jax
import pytest

from rtrl.cli import main
from rtrl.rl.assemble import assemble
from rtrl.rl.config import RLConfig

MATRICES = {"lru": {"C_re", "C_im"}, "rtu": {"C1", "C2"}}


def torso_of(**options):
    assembly = assemble(RLConfig(env="tmaze", **options))
    return assembly, assembly.agent.init(jax.random.PRNGKey(0))["torso"]


@pytest.mark.parametrize("cell", ["lru", "rtu"])
def test_an_lru_or_rtu_agent_leaves_the_output_matrix_to_its_heads(cell):
    """hidden 6: 3 units, their two parts side by side make the 6 outputs the heads read; no N x N parameter.
    [guards: the cell's own default, the matrix, kept for an agent]"""
    assembly, torso = torso_of(cell=cell, hidden=6)
    assert assembly.config.cell_args == (("output_map", "concat"),)
    assert assembly.agent.torso.cell.output_map == "concat" and assembly.agent.torso.cell.units() == 3
    assert not MATRICES[cell] & set(torso)
    assert assembly.agent.init(jax.random.PRNGKey(0))["policy"]["W"].shape[0] == 6


@pytest.mark.parametrize("options", [{"cell_args": {"output_map": "matrix"}}, {"split_torso": True}, {"hidden": 5}])
def test_the_matrix_where_asked_for_or_where_the_heads_cannot_absorb_it(options):
    """The user's ``output_map=matrix`` kept; ``split_torso`` (each head reads half of the outputs, so the first map
    is not one linear map of all of them) and an odd ``hidden`` (no ``hidden / 2`` units) keep the matrix, named."""
    assembly, torso = torso_of(**{"cell": "lru", "hidden": 6, **options})
    assert assembly.config.cell_args == (("output_map", "matrix"),)
    assert MATRICES["lru"] <= set(torso)


def test_other_torsos_are_untouched():
    assert torso_of(cell="mingru", hidden=4)[0].config.cell_args == ()
    assert torso_of(cell="lru", hidden=4, cell_args={"r_min": 0.5})[0].config.cell_args == (
        ("output_map", "concat"), ("r_min", 0.5))


def test_a_config_json_without_the_form_reads_back_as_the_matrix_and_resumes(tmp_path):
    """A run folder written before agents named the torso's form (its LRU had the matrix, the cell's default) reads
    back with ``output_map=matrix`` and resumes from its checkpoint; a new run names the form it built.
    [guards: an old folder built as "concat" (its checkpoint then does not fit the agent)]"""
    small = ["--env", "tmaze", "--cell", "lru", "--hidden", "4", "--envs", "2", "--record-every", "5", "--quiet"]
    new = tmp_path / "new"
    assert main(["rl", *small, "--steps", "5", "--out", str(new)]) == 0
    assert json.loads((new / "config.json").read_text())["cell_args"] == {"output_map": "concat"}
    old = tmp_path / "old"
    assert main(["rl", *small, "--cell-arg", "output_map=matrix", "--steps", "5", "--out", str(old)]) == 0
    written = json.loads((old / "config.json").read_text())
    (old / "config.json").write_text(json.dumps({**written, "cell_args": {}}))
    assert RLConfig.from_dict({**written, "cell_args": {}}, complete=True).cell_args == (("output_map", "matrix"),)
    assert main(["resume", str(old), "--steps", "10", "--quiet"]) == 0
    assert json.loads((old / "metrics.jsonl").read_text().splitlines()[-1])["step"] == 10
