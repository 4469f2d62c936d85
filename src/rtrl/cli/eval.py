"""``rtrl eval RUN``: a trained run scored on fresh episodes (``rtrl.load(RUN).evaluate``): a training run by its
task's held-out metric and its own readout, an RL run by the mean return of its policy's episodes (greedy or
sampled actions; ``--video DIR`` films them where a Gymnasium environment renders). ``--json`` prints the one JSON
object ``Trained.evaluate`` returns."""

from __future__ import annotations

import argparse
import json
import math

from rtrl.run.argtypes import import_path, path, positive_int
from rtrl.run.folder import computed_on
from rtrl.run.usage import UsageError


def seed_value(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to 2**32 - 1, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to 2**32 - 1, got {text}")
    return value


def finite_or_null(value):
    """``value`` (JSON-like) with every number that is not finite replaced by ``None``."""
    if isinstance(value, dict):
        return {k: finite_or_null(v) for k, v in value.items()}
    return None if isinstance(value, float) and not math.isfinite(value) else value


def shown(value) -> str:
    """A figure for a person: four significant digits, or ``not finite (nan)``."""
    return f"{value:.4g}" if math.isfinite(value) else f"not finite ({value})"


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="a run folder written by `rtrl train` or `rtrl rl`")
    p.add_argument("--episodes", type=positive_int, metavar="N",
                   help="episodes to score (default: a training run's --eval-size, its held-out episodes; an RL "
                        "run: 10). A Gymnasium environment's are played one after another on the host: N times "
                        "its step limit (100,000 where it states none) may be at most 1,000,000 steps, so 10 of an "
                        "environment without a limit, 2,000 of CartPole-v1 (500); more is refused")
    p.add_argument("--seed", type=seed_value, metavar="S",
                   help="seed the episodes are drawn from (default: the run's --seed; a training run's held-out "
                        "episodes then equal those of its records)")
    p.add_argument("--run-seed", type=seed_value, metavar="SEED",
                   help="of a run of several seeds (rtrl rl --seeds), which one to score (default: the first)")
    actions = p.add_mutually_exclusive_group()
    actions.add_argument("--greedy", dest="greedy", action="store_true", default=False,
                         help="RL: take the most probable (highest-valued) action")
    actions.add_argument("--sample", dest="greedy", action="store_false",
                         help="RL: draw actions from the policy (the default; Q: epsilon-greedy at the run's final "
                              "--epsilon)")
    p.add_argument("--video", type=path, metavar="DIR",
                   help="RL on a Gymnasium environment that renders: record every episode into DIR (Gymnasium's "
                        "RecordVideo; needs moviepy: the extra rtrl[video])")
    p.add_argument("--overwrite", action="store_true",
                   help="--video: replace videos of the same names already in DIR (a link there is never written "
                        "through, even with it)")
    p.add_argument("--json", action="store_true", help="print one JSON object (metric, value, episodes, ...)")
    p.add_argument("--allow-import", action="append", default=[], metavar="MODULE:NAME", type=import_path,
                   help="let the run's config.json import this cell (as for `rtrl resume`; repeatable)")


def cmd_eval(args) -> int:
    from rtrl.run.trained import load_run_seed

    trained = load_run_seed(args.run, allow_import=args.allow_import, seed=args.run_seed)
    if args.video is not None and trained.run.name != "rl":
        raise UsageError(f"--video applies to RL runs (rtrl rl); {args.run} is a training run")
    if args.overwrite and args.video is None:
        raise UsageError("--overwrite applies to the videos of --video DIR, and no --video was given")
    if args.greedy and trained.run.name != "rl":
        raise UsageError(f"--greedy applies to RL runs (rtrl rl); {args.run} is a training run")
    try:
        result = trained.evaluate(args.episodes, args.seed, greedy=args.greedy, video=args.video,
                                  overwrite=args.overwrite)
    except ValueError as e:
        if type(e) is not ValueError:
            raise
        raise UsageError(str(e)) from None
    if args.json:  # strict JSON: a figure that is not finite (a loss that overflowed) is null
        print(json.dumps(finite_or_null(result), allow_nan=False))
        return 0
    seeds = getattr(trained.config, "seeds", 1)
    which = (f" (seed {trained.seed}, the first of {seeds}; another with --run-seed)"
             if seeds > 1 and args.run_seed is None else f" (seed {trained.seed})" if seeds > 1 else "")
    how = (f", {'greedy' if result['greedy'] else 'sampled'} actions"
           f"{', ' + str(result['cut']) + ' cut short' if result['cut'] else ''}" if "greedy" in result else "")
    figures = ([f"{k} {shown(result[k])}" for k in ("std", "min", "max") if k in result]  # an RL run's
               + [f"{k} {shown(v)}" for k, v in result.get("metrics", {}).items() if k != "metric"])  # a training run's
    spread = f" ({', '.join(figures)})" if figures else ""
    print(f"{args.run} at step {trained.step}{which}: {result['metric']} {shown(result['value'])}{spread} over "
          f"{result['episodes']} episodes drawn from seed {result['seed']}{how}; {computed_on()}")
    if args.video is not None:
        print(f"videos: {args.video}")
    return 0
