"""What a run shows while it works: a progress bar on a terminal, plain lines in a log, status lines said once.

On a terminal (stderr is a TTY) the training loop shows a tqdm bar with its rate, ETA and loss, and a
slow phase (preparing the data, evaluating the baselines) a line that counts its seconds and is
erased when the phase ends. In a log file or a pipe a bar would be hundreds of carriage-return updates
glued into one line, so there :func:`progress_bar` prints one plain line every ``interval_s`` seconds
(and a last one), and a phase prints nothing while it runs: the line that reports its end says it once.
Status lines go through :func:`say_between_bars`, which puts them above an active bar.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Callable, Optional, TextIO

__all__ = ["LineProgress", "format_duration", "is_terminal", "progress_bar", "say_between_bars", "status"]

#: Seconds between two plain progress lines in a log (``GENSIM_JAX_PROGRESS_S`` overrides it).
LOG_INTERVAL_S = 30.0


def format_duration(seconds: float) -> str:
    """``"under a second"``, ``"40 s"``, ``"12 min"``, ``"3 h 05 min"``, ``"2 d 4 h"`` (never ``"0 s"``)."""
    s = max(float(seconds), 0.0)
    if s < 1:
        return "under a second"
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.0f} min"
    if s < 86400:
        return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"
    return f"{int(s // 86400)} d {int(s % 86400 // 3600)} h"


def is_terminal(stream: Optional[TextIO] = None) -> bool:
    """Whether ``stream`` (default ``sys.stderr``, where progress goes) is an interactive terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


class LineProgress:
    """A progress bar for logs: ``DESC: 500/11,700 steps (4%), 410 steps/s, about 27 s left, loss=-1.2`` at
    most once every ``interval_s`` seconds and once at :meth:`close`; the same methods as the tqdm bar the
    training loop uses (``update``, ``set_postfix``, ``close``)."""

    def __init__(
        self,
        total: int,
        initial: int = 0,
        desc: str = "train",
        *,
        interval_s: Optional[float] = None,
        stream: Optional[TextIO] = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        if interval_s is None:
            interval_s = float(os.environ.get("GENSIM_JAX_PROGRESS_S", LOG_INTERVAL_S))
        self.total, self.n, self.desc = int(total), int(initial), desc
        self.interval_s, self._stream, self._clock = float(interval_s), stream, clock
        self._start_n, self._t0 = self.n, clock()
        self._last = self._t0
        self._postfix = ""
        self._closed = False
        self.lines = 0

    def update(self, n: int = 1) -> None:
        self.n += int(n)
        now = self._clock()
        if now - self._last >= self.interval_s:
            self._last = now
            self._print(now)

    def set_postfix(self, **values) -> None:
        self._postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def close(self) -> None:
        if not self._closed and self.n > self._start_n:
            self._print(self._clock())
        self._closed = True

    def _print(self, now: float) -> None:
        elapsed = max(now - self._t0, 1e-9)
        rate = (self.n - self._start_n) / elapsed
        parts = [f"{self.desc}: {self.n:,}/{self.total:,} steps ({100 * self.n / max(self.total, 1):.0f}%)"]
        if rate > 0:
            parts.append(f"{rate:.3g} steps/s")
            left = (self.total - self.n) / rate
            parts.append(
                f"about {format_duration(left)} left" if self.n < self.total else f"{format_duration(elapsed)}"
            )
        if self._postfix:
            parts.append(self._postfix)
        print(", ".join(parts), file=self._stream or sys.stderr, flush=True)
        self.lines += 1


def progress_bar(total: int, initial: int = 0, desc: str = "train", enabled: bool = True):
    """The training loop's bar: tqdm on a terminal, :class:`LineProgress` in a log, a disabled tqdm when
    ``enabled`` is False (``--quiet``, processes other than 0)."""
    from tqdm.auto import tqdm

    if enabled and not is_terminal():
        return LineProgress(total, initial, desc)
    return tqdm(total=total, initial=initial, disable=not enabled, unit="step", dynamic_ncols=True, desc=desc)


@contextlib.contextmanager
def status(what: str, enabled: bool):
    """While the block runs, a terminal line ``WHAT: mm:ss`` counting its seconds, erased at the end (the
    caller then reports the phase once, with its duration); nothing in a log or when not ``enabled``."""
    if not (enabled and is_terminal()):
        yield
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=None, desc=what, bar_format="{desc}: {elapsed}", dynamic_ncols=True, leave=False)
    stop = threading.Event()

    def tick():
        while not stop.wait(1.0):
            bar.refresh()

    thread = threading.Thread(target=tick, daemon=True, name="gensim_jax status")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.close()


def say_between_bars(prefix: str) -> Callable[[str], None]:
    """``print`` for process 0 that keeps an active tqdm bar intact (the message goes above it)."""

    def say(msg: str) -> None:
        from tqdm.auto import tqdm

        tqdm.write(f"{prefix}{msg}", file=sys.stdout)
        sys.stdout.flush()

    return say
