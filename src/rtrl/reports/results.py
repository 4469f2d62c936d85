"""The results runner: ``rtrl results rl`` and ``rtrl results popgym`` run their rows here, through one ledger, one
interrupt model and one way of resuming; each kind (``rtrl.reports.rl``, ``rtrl.reports.popgym``) says only which
rows it has, what each runs, and its table.

A *job* is one row of a table over some of its seeds, run in one call (consecutive seeds under ``jax.vmap`` on a
jitted environment, ``rtrl rl --seeds``; one seed a call on a host one). Jobs run ``--jobs N`` at a time, each in
its own spawned worker process.

The ledger, ``DIR/runs.jsonl`` (``rtrl.ledger``), holds one line per row and seed, the same schema for every kind:
``kind``, ``table`` (an RL table's name, a POPGym task), ``row``, ``seed``, ``options`` (the options its run read,
without the seed) and ``records`` (the seed's records, as ``rtrl rl`` writes them). A (table, row, seed) already
there with the options the command would run is kept and not run again, so a stopped command resumes where it
stopped; one whose options changed is run anew and its line replaced, and once a row's new run is in, the row's lines
of other options go.

A job that stops (a row that diverges: ``rtrl.driver.Stopped``, from its worker whole) is said in one line and
left out of the ledger, so a later command runs it again; the other rows go on and the command exits 1.

Ctrl-C (``rtrl.interrupts``): while jobs run, the command stops its workers and ends within a moment, with one line
and exit status 130 (the workers ignore it and end with the command); a finished job is in runs.jsonl, with the
table written, before its line is printed, and a Ctrl-C while it is written is acted on once it is in.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import os
import sys

from rtrl import interrupts, ledger, provenance
from rtrl.driver import Stopped
from rtrl.files import atomic_write_text
from rtrl.reports import popgym, rl
from rtrl.reports.kind import Job, Kind

FIELDS = {"kind": ledger.text, "table": ledger.text, "row": ledger.text, "seed": ledger.whole,
          "options": ledger.a_dict, "records": ledger.records}  # a line of runs.jsonl, every kind


def key(line: dict) -> tuple[str, str, int]:
    return line["table"], line["row"], line["seed"]


def kinds() -> dict[str, Kind]:
    """The kinds that write a ledger, by name."""
    return {"rl": rl.KIND, "popgym": popgym.KIND}


def read_lines(out: str, kind: Kind) -> list[dict]:
    """The lines already in ``out``'s runs.jsonl, every line checked (``rtrl.ledger.read``): a line of this kind,
    of a table and row it has, one a (table, row, seed)."""

    def known(line):
        if line["kind"] != kind.name:
            return (f"a line of rtrl results {line['kind']}, not of rtrl results {kind.name}: give this command "
                    "another --out")
        return kind.known(line)

    return ledger.read(os.path.join(out, ledger.NAME), FIELDS, key=key, known=known)


def lines_of(job: Job, per_seed: list[list[dict]]) -> list[dict]:
    """A finished job's ledger lines, one a seed."""
    return [{"kind": job.kind, "table": job.table, "row": job.row, "seed": seed, "options": job.options,
             "records": records} for seed, records in zip(job.seeds, per_seed, strict=True)]


def with_job(lines: list[dict], job: Job, per_seed: list[list[dict]], kind: Kind) -> list[dict]:
    """``lines`` with a finished job's in (last): its seeds' lines replaced, its row's lines of other options gone
    (each kind's table puts rows and seeds in its own order, whatever order they finished in)."""
    kept = [line for line in lines if not ((line["table"], line["row"]) == (job.table, job.row)
                                           and (line["seed"] in job.seeds or not kind.same(line["options"],
                                                                                          job.options)))]
    return [*kept, *lines_of(job, per_seed)]


def play(job: Job) -> list[list[dict]]:
    """Run ``job`` (in a worker process): each seed's records."""
    return kinds()[job.kind].play(job)


def finishing(futures):
    """``futures`` as each finishes, with ``interrupts.poll()`` every 0.1 s meanwhile: a Ctrl-C while rows run is
    acted on here, in this thread, within 0.1 s. Those found finished together come in the order they were
    submitted (a set's order would change which row the ledger holds first from run to run)."""
    waiting = set(futures)
    while waiting:
        done, waiting = concurrent.futures.wait(waiting, timeout=0.1,
                                                return_when=concurrent.futures.FIRST_COMPLETED)
        interrupts.poll()
        yield from (future for future in futures if future in done)


def main(kind_name: str, argv=None, prog: str | None = None, parser_class=argparse.ArgumentParser) -> int:
    """``rtrl results KIND [OPTIONS]`` for a kind that writes a ledger; ``parser_class`` makes its parser; the exit
    status (130: stopped by a Ctrl-C, every finished row kept)."""
    kind = kinds()[kind_name]
    prog = prog or f"rtrl results {kind.name}"
    parser = parser_class(prog=prog, description=kind.what)
    parser.add_argument("--out", required=True, help=f"the folder of runs.jsonl and {kind.page} (resumed if there)")
    kind.add_options(parser)
    parser.add_argument("--jobs", type=int, default=1, help="rows run at a time, each in its own process (default 1)")
    args = parser.parse_args(argv)
    args.prog = prog
    if args.jobs < 1:
        parser.error(f"--jobs must be a positive integer, got {args.jobs}")
    kind.check(args, parser)
    ledger.make_folder(args.out)  # a file, '' or a dangling link: one LedgerError
    with ledger.locked(args.out):  # a second command on the same folder is refused, not raced
        return run(kind, args)


def run(kind: Kind, args) -> int:
    """Run the jobs ``args`` asks for that ``args.out``'s ledger lacks, writing it and the kind's page as each
    finishes; the exit status."""
    at = provenance.commit()  # the code the runs are measured on: read once, before the first
    path, page = os.path.join(args.out, ledger.NAME), os.path.join(args.out, kind.page)
    lines = read_lines(args.out, kind)
    todo = kind.jobs(args, {key(line): line["options"] for line in lines})
    # spawn, not fork: a forked child would inherit jax's threads. Each worker ignores Ctrl-C and ends with this
    # process (interrupts.install, in a spawned process): this one stops them.
    pool = concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=interrupts.install)
    futures, stopped = {}, 0
    try:
        # A Ctrl-C while rows run: acted on by finishing's poll, within 0.1 s, so that this process ends through
        # the pool's clean-up (ended at once, it would leave the pool's semaphores to multiprocessing's resource
        # tracker, which prints a warning).
        with interrupts.deferred(quiet=True):
            futures = {pool.submit(play, job): job for job in todo}
            for future in finishing(futures):
                job = futures[future]
                try:
                    per_seed = future.result()
                except Stopped as e:  # a row that diverged: said, left out of the ledger, the other rows go on
                    seeds = ", ".join(map(str, job.seeds))
                    print(f"{args.prog}: {job.table} {job.row} (seeds {seeds}) stopped: {e}; not kept, the other "
                          "rows go on", file=sys.stderr, flush=True)
                    stopped += 1
                    continue
                lines = with_job(lines, job, per_seed, kind)
                if not ledger.keep(path, lines, kind.said(job, per_seed), [(page, kind.table(lines, args, at))]):
                    return interrupts.STATUS  # a Ctrl-C while the row was written: it is in, and nothing after it
    except KeyboardInterrupt:
        print("rtrl: interrupted", file=sys.stderr, flush=True)
        return interrupts.STATUS
    finally:
        if any(not future.done() for future in futures):  # leaving early: no row runs on that nobody will keep
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.kill()
        pool.shutdown(wait=True, cancel_futures=True)
    atomic_write_text(page, kind.table(lines, args, at))
    return 1 if stopped else 0
