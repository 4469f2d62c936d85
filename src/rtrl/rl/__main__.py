"""``python -m rtrl.rl --env NAME [--env-arg K=V] [--set FIELD=VALUE] ...``: one run of ``rtrl.rl.train``, its
metrics records printed as JSON lines (the ``rtrl rl`` command, with run folders, is the CLI's)."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import sys

from rtrl.rl.loop import RLConfig, train


def pair(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.rl", description=__doc__)
    parser.add_argument("--env-arg", type=pair, action="append", default=[], help="an environment option KEY=VALUE")
    parser.add_argument("--set", type=pair, action="append", default=[], help="an RLConfig field FIELD=VALUE")
    for field in ("env", "cell", "method", "hidden", "envs", "steps", "seed"):
        parser.add_argument(f"--{field}", type=type(getattr(RLConfig(), field)))
    args = parser.parse_args(argv)
    fields = {f: getattr(args, f) for f in ("env", "cell", "method", "hidden", "envs", "steps", "seed")
              if getattr(args, f) is not None}
    config = RLConfig(**fields, **dict(args.set), env_args=tuple(args.env_arg))
    print(json.dumps({"config": {k: str(v) for k, v in dataclasses.asdict(config).items()}}), flush=True)
    train(config, on_record=lambda record, _: print(json.dumps(record), flush=True))


if __name__ == "__main__":
    main(sys.argv[1:])
