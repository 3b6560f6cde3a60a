"""Keep the native libraries' chatter out of the results: stdout for results, stderr only for what matters.

* :func:`native_stdout_to_stderr`: the command-line front ends point file descriptor 1 at stderr
  and keep Python's ``sys.stdout`` on the real stdout, so what C++ code prints with ``printf`` /
  ``std::cout`` (Gloo's ``[Gloo] Rank ... is connected to ... peer ranks`` in a multi-process
  launch) lands on stderr while the command's own output (JSON lines, tables) stays valid on stdout.
* :func:`filtered_native_stderr`: drops known notice lines that native code writes to stderr while
  a block runs (TensorFlow's ``oneDNN custom operations are on`` and absl's ``All log messages
  before absl::InitializeLog()``, which ``TF_CPP_MIN_LOG_LEVEL`` no longer silences); every other
  line is passed on.

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Iterator, Sequence

__all__ = ["native_stdout_to_stderr", "filtered_native_stderr", "NATIVE_NOTICES"]

#: Substrings of the native notice lines that :func:`filtered_native_stderr` drops.
NATIVE_NOTICES = (
    "oneDNN custom operations are on",
    "All log messages before absl::InitializeLog() is called are written to STDERR",
    "This TensorFlow binary is optimized to use available CPU instructions",
    "To enable the following instructions:",
)


def native_stdout_to_stderr() -> bool:
    """Send file descriptor 1 to stderr and give ``sys.stdout`` a descriptor of its own on the real stdout.

    For a command-line process only (it changes the process's descriptors for good).  Returns False,
    changing nothing, when the descriptors cannot be duplicated (no real stdout, e.g. under a capture).
    """
    try:
        sys.stdout.flush()
        if sys.stdout.fileno() != 1:
            return False
        real = os.dup(1)
    except (AttributeError, OSError, ValueError):
        return False
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(real)
        return False
    line_buffered = os.isatty(real)
    sys.stdout = os.fdopen(
        real,
        "w",
        buffering=1 if line_buffered else -1,
        encoding=sys.stdout.encoding,
        errors=sys.stdout.errors,
    )
    return True


@contextlib.contextmanager
def filtered_native_stderr(drop: Sequence[str] = NATIVE_NOTICES) -> Iterator[None]:
    """Run a block with file descriptor 2 captured; afterwards write its lines to stderr but those containing ``drop``.

    The lines come out when the block ends (an exception included), in order.  Nothing is captured
    when descriptor 2 cannot be duplicated.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (AttributeError, OSError, ValueError):
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(AttributeError, OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", errors="replace")
            kept = [line for line in text.splitlines(keepends=True) if not any(d in line for d in drop)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()
