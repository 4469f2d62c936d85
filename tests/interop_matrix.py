"""The NIR interoperability matrix: for each framework, each neuron (row) and each direction, what holds between
rtrl and the real package. Each cell is established by one test in tests/test_interop_<framework>.py (snnTorch's
and Norse's in tests/test_interop.py; ``CHECKS`` there has exactly these cells, a test checks that), and
docs/interop.md is generated from this table and the installed versions: ``python tests/interop_matrix.py`` writes
it, and tests/test_interop_matrix.py fails when the page differs from what this module generates.

An outcome is ``IDENTICAL`` (spikes equal over 200 steps, a batch of 4, Poisson-like input spikes), ``SHIFTED``
(equal, the framework's one step later), ``CLOSE`` (an integrator's output), ``"refused: WHY"`` (the test shows
the refusal or the difference) or ``"none: WHY"`` (the framework has no such neuron; the test checks that)."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from rtrl.files import atomic_write_text

IDENTICAL = "identical"
SHIFTED = "identical, one step later"
CLOSE = "equal membranes to 1e-6 (no spikes; its weights are float32)"
EXPORT, IMPORT = "rtrl -> framework", "framework -> rtrl"
DIRECTIONS = (EXPORT, IMPORT)
PAGE = Path(__file__).resolve().parents[1] / "docs" / "interop.md"

# pip name -> (the name on the page, how rtrl's graph is run there, how the framework's graph is written)
FRAMEWORKS = {
    "snntorch": ("snnTorch", "`to_nir(cell, params, target=\"snntorch\")`, run with "
                 "`snntorch.import_nir.import_from_nir(graph)`",
                 "`snntorch.export_nir.export_to_nir(net, example, ignore_dims=[0])`, read with "
                 "`from_nir(graph, dt=1e-4)`"),
    "norse": ("Norse", "`to_nir(cell, params, target=\"norse\")`, run with `norse.torch.from_nir(graph, dt=1e-3)`",
              "`norse.torch.to_nir(net, example, dt=1.0)`, read with `from_nir(graph, dt=1.0)` (its file describes "
              "its network only at `dt = 1`: it writes `tau = dt / tau_mem_inv`). Norse's exporter wants every "
              "parameter of a cell of one shape: all per neuron (to vary one field across neurons, give every field, "
              "`v_leak` and `v_th` too, as a vector of the neurons' count) or all scalars, else it fails with "
              "`All parameters must have the same shape`; and `example` one sample without a batch dimension, "
              "`torch.zeros(input_size)`: its shape is written as the `Input`'s, and `from_nir` refuses a batch of "
              "several there (one vector input)"),
    "spikingjelly": ("SpikingJelly", "`to_nir(cell, params, target=\"spikingjelly\")`, run with "
                     "`spikingjelly.activation_based.nir_exchange.import_from_nir(graph, dt=1e-4)`",
                     "`export_to_nir(net, example, dt=1e-4)`, read with `from_nir(graph, dt=1e-4)`"),
    "spyx": ("spyx", "`to_nir(cell, params, target=\"spyx\")`, run with `spyx.nir.from_nir(graph, inputs, dt=1.0)`",
             "`spyx.nir.to_nir(model, input_type, output_type, dt=1.0)`, read with `from_nir(graph, dt=1.0)`"),
    "rockpool": ("Rockpool", "`to_nir(cell, params, dt=1e-3)`, read with "
                 "`rockpool.nn.modules.torch.nir.from_nir(graph)`",
                 "`rockpool.nn.modules.torch.nir.to_nir(module)`, read with `from_nir(graph, dt=1e-3)`"),
}

SJ_RESET = "refused: SpikingJelly starts the membrane at `v_reset`, NIR and rtrl at 0"
SPYX_GAIN = ("refused: spyx writes `r = beta` for a network that adds its input unscaled (NIR's `r = tau/dt`), no "
             "mark of its reset by subtraction, and spikes one step late")
ROCKPOOL_DECAY = "refused: Rockpool decays by `exp(-dt/tau)`, NIR's forward Euler by `1 - dt/tau`"

MATRIX = {
    "snntorch": {
        "LIF, reset to 0, per-neuron leak": (IDENTICAL, IDENTICAL),
        "LIF, reset to 0, recurrent": (IDENTICAL, IDENTICAL),
        "CubaLIF, reset to 0, per-neuron decays": (IDENTICAL, IDENTICAL),
        "CubaLIF, reset to 0, recurrent": (IDENTICAL, "refused: its `RSynaptic` export fails inside snnTorch "
                                                      "(`Cannot find the input of an empty graph`)"),
        "LIF, per-neuron thresholds": ("refused: its importer takes one threshold for all neurons; `to_nir` refuses "
                                       "them", IDENTICAL),
        "LIF, reset by subtraction": ("refused: its importer resets to 0; `to_nir` refuses the reset",
                                      "refused: snnTorch writes it as NIR's LIF, which resets to `v_reset`"),
    },
    "norse": {
        "LIF, reset to 0, per-neuron leak and threshold": (IDENTICAL, IDENTICAL),
        "LIF, reset to 0, recurrent": (IDENTICAL, "none: its only recurrent LIF is current-based (the CubaLIF "
                                                  "rows)"),
        "CubaLIF, reset to 0": (IDENTICAL, "refused: its `LIFCell` adds the input to the current after the membrane "
                                           "reads it, NIR's CubaLIF before"),
        "CubaLIF, reset to 0, recurrent": (IDENTICAL, "refused: it writes no node for its `LIFRecurrentCell` "
                                                      "(`None`); `from_nir` refuses it"),
        "IF, reset to 0": (IDENTICAL, IDENTICAL),
        "LI (no spikes)": ("refused: `to_nir` writes integrators for `target=\"nir\"` only", CLOSE),
    },
    "spikingjelly": {
        "LIF, reset to 0": (IDENTICAL, IDENTICAL),
        "LIF, reset to 0, recurrent": (IDENTICAL, "refused: its exporter cannot trace a recurrent container "
                                                  "(torch.fx `TraceError`)"),
        "IF, reset to 0": (IDENTICAL, IDENTICAL),
        "CubaLIF, reset to 0": (IDENTICAL, IDENTICAL),
        "CubaLIF, reset to 0, recurrent": (IDENTICAL, "refused: its exporter cannot trace a recurrent container "
                                                      "(torch.fx `TraceError`)"),
        "IF, reset to v_reset != 0": (SJ_RESET + "; `to_nir` refuses `v_reset` other than 0", SJ_RESET),
        "LIF, reset by subtraction": ("refused: its importer resets to `v_reset`; `to_nir` refuses the reset",
                                      "refused: its exporter raises `NotImplementedError` (NIR has no soft reset)"),
        "LIF, per-neuron leak or threshold": ("refused: its importer takes one value for all neurons; `to_nir` "
                                              "refuses them", "none: its neurons hold one value per field"),
        "LI (no spikes)": ("refused: its importer reads no LI; `to_nir` refuses an `IIR2`",
                           "none: it has no NIR export of a neuron without spikes"),
    },
    "spyx": {
        "LIF, reset by subtraction, per-neuron leak and threshold": (SHIFTED, SPYX_GAIN),
        "LIF, reset by subtraction, recurrent": (SHIFTED, "refused: its recurrent sub-graph feeds the input "
                                                          "through the recurrent weights; `from_nir` refuses it"),
        "IF, reset by subtraction": (SHIFTED, "refused: spyx marks no reset by subtraction (NIR's IF resets to "
                                              "`v_reset`), and spikes one step late"),
        "CubaLIF, reset by subtraction": ("refused: its CuBaLIF subtracts the threshold before the leak, rtrl's "
                                          "after; `to_nir` refuses it", SPYX_GAIN),
        "LIF, reset to v_reset": ("refused: spyx resets by subtraction only; `to_nir` refuses the reset",
                                  "none: its neurons reset by subtraction only"),
        "LI (no spikes)": ("refused: its importer reads an LI only before a Threshold node; `to_nir` refuses an "
                           "`IIR2`", "refused: its PSU_LIF writes LI -> Threshold; `from_nir` reads no Threshold "
                                     "node"),
    },
    "rockpool": {
        "LIF": ("refused: Rockpool 3.1.0's importer reads `tau_mem` from NIR's LIF, which has `tau` "
                "(`AttributeError`)", ROCKPOOL_DECAY),
        "CubaLIF": (ROCKPOOL_DECAY, ROCKPOOL_DECAY),
    },
}

# pip name -> why it is not in the interop extra and not tested
NOT_INSTALLED = {
    "sinabs": "sinabs 3.1.3 requires `nir<=1.0.4` (and `samna>=0.33`, SynSense's hardware toolkit): pip would "
              "downgrade nir 1.0.8 to 1.0.4 and nirtorch 2.6 to 2.0.2, which SpikingJelly 2.0.0's NIR exchange "
              "(`spikingjelly[nir]`: `nir>=1.0.7`, `nirtorch>=2.6`) refuses, so it cannot share the `interop` "
              "extra. Rockpool's own `nir` extra pins `nir<=1.0.4` too; the extra installs Rockpool without it, "
              "and Rockpool's NIR module runs with nir 1.0.8",
}


def cells(framework: str) -> list[tuple[str, str]]:
    """The ``(row, direction)`` cells of a framework, in the page's order."""
    return [(row, direction) for row in MATRIX[framework] for direction in DIRECTIONS]


def outcome(framework: str, row: str, direction: str) -> str:
    return MATRIX[framework][row][DIRECTIONS.index(direction)]


def versions() -> dict[str, str | None]:
    """The installed version of each framework (the ``interop`` extra pins them); None where not installed."""
    found = {}
    for name in FRAMEWORKS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def page(found: dict[str, str | None]) -> str:
    """docs/interop.md for these versions."""
    lines = [
        "# NIR interoperability",
        "",
        "What an rtrl cell exported with `rtrl.export.to_nir` does in another spiking framework, and what that "
        "framework's NIR export does in rtrl (`rtrl.export.from_nir`), neuron by neuron and in both directions, "
        "against the real packages. Every cell of the tables is one test in `tests/test_interop_<framework>.py` "
        "(`tests/test_interop.py` for snnTorch and Norse; the `interop` extra installs the frameworks): "
        "**identical** means equal spikes over 200 steps for a batch of 4 with random input spikes; *one step "
        "later* means the framework's spikes are rtrl's one step later (spyx's neuron fires on the membrane before "
        "it adds the input); *equal membranes* is the output of a neuron without spikes; **refused** names what "
        "does not map and why, and its test shows the refusal or the difference; **none** means the framework has "
        "no such neuron. "
        "What each `target` of `to_nir` writes, and why: [Spiking neurons](spiking.md#nir).",
        "",
        "This page is generated: `python tests/interop_matrix.py` writes it from the table in "
        "`tests/interop_matrix.py`, whose cells the tests establish, and `tests/test_interop_matrix.py` fails when "
        "the page differs.",
        "",
        "Versions: " + ", ".join(f"{FRAMEWORKS[name][0]} {found[name]}" for name in found) + " (pinned by the "
        "`interop` extra).",
        "",
    ]
    for name, (title, export_how, import_how) in FRAMEWORKS.items():
        lines += [f"## {title} {found[name]}", "", f"rtrl -> {title}: {export_how}. {title} -> rtrl: {import_how}.",
                  "", "<!-- figures: none: the tests' outcomes and tolerances, not measurements -->",
                  f"| neuron | rtrl -> {title} | {title} -> rtrl |", "| --- | --- | --- |"]
        lines += [f"| {row} | {export} | {imported} |" for row, (export, imported) in MATRIX[name].items()]
        lines.append("")
    lines += ["## Not installed", ""]
    lines += [f"* {name}: {why}." for name, why in NOT_INSTALLED.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    found = versions()
    missing = [name for name, version in found.items() if version is None]
    if missing:
        sys.exit(f"install the interop extra first: {missing} not installed")
    atomic_write_text(PAGE, page(found))
    print(f"wrote {PAGE}")
