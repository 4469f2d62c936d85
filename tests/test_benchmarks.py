"""The benchmark measurements themselves: memory flat in T for RTRL, growing for BPTT; fits and sizes."""

import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import oracle
import rtrl
from rtrl import cli
from rtrl.benchmarks import elementwise, loop, peers, roofline, scaling, sequence, streams, suite, timing
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
             "fraction_of_bound": 0.05, "forward_seconds": 1e-4, "nonrecurrent_seconds": 3e-4, "floor_seconds": 4e-4,
             "fraction_of_floor": 0.2, "bptt_seconds": 5e-4}]
    stream_rows = [{"cell": "ELSTM", "D": 64, "N": 256, "B": B, "T": 10, "method": "closed_form", "sweep": "B",
                    "forward_seconds": 1e-6 * B, "seconds": {"float32": 4e-6 * B, "bfloat16": 3e-6 * B},
                    "trace_bytes": {"float32": 2**17 * B, "bfloat16": 2**16 * B}} for B in (1, 1024)]
    precision = [{"cell": "ELSTM", "D": 64, "N": 256, "B": 32, "T": 100, "method": "closed_form",
                  "seconds": {"float32": 5e-4, "bfloat16": 4e-4, "float16": 6e-4, "bptt": 4e-4}, "fidelity_T": 100,
                  "seeds": 3, "fidelity": {dtype: {"cosine_bptt": c, "error_bptt": e, "cosine_float32": c,
                                                   "error_float32": e}
                                           for dtype, c, e in (("float32", 1.0, 0.0), ("bfloat16", 0.999997, 6e-3),
                                                               ("float16", 1.0, 4e-4))}}]
    return {"machine": suite.machine(), "config": config, "per_step": per_step, "sequence": sequence,
            "scaling": scaling, "roofline": roof, "loop": {"plain": 1.86e-3, "donated": 1.36e-3, "scan": 8.4e-4},
            "deep": {"forward": 1e-4, "layer_local(closed_form)": 5e-4, "layer_local(diagonal)": 6e-4, "bptt": 4e-4},
            "streams": {"caches": {"L1d": 2**15, "L2": 2**19, "L3": 2**25}, "rows": stream_rows},
            "precision": precision, "devices": [{"devices": 1, "seconds": 1e-4, "relative_error": 0.0},
                                                {"devices": 4, "seconds": 4e-4, "relative_error": 2e-8}],
            "kernels": [{"cell": "lru", "D": 64, "N": 256, "B": 32, "T": 100, "method": "bptt", "fusions": 39.0,
                         "library": 19.0, "other": 5.0, "total": 63.0, "nested": 0.0, "other_opcodes": {"copy": 5.0},
                         "trip_counts": [100, 100]}],
            "peers": {"braintrace": "0.2.6", "brainstate": "0.5.4", "rows": [
                {"D": 32, "N": 64, "B": 8, "T": 100, "check_T": 50,
                 "errors": {"rtrl diagonal": 3e-16, "braintrace D_RTRL single-step": 2e-16},
                 "seconds": {"rtrl diagonal, scan": 2e-6, "rtrl diagonal, one call": 1e-5,
                             "braintrace D_RTRL single-step, scan": 1.3e-5,
                             "braintrace D_RTRL single-step, one call": 8e-5}}]}}


def test_figures_as_markdown_name_the_machine_and_the_date():
    machine = suite.machine()
    assert machine["cores"] >= 1 and machine["processor"] and machine["jax"] == jax.__version__
    assert machine["platform"] == jax.default_backend() and machine["date"].startswith("20")
    text = suite.markdown(fake_results())
    assert f"on {machine['processor']} ({machine['cores']} cores available), JAX {jax.__version__}" in text
    assert "| ELSTM | 4 x 8 x 2 | 10 us | 7.3x | 6.4x | 3.9x | 1.87x | 1.64x |" in text
    assert "| 100 | `closed_form` | 20 ms | 2.00x | 0.34 MiB | 300 MiB |" in text
    assert "| 16 | 4 ms | 6 ms | 1.50x |" in text and "`rtrl` as N^1.58" in text
    assert "| elstm | `closed_form` | 8 MiB | 80 GB/s | 100 us | 300 us | 400 us | 2 ms | 5% | 20% | 500 us |" in text
    assert "| `donated` | 1.36 ms |" in text and "| `scan` | 840 us |" in text
    assert "4 LRU blocks of width 128" in text and "| `layer_local(closed_form)` | 500 us | 5x | 1.25x |" in text
    assert "| ELSTM | B | 64 x 256 x 1 | `closed_form` | 1 us | 4 us | 0.244 ns | 128 KiB | L2 | 3 us | 0.75x |" in text
    assert "| ELSTM | B | 64 x 256 x 1024 | `closed_form` | 1.02 ms | 4.1 ms | 0.244 ns | 128 MiB | DRAM |" in text
    assert "ELSTM B^1.00" in text and "L1d 32 KiB, L2 512 KiB, L3 32 MiB" in text
    assert "| ELSTM | `closed_form` | bfloat16 | 400 us | 0.80x | 1.00x | 0.999997 | 0.006 | 0.999997 | 0.006 |" in text
    assert "| 4 | 400 us | 4.00x | 2.0e-08 |" in text
    assert ("forced host devices" in text) == (jax.default_backend() == "cpu")
    assert "| lru | 64 x 256 x 32 | `bptt` | 39 | 19 | 5 | 63 | 0 | 100 + 100 |" in text
    assert "Beside braintrace** 0.2.6" in text and "braintrace D_RTRL single-step 2.0e-16" in text
    assert "| 32 x 64 x 8 | braintrace D_RTRL single-step, scan | 13 us | 6.50x |" in text
    assert "| 32 x 64 x 8 | braintrace D_RTRL single-step, one call | 80 us | 8.00x |" in text
    assert "smoke test" in suite.markdown(fake_results(), quick=True) and "smoke test" not in text
    assert "not measured in this run" in suite.markdown({**fake_results(), "peers": None})
    agent = [{"cell": "mingru", "width": 192, "envs": 16, "method": "closed_form", "full_seconds": 3e-4,
              "forward_seconds": 1e-4, "ratio_to_forward": 3.0, "env_steps_per_second": 53333.3,
              "first_envs": 1, "vs_first": 8.0, "vs_memoryless": 2.5}]
    assert "| mingru | 192 | 16 | `closed_form` | 300 us | 100 us | 3x | 2.5x | 53,333 | 8x |" in suite.markdown(
        {**fake_results(), "agent": agent})


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


def test_cache_sizes_are_read_from_sysfs_and_traces_placed_in_the_smallest_that_holds_them(tmp_path):
    for index, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "512K"),
                                                 (3, "Unified", "32768K")]):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (folder / name).write_text(f"{value}\n")
    caches = streams.cache_sizes(tmp_path)
    assert caches == {"L1d": 32 * 2**10, "L2": 512 * 2**10, "L3": 32 * 2**20}
    assert [streams.resident_in(n, caches) for n in (2**15, 2**15 + 1, 2**25, 2**25 + 1)] == ["L1d", "L2", "L3", "DRAM"]
    assert streams.cache_sizes(tmp_path / "absent") == {} and streams.resident_in(1, {}) == "?"


def test_sweeps_go_through_the_center_and_a_linear_cost_fits_exponent_one():
    sizes = streams.sweep_sizes((64, 256, 32), [1, 32], [64], [8, 64])
    assert sizes == [("B", (64, 256, 1)), ("B", (64, 256, 32)), ("N", (64, 64, 32)), ("D", (8, 256, 32)),
                     ("D", (64, 256, 32))]
    rows = [{"cell": "c", "sweep": axis, "D": D, "N": N, "B": B, "seconds": {"float32": 3e-9 * D * N * B + 1e-9}}
            for axis, (D, N, B) in streams.sweep_sizes((64, 256, 32), [1, 4, 32, 1024], [64, 1024], [8, 256])]
    fits = streams.exponents(rows)
    assert set(fits) == {("c", "B"), ("c", "N"), ("c", "D")}
    assert all(abs(a - 1) < 0.01 for a in fits.values())
    assert abs(streams.per_entry_seconds(rows[-1]) - 3e-9) < 1e-12


def test_the_bfloat16_column_stores_half_the_trace_bytes_of_the_float32_one():
    for name, cls in elementwise.CELLS.items():
        cell = cls(3, 4)
        params = cell.init(jax.random.PRNGKey(0), jnp.float32)
        f32, bf16 = streams.exact_method(cell, "float32"), streams.exact_method(cell, "bfloat16")
        assert f32.trace_dtype is None and bf16.trace_dtype == "bfloat16" and f32.name == bf16.name
        assert roofline.trace_bytes(cell, params, 5, bf16) * 2 == roofline.trace_bytes(cell, params, 5, f32), name


def test_the_plain_tanh_cell_of_the_benchmarks_gets_exact_traces():
    cell = elementwise.tanh_cell(3, 4)
    assert rtrl.methods.resolve("auto", cell).name == "diagonal"
    params, xs, ys = oracle.random_problem(cell, 20, (2,), 0)
    assert oracle.gradient_error(cell, "diagonal", params, xs, ys) <= oracle.EXACT_TOL


def test_the_peer_benchmarks_oracle_is_bptt_and_it_skips_cleanly_without_braintrace(monkeypatch, capsys):
    """``peers.bptt_grad`` (the oracle both libraries are checked against) is our BPTT's gradient, and without
    braintrace the section says so in one line and exits 0."""
    cell, params, xs, ys = peers.problem(3, 4, 2, 6, jnp.float64, seed=1)
    _, expected = rtrl.sequence_grad(cell, params, xs, ys, oracle.squared_error, method="bptt")
    assert oracle.relative_error(peers.bptt_grad(params, xs, ys), expected) <= oracle.EXACT_TOL
    monkeypatch.setattr(peers, "peer_modules", lambda: None)
    assert peers.main(["--sizes", "3x4x2"]) == 0
    assert capsys.readouterr().out == peers.SKIPPED + "\n"


def once(monkeypatch):
    """The benchmarks' timer timing each function once (one repeat, one call): these tests check what is timed and
    the rows' arithmetic, which hold for any positive timing, not the figures; repeating them only costs time."""
    real = timing.interleaved_seconds
    monkeypatch.setattr(timing, "interleaved_seconds",
                        lambda calls, repeats=1, min_seconds=0.0, clock=time.perf_counter: real(calls, 1, 0.0, clock))
    return timing.interleaved_seconds


def test_interleaved_seconds_reads_the_clock_it_is_given():
    """A clock that advances one unit a reading: every call lasts one unit, however long it really takes.
    [guards: the wall clock read whatever clock is asked for]"""
    readings = iter(range(1000))
    seconds = timing.interleaved_seconds({"a": (lambda: 0, ()), "b": (lambda: 1, ())}, repeats=3,
                                         clock=lambda: float(next(readings)))
    assert seconds == {"a": 1.0, "b": 1.0}


def test_cpu_time_times_diagonal_against_closed_form_on_one_thread_by_the_process_clock(capsys, monkeypatch):
    """``--cpu-time``: one XLA thread (``CPU_TIME``'s flags in the environment before JAX starts) and the process's
    CPU time as the clock; refused without ``--diagonal-vs-closed-form``."""
    monkeypatch.setenv("XLA_FLAGS", "")  # what the command sets is undone after the test
    clocks = []
    row = {"closed_form": 2e-6, "diagonal": 3e-6, "closed_form bytes": 2**20, "diagonal bytes": 2**20}
    monkeypatch.setattr(elementwise, "diagonal_against_closed_form", lambda *a, clock: clocks.append(clock) or row)
    elementwise.main(["--diagonal-vs-closed-form", "--cells", "LRU", "--sizes", "3x4x2", "--cpu-time"])
    out = capsys.readouterr().out.splitlines()
    assert clocks == [time.process_time] and "one XLA thread, CPU time" in out[0]
    assert out[2].split() == ["LRU", "3x4x2", "2.0", "3.0", "1.50x", "1.00", "1.00"]
    assert os.environ["XLA_FLAGS"] == timing.CPU_TIME["XLA_FLAGS"]
    with pytest.raises(SystemExit):
        elementwise.main(["--cpu-time"])


def test_diagonal_against_closed_form_prints_a_row_per_cell_with_equal_trace_bytes(capsys, monkeypatch):
    """The command's rows (its default cells), each row's numbers kept as the command computes them."""
    once(monkeypatch)
    rows, real = [], elementwise.diagonal_against_closed_form
    monkeypatch.setattr(elementwise, "diagonal_against_closed_form",
                        lambda *a, **k: rows.append(real(*a, **k)) or rows[-1])
    elementwise.main(["--diagonal-vs-closed-form", "--sizes", "3x4x2", "--steps", "3"])
    assert [line.split()[:2] for line in capsys.readouterr().out.splitlines()[2:]] == [
        ["IIR2", "3x4x2"], ["LRU", "3x4x2"], ["RTU", "3x4x2"]]
    for name, r in zip(("IIR2", "LRU", "RTU"), rows, strict=True):
        assert r["diagonal bytes"] == r["closed_form bytes"] > 0, name  # found from the step: the same traces
        assert r["diagonal"] > 0 and r["closed_form"] > 0


def test_agent_benchmark_times_the_agent_step_against_its_forward_step(monkeypatch):
    from rtrl.benchmarks import agent

    timed, timer = [], once(monkeypatch)
    monkeypatch.setattr(agent, "interleaved_seconds", lambda calls, **kw: timed.append(list(calls)) or timer(calls))
    rows = agent.measure_all(["lru-matrix"], [4], [1, 2], steps=3)
    # the torsos' and the counts' runs, the memoryless agent's among them, in one interleaved call, so "vs 1 env"
    # and "vs memoryless" compare timings taken under the same load
    assert timed == [[("ac", torso, kind, e) for torso in ("memoryless", "lru-matrix") for e in (1, 2)
                      for kind in ("full", "forward")]]
    assert {r["algorithm"] for r in rows} == {"ac"}  # the actor-critic alone unless asked for others
    assert [(r["cell"], r["width"], r["envs"], r["method"]) for r in rows] == [
        ("memoryless", 4, 1, "diagonal"), ("memoryless", 4, 2, "diagonal"),
        ("lru-matrix", 4, 1, "closed_form"), ("lru-matrix", 4, 2, "closed_form")]
    for r in rows:
        assert r["full_seconds"] > 0 and r["forward_seconds"] > 0
        assert r["ratio_to_forward"] == pytest.approx(r["full_seconds"] / r["forward_seconds"])
        assert r["env_steps_per_second"] == pytest.approx(r["envs"] / r["full_seconds"])
    assert [r["first_envs"] for r in rows] == [1, 1, 1, 1]
    for first, second in (rows[:2], rows[2:]):
        assert second["vs_first"] == pytest.approx(second["env_steps_per_second"] / first["env_steps_per_second"])
    for r, memoryless in zip(rows[2:], rows[:2], strict=True):
        assert r["vs_memoryless"] == pytest.approx(r["full_seconds"] / memoryless["full_seconds"])
    assert [r["vs_memoryless"] for r in rows[:2]] == [1.0, 1.0]


def test_the_agent_benchmarks_matrix_torsos_are_lru_and_rtu_with_their_output_matrix():
    """``lru-matrix`` and ``rtu-matrix`` build the streaming agent's torso with ``output_map="matrix"`` (the agents'
    torso before they left the matrix out); a registered cell's name is its own, the agent's default form."""
    from rtrl.benchmarks import agent
    from rtrl.cells import LRU, RTU
    from rtrl.rl.config import RLConfig
    from rtrl.rl.loop import OnlineActorCritic

    assert set(agent.CELLS) >= {"lru", "rtu", "lru-matrix", "rtu-matrix", "mingru"}
    for torso, cls in (("lru-matrix", LRU), ("rtu-matrix", RTU), ("lru", LRU)):
        options = {**agent.STREAMING, **agent.torso_options(torso), "hidden": 8, "envs": 2}
        cell = OnlineActorCritic(RLConfig(**agent.ENV, **options, steps=2, record_every=2)).agent.torso.cell
        assert type(cell) is cls and cell.output_map == ("concat" if torso == "lru" else "matrix")
