"""The benchmark measurements themselves: memory flat in T for RTRL, growing for BPTT; fits and sizes."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

import rtrl
from rtrl import cli
from rtrl.benchmarks import loop, roofline, scaling, sequence, suite
from rtrl.benchmarks.timing import random_problem


def test_compiled_memory_is_flat_in_T_for_rtrl_and_grows_for_bptt():
    temp = {}
    for T in (10, 1000):
        cell, params, xs, ys = sequence.problem("elstm", 3, 4, 2, T)
        for method in ("closed_form", "diagonal", "bptt"):
            temp[method, T] = sequence.compiled_temp_bytes(sequence.gradient_fn(cell, method), params, xs, ys)
    for method in ("closed_form", "diagonal"):
        assert temp[method, 1000] <= 1.1 * temp[method, 10]
    assert temp["bptt", 1000] > 10 * temp["bptt", 10]


def test_fitted_exponent_recovers_a_power_law():
    sizes = np.array([8, 16, 32, 64])
    assert abs(scaling.fitted_exponent(sizes, 3e-7 * sizes**4.0) - 4.0) < 1e-9


def test_trace_bytes_grow_with_the_batch_and_not_with_anything_else():
    cell, params, _, _ = sequence.problem("elstm", 3, 4, 2, 5)
    one = roofline.trace_bytes(cell, params, 1, "closed_form")
    assert roofline.trace_bytes(cell, params, 6, "closed_form") == 6 * one
    recurrent = sum(params[k].size for k in ("F", "Z", "w_f", "w_z", "b_f", "b_z"))
    assert one == recurrent * jnp.dtype(jnp.float32).itemsize  # ELSTM's traces: its recurrent parameters


def test_peak_rss_of_this_process_is_a_plausible_size():
    assert 10 * 2**20 < sequence.peak_rss_of_this_process() < 64 * 2**30


def test_bench_command_rejects_bad_input(capsys):
    assert cli.main(["bench", "--frobnicate"]) == 2
    assert "unrecognized arguments: --frobnicate" in capsys.readouterr().err


def fake_results() -> dict:
    """What ``suite.run`` returns, with round numbers."""
    config = {**suite.FULL, "per_step_sizes": [(4, 8, 2)], "lengths": [10, 100]}
    per_step = [{"cell": "ELSTM", "D": 4, "N": 8, "B": 2, "method": m, "seconds": s, "ratio_to_forward": s / 1e-5}
                for m, s in (("forward", 1e-5), ("closed_form", 7.3e-5), ("diagonal", 6.4e-5), ("bptt", 3.9e-5))]
    sequence = [{"cell": "elstm", "D": 32, "N": 64, "B": 8, "T": T, "method": m, "seconds": s * T,
                 "temp_bytes": b * 2**20, "peak_rss_bytes": 300 * 2**20}
                for T in (10, 100) for m, s, b in (("closed_form", 2e-4, 0.34), ("bptt", 1e-4, T / 50))]
    scaling = {**suite.SCALING, "sizes": [8, 16], "seconds": {"closed_form": [1e-3, 4e-3], "rtrl": [2e-3, 6e-3]},
               "exponents": {"closed_form": 2.0, "rtrl": 1.58}}
    roof = [{"cell": "elstm", "D": 64, "N": 256, "B": 32, "method": "closed_form", "trace_traffic_bytes": 8 * 2**20,
             "bandwidth": 80e9, "dram_bandwidth": 22e9, "bound_seconds": 1e-4, "step_seconds": 2e-3,
             "fraction_of_bound": 0.05}]
    return {"machine": suite.machine(), "config": config, "per_step": per_step, "sequence": sequence,
            "scaling": scaling, "roofline": roof, "loop": {"plain": 1.86e-3, "donated": 1.36e-3, "scan": 8.4e-4},
            "deep": {"forward": 1e-4, "layer_local(closed_form)": 5e-4, "layer_local(diagonal)": 6e-4, "bptt": 4e-4}}


def test_figures_as_markdown_name_the_machine_and_the_date():
    machine = suite.machine()
    assert machine["cores"] >= 1 and machine["processor"] and machine["jax"] == jax.__version__
    assert machine["platform"] == jax.default_backend() and machine["date"].startswith("20")
    text = suite.markdown(fake_results())
    assert f"on {machine['processor']} ({machine['cores']} cores available), JAX {jax.__version__}" in text
    assert "| ELSTM | 4 x 8 x 2 | 10 us | 7.3x | 6.4x | 3.9x |" in text
    assert "| 100 | `closed_form` | 20 ms | 2.00x | 0.34 MiB | 300 MiB |" in text
    assert "| 16 | 4 ms | 6 ms | 1.50x |" in text and "`rtrl` as N^1.58" in text
    assert "| elstm | `closed_form` | 8 MiB | 80 GB/s | 100 us | 2 ms | 5% |" in text
    assert "| `donated` | 1.36 ms |" in text and "| `scan` | 840 us |" in text
    assert "4 LRU blocks of width 128" in text and "| `layer_local(closed_form)` | 500 us | 5x | 1.25x |" in text
    assert "smoke test" in suite.markdown(fake_results(), quick=True) and "smoke test" not in text


def test_figures_replace_what_lies_between_the_markers_and_nothing_else(tmp_path):
    page = f"# Performance\n\nintro\n\n{suite.BEGIN}\nold figures\n{suite.END}\n\n## Reading\n\nkept\n"
    new = suite.with_figures(page, "new figures\n")
    assert new == page.replace("old figures", "new figures")
    assert suite.with_figures(suite.new_page(), "x") == f"# Performance\n\n{suite.BEGIN}\nx\n{suite.END}\n"
    (tmp_path / "ok.md").write_text(page)
    assert suite.figures_page(str(tmp_path / "ok.md")) == tmp_path / "ok.md"
    assert suite.figures_page(str(tmp_path / "new.md")) == tmp_path / "new.md"


def test_bench_refuses_a_page_without_markers_before_measuring(tmp_path, capsys):
    page = tmp_path / "performance.md"
    page.write_text("# Performance\n\nno markers\n")
    assert cli.main(["bench", "--out", str(tmp_path / "bench"), "--markdown", str(page)]) == 2
    assert "must hold the line" in capsys.readouterr().err
    assert not (tmp_path / "bench").exists() and page.read_text() == "# Performance\n\nno markers\n"
    assert cli.main(["bench", "--markdown", str(tmp_path / "nowhere" / "performance.md")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_loop_variants_compute_the_same_training():
    """The per-step loop section times three spellings of one computation: plain, donated and scanned."""
    cell = rtrl.cells.ELSTM(2, 3)
    params, xs, ys = random_problem(cell, 4, 2)
    learner, optimizer = rtrl.online(cell, "closed_form"), optax.adam(1e-2)
    runs = loop.variants(loop.train_step_fn(learner, optimizer))
    finals = {name: runs[name](params, optimizer.init(params), learner.init(params, batch_shape=(2,)),
                               *((xs, ys) if name == "scan" else (list(xs), list(ys)))) for name in loop.VARIANTS}
    for name in ("donated", "scan"):
        for a, b in zip(jax.tree.leaves(finals[name]), jax.tree.leaves(finals["plain"]), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.allclose(finals["plain"][0]["F"], params["F"])  # it trained
