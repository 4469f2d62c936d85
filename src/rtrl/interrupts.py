"""Ctrl-C in the ``rtrl`` command: never a traceback, never a crash inside native code, never swallowed.

Python's own handling raises ``KeyboardInterrupt`` at whatever bytecode runs next, which may be a callback that
XLA's compiler or JAX's C++ dispatch made into Python: unwinding through native frames there crashed a ``bptt``
run's compilation (a segmentation fault in 2 of 3 tries), and an exception raised inside a finaliser or a
callback is printed and dropped (a Ctrl-C swallowed). So the command raises nothing from a signal handler:

* a thread, woken by every SIGINT through ``signal.set_wakeup_fd`` (so even while the main thread is inside a
  compilation that does not return to Python for a minute), decides;
* outside a ``deferred()`` block (start-up, building, commands that write nothing but atomic files) the first
  Ctrl-C ends the process at once with one line and exit status 130 (``os._exit``: no unwinding at all);
* inside one (``Run.train``: a run folder being written) the first Ctrl-C only sets a flag and says so; the
  training loop calls ``poll()`` at its safe points (after a chunk of steps, after a record and its checkpoint),
  which raises ``KeyboardInterrupt`` there, in plain Python, and the run folder is left resumable; a second Ctrl-C
  ends the process at once (every file is written atomically, so this too leaves the folder resumable); a
  ``deferred(quiet=True)`` block (a command waiting on its workers, polling often) says nothing at the first;
* in a worker process the command spawned (``multiprocessing``'s spawn: ``rtrl results rl``'s rows), from its
  ``import rtrl`` or its pool's initializer on, Ctrl-C is ignored: the command got the same Ctrl-C (a terminal sends
  it to the whole process group) and stops its workers itself, with its one line; and the worker ends at once,
  silently, when the command does (a second Ctrl-C, a ``kill``), so no row runs on that nobody will keep.

Nothing here does anything until ``install()`` is called (the command does, first thing): the library, used from
Python, keeps Python's usual ``KeyboardInterrupt``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

STATUS = 130  # 128 + SIGINT, as shells report it


class _State:
    installed = False
    deferring = 0  # depth of deferred() blocks
    loud = 0  # of them, those whose first Ctrl-C says it will stop at a safe point (not quiet)
    pending = False  # a Ctrl-C arrived inside one and is waiting for poll()


def quit_now(message: str) -> None:
    """One line on stderr, then exit ``STATUS`` without unwinding (no Python frame or native frame runs again)."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
        os.write(2, f"\nrtrl: {message}\n".encode())
    os._exit(STATUS)


def on_interrupt() -> None:
    """What one Ctrl-C does (called by the watcher thread)."""
    if _State.deferring and not _State.pending:
        _State.pending = True
        if _State.loud:
            with contextlib.suppress(Exception):
                os.write(2, b"\nrtrl: stopping after the current steps, at a safe point (Ctrl-C again to stop at "
                            b"once)\n")
    elif _State.deferring:
        quit_now("interrupted again: stopped at once; the run folder resumes from its last checkpoint")
    else:
        quit_now("interrupted")


def watch(read_fd: int) -> None:
    while True:
        try:
            data = os.read(read_fd, 64)
        except OSError:
            return
        if not data:
            return
        for signum in data:
            if signum == signal.SIGINT:
                on_interrupt()


def ignore(signum, frame) -> None:
    """The main thread's handler: the watcher thread has already acted on the signal."""


def spawned() -> bool:
    """Whether this process is one that ``multiprocessing`` spawned (a worker of a command's pool)."""
    return "--multiprocessing-fork" in getattr(sys, "orig_argv", ())


def end_with(parent: int) -> None:
    """Wait until the process ``parent`` is no longer this one's parent (it ended), then end at once, silently."""
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(STATUS)


def install() -> bool:
    """Take over SIGINT for this process as described above (once; from the main thread only); in a process
    ``multiprocessing`` spawned (``spawned``), a worker's part: Ctrl-C ignored, the process ended with its parent
    (this is a pool's initializer too). False if it could not (not the main thread), leaving Python's handling in
    place."""
    if _State.installed:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    if spawned():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        threading.Thread(target=end_with, args=(os.getppid(),), name="rtrl-parent", daemon=True).start()
    else:
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        threading.Thread(target=watch, args=(read_fd,), name="rtrl-interrupts", daemon=True).start()
        signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        signal.signal(signal.SIGINT, ignore)
    _State.installed = True
    return True


@contextlib.contextmanager
def deferred(quiet: bool = False):
    """A block that a Ctrl-C does not cut short: it stops at the next ``poll()`` instead (a second one at once).
    ``quiet``: the first Ctrl-C says nothing (a block that polls often and says itself what it kept), unless a block
    inside it that is not quiet is in force. Without ``install()``, an ordinary block."""
    _State.deferring += 1
    _State.loud += not quiet
    try:
        yield  # a Ctrl-C after the last safe point: the block finished its work, which is where it stops anyway
    finally:
        _State.deferring -= 1
        _State.loud -= not quiet
        if not _State.deferring:
            _State.pending = False


def poll() -> None:
    """``KeyboardInterrupt`` here if a Ctrl-C arrived inside a ``deferred()`` block: a safe point to stop."""
    if _State.pending:
        _State.pending = False
        raise KeyboardInterrupt
