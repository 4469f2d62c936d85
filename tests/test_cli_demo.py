"""``rtrl demo`` (``make run``): the eLSTM learns the copy task online, and its gradient equals BPTT's."""

import re

from rtrl.cli import main
from rtrl.run.folder import read_metrics


def test_the_demo_learns_and_its_gradient_equals_bptt(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--steps", "2000", "--out", str(out), "--quiet"]) == 0
    records = read_metrics(out)
    assert [r["step"] for r in records] == [0, 1000, 2000]
    # 2000 online updates take the held-out token accuracy well above chance (0.5) and its start
    assert records[-1]["metric"] > 0.65 and records[-1]["metric"] > records[0]["metric"] + 0.1
    assert records[-1]["eval_loss"] < records[0]["eval_loss"] - 0.1
    printed = capsys.readouterr().out
    difference = float(re.search(r"BPTT gradients of the held-out loss \(T=13, float64\): ([\d.e+-]+)", printed)[1])
    assert difference <= 1e-9
    # run again: the finished demo is kept, not replaced (nothing is rewritten without --overwrite)
    before = (out / "metrics.jsonl").read_bytes()
    assert main(["demo", "--steps", "2000", "--out", str(out), "--quiet"]) == 0
    assert (out / "metrics.jsonl").read_bytes() == before
    # and says so, with the way to a fresh run [the note removed from cmd_demo: fails]
    again = capsys.readouterr().out
    assert f"{out} already holds a finished demo run (2000 steps)" in again and "rtrl demo --overwrite" in again
