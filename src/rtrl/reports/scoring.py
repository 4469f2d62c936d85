"""How the results tables score runs, written once: each seed's records, its final and peak return, the spread
over seeds, the interquartile mean (IQM) and its bootstrap interval.

A seed's *final return* is the mean of its last two records' returns (those where episodes ended; ``None`` where
none did). A run of several seeds in one call (``rtrl rl --seeds``) keeps each seed's return in ``return_per_seed``;
``split_seeds`` gives each seed its own records.
"""

from __future__ import annotations

import math
import statistics

import numpy as np


def seed_returns(record: dict) -> list[float | None]:
    """Each seed's return in a record (one seed's record holds only ``return``; ``None``: no episode ended)."""
    return record.get("return_per_seed", [record["return"]])


def split_seeds(records: list[dict]) -> list[list[dict]]:
    """One run's records as each seed's records: its own return and episode count (``return_per_seed``,
    ``episodes_per_seed``), the figures shared by the seeds (the step, the wall time, the means) as they are; a run
    of one seed (no ``return_per_seed``) is its own records."""
    if "return_per_seed" not in records[0]:
        return [records]
    count = len(records[0]["return_per_seed"])
    shared = [{k: v for k, v in r.items() if k not in ("return_per_seed", "episodes_per_seed")} for r in records]
    return [[{**rec, "return": r["return_per_seed"][i], "episodes": r["episodes_per_seed"][i]}
             for rec, r in zip(shared, records, strict=True)] for i in range(count)]


def final_value(returns) -> float | None:
    """The final return of one seed's returns, record by record: the mean of the last two that are there."""
    known = [v for v in list(returns)[-2:] if v is not None]
    return float(np.mean(known)) if known else None


def final_return(records: list[dict]) -> float | None:
    """One seed's final return (``final_value`` of its records' returns)."""
    return final_value(r["return"] for r in records)


def final_returns(records: list[dict]) -> list[float | None]:
    """Each seed's final return in one run's records (one seed or several: ``seed_returns``)."""
    return [final_value(seed) for seed in zip(*(seed_returns(r) for r in records), strict=True)]


def peak_return(records: list[dict]) -> float | None:
    """The best record's return (far above the final one: the run collapsed)."""
    return max((r["return"] for r in records if r["return"] is not None), default=None)


def first_reaching(records: list[dict], target: float) -> float | None:
    """The wall time of the first record whose return is at or above ``target``."""
    return next((r["wall_s"] for r in records if r["return"] is not None and r["return"] >= target), None)


def mean_of(values) -> float | None:
    """The mean of the values that are there (None where none is: a run without the fidelity check)."""
    values = [v for v in values if v is not None]
    return statistics.mean(values) if values else None


def spread(values) -> str:
    """``mean ± sample deviation`` of the values that are there (not None, not NaN); ``-`` where none is."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.3g} ± {sd:.2g}"


def iqm(values) -> float:
    """The interquartile mean: the mean of the values between the 25th and 75th percentiles, the outer quarters
    cut with fractional weights where the count is not a multiple of four (rliable's definition)."""
    values = np.sort(np.asarray(values, float))
    n = len(values)
    if n == 0:
        raise ValueError("iqm of no values")
    # weight of each order statistic: its share of the interval [n/4, 3n/4]
    edges = np.arange(n + 1, dtype=float)
    weights = np.clip(np.minimum(edges[1:], 0.75 * n) - np.maximum(edges[:-1], 0.25 * n), 0.0, None)
    return float(weights @ values / weights.sum())


def bootstrap(values, reps: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval of the IQM, the seeds resampled with replacement."""
    values = np.asarray(values, float)
    rng = np.random.default_rng(seed)
    draws = [iqm(rng.choice(values, len(values))) for _ in range(reps)]
    return float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))
