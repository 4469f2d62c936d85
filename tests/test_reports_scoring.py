"""rtrl.reports.scoring: how the results tables score runs (final and peak return, the spread, the IQM and its
bootstrap interval, each seed's records), on hand-checked cases."""

from __future__ import annotations

import numpy as np
import pytest

from rtrl.reports import scoring
from rtrl.reports.scoring import bootstrap, final_return, final_returns, iqm, peak_return


def record(step, ret, wall):
    return {"step": step, "return": ret, "wall_s": wall, "cos_value": 1.0, "cos_policy": 0.5}


def test_iqm_is_the_mean_of_the_middle_half_with_fractional_ends():
    assert iqm([4, 1, 3, 2]) == pytest.approx(2.5)  # the middle two
    # five values: the interval [1.25, 3.75] of order statistics weights them 0, .75, 1, .75, 0
    assert iqm([100, 2, 1, 4, 3]) == pytest.approx((0.75 * 2 + 3 + 0.75 * 4) / 2.5)
    assert iqm([7.0]) == 7.0
    with pytest.raises(ValueError, match="no values"):
        iqm([])


def test_the_bootstrap_interval_brackets_the_iqm_and_is_a_point_for_equal_seeds():
    low, high = bootstrap([0.2, 0.4, 0.5, 0.9, 1.0])
    assert low <= iqm([0.2, 0.4, 0.5, 0.9, 1.0]) <= high and low >= 0.2 and high <= 1.0
    assert bootstrap([0.3] * 5) == pytest.approx((0.3, 0.3))


def exact_iqm_distribution(values):
    """Every resample of ``values`` with replacement (n ** n, equally likely) and its IQM (rliable's, written out
    here: the order statistics weighted by their share of [n/4, 3n/4]): the bootstrap's exact distribution, sorted."""
    values = np.asarray(values, float)
    n = len(values)
    shares = [max(0.0, min(i + 1, 0.75 * n) - max(i, 0.25 * n)) for i in range(n)]
    grid = np.stack(np.meshgrid(*[values] * n, indexing="ij"), -1).reshape(-1, n)
    return np.sort(np.sort(grid, axis=1) @ np.asarray(shares) / sum(shares))


def test_the_bootstrap_interval_is_the_resampled_iqms_2_5_and_97_5_percentiles():
    """By hand, two seeds 0 and 1: the resamples (0, 0), (0, 1), (1, 0), (1, 1) have IQMs 0, 0.5, 0.5, 1, so about
    a quarter of the 2,000 draws are 0 and a quarter 1: the interval is exactly [0, 1], not a point. Five seeds:
    against the exact distribution of the resampled IQM (all 3,125 resamples), the interval's ends lie at its 2.5th
    and 97.5th percentiles, within the draws' sampling error (a 2.5% quantile of 2,000 draws has a standard error
    of 0.35% in probability; 1.5% allowed), and it is wider than a point. [guards: the seeds drawn without
    replacement (every resample the same seeds: every interval collapses to the IQM); the 25th and 75th
    percentiles]"""
    assert bootstrap([0.0, 1.0]) == (0.0, 1.0)
    assert bootstrap([1.0, 0.0], reps=4000, seed=3) == (0.0, 1.0)
    values = [0.2, 0.4, 0.5, 0.9, 1.0]
    exact = exact_iqm_distribution(values)
    assert exact.size == 5 ** 5 and exact[0] == pytest.approx(0.2) and exact[-1] == pytest.approx(1.0)
    low, high = bootstrap(values)
    below_low, upto_low = np.mean(exact < low), np.mean(exact <= low)
    below_high, upto_high = np.mean(exact < high), np.mean(exact <= high)
    assert below_low <= 0.025 + 0.015 and upto_low >= 0.025 - 0.015, (low, below_low, upto_low)
    assert below_high <= 0.975 + 0.015 and upto_high >= 0.975 - 0.015, (high, below_high, upto_high)
    assert high - low > 0.2


def test_final_returns_are_each_seeds_mean_of_its_last_two_records():
    records = [{"return": 0.0, "return_per_seed": [0.0, 9.0]},
               {"return": 0.5, "return_per_seed": [0.2, None]},
               {"return": 0.5, "return_per_seed": [0.4, 0.6]}]
    assert final_returns(records) == pytest.approx([0.3, 0.6])  # seed 1: None left out, not counted as 0
    assert final_returns([{"return": None}, {"return": 1.0}]) == [1.0]  # one seed: no per-seed list


def test_first_reaching_is_the_first_record_at_or_above_the_target():
    records = [record(1, None, 1.0), record(2, 0.5, 2.0), record(3, 0.9, 3.0), record(4, 1.0, 4.0)]
    assert scoring.first_reaching(records, 0.9) == 3.0
    assert scoring.first_reaching(records, 1.5) is None


def test_spread_is_mean_and_sample_deviation_ignoring_missing():
    assert scoring.spread([1.0, 3.0, None, float("nan")]) == "2 ± 1.4"
    assert scoring.spread([2.0]) == "2 ± 0"
    assert scoring.spread([None]) == "-"


def test_a_vmapped_run_splits_into_each_seeds_records():
    records = [{"step": 10, "return": 0.5, "episodes": 3, "wall_s": 4.0, "entropy": 0.6,
                "return_per_seed": [0.25, None, 0.75], "episodes_per_seed": [1, 0, 2]},
               {"step": 20, "return": 0.0, "episodes": 2, "wall_s": 9.0, "entropy": 0.4,
                "return_per_seed": [-1.0, 1.0, 0.0], "episodes_per_seed": [1, 1, 0]}]
    split = scoring.split_seeds(records)
    assert split == [
        [{"step": 10, "return": 0.25, "episodes": 1, "wall_s": 4.0, "entropy": 0.6},
         {"step": 20, "return": -1.0, "episodes": 1, "wall_s": 9.0, "entropy": 0.4}],
        [{"step": 10, "return": None, "episodes": 0, "wall_s": 4.0, "entropy": 0.6},
         {"step": 20, "return": 1.0, "episodes": 1, "wall_s": 9.0, "entropy": 0.4}],
        [{"step": 10, "return": 0.75, "episodes": 2, "wall_s": 4.0, "entropy": 0.6},
         {"step": 20, "return": 0.0, "episodes": 0, "wall_s": 9.0, "entropy": 0.4}]]


def test_one_seeds_final_return_is_the_mean_of_its_last_two_returns_and_its_peak_the_best():
    records = [{"return": 3.0}, {"return": 1.0}, {"return": None}, {"return": 0.5}]
    assert final_return(records) == 0.5  # the last two: None left out, not counted as 0
    assert final_return(records[:2]) == 2.0
    assert final_return([{"return": None}]) is None  # no episode ended: no final return
    assert peak_return(records) == 3.0 and peak_return([{"return": None}]) is None
    # one run of several seeds and the same run split apart score the same
    several = [{"return": 0.0, "return_per_seed": [0.0, 9.0], "episodes_per_seed": [1, 1]},
               {"return": 0.5, "return_per_seed": [0.2, None], "episodes_per_seed": [1, 0]}]
    assert [final_return(r) for r in scoring.split_seeds(several)] == final_returns(several) == [0.1, 9.0]
