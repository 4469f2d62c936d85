"""A stand-in for the results runner's process pool (``rtrl.reports.results``): each job runs in this process when it
is submitted, so a test can replace what a job runs (a stand-in is not picklable) and run rows without spawning;
and a Ctrl-C delivered while the ledger is written."""

import concurrent.futures


class Inline:
    """The pool, in this process: each job runs when it is submitted."""

    def __init__(self, *args, **kwargs):
        pass

    def submit(self, fn, *args):
        future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args))
        except Exception as e:  # noqa: BLE001 - as a pool does: the job's exception is the future's
            future.set_exception(e)
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


def run_inline(monkeypatch) -> None:
    """The results runner's jobs run in this process (``Inline``) for the rest of the test."""
    from rtrl.reports import results

    monkeypatch.setattr(results.concurrent.futures, "ProcessPoolExecutor", Inline)


def ctrl_c_while_written(monkeypatch) -> None:
    """A Ctrl-C (as the watcher thread delivers it, ``on_interrupt``) each time the ledger has been written, and a
    test failure where the command would end at once (``quit_now``) instead of at its next safe point."""
    import pytest

    from rtrl import interrupts, ledger

    monkeypatch.setattr(interrupts, "quit_now", lambda message: pytest.fail(f"ended at once: {message}"))
    write = ledger.write

    def interrupted_write(path, rows):
        write(path, rows)
        interrupts.on_interrupt()

    monkeypatch.setattr(ledger, "write", interrupted_write)
