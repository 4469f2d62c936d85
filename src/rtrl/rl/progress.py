"""What ``rtrl.rl.train`` shows while it runs from Python (unless ``quiet``), on standard error: a tqdm bar where
that is a terminal (advanced at every jitted chunk, the last record's return beside it), else one line per record at
most every ``EVERY_S`` seconds, and the last one, so that a notebook's or a log file's output gets a few lines, not
a bar's redraws. ``status`` is a record's words, as ``rtrl rl``'s bar shows them too."""

from __future__ import annotations

import sys
import time

EVERY_S = 10.0  # seconds between two lines where standard error is no terminal


def number(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def status(record: dict) -> str:
    """``return 0.5 (12 episodes)``, with the fidelity cosines where the record has them."""
    cosines = "".join(f" {k} {number(record[k])}" for k in ("cos_value", "cos_policy") if k in record)
    return f"return {number(record['return'])} ({record['episodes']} episodes){cosines}"


class Progress:
    """The progress of one call of ``rtrl.rl.train``: from step ``start`` to ``total`` steps per environment, on
    ``stream`` (default: standard error at the time of the call). ``chunk`` and ``record`` are the loop's
    ``on_chunk`` and ``on_record``; ``close`` ends the bar."""

    def __init__(self, total: int, start: int = 0, stream=None, every_s: float = EVERY_S):
        self.stream = sys.stderr if stream is None else stream
        self.total, self.every_s, self.said_at = total, every_s, None
        self.bar = None
        if self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=start, unit="step", file=self.stream, dynamic_ncols=True,
                            mininterval=0.5, desc="rtrl.rl.train")

    def chunk(self, state, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def record(self, state, record: dict) -> None:
        if self.bar is not None:
            self.bar.n = record["step"]
            self.bar.set_postfix_str(status(record))
            return
        now = time.monotonic()
        if self.said_at is None or now - self.said_at >= self.every_s or record["step"] >= self.total:
            print(f"rtrl.rl.train: step {record['step']:,} of {self.total:,}: {status(record)}", file=self.stream,
                  flush=True)
            self.said_at = now

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
