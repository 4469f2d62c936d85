"""``rtrl export RUN --nir FILE``: the trained cell of a run folder (``rtrl.load``; an RL run's torso) written as a
NIR graph (``rtrl.export.to_nir``; needs the ``nir`` extra), atomically, for ``--target`` (NIR's equations, or what
snnTorch's or Norse's importer runs with rtrl's spikes) at ``--dt`` seconds (the target's own by default). A cell
with no NIR counterpart (any non-spiking cell, ``ALIF``), or one the target cannot run, is one usage error naming
it; an existing FILE is kept unless ``--overwrite``, and a link is never written through
(``rtrl.files.check_output_file``); a run folder's own files (``config.json``, ``checkpoint.npz``, ...) are never
replaced, even with it."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from rtrl.export import TARGETS
from rtrl.files import atomic_write, check_output_file
from rtrl.run.argtypes import import_path, path, positive_float
from rtrl.run.folder import run_file_of
from rtrl.run.trained import load_run_seed
from rtrl.run.usage import UsageError


def add_export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="a run folder written by `rtrl train` or `rtrl rl` (an RL run: its torso)")
    p.add_argument("--nir", required=True, type=path, metavar="FILE",
                   help="the NIR file to write (HDF5, read back with nir.read; its folder must exist)")
    p.add_argument("--target", choices=TARGETS, default="nir",
                   help="whose importer is to run the graph with rtrl's spikes: nir (NIR's equations), snntorch "
                        "(snntorch.import_nir.import_from_nir), norse (norse.torch.from_nir with the same dt), "
                        "spikingjelly (its nir_exchange.import_from_nir) or spyx (spyx.nir.from_nir); docs/interop.md "
                        "says what each runs; default %(default)s")
    p.add_argument("--dt", type=positive_float, default=None, metavar="SECONDS",
                   help="the time step in seconds the graph's neurons are discretised at, written in its metadata "
                        "(default: the target's, 1 for nir, 1e-4 for snntorch, which assumes it, 1e-3 for norse, 1e-4 "
                        "for spikingjelly, 1 for spyx)")
    p.add_argument("--overwrite", action="store_true", help="replace FILE if it exists")
    p.add_argument("--run-seed", type=int, metavar="SEED",
                   help="of a run of several seeds (rtrl rl --seeds), which one to export (default: the first)")
    p.add_argument("--allow-import", action="append", default=[], metavar="MODULE:NAME", type=import_path,
                   help="let the run's config.json import this cell (as for `rtrl resume`; repeatable)")


def cmd_export(args) -> int:
    from rtrl.export import nir_module, to_nir

    out = Path(args.nir)
    if not out.parent.is_dir():
        raise UsageError(f"--nir {out}: {out.parent} is not an existing folder")
    check_not_a_run_file(out)
    try:
        check_output_file(out, "--nir", args.overwrite)
    except ValueError as e:
        raise UsageError(str(e)) from None
    trained = load_run_seed(args.run, allow_import=args.allow_import, seed=args.run_seed)
    try:
        nir = nir_module()
        graph = to_nir(trained.cell, trained.params, dt=args.dt, target=args.target)
    except ImportError as e:
        raise UsageError(str(e)) from None
    except ValueError as e:  # the cell has no NIR counterpart: it names it
        raise UsageError(f"cannot export {args.run} to NIR: {e}") from None
    data = io.BytesIO()
    nir.write(data, graph)
    atomic_write(out, lambda f: f.write(data.getvalue()))
    seeds = getattr(trained.config, "seeds", 1)
    which = (f", seed {trained.seed}" + (f" (the first of {seeds}; another with --run-seed)" if args.run_seed is None
                                         else "") if seeds > 1 else "")
    print(f"{out}: {type(trained.cell).__name__} ({trained.cell.input_size} inputs, {trained.cell.hidden_size} "
          f"neurons) of {args.run} at step {trained.step}{which}")
    dt = float(graph.metadata["dt"])
    print(f"  for {args.target}, dt = {dt:g} s: load with {LOADERS[args.target].format(file=repr(str(out)), dt=dt)}")
    if args.target == "nir":  # what a new user tried: snnTorch then fired no spike, without a word
        print("  snnTorch's and Norse's importers assume their own dt and r, not this file's: for them, export "
              "with --target snntorch or --target norse")
    return 0


LOADERS = {"nir": "nir.read({file})", "snntorch": "snntorch.import_nir.import_from_nir(nir.read({file}))",
           "norse": "norse.torch.from_nir(nir.read({file}), dt={dt})",
           "spikingjelly": "spikingjelly.activation_based.nir_exchange.import_from_nir(nir.read({file}), dt={dt})",
           "spyx": "spyx.nir.from_nir(nir.read({file}), inputs, dt={dt})"}


def check_not_a_run_file(out: Path) -> None:
    """``UsageError`` where ``out`` names (or lies under) one of a run folder's own files, its logger files or its
    ``wandb`` folder (``rtrl.run.folder.run_file_of``): no ``--overwrite`` replaces those."""
    own = run_file_of(out)
    if own is not None:
        raise UsageError(f"--nir {out} names {own}, a file of the run folder {own.parent}; export to a file of its "
                         "own (--overwrite never replaces a run's files)")
