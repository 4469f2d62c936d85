"""``rtrl results KIND [OPTIONS]``: the one front end that regenerates the project's result tables.

* ``rtrl results training [--only EXPERIMENT ...]``: docs/results.md's tables, tasks x cells x methods on one budget
  (``rtrl.reports.training``; ``make results`` runs it);
* ``rtrl results rl --out DIR [--tables ...] [--seeds S]``: docs/rl-results.md's tables, each row an ``rtrl rl``
  preset over seeds (``rtrl.reports.rl``);
* ``rtrl results popgym --out DIR [--tasks ...] [--rows ...] [--seeds S]``: the POPGym Easy suite of Farr et al.
  (2026), normalised on their scale (``rtrl.reports.popgym``).

The RL kinds run through one runner (``rtrl.reports.results``: one ledger, one interrupt model) and resume: a row
and seed already in the ledger with the options it would run is kept and not run again; every RL table opens with
its protocol card (``rtrl.reports.protocol``). ``training`` trains each row of the experiments it runs afresh, as
run folders, and rewrites each table once it is finished. The options after ``KIND`` are that kind's own;
``rtrl results KIND --help`` lists them.
"""

from __future__ import annotations

import argparse

from rtrl.ledger import LedgerError
from rtrl.run.usage import Parser, UsageError

# kind -> what it makes
KINDS = {
    "training": "docs/results.md: tasks x cells x methods on the same budget",
    "rl": "docs/rl-results.md's tables: each row an rtrl rl preset, over seeds",
    "popgym": "the POPGym Easy suite over seeds, on Farr et al. 2026's normalisation",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", choices=list(KINDS), metavar="KIND",
                   help="; ".join(f"{name}: {what}" for name, what in KINDS.items()))
    p.add_argument("options", nargs=argparse.REMAINDER, metavar="OPTIONS",
                   help="the kind's own options (rtrl results KIND --help)")


def run(args: argparse.Namespace) -> int:
    """Run the kind with the options that follow it; its exit status (0 where it returns None)."""
    prog = f"rtrl results {args.kind}"
    try:  # the rtrl command's parser: a bad option is one line (a UsageError), as everywhere in the command
        if args.kind == "training":
            from rtrl.reports import training

            status = training.main(args.options, prog=prog, parser_class=Parser)
        else:
            from rtrl.reports import results

            status = results.main(args.kind, args.options, prog=prog, parser_class=Parser)
    except LedgerError as e:  # a damaged runs.jsonl, or another command writing the same folder
        raise UsageError(str(e), prog) from None
    return 0 if status is None else status
