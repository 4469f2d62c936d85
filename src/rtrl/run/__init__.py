"""The run layer: a run folder of any kind (``folder``; each kind registers itself: ``training``, ``rl``), its
checkpoint and curves, and the command line's options (``options``, ``argtypes``, ``usage``) made from a kind's
configuration. Importing any part of it registers every kind."""

from rtrl.run import rl, training
from rtrl.run.folder import KINDS, Run, RunError, read_config, read_metrics

__all__ = ["KINDS", "Run", "RunError", "read_config", "read_metrics", "rl", "training"]
