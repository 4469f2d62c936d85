"""``rtrl export RUN --nir FILE``: the trained cell of a run folder (``rtrl.load``; an RL run's torso) written as a
NIR graph (``rtrl.export.to_nir``; needs the ``nir`` extra), atomically. A cell with no NIR counterpart (any
non-spiking cell, ``ALIF``) is one usage error naming it; an existing FILE is kept unless ``--overwrite``."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from rtrl.files import atomic_write
from rtrl.run.argtypes import import_path, path, positive_float
from rtrl.run.trained import load
from rtrl.run.usage import UsageError


def add_export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="a run folder written by `rtrl train` or `rtrl rl` (an RL run: its torso)")
    p.add_argument("--nir", required=True, type=path, metavar="FILE",
                   help="the NIR file to write (HDF5, read back with nir.read; its folder must exist)")
    p.add_argument("--dt", type=positive_float, default=1.0,
                   help="the time step the graph's neurons are discretised at (default %(default)s)")
    p.add_argument("--overwrite", action="store_true", help="replace FILE if it exists")
    p.add_argument("--allow-import", action="append", default=[], metavar="MODULE:NAME", type=import_path,
                   help="let the run's config.json import this cell (as for `rtrl resume`; repeatable)")


def cmd_export(args) -> int:
    from rtrl.export import nir_module, to_nir

    out = Path(args.nir)
    if not out.parent.is_dir():
        raise UsageError(f"--nir {out}: {out.parent} is not an existing folder")
    if out.exists() and not args.overwrite:
        raise UsageError(f"--nir {out} exists; choose another file, or replace it with --overwrite")
    trained = load(args.run, allow_import=args.allow_import)
    try:
        nir = nir_module()
        graph = to_nir(trained.cell, trained.params, dt=args.dt)
    except ImportError as e:
        raise UsageError(str(e)) from None
    except ValueError as e:  # the cell has no NIR counterpart: it names it
        raise UsageError(f"cannot export {args.run} to NIR: {e}") from None
    data = io.BytesIO()
    nir.write(data, graph)
    atomic_write(out, lambda f: f.write(data.getvalue()))
    print(f"{out}: {type(trained.cell).__name__} ({trained.cell.input_size} inputs, {trained.cell.hidden_size} "
          f"neurons) of {args.run} at step {trained.step}")
    return 0
