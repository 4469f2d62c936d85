"""How the ``rtrl`` command reports a problem the user can fix: ``UsageError``, one line, exit status 2."""

from __future__ import annotations

import argparse


class UsageError(Exception):
    """Bad command-line input or an unusable file: reported as one line, no traceback, exit status 2."""

    def __init__(self, message: str, prog: str = "rtrl"):
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the usage too; one line is enough
        raise UsageError(message, self.prog)
