"""Fingerprints of every preset's seeded results, to show that a change of structure changed no number.

    .venv/bin/python tools/fingerprint.py --out DIR [--json OUT] [--train-steps 40] [--rl-steps 256]
    .venv/bin/python tools/fingerprint.py --compare A.json B.json

Runs every ``rtrl train`` preset and every ``rtrl rl`` preset (the rows of ``make results`` and of docs/rl.md)
through the command line, each on a short budget from its seed (``--steps``; everything else the preset's own),
and records per run a SHA-256 of its ``metrics.jsonl`` records without the wall time, and of every array of its
``checkpoint.npz`` (dtype, shape and bytes; the list sorted, so that a leaf renamed by a refactoring still
compares by value; its meta record without the wall time). ``--compare`` says which runs differ between two
such files. The presets are found from ``rtrl list``, so the tool reads any version of the code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np


def preset_names(python: str) -> tuple[list[str], list[str]]:
    """The ``rtrl train`` and ``rtrl rl`` presets, as ``rtrl list`` shows them."""
    text = subprocess.run([python, "-m", "rtrl", "list"], capture_output=True, text=True, check=True).stdout
    train, rl, section = [], [], None
    for line in text.splitlines():
        if line.startswith("presets (rtrl train"):
            section = train
        elif line.startswith("presets (rtrl rl"):
            section = rl
        elif not line.startswith(" "):
            section = None
        elif section is not None and line.startswith("  ") and not line.startswith("   "):
            section.append(line.split()[0])
    return train, rl


def digest(run: Path) -> dict:
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    for r in records:
        r.pop("wall_s", None)
    metrics = hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()
    with np.load(run / "checkpoint.npz", allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(arrays.pop("meta").tobytes()) if "meta" in arrays else {}
    meta.pop("wall_s", None)  # the one thing a checkpoint holds that no seed fixes
    arrays = sorted(hashlib.sha256(f"{a.dtype}{a.shape}".encode() + np.ascontiguousarray(a).tobytes()).hexdigest()
                    for a in arrays.values()) + [json.dumps(meta, sort_keys=True)]
    return {"metrics": metrics, "arrays": hashlib.sha256("".join(arrays).encode()).hexdigest(),
            "records": len(records), "last": records[-1] if records else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="where the run folders go")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--train-steps", type=int, default=40)
    ap.add_argument("--rl-steps", type=int, default=256)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    ap.add_argument("--reuse", action="store_true", help="digest the run folders already in --out, run nothing")
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        differ = sorted(n for n in set(a) | set(b) if {k: v for k, v in a.get(n, {}).items() if k != "seconds"}
                        != {k: v for k, v in b.get(n, {}).items() if k != "seconds"})
        print(f"{len(set(a) & set(b))} runs in both, {len(differ)} differ" + "".join(f"\n  {n}" for n in differ))
        return 1 if differ else 0
    python = sys.executable
    train, rl = preset_names(python)
    results = {}
    for kind, names, steps in (("train", train, args.train_steps), ("rl", rl, args.rl_steps)):
        for name in names:
            folder = args.out / kind / name.replace("/", "__")
            command = [python, "-m", "rtrl", kind, "--preset", name, "--steps", str(steps), "--out", str(folder),
                       "--quiet", "--overwrite"]
            command += (["--eval-every", str(steps), "--eval-size", "32"] if kind == "train"
                        else ["--record-every", str(steps // 2)])
            done = (subprocess.CompletedProcess(command, 0) if args.reuse
                    else subprocess.run(command, capture_output=True, text=True))
            key = f"{kind} {name}"
            if done.returncode != 0:
                results[key] = {"exit": done.returncode, "stderr": done.stderr.strip().splitlines()[-1:]}
            else:
                results[key] = digest(folder)
            print(key, results[key].get("metrics", results[key])[:16] if done.returncode == 0 else results[key],
                  flush=True)
    text = json.dumps(results, indent=1, sort_keys=True)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
