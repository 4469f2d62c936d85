"""Kernels per step: what the compiled program of a whole-sequence gradient launches for each step it scans.

    python -m rtrl.benchmarks.kernels [--cells elstm lru] [--sizes 64x256x32 32x64x8] [--steps 100]

For each element-wise cell with closed-form traces and each method (``closed_form``, ``diagonal``, ``chunked``,
``bptt``, and the forward-only scan that every timing is a ratio to), XLA compiles the whole-sequence gradient of
``--steps`` steps and this reads the optimised HLO (``jax.jit(f).lower(...).compile().as_text()``). The scans over the
steps are the ``while`` loops of the entry computation; each loop's body and condition are counted once per iteration,
a loop nested inside (a loop over the streams) as many times as it runs (``nested`` says how many kernels
of a step these are), and the sum over the entry's loops is
divided by the number of steps, so a body that holds two steps (``unroll=2``) counts half per step, and BPTT's
backward loop adds to its forward one. What is counted:

* ``fusions``: XLA's generated kernels (``fusion`` of kind ``kLoop``, ``kInput``, ``kOutput``);
* ``library``: calls into a library: ``dot``, ``convolution``, ``custom-call`` and the fusions XLA hands to one
  (kind ``kCustom``, on the CPU YNNPACK's matrix products);
* ``other``: every other instruction that does work outside a fusion (a ``copy``, a ``dynamic-update-slice``);
  ``parameter``, ``constant``, ``tuple``, ``get-tuple-element`` and ``bitcast`` move no data and are not counted.

A ``call`` counts what it calls; a ``conditional`` counts its largest branch (which one runs is not known
before the run). The counts are deterministic for one JAX version and backend, so they are figures on a busy
machine too; what each kernel costs is the timed sections' business.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from dataclasses import dataclass

import jax
import jax.numpy as jnp

import rtrl
from rtrl.benchmarks.timing import forward_fn, gradient_fn
from rtrl.methods import resolve
from rtrl.run.argtypes import size3
from rtrl.validate import applies

CELLS = ("elstm", "iir2", "adaptive_iir2", "lru", "rtu")  # the element-wise cells with closed-form traces
METHODS = ("closed_form", "diagonal", "chunked", "bptt", "forward")
FREE = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all", "opt-barrier",
                  "add-dependency"})
LIBRARY = frozenset({"dot", "convolution", "custom-call", "fft", "triangular-solve", "cholesky"})


@dataclass(frozen=True)
class Instruction:
    name: str
    opcode: str
    attributes: str  # the text after the operands: kind=..., calls=..., body=..., backend_config=...

    def called(self, attribute: str) -> list[str]:
        """The computations named by ``attribute`` (``body``, ``to_apply``, ``branch_computations``...)."""
        found = re.search(rf"\b{attribute}=(\{{[^}}]*\}}|%?[\w.\-]+)", self.attributes)
        return [] if found is None else [n.strip().lstrip("%") for n in found.group(1).strip("{}").split(",")]

    def trip_count(self) -> int:
        found = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', self.attributes)
        if found is None:
            raise ValueError(f"the loop {self.name} has no known trip count: its kernels per step are unknown")
        return int(found.group(1))


COMPUTATION = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\{\s*$")
INSTRUCTION = re.compile(r"^\s+(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")


def without_type(text: str) -> str:
    """``text`` after its leading shape (``f32[2,8]{1,0}`` or a tuple ``(s32[], f32[2,8]...)``)."""
    if not text.startswith("("):
        return text.split(" ", 1)[1]
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return text[i + 1:].lstrip()
    raise ValueError(f"unbalanced shape in HLO: {text[:80]!r}")


def parse_instruction(line: str) -> Instruction | None:
    found = INSTRUCTION.match(line)
    if found is None:
        return None
    name, rest = found.groups()
    rest = without_type(rest)
    opcode, _, after = rest.partition("(")
    depth, end = 1, len(after)
    for i, char in enumerate(after):  # skip the operands, which may hold nested parentheses
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            end = i
            break
    return Instruction(name, opcode.strip(), after[end + 1:])


def parse(hlo: str) -> tuple[dict[str, list[Instruction]], str]:
    """``({computation name: its instructions}, entry name)`` of an HLO module's text."""
    computations: dict[str, list[Instruction]] = {}
    entry, current = None, None
    for line in hlo.splitlines():
        header = COMPUTATION.match(line)
        if header is not None:
            current = header.group(2)
            computations[current] = []
            entry = current if header.group(1) else entry
        elif line.startswith("}"):
            current = None
        elif current is not None and (instruction := parse_instruction(line)) is not None:
            computations[current].append(instruction)
    if entry is None:
        raise ValueError("no ENTRY computation in the HLO text")
    return computations, entry


def kind(instruction: Instruction) -> str | None:
    """``fusions``, ``library`` or ``other:OPCODE`` for one kernel; ``None`` for what moves no data."""
    if instruction.opcode in FREE:
        return None
    if instruction.opcode == "fusion":
        return "library" if "kind=kCustom" in instruction.attributes else "fusions"
    return "library" if instruction.opcode in LIBRARY else f"other:{instruction.opcode}"


def executed(computations: dict[str, list[Instruction]], name: str, loops: bool = True) -> Counter:
    """The kernels one run of computation ``name`` launches, by ``kind``: loops times their trip counts, or
    none of what loops run when not ``loops``."""
    total: Counter = Counter()
    for instruction in computations[name]:
        if instruction.opcode == "while":
            if loops:
                total.update({k: n * instruction.trip_count() for k, n in iteration(computations, instruction).items()})
        elif instruction.opcode == "call":
            total.update(executed(computations, *instruction.called("to_apply"), loops))
        elif instruction.opcode == "conditional":
            branches = instruction.called("branch_computations") or (
                instruction.called("true_computation") + instruction.called("false_computation"))
            total.update(max((executed(computations, b, loops) for b in branches), key=lambda c: sum(c.values())))
        elif (k := kind(instruction)) is not None:
            total[k] += 1
    return total


def iteration(computations: dict[str, list[Instruction]], loop: Instruction, loops: bool = True) -> Counter:
    """The kernels one iteration of ``loop`` launches: its body and its condition."""
    return (executed(computations, *loop.called("body"), loops)
            + executed(computations, *loop.called("condition"), loops))


def loops(computations: dict[str, list[Instruction]], name: str) -> list[Instruction]:
    """The outermost ``while`` loops of computation ``name`` (looking through ``call``)."""
    found = []
    for instruction in computations[name]:
        if instruction.opcode == "while":
            found.append(instruction)
        elif instruction.opcode == "call":
            found += loops(computations, *instruction.called("to_apply"))
    return found


def per_step(hlo: str, steps: int) -> dict:
    """Kernels per step of a program that scans ``steps`` steps: ``"fusions"``, ``"library"``, ``"other"`` and
    their ``"total"`` (floats: a loop body may hold several steps), how many of them run in loops nested in the
    scans' bodies (``"nested"``), ``"other_opcodes"`` (``{opcode: per step}``) and ``"trip_counts"``, one per
    outermost loop."""
    computations, entry = parse(hlo)
    scans = loops(computations, entry)
    if not scans:
        raise ValueError("the entry computation holds no loop: XLA unrolled the scan, or the program has none")
    total: Counter = Counter()
    nested = 0
    for loop in scans:
        once = iteration(computations, loop)
        total.update({k: n * loop.trip_count() for k, n in once.items()})
        nested += (sum(once.values()) - sum(iteration(computations, loop, loops=False).values())) * loop.trip_count()
    others = {k.split(":", 1)[1]: n / steps for k, n in sorted(total.items()) if k.startswith("other:")}
    counts = {"fusions": total["fusions"] / steps, "library": total["library"] / steps, "other": sum(others.values())}
    return {**counts, "total": sum(counts.values()), "nested": nested / steps, "other_opcodes": others,
            "trip_counts": [loop.trip_count() for loop in scans]}


def compiled_text(fn, *args) -> str:
    return fn.lower(*args).compile().as_text()


def program(cell, method: str):
    """The jitted whole-sequence function the timed sections run: ``forward_fn`` or ``gradient_fn``."""
    return forward_fn(cell) if method == "forward" else gradient_fn(cell, method)


def measure(cell_name: str, D: int, N: int, B: int, T: int, methods=METHODS) -> list[dict]:
    """One row per method that applies to the cell: its kernels per step at D x N x B, float32, T steps."""
    cell = rtrl.cells.CELLS[cell_name](D, N)
    params = jax.eval_shape(lambda: cell.init(jax.random.PRNGKey(0), jnp.float32))
    xs = jax.ShapeDtypeStruct((T, B, D), jnp.float32)
    ys = jax.ShapeDtypeStruct((T, B, N), jnp.float32)
    rows = []
    for method in methods:
        if method != "forward" and not applies(resolve(method), cell):
            continue
        counts = per_step(compiled_text(program(cell, method), params, xs, ys), T)
        rows.append({"cell": cell_name, "D": D, "N": N, "B": B, "T": T, "method": method, **counts})
    return rows


def print_rows(rows: list[dict]) -> None:
    print(f"  {'cell':>13} {'D x N x B':>12} {'method':>12} {'fusions':>8} {'library':>8} {'other':>6} "
          f"{'total':>6} {'nested':>6}  loop trips, other kernels")
    for r in rows:
        print(f"  {r['cell']:>13} {r['D']}x{r['N']}x{r['B']:<6} {r['method']:>12} {r['fusions']:8.3g} "
              f"{r['library']:8.3g} {r['other']:6.3g} {r['total']:6.3g} {r['nested']:6.3g}  {r['trip_counts']} "
              + " ".join(f"{op} {n:.3g}" for op, n in r["other_opcodes"].items()), flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rtrl.benchmarks.kernels", description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", choices=CELLS, default=list(CELLS))
    parser.add_argument("--sizes", type=size3, nargs="+", default=[(64, 256, 32), (32, 64, 8)],
                        help="DxNxB: input size, hidden size, batch")
    parser.add_argument("--steps", type=int, default=100, help="sequence length T")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    args = parser.parse_args(argv)
    rows = [r for name in args.cells for D, N, B in args.sizes
            for r in measure(name, D, N, B, args.steps, args.methods)]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"kernels per step, float32, T={args.steps}, JAX {jax.__version__} on {jax.default_backend()}")
        print_rows(rows)


if __name__ == "__main__":
    main()
