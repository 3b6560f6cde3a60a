"""commands/heartbeat.py: a long call in a worker thread, the elapsed time on stderr, one line on a signal.

The signals are sent to this process; ``exit`` raises ``SystemExit`` instead of ending it.  The
end-to-end check (a real XLA compile, a real Ctrl-C) is in tests/commands/test_plan.py.
"""

import io
import os
import signal
import threading

import pytest

from gensim_jax.commands.heartbeat import elapsed_text, interrupt_exits, run_with_heartbeat

pytestmark = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="Python handles signals in the main thread"
)


def _raise_exit(status):
    raise SystemExit(status)


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_elapsed_text():
    assert elapsed_text(0.4) == "0 s" and elapsed_text(59.9) == "59 s" and elapsed_text(281) == "4 min 41 s"


def test_the_value_and_the_error_of_the_call_come_back_and_plain_lines_come_every_interval():
    err = io.StringIO()
    done = threading.Event()
    assert run_with_heartbeat(lambda: done.wait(0.6) or 7, "plan: compiling", err=err, every_s=0.2) == 7
    lines = err.getvalue().splitlines()
    assert 1 <= len(lines) <= 3 and all(line.startswith("plan: compiling ... ") for line in lines), lines

    def fail():
        raise ValueError("no such topology")

    with pytest.raises(ValueError, match="no such topology"):
        run_with_heartbeat(fail, "x", err=io.StringIO())


@pytest.mark.slow  # the line is rewritten once a second
def test_on_a_terminal_the_line_is_rewritten_in_place_and_erased_at_the_end():
    err = _Tty()
    run_with_heartbeat(lambda: threading.Event().wait(1.4), "plan: compiling", err=err)
    text = err.getvalue()
    assert "\n" not in text and text.startswith("\rplan: compiling ... 1 s")
    assert text.endswith("\r" + " " * len("plan: compiling ... 1 s") + "\r")  # nothing left on the line


@pytest.mark.parametrize("signame, status, words", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")])
def test_a_signal_during_the_wait_ends_it_at_once_with_one_line(capfd, signame, status, words):
    signum = getattr(signal, signame)
    before = signal.getsignal(signum)
    release = threading.Event()
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signum))
    try:
        with pytest.raises(SystemExit) as ended:
            with interrupt_exits("gensim-jax plan", what=lambda: "the compile was cancelled", exit=_raise_exit) as back:
                timer.start()
                run_with_heartbeat(lambda: release.wait(20), "plan: compiling", err=io.StringIO(), take_back=back)
    finally:
        release.set()
        timer.cancel()
    assert ended.value.code == status
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"gensim-jax plan: {words}"), err
    assert err.rstrip().endswith("s (the compile was cancelled)")
    assert signal.getsignal(signum) is before  # the previous handler is back
