"""``--stop-at V`` (``RunConfig.stop_at``): a training run stops after the first evaluation whose held-out metric
reaches V (the e-prop paper's stopping rule), its checkpoint at that record; resumed, it trains no further. The rule
``reached`` on hand-checked records, and the run against the records of the same run without the option."""

import numpy as np

from rtrl.cli import main
from rtrl.run import checkpoint
from rtrl.run.folder import read_metrics
from rtrl.training.trainer import reached

# tests/test_cli.py's tiny run (its compiled trainer shared)
TINY = ("--task copy --task-arg max_length=2 --cell elman --hidden 3 --method closed_form --batch 2 --lr 0.05 "
        "--eval-every 4 --eval-size 8 --quiet").split()


def test_reached_is_at_or_above_or_at_or_below_as_the_metric_is_better():
    assert reached({"metric": 0.93}, 0.93) and reached({"metric": 0.95}, 0.93)
    assert not reached({"metric": 0.9299}, 0.93)
    assert reached({"metric": 0.1}, 0.1, higher_is_better=False) and not reached({"metric": 0.11}, 0.1, False)
    assert not reached({"metric": None}, 0.0) and not reached({"step": 0}, 0.0)


def test_a_run_stops_at_the_first_record_that_reaches_stop_at_and_resumed_trains_no_further(tmp_path, capsys):
    full = tmp_path / "full"
    assert main(["train", *TINY, "--steps", "40", "--out", str(full)]) == 0
    metrics = [r["metric"] for r in read_metrics(full)]
    # the target: the first record after step 0 that beats every record before it, so the run must go that far
    k = next(i for i in range(1, len(metrics)) if metrics[i] > max(metrics[:i]))
    stopped = tmp_path / "stopped"
    argv = ["train", *TINY, "--steps", "40", "--stop-at", repr(metrics[k]), "--out", str(stopped)]
    assert main(argv) == 0
    assert "stopped: --stop-at" in capsys.readouterr().out
    records = read_metrics(stopped)
    assert [r["step"] for r in records] == [4 * i for i in range(k + 1)]
    np.testing.assert_allclose([r["metric"] for r in records], metrics[:k + 1], rtol=1e-6)
    assert checkpoint.read_meta(stopped / "checkpoint.npz")["step"] == 4 * k
    assert main(["resume", str(stopped), "--quiet"]) == 0
    assert [r["step"] for r in read_metrics(stopped)] == [4 * i for i in range(k + 1)]


def test_a_target_met_at_the_start_stops_at_step_0(tmp_path):
    out = tmp_path / "zero"
    assert main(["train", *TINY, "--steps", "40", "--stop-at", "0", "--out", str(out)]) == 0
    assert [r["step"] for r in read_metrics(out)] == [0]
    lower = tmp_path / "adding"  # mse: lower is better, so a target above every error is met at once
    argv = ["train", "--task", "adding", "--task-arg", "sequence_length=3", "--cell", "elman", "--hidden", "3",
            "--batch", "2", "--eval-every", "4", "--eval-size", "8", "--steps", "40", "--stop-at", "1e9", "--quiet",
            "--out", str(lower)]
    assert main(argv) == 0
    assert [r["step"] for r in read_metrics(lower)] == [0]
