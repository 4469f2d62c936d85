"""Write a learnable stand-in for the Spiking Heidelberg Digits in Tonic's HDF5 layout (the real files cannot be
fetched here), to check that an SHD-sized network trains through rtrl's ``shd`` task end to end.

    python tools/shd_like.py OUT_DIR [--train 2000] [--test 400] [--seed 0]

Writes ``OUT_DIR/shd_train.h5`` and ``OUT_DIR/shd_test.h5``: 700 units, 20 classes, examples of up to 1 s. Each class
is a "formant" whose centre unit sweeps linearly over the example between two class-specific units (drawn once from
the seed), 40 units wide, firing each unit at about 60 Hz; every example adds a random time shift (up to 50 ms), a
random speed (0.8x to 1.2x) and background spikes at 2 Hz on every unit. A class is told by where its sweep starts
and ends, so a network must integrate over time to tell two classes whose sweeps cross. Not SHD: its figures say
nothing of SHD's.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

UNITS, CLASSES, DURATION = 700, 20, 1.0
WIDTH, RATE, BACKGROUND, STEP = 40, 60.0, 2.0, 0.001


def sweeps(rng: np.random.Generator) -> np.ndarray:
    """(CLASSES, 2): each class's first and last centre unit."""
    return rng.uniform(WIDTH, UNITS - WIDTH, size=(CLASSES, 2))


def example(rng: np.random.Generator, sweep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One example's spike times (seconds, sorted) and units (uint16) for a class's ``sweep``."""
    shift, speed = rng.uniform(0.0, 0.05), rng.uniform(0.8, 1.2)
    t = np.arange(0.0, DURATION, STEP)
    progress = np.clip((t - shift) * speed / (DURATION * 0.9), 0.0, 1.0)
    centre = sweep[0] + progress * (sweep[1] - sweep[0])
    units = np.arange(UNITS)
    on = (np.abs(units[None, :] - centre[:, None]) < WIDTH / 2) & (t[:, None] >= shift)
    fire = rng.random(on.shape) < np.where(on, RATE, BACKGROUND) * STEP
    steps, unit = np.nonzero(fire)
    return (t[steps] + rng.uniform(0, STEP, steps.size)).astype(np.float32), unit.astype(np.uint16)


def write(path: str, rng: np.random.Generator, classes: np.ndarray, n: int) -> None:
    """``n`` examples, classes drawn uniformly, written atomically in Tonic's layout."""
    import h5py

    labels = rng.integers(0, CLASSES, n)
    tmp = f"{path}.tmp"
    with h5py.File(tmp, "w") as f:
        times = f.create_dataset("spikes/times", (n,), dtype=h5py.vlen_dtype(np.float32))
        units = f.create_dataset("spikes/units", (n,), dtype=h5py.vlen_dtype(np.uint16))
        for i, label in enumerate(labels):
            times[i], units[i] = example(rng, classes[label])
        f.create_dataset("labels", data=labels.astype(np.uint16))
    os.replace(tmp, path)


def whole(least: int):
    """An argparse type: an integer of at least ``least``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer of at least {least}, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"expected an integer of at least {least}, got {value}")
        return value
    return parse


def main(argv=None) -> None:
    from rtrl.files import check_output_file

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the folder to write shd_train.h5 and shd_test.h5 into (made if missing)")
    parser.add_argument("--train", type=whole(1), default=2000, help="training examples (default %(default)s)")
    parser.add_argument("--test", type=whole(1), default=400, help="test examples (default %(default)s)")
    parser.add_argument("--seed", type=whole(0), default=0, help="default %(default)s")
    args = parser.parse_args(argv)
    files = [os.path.join(args.out, name) for name in ("shd_train.h5", "shd_test.h5")]
    try:  # the rule of every file rtrl writes: no link written through, no folder; an earlier stand-in replaced
        for file in files:
            check_output_file(file, "out", overwrite=True)
    except ValueError as e:
        parser.error(str(e))
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    classes = sweeps(rng)
    for file, n in zip(files, (args.train, args.test), strict=True):
        write(file, rng, classes, n)


if __name__ == "__main__":
    main()
