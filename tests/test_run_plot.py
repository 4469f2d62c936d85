"""The learning-curve plot's rules on tiny hand-made records: a chance line only over its own curve's steps, a run
of several seeds drawn as each seed and their band, a long label wrapped, and legends that name what ran."""

import math

import pytest

from rtrl.run import plot
from rtrl.run.plot import Curve, per_seed


@pytest.fixture
def drawn(monkeypatch):
    """``plot_curves``' figure, kept instead of written."""
    figures = []
    monkeypatch.setattr(plot, "save_figure", lambda fig, out: figures.append(fig))
    return figures


def test_a_chance_line_spans_its_own_curve_only(drawn):
    """copy (chance 0.5, steps 0..10) beside an RL curve (no chance, steps 0..100): one dashed line, from 0 to 10,
    at 0.5 [axhline across the axes: the RL curve gets copy's chance line, this fails]."""
    copy = Curve("copy", [{"step": 0, "metric": 0.4}, {"step": 10, "metric": 0.9}], "accuracy", 0.5)
    rl = Curve("rl", [{"step": 0, "return": 1.0}, {"step": 100, "return": 2.0}], "return", None, key="return")
    plot.plot_curves([copy, rl], "unused.png")
    ax = drawn[0].axes[-1]
    segments = [s for c in ax.collections for s in c.get_segments()]
    assert [[tuple(p) for p in s] for s in segments] == [[(0.0, 0.5), (10.0, 0.5)]]
    assert [line for line in ax.get_lines() if line.get_linestyle() == "--"] == []


def test_per_seed_splits_a_runs_seeds_and_carries_a_missing_return():
    """Two records of two seeds, seed 1 without an ended episode at first: [[1, 2], [nan, 3]]; one seed: None."""
    records = [{"step": 1, "return": 1.0, "return_per_seed": [1.0, None]},
               {"step": 2, "return": 2.5, "return_per_seed": [2.0, 3.0]}]
    seeds = per_seed(records, "return")
    assert seeds[0] == [1.0, 2.0] and math.isnan(seeds[1][0]) and seeds[1][1] == 3.0
    assert per_seed([{"step": 1, "return": 1.0}], "return") is None
    assert per_seed([{"step": 1, "return": 1.0, "return_per_seed": [1.0]}], "return") is None


def test_a_run_of_several_seeds_draws_each_seed_and_their_band(drawn):
    """The mean, then each of the three seeds thin, and one band between the lowest and highest
    [the seeds left out: one line, this fails]."""
    records = [{"step": s, "return": float(s), "return_per_seed": [s - 1.0, float(s), s + 1.0]} for s in (1, 2, 3)]
    plot.plot_curves([Curve("seeds", records, "return", None, key="return")], "unused.png")
    ax = drawn[0].axes[-1]
    assert len(ax.get_lines()) == 4 and len(ax.collections) == 1
    assert list(ax.get_lines()[1].get_ydata()) == [0.0, 1.0, 2.0]


def test_a_long_metric_label_is_wrapped(drawn):
    curves = [Curve("a", [{"step": 0, "metric": 0.1}], "sequence accuracy", 0.5),
              Curve("b", [{"step": 0, "metric": 0.2}], "token accuracy", 0.25)]
    plot.plot_curves(curves, "unused.png")
    label = drawn[0].axes[-1].get_ylabel()
    assert "\n" in label and all(len(line) <= 36 for line in label.splitlines())


def test_legends_name_the_method_that_ran_and_the_interval_only_where_it_is_not_one():
    """``auto`` resolved where the run knows it; ``k=1`` left out, ``k=4`` kept."""
    from rtrl.rl.config import RLConfig
    from rtrl.training.config import RunConfig

    assert RunConfig(cell="elman", method="rtrl").label() == "elman rtrl"
    assert RunConfig(cell="elman", method="rtrl", update_every=4).label() == "elman rtrl k=4"
    assert RunConfig(cell="lru", method="auto").label("closed_form") == "lru closed_form"
    assert RLConfig(cell="mingru", method="auto").label("closed_form") == "mingru closed_form"
