"""Gradient fidelity: how close each method's gradient is to BPTT's, per cell and sequence length.

For every cell and method that applies to it, and every sequence length ``T``, the summed squared-error loss of
a random problem (parameters from ``cell.init``, standard normal inputs and targets, a batch of 2, float64) is
differentiated by the method and by BPTT; the table holds the cosine similarity and the relative error
(``rtrl.compare``) averaged over seeds, and the worst cosine. Exact methods sit at cosine 1 and rounding error.

    rtrl fidelity --out DIR [--markdown PAGE] [--lengths 1 10 100] [--seeds 3] [--hidden 16] [--input 4]

prints the table (markdown) and writes ``DIR/fidelity.csv``, ``DIR/fidelity.json`` and ``DIR/fidelity.png``;
``--markdown docs/fidelity.md`` also writes the documentation page: the table with how it was made.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import json
import os
import statistics
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

import rtrl
from rtrl import interrupts, provenance
from rtrl.cells import ALIF, CELLS, LIF, LRU, RTU, Elman, Network, Stack
from rtrl.compare import cosine, relative_error, squared_error
from rtrl.files import atomic_write_text
from rtrl.methods import REGISTRY, Method, resolve
from rtrl.run.plot import pyplot, save_figure
from rtrl.validate import applies

METHODS = ("rtrl", "snap1", "snap2", "eprop", "uoro", "tbptt", "layer_local")
LENGTHS = (1, 10, 100)
SEEDS = 3
BATCH = 2
FIELDS = ("cell", "method", "T", "cosine", "cosine_min", "relative_error", "seeds")


DEEP_CELLS, DEPTHS = (LRU, RTU), (2, 4)


def default_cells(input_size: int = 4, hidden_size: int = 16) -> list:
    """Every registered cell at the given sizes (the spiking LIF and ALIF also with recurrent weights, where
    ``eprop`` is Bellec et al.'s and the gradient is BPTT's through the same surrogate), a two-layer Elman stack, and
    deep networks (2 and 4 residual blocks of LRU, then of RTU, cells of width ``hidden_size``)."""
    cells = [cls(input_size=input_size, hidden_size=hidden_size) for cls in CELLS.values()]
    cells += [cls(input_size=input_size, hidden_size=hidden_size, recurrent=True) for cls in (LIF, ALIF)]
    networks = [Network(layers=tuple(cls(hidden_size, hidden_size) for _ in range(depth)), input_size=input_size)
                for cls in DEEP_CELLS for depth in DEPTHS]
    return cells + [Stack((Elman(input_size, hidden_size), Elman(hidden_size, hidden_size)))] + networks


def cell_label(cell) -> str:
    """The cell's name, with the options that differ from their defaults (sizes aside), so that two variants of
    one cell (IIR2's parameterisations, activations) get two rows."""
    if isinstance(cell, Stack):
        return "Stack(" + "+".join(cell_label(layer) for layer in cell.layers) + ")"
    if isinstance(cell, Network):
        labels = [cell_label(layer) for layer in cell.layers]
        blocks = f"{len(labels)} x {labels[0]}" if len(set(labels)) == 1 else "+".join(labels)
        options = "".join(f", {name}={getattr(cell, name)!r}" for name in ("norm", "mix")
                          if getattr(cell, name) != Network.__dataclass_fields__[name].default)
        return f"Network({blocks}{options})"
    options = [f"{f.name}={getattr(cell, f.name)!r}" for f in dataclasses.fields(cell)
               if f.name not in ("input_size", "hidden_size") and getattr(cell, f.name) != f.default]
    return f"{cell.name}({', '.join(options)})" if options else cell.name


def method_label(method: Method) -> str:
    """The registry name for a method with default options, its repr otherwise."""
    return method.name if method == resolve(method.name) else repr(method)


def gradient_fidelity(cell, method, T: int, seed: int, batch: int = BATCH) -> tuple[float, float]:
    """``(cosine, relative_error)`` of ``method``'s gradient against BPTT's on the random problem ``seed``."""
    k_p, k_x, k_y = jax.random.split(jax.random.PRNGKey(seed), 3)
    params = cell.init(k_p, jnp.float64)
    xs = jax.random.normal(k_x, (T, batch, cell.input_size), jnp.float64)
    ys = jax.random.normal(k_y, (T, batch, cell.hidden_size), jnp.float64)
    _, reference = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method="bptt")
    _, grads = rtrl.sequence_grad(cell, params, xs, ys, squared_error, method=method)
    return cosine(grads, reference), relative_error(grads, reference)


def fidelity_table(cells=None, methods: Sequence = METHODS, lengths: Sequence[int] = LENGTHS,
                   seeds: int = SEEDS, progress: Callable[[dict, int], None] | None = None) -> list[dict]:
    """One row per cell, applicable method and length: mean cosine, worst cosine, mean relative error.
    ``progress(row, total)``: called after each row, with the number of rows there will be."""
    if not jax.config.jax_enable_x64:
        raise ValueError("fidelity_table needs float64: call jax.config.update('jax_enable_x64', True) first")
    cells = default_cells() if cells is None else cells
    methods = list(map(resolve, methods))
    total = sum(applies(m, c) for c in cells for m in methods) * len(lengths)
    rows = []
    for cell in cells:
        for method in methods:
            if not applies(method, cell):
                continue
            for T in lengths:
                scores = [gradient_fidelity(cell, method, T, seed) for seed in range(seeds)]
                cosines, errors = zip(*scores, strict=True)
                rows.append({"cell": cell_label(cell), "method": method_label(method), "T": T,
                             "cosine": statistics.mean(cosines), "cosine_min": min(cosines),
                             "relative_error": statistics.mean(errors), "seeds": seeds})
                if progress is not None:
                    progress(rows[-1], total)
        # Every cell, method and length is its own executable, and XLA's CPU backend maps each one's kernels into
        # memory: kept all at once they exceed the kernel's limit on mappings (vm.max_map_count, 65530 here) and
        # compilation fails with "Cannot allocate memory". No cell reuses another's executables.
        jax.clear_caches()
    return rows


def markdown(rows: list[dict]) -> str:
    """Cells and methods down, lengths across; each entry ``cosine / relative error``."""
    lengths = sorted({r["T"] for r in rows})
    lines = ["| cell | method | " + " | ".join(f"T={T}: cos / rel. err." for T in lengths) + " |",
             "|---|---|" + "---|" * len(lengths)]
    index = {(r["cell"], r["method"], r["T"]): r for r in rows}
    for cell, method in dict.fromkeys((r["cell"], r["method"]) for r in rows):
        entries = [index.get((cell, method, T)) for T in lengths]
        lines.append(f"| {cell} | {method} | " + " | ".join(
            "" if r is None else f"{r['cosine']:.4f} / {r['relative_error']:.2g}" for r in entries) + " |")
    return "\n".join(lines)


NOTES = """SnAp-2 is exact wherever two steps of connectivity reach every sensitivity (any dense one-layer
recurrence); SnAp-1 and e-prop wherever a parameter's influence never leaves the carry entries it touches in one
step (element-wise cells with one state per neuron). SnAp-1 and e-prop coincide on Elman (each parameter touches one
carry entry per step) and part on GRU and the stack. UORO is unbiased (`tests/test_methods_approximations.py`
averages 2000 seeds) but one draw is far off. On the networks of LRU or RTU blocks (`Network`) SnAp-2 is exact as
well: each block's recurrence is diagonal, and a block's parameters reach the carries of the blocks above it within
the same step. `layer_local` keeps only each block's own traces (exact inside a block, nothing through time across
blocks), and loses more the deeper the network. What each method keeps and drops, and its cost:
[methods.md](methods.md)."""


def exact_summary(rows: list[dict], tolerance: float = 1e-9) -> str:
    """Which methods matched BPTT on which cells, read from the table: mean relative error within ``tolerance``
    at every length."""
    worst: dict[tuple[str, str], float] = {}
    for r in rows:
        key = (r["method"], r["cell"])
        worst[key] = max(worst.get(key, 0.0), r["relative_error"])
    parts = []
    for method in dict.fromkeys(m for m, _ in worst):
        cells = [c for (m, c), e in worst.items() if m == method]
        exact = [c for c in cells if worst[method, c] <= tolerance]
        if exact:
            parts.append(f"`{method}` on " + ("every cell" if exact == cells else ", ".join(exact)))
    return (f"Exact in this table (mean relative error at most {tolerance:g} at every T): " + "; ".join(parts)
            + ". Every other row is an approximation." if parts else "No method is exact in this table.")


def command_line(args: argparse.Namespace) -> str:
    """The ``rtrl fidelity`` command that reproduces ``args`` (options at their defaults left out)."""
    words = ["rtrl fidelity", "--out", args.out]
    defaults = {"lengths": list(LENGTHS), "seeds": SEEDS, "hidden": 16, "input": 4, "methods": list(METHODS)}
    for name, default in defaults.items():
        value = getattr(args, name)
        if value != default:
            words += [f"--{name}", *map(str, value if isinstance(value, list) else [value])]
    return " ".join(words + ["--markdown", args.markdown])


def page(rows: list[dict], args: argparse.Namespace) -> str:
    """The documentation page: how the table was made, the table, and how to read it."""
    methods = ", ".join(f"`{name}` = `{resolve(name)!r}`" for name in args.methods)
    return f"""# Gradient fidelity

How close each method's gradient is to BPTT's, for every cell and sequence length T: the cosine similarity and the
relative error (largest over parameter arrays of `|g - g_bptt| / |g_bptt|`), averaged over random problems
(standard normal inputs and targets, squared error on every step, float64). A method that does not apply to a cell
has no row. Exact methods sit at cosine 1 and rounding error; at T = 1 nothing recurs and every method is exact.

* problems per entry: {args.seeds}; hidden size {args.hidden}, input size {args.input}, batch {BATCH}
* methods, with their options: {methods} (a `uoro` entry is one draw of a noisy estimate per problem, not its mean)

This page is written by the command below (float64 and seeded: it gives the same table on any machine, up to
rounding); it also writes `fidelity.csv`, `fidelity.json` and the plot `fidelity.png` to its `--out` folder.

```bash
{command_line(args)}
```

{provenance.line(command_line(args))}

{markdown(rows)}

{exact_summary(rows)}

{NOTES}
"""


def to_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, FIELDS)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


COLUMNS = 4  # cells side by side in fidelity.png; more cells go on further rows


def plot(rows: list[dict], out: str) -> None:
    """PNG at ``out``: per cell, cosine (top) and relative error (below it) against T, one line per method; the
    cells in a grid of ``COLUMNS`` across (any number of cells stays readable), each panel with its legend."""
    cells = list(dict.fromkeys(r["cell"] for r in rows))
    columns = min(COLUMNS, len(cells))
    grid_rows = -(-len(cells) // columns)
    fig, axes = pyplot().subplots(2 * grid_rows, columns, figsize=(4.5 * columns, 6 * grid_rows), squeeze=False)
    for ax in axes.flat[2 * len(cells):]:
        ax.set_visible(False)
    for k, cell in enumerate(cells):
        top, bottom = axes[2 * (k // columns), k % columns], axes[2 * (k // columns) + 1, k % columns]
        mine = [r for r in rows if r["cell"] == cell]
        for i, method in enumerate(dict.fromkeys(r["method"] for r in mine)):
            line = sorted((r for r in mine if r["method"] == method), key=lambda r: r["T"])
            Ts = [r["T"] for r in line]
            style = {"marker": "os^vDx+*"[i % 8], "linestyle": "-" if i < 8 else "--", "label": method}
            top.plot(Ts, [r["cosine"] for r in line], **style)
            bottom.plot(Ts, [max(r["relative_error"], 1e-17) for r in line], **style)  # 0 on a log axis
        top.set_title(cell)
        top.set_ylabel("cosine vs BPTT")
        bottom.set_ylabel("relative error vs BPTT")
        bottom.set_xlabel("sequence length T")
        bottom.set_yscale("log")
        top.legend(fontsize="x-small")
        for ax in (top, bottom):
            ax.set_xscale("log")
            ax.grid(True, alpha=0.3)
    save_figure(fig, out)


def page_path(path: str) -> str:
    """``--markdown``: a file in an existing folder (an argparse type, checked before minutes of computing)."""
    if not os.path.isdir(os.path.dirname(path) or "."):
        raise argparse.ArgumentTypeError(f"{path}: the folder {os.path.dirname(path)!r} does not exist")
    return path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from rtrl.run.argtypes import path, positive_int

    parser.add_argument("--out", required=True, type=path, help="folder for fidelity.csv, fidelity.json, fidelity.png")
    parser.add_argument("--lengths", type=positive_int, nargs="+", default=list(LENGTHS),
                        help="sequence lengths T (default: %(default)s)")
    parser.add_argument("--seeds", type=positive_int, default=SEEDS,
                        help="random problems averaged per entry (default: %(default)s)")
    parser.add_argument("--hidden", type=positive_int, default=16,
                        help="hidden size of every cell (default: %(default)s)")
    parser.add_argument("--input", type=positive_int, default=4, help="input size of every cell (default: %(default)s)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(REGISTRY), metavar="NAME",
                        help="method names from `rtrl list` (default: %(default)s)")
    parser.add_argument("--markdown", type=page_path, metavar="PAGE",
                        help="also write the documentation page here (docs/fidelity.md; default: none)")


def run(args: argparse.Namespace) -> int:
    """Compute the table with a progress bar (stderr), then write the files. Ctrl-C stops it at the next entry,
    exit status 130, with nothing written (``rtrl.interrupts``)."""
    from tqdm import tqdm

    jax.config.update("jax_enable_x64", True)
    os.makedirs(args.out, exist_ok=True)
    with tqdm(unit="entry", mininterval=1.0) as bar:

        def progress(row: dict, total: int) -> None:
            bar.total = total
            bar.set_postfix_str(f"{row['cell']} {row['method']} T={row['T']}", refresh=False)
            bar.update()
            interrupts.poll()

        try:
            with interrupts.deferred():
                rows = fidelity_table(default_cells(args.input, args.hidden), args.methods, args.lengths,
                                      args.seeds, progress)
        except KeyboardInterrupt:
            print(f"interrupted: nothing was written to {args.out}" + (f" or {args.markdown}" if args.markdown
                                                                      else ""), flush=True)
            return interrupts.STATUS
    print(markdown(rows))
    atomic_write_text(os.path.join(args.out, "fidelity.csv"), to_csv(rows))
    atomic_write_text(os.path.join(args.out, "fidelity.json"), json.dumps(rows, indent=1))
    plot(rows, os.path.join(args.out, "fidelity.png"))
    print(f"wrote fidelity.csv, fidelity.json and fidelity.png to {args.out}")
    if args.markdown:
        atomic_write_text(args.markdown, page(rows, args))
        print(f"wrote {args.markdown}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rtrl.reports.fidelity", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    interrupts.install()  # the command's Ctrl-C: at the next safe point (rtrl.interrupts), never swallowed
    raise SystemExit(main())
