"""``rtrl rl``: an online actor-critic (``rtrl.rl``) trained in a run folder, with a progress bar showing the mean
return; its options are the fields of ``rtrl.rl.RLConfig`` and ``--preset NAME`` (``rtrl.rl.presets``)."""

from __future__ import annotations

import argparse

from rtrl.cli.train import add_run_arguments, start
from rtrl.rl.assemble import assemble
from rtrl.rl.config import RLConfig
from rtrl.rl.presets import PRESETS
from rtrl.run.options import add_config_arguments, assembled, config_from_args


def add_rl_arguments(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p, RLConfig, PRESETS)
    add_run_arguments(p)


def cmd_rl(args) -> int:
    return start(args, assembled(assemble, config_from_args(args, RLConfig, PRESETS)))
