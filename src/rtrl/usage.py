"""How the ``rtrl`` command reports a problem the user can fix: ``UsageError``, one line, exit status 2; ``Parser``,
its argument parser. Below every layer (argparse alone), so that ``rtrl --help`` loads none of the commands."""

from __future__ import annotations

import argparse
import re

# A negative number as an option's value (``--lr -1e-3``, ``--seed -1``): argparse's own pattern knows only ``-1`` and
# ``-0.5``, and took ``-1e-3`` for an option ("expected one argument"); the value's own check then names the option.
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


class UsageError(Exception):
    """Bad command-line input or an unusable file: reported as one line, no traceback, exit status 2."""

    def __init__(self, message: str, prog: str = "rtrl"):
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message):  # argparse would print the usage too; one line is enough
        raise UsageError(message, self.prog)


class Once(argparse.Action):
    """An option that may be given once: a second one is a usage error (which was meant?), not the last one kept."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, self.dest, None)
        if given is not None and given is not self.default:
            parser.error(f"argument {option_string}: given twice ({given} and {values}); give it once")
        setattr(namespace, self.dest, values)
