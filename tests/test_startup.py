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


def test_the_command_takes_ctrl_c_before_importing_anything_slow():
    """In the command, ``import rtrl`` handles SIGINT before it imports a module the bare interpreter has not
    (``signal``, ``enum``, ``collections``, ``pathlib``: tens of milliseconds in which a Ctrl-C was a traceback),
    and a Ctrl-C then ends the process as an interrupted command: one line, status 130. [``import signal`` in
    ``check``, or ``pathlib`` back in ``rtrl.startup``: the modules seen at the handler's install include them]"""
    probe = ("import sys, _signal; sys.argv[0] = 'rtrl'; seen = []\n"
             "real = _signal.signal\n"
             "def spy(sig, handler):\n"
             "    seen.append(sorted(m for m in ('signal', 'enum', 'collections', 'pathlib') if m in sys.modules))\n"
             "    return real(sig, handler)\n"
             "_signal.signal = spy\n"
             "import rtrl.startup\n"
             "print(seen[0], len(seen))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    # the early handler with none of them imported, then rtrl.interrupts' own
    assert done.stdout.splitlines()[0] == "[] 2", done.stdout + done.stderr
    early = "from rtrl.startup import interrupted_early; interrupted_early(2, None); print('went on')"
    done = subprocess.run([sys.executable, "-c", early], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "rtrl: interrupted\n")
