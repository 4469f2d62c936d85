"""The benchmark measurements themselves: memory flat in T for RTRL, growing for BPTT; fits and sizes."""

import jax.numpy as jnp
import numpy as np

from rtrl import cli
from rtrl.benchmarks import roofline, scaling, sequence


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
