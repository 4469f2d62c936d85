"""The environment variables JAX reads are checked before JAX reads them (``rtrl.startup``): in the command, a bad
one is one line naming it and exit status 2, not a traceback from inside JAX."""

import os
import subprocess
import sys

import pytest

from rtrl.startup import TRUTH, flag_problems


def test_flag_problems_names_a_jax_enable_x64_that_is_no_truth_value():
    """[the ``.lower()`` dropped: the ``TRUE`` case fails; the membership test inverted: every case fails]"""
    assert flag_problems({}) == []
    for good in ("1", "0", "TRUE", "false", "On", "n"):
        assert flag_problems({"JAX_ENABLE_X64": good}) == [], good
    for bad in ("garbage", "", "2", "truee"):
        (problem,) = flag_problems({"JAX_ENABLE_X64": bad})
        assert problem.startswith(f"JAX_ENABLE_X64={bad!r} is not a truth value") and all(t in problem for t in TRUTH)


@pytest.mark.parametrize("variable, value", [("JAX_ENABLE_X64", "garbage"), ("JAX_PLATFORMS", "bogus")])
def test_a_bad_jax_variable_is_one_line_and_exit_2_in_the_command(variable, value):
    """A fresh interpreter each (JAX reads them once per process). [``startup.check`` not called from ``import
    rtrl``: JAX's ``ValueError`` traceback at import; ``check_backend`` not called by the command: JAX's error at
    the first array, exit 1]"""
    env = {**os.environ, variable: value}
    done = subprocess.run([sys.executable, "-m", "rtrl", "inspect", "--cell", "elman"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("rtrl: error: ") and variable in done.stderr, \
        done.stderr
