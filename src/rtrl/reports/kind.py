"""What a kind of results is to the results runner (``rtrl.reports.results``): a ``Kind`` (its rows, what a job runs,
its table) and the ``Job`` it runs, one row over some of its seeds in one call."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import NamedTuple


class Job(NamedTuple):
    """One row of a table over ``seeds``, run in one call: ``options`` are what it runs, without the seed."""

    kind: str
    table: str
    row: str
    seeds: tuple[int, ...]
    options: dict


class Kind(NamedTuple):
    """A kind of results: its name, what it makes, its options, its jobs, what a job runs, its table.

    ``add_options(parser)``; ``check(args, parser)`` (``parser.error`` on bad options, before anything runs);
    ``jobs(args, done)``: the jobs that make the rows ``args`` asks for, less the (table, row, seed) of ``done``
    (each with the options it would run: ``done`` maps a key to its stored options); ``play(job)`` (in a worker):
    each seed's records; ``said(job, per_seed)``: the line printed when a job is in; ``table(lines, args, at)``: the
    page of the ledger's ``lines`` (``at``: the commit); ``known(line)``: what is wrong with a line of another
    table or row, or ``None``; ``same(stored, wanted)``: whether stored options are those wanted."""

    name: str
    what: str
    page: str  # the file of its tables in DIR
    add_options: Callable
    check: Callable
    jobs: Callable
    play: Callable
    said: Callable
    table: Callable
    known: Callable
    same: Callable


def consecutive(seeds) -> list[tuple[int, ...]]:
    """``seeds`` in runs of consecutive seeds (what one call under ``jax.vmap`` runs)."""
    groups: list[list[int]] = []
    for seed in sorted(seeds):
        if groups and groups[-1][-1] == seed - 1:
            groups[-1].append(seed)
        else:
            groups.append([seed])
    return [tuple(g) for g in groups]


def job_line(job: Job, finals: list) -> str:
    """A finished job's line: the row and seeds as JSON, then each seed's final figure."""
    shown = " ".join("-" if v is None else f"{v:.3f}" for v in finals)
    return f"{json.dumps({'table': job.table, 'row': job.row, 'seeds': list(job.seeds)})} final {shown}"
