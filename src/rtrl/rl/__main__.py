"""``python -m rtrl.rl [OPTIONS]``: one run of ``rtrl.rl.train`` with the options of ``rtrl rl`` (``--preset``,
``--env``, ``--env-arg KEY=VALUE``, ...), its metrics records printed as JSON lines and nothing written (``rtrl rl
--out DIR`` writes a run folder)."""

from __future__ import annotations

import argparse
import json
import sys

from rtrl.cli.options import add_config_arguments, config_from_args
from rtrl.cli.usage import UsageError
from rtrl.rl.loop import RLConfig, train
from rtrl.rl.presets import PRESETS


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.rl", description=__doc__)
    add_config_arguments(parser, RLConfig, PRESETS)
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args, RLConfig, PRESETS)
    except UsageError as e:
        parser.error(str(e))
    print(json.dumps({"config": config.to_dict()}), flush=True)
    train(config, on_record=lambda record, _: print(json.dumps(record), flush=True))


if __name__ == "__main__":
    main(sys.argv[1:])
