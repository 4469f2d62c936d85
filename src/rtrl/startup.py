"""The environment variables JAX reads, checked before JAX reads them (``import rtrl`` runs ``check()`` first).

JAX reads ``JAX_ENABLE_X64`` (and its other flags) when it is imported, failing with a traceback deep in its
config module, and ``JAX_PLATFORMS`` when it starts a backend, failing with an ``AssertionError`` or a
``RuntimeError`` at the first array. Here either is one message naming the variable and what it may hold; in the
``rtrl`` command (``invoked_as_command``) that message is one line on stderr and exit status 2, as every other
problem the user can fix, and Ctrl-C is taken over from the start (``rtrl.interrupts``).

Nothing here imports JAX before the checks.
"""

from __future__ import annotations

import os
import sys

TRUTH = ("1", "0", "true", "false", "yes", "no", "on", "off", "y", "n", "t", "f")  # what JAX's bool_env takes


class EnvironmentProblem(ValueError):
    """An environment variable JAX cannot use; the message names it and what it may hold."""


def invoked_as_command() -> bool:
    """Whether this process is the ``rtrl`` command (the console script, ``python -m rtrl`` or ``-m rtrl.cli``)."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    as_module = any(argv[i:i + 2] in (["-m", "rtrl"], ["-m", "rtrl.cli"]) for i in range(len(argv)))
    return as_module or os.path.basename(sys.argv[0]) == "rtrl"  # not pathlib: its import delays the handler


def flag_problems(environ=os.environ) -> list[str]:
    """What is wrong with ``JAX_ENABLE_X64`` in ``environ`` (JAX's other true/false flags: see ``import_jax``)."""
    import_time = ("JAX_ENABLE_X64",)
    return [f"{name}={environ[name]!r} is not a truth value; set it to one of {', '.join(TRUTH)} (any case), "
            "or unset it" for name in import_time if name in environ and environ[name].lower() not in TRUTH]


def import_jax():
    """``import jax``, with the problems of the variables it reads at import as ``EnvironmentProblem``."""
    problems = flag_problems()
    if problems:
        raise EnvironmentProblem(problems[0])
    try:
        import jax
    except ValueError as e:  # another flag of JAX's own, read at import ("invalid truth value ...")
        raise EnvironmentProblem(f"{e}; set it to one of {', '.join(TRUTH)}, or unset it") from None
    return jax


def check_backend() -> None:
    """``EnvironmentProblem`` if ``JAX_PLATFORMS`` is set and JAX cannot start what it names (its devices are
    made here, once: where it is unset JAX chooses what this machine has, and nothing needs checking)."""
    platforms = os.environ.get("JAX_PLATFORMS")
    if not platforms:
        return
    jax = import_jax()
    try:
        jax.devices()
    except Exception as e:  # RuntimeError, or an AssertionError from a plugin that is not installed
        reason = str(e).split("\n")[0] or type(e).__name__
        raise EnvironmentProblem(
            f"JAX_PLATFORMS={platforms!r} names a backend JAX cannot start here ({reason[:200]}); set it to "
            "backends this installation has (cpu always; cuda or tpu with their jax plugins), or unset it to let "
            "JAX choose") from None


def interrupted_early(signum, frame) -> None:
    """A Ctrl-C in the command's first milliseconds, before ``rtrl.interrupts`` takes over: nothing is written yet,
    so the process ends at once, as an interrupted command does (one line, ``rtrl.interrupts.STATUS``)."""
    os.write(2, b"rtrl: interrupted\n")
    os._exit(130)


def check() -> None:
    """At ``import rtrl``: in the command, a problem is one line and exit status 2 (and Ctrl-C is handled from here
    on); from Python, an ``EnvironmentProblem``."""
    command = invoked_as_command()
    if command:
        # signal's C half, loaded with the interpreter: ``import signal`` would first import enum and collections
        import _signal

        _signal.signal(_signal.SIGINT, interrupted_early)  # before the imports rtrl.interrupts needs
        from rtrl import interrupts

        interrupts.install()
    try:
        import_jax()
    except EnvironmentProblem as e:
        if not command:
            raise
        print(f"rtrl: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
