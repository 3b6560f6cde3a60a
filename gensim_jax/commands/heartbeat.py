"""A long native call that talks while it runs and stops on Ctrl-C: :func:`run_with_heartbeat`, :func:`interrupt_exits`.

``gensim-jax plan`` spends minutes in XLA's compiler, one C++ call that does not come back to Python
until it is done, so Python's own Ctrl-C (``KeyboardInterrupt``) waited for the end of the compile
(135 s in one report) and a SIGTERM met the failure handler that libtpu installs (an abseil
``*** SIGTERM received ... stack trace``).  Here the call runs in a worker thread while the main
thread waits in short slices: it prints the elapsed time (a ``\\r``-updated line on a terminal, a
line every :data:`EVERY_S` seconds otherwise) and handles SIGINT and SIGTERM itself.

A signal ends the process with ONE line on stderr and exit status 128 + the signal's number (130 for
SIGINT, 143 for SIGTERM) through ``os._exit``: the compile cannot be cancelled from Python, and a
normal interpreter exit would wait for it or run JAX's and libtpu's clean-up beside a thread that is
still inside their code.  ``os._exit`` skips both, after stdout and stderr are flushed; the commands
that use this write no files.

``GENSIM_JAX_HEARTBEAT_S`` sets the interval of the plain lines (seconds; the tests use a short one).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import Callable, Iterator, Optional, TextIO, TypeVar

__all__ = ["EVERY_S", "elapsed_text", "interrupt_exits", "run_with_heartbeat"]

T = TypeVar("T")

#: Seconds between the plain progress lines when stderr is not a terminal.
EVERY_S = 30.0
_TICK_S = 0.25  # how often the waiting thread wakes: the bound on the delay of a signal's handler
_SIGNALS = ("SIGINT", "SIGTERM")


def elapsed_text(seconds: float) -> str:
    """``"42 s"`` under a minute, ``"4 min 41 s"`` above."""
    s = int(seconds)
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


def _every_s() -> float:
    try:
        return max(0.5, float(os.environ.get("GENSIM_JAX_HEARTBEAT_S", EVERY_S)))
    except ValueError:
        return EVERY_S


def _process_age_s() -> float:
    """Seconds since this process started (Linux's ``/proc``; 0 where it cannot be read)."""
    try:
        with open("/proc/self/stat") as f:
            after_name = f.read().rsplit(")", 1)[1].split()  # fields 3, 4, ... (the name may hold spaces)
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - int(after_name[19]) / os.sysconf("SC_CLK_TCK"))  # field 22: start time
    except (OSError, ValueError, IndexError):
        return 0.0


@contextlib.contextmanager
def interrupt_exits(
    prog: str, *, what: Callable[[], str] = lambda: "", exit: Callable[[int], None] = os._exit
) -> Iterator[Callable[[], None]]:
    """While the block runs, SIGINT and SIGTERM print ``PROG: interrupted after N s (WHAT)`` and end the process.

    N counts from the start of the process (as the user who pressed Enter does).  The exit status is
    128 + the signal's number.  Yields a function that takes the two signals back
    (a native library loaded inside the block, such as libtpu, may have installed handlers of its own);
    :func:`run_with_heartbeat` calls it while it waits.  Outside the main thread (where Python cannot
    handle signals) it does nothing.  The previous handlers are restored when the block ends.

    Args:
      prog: the command, e.g. ``"gensim-jax plan"``.
      what: called at the signal, the parenthesis of the line (e.g. ``"the compile was stopped"``).
      exit: ``os._exit`` (see the module docstring); a test passes a function that raises.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    t0 = time.monotonic() - _process_age_s()
    signums = [getattr(signal, s) for s in _SIGNALS if hasattr(signal, s)]

    def handler(signum, _frame):
        name = signal.Signals(signum).name
        why = what()
        line = f"{prog}: {'interrupted' if name == 'SIGINT' else 'terminated by ' + name} after "
        line += elapsed_text(time.monotonic() - t0) + (f" ({why})" if why else "")
        _clear_line()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        with contextlib.suppress(OSError):
            os.write(2, (line + "\n").encode())  # not print(): the main thread may be inside a write to sys.stderr
        exit(128 + signum)

    def take_back() -> None:
        for s in signums:
            signal.signal(s, handler)

    previous = {s: signal.getsignal(s) for s in signums}
    take_back()
    try:
        yield take_back
    finally:
        for s, h in previous.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)


_live = {"width": 0}  # the width of the \r line now on the terminal (0: none)


def _clear_line(err: Optional[TextIO] = None) -> None:
    """Erase the ``\\r`` progress line, if one is shown, so that what follows starts a clean line."""
    if _live["width"]:
        err = err or sys.stderr
        with contextlib.suppress(Exception):
            err.write("\r" + " " * _live["width"] + "\r")
            err.flush()
        _live["width"] = 0


def run_with_heartbeat(
    fn: Callable[[], T],
    label: str,
    *,
    err: Optional[TextIO] = None,
    take_back: Callable[[], None] = lambda: None,
    every_s: Optional[float] = None,
) -> T:
    """``fn()`` in a worker thread; the calling thread shows ``LABEL ... N s`` on ``err`` until it returns.

    On a terminal the line is rewritten in place every second and erased at the end; otherwise the
    same text comes as a line of its own every ``every_s`` seconds (:data:`EVERY_S`, or
    ``GENSIM_JAX_HEARTBEAT_S``).  ``fn``'s exception is raised here.  Run it inside
    :func:`interrupt_exits` (and pass its ``take_back``) so that Ctrl-C ends the wait at once.
    """
    err = err or sys.stderr
    every = _every_s() if every_s is None else every_s
    tty = bool(getattr(err, "isatty", lambda: False)())
    box: dict = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = e

    worker = threading.Thread(target=work, name="gensim-jax-heartbeat-work", daemon=True)
    t0 = time.monotonic()
    worker.start()
    shown = 0.0
    try:
        while worker.is_alive():
            worker.join(_TICK_S)
            take_back()
            elapsed = time.monotonic() - t0
            if tty and elapsed - shown >= 1.0:
                text = f"{label} ... {elapsed_text(elapsed)}"
                err.write("\r" + text.ljust(_live["width"]))
                err.flush()
                _live["width"] = len(text)
                shown = elapsed
            elif not tty and elapsed - shown >= every:
                print(f"{label} ... {elapsed_text(elapsed)}", file=err, flush=True)
                shown = elapsed
    finally:
        _clear_line(err)
    if "error" in box:
        raise box["error"]
    return box["value"]
