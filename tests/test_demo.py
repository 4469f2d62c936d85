"""``python -m rtrl.cli.demo``: the trainer on the recall task, then its float64 gradient check against BPTT."""

import re

from rtrl.cli import demo


def test_demo_trains_and_its_gradient_equals_bptt(capsys):
    demo.main(["--steps", "200", "--hidden", "8", "--delay", "3", "--batch", "4", "--method", "closed_form"])
    out = capsys.readouterr().out
    assert re.search(r"held-out accuracy [\d.]+% \(chance 50.0%\) after 200 online steps", out)
    difference = float(re.search(r"BPTT gradients \(T=50, float64\): ([\d.e+-]+)", out).group(1))
    assert difference <= 1e-9
