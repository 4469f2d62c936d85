"""A stand-in for the results runner's process pool (``rtrl.reports.results``): each job runs in this process when it
is submitted, so a test can replace what a job runs (a stand-in is not picklable) and run rows without spawning."""

import concurrent.futures


class Inline:
    """The pool, in this process: each job runs when it is submitted."""

    def __init__(self, *args, **kwargs):
        pass

    def submit(self, fn, *args):
        future = concurrent.futures.Future()
        future.set_result(fn(*args))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


def run_inline(monkeypatch) -> None:
    """The results runner's jobs run in this process (``Inline``) for the rest of the test."""
    from rtrl.reports import results

    monkeypatch.setattr(results.concurrent.futures, "ProcessPoolExecutor", Inline)
