"""``python -m rtrl.rl [OPTIONS]``: one run of ``rtrl.rl.train`` with the options of ``rtrl rl`` (``--preset``,
``--env``, ``--env-arg KEY=VALUE``, ...), its metrics records printed as JSON lines and nothing written (``rtrl rl
--out DIR`` writes a run folder)."""

from __future__ import annotations

import argparse
import json
import sys

from rtrl.rl.assemble import assemble
from rtrl.rl.config import RLConfig
from rtrl.rl.loop import train
from rtrl.rl.presets import PRESETS
from rtrl.run.options import add_config_arguments, assembled, config_from_args
from rtrl.run.usage import UsageError


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.rl", description=__doc__)
    add_config_arguments(parser, RLConfig, PRESETS)
    args = parser.parse_args(argv)
    try:
        assembly = assembled(assemble, config_from_args(args, RLConfig, PRESETS))
    except UsageError as e:
        parser.error(str(e))
    print(json.dumps({"config": assembly.config.to_dict()}), flush=True)
    train(assembly, on_record=lambda _, record: print(json.dumps(record), flush=True))


if __name__ == "__main__":
    main(sys.argv[1:])
