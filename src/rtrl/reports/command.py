"""``rtrl results KIND [OPTIONS]``: the one front end that regenerates the project's result tables.

* ``rtrl results training [--only EXPERIMENT ...]``: docs/results.md's tables, tasks x cells x methods on one budget
  (``rtrl.reports.results``; ``make results`` runs it);
* ``rtrl results rl --out DIR [--tables ...] [--seeds S]``: docs/rl-results.md's tables, each row an ``rtrl rl``
  preset over seeds (``rtrl.rl.results``);
* ``rtrl results popgym --out DIR [--tasks ...] [--rows ...] [--seeds S]``: the POPGym Easy suite of Farr et al.
  (2026), normalised on their scale (``rtrl.rl.suite``).

Every kind resumes: rows already finished in its output are kept and not run again. The options after ``KIND`` are
that kind's own; ``rtrl results KIND --help`` lists them.
"""

from __future__ import annotations

import argparse
import importlib

from rtrl.ledger import LedgerError
from rtrl.run.usage import Parser, UsageError

# kind -> (the module whose ``main(argv)`` makes the tables, what it makes)
KINDS = {
    "training": ("rtrl.reports.results", "docs/results.md: tasks x cells x methods on the same budget"),
    "rl": ("rtrl.rl.results", "docs/rl-results.md's tables: each row an rtrl rl preset, over seeds"),
    "popgym": ("rtrl.rl.suite", "the POPGym Easy suite over seeds, on Farr et al. 2026's normalisation"),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", choices=list(KINDS), metavar="KIND",
                   help="; ".join(f"{name}: {what}" for name, (_, what) in KINDS.items()))
    p.add_argument("options", nargs=argparse.REMAINDER, metavar="OPTIONS",
                   help="the kind's own options (rtrl results KIND --help)")


def run(args: argparse.Namespace) -> int:
    """Run the kind's ``main`` with the options that follow it; its exit status (0 where it returns None)."""
    module = importlib.import_module(KINDS[args.kind][0])
    prog = f"rtrl results {args.kind}"
    try:  # the rtrl command's parser: a bad option is one line (a UsageError), as everywhere in the command
        status = module.main(args.options, prog=prog, parser_class=Parser)
    except LedgerError as e:  # a damaged runs.jsonl, or another command writing the same folder
        raise UsageError(str(e), prog) from None
    return 0 if status is None else status
