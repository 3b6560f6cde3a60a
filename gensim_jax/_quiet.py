"""Keep the native libraries' chatter out of the results: stdout for results, stderr only for what matters.

* :func:`native_stdout_to_stderr`: the command-line front ends point file descriptor 1 at stderr
  and keep Python's ``sys.stdout`` on the real stdout, so what C++ code prints with ``printf`` /
  ``std::cout`` (Gloo's ``[Gloo] Rank ... is connected to ... peer ranks`` in a multi-process
  launch) lands on stderr while the command's own output (JSON lines, tables) stays valid on stdout.
* :func:`filtered_native_stderr`: drops known notice lines that native code writes to stderr while
  a block runs (TensorFlow's ``oneDNN custom operations are on`` and absl's ``All log messages
  before absl::InitializeLog()``, which ``TF_CPP_MIN_LOG_LEVEL`` no longer silences); every other
  line is passed on.
* :func:`quiet_libtpu_env`: on a machine without TPU chips, the environment that keeps an installed
  ``libtpu`` from printing ``E0000 ... unexpected worker hostname ... TPU_WORKER_HOSTNAMES`` (and a
  ``could not determine TPU accelerator type`` line) when JAX starts; the command-line entry points,
  ``import gensim_jax`` (before or after ``import jax``: libtpu reads them when JAX starts a backend) and
  the test session call it.

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Iterator, Sequence

__all__ = [
    "native_stdout_to_stderr",
    "filtered_native_stderr",
    "quiet_libtpu_env",
    "NATIVE_NOTICES",
    "LIBTPU_QUIET_ENV",
]

#: Substrings of the native notice lines that :func:`filtered_native_stderr` drops.
NATIVE_NOTICES = (
    "oneDNN custom operations are on",
    "All log messages before absl::InitializeLog() is called are written to STDERR",
    "This TensorFlow binary is optimized to use available CPU instructions",
    "To enable the following instructions:",
)


#: What libtpu reads at start-up instead of asking the (absent) TPU metadata server. Without a
#: hostname and an accelerator type it prints an ``E0000 ... INVALID_ARGUMENT`` line and a warning
#: before JAX falls back to the CPU. Compile-only TPU topologies (``gensim-jax plan``) do not read them.
LIBTPU_QUIET_ENV = (
    ("TPU_SKIP_MDS_QUERY", "1"),
    ("TPU_WORKER_HOSTNAMES", "localhost"),
    ("TPU_WORKER_ID", "0"),
    ("TPU_ACCELERATOR_TYPE", "v5litepod-4"),
)
#: Device nodes of TPU chips (as in :data:`gensim_jax.parallel.TPU_DEVICE_GLOBS`).
_TPU_DEVICE_GLOBS = ("/dev/accel*", "/dev/vfio/[0-9]*")


def quiet_libtpu_env(environ=None, device_globs=_TPU_DEVICE_GLOBS) -> list:
    """Set :data:`LIBTPU_QUIET_ENV` (each only when unset) on a machine without TPU device nodes.

    On a TPU VM (``/dev/accel*`` or ``/dev/vfio/N``) nothing is set, so libtpu finds its chips and its
    pod as usual; a variable the caller set is never changed. Must run before JAX starts a backend.
    One worker named ``localhost`` is not a pod slice (:func:`gensim_jax.parallel.initialize_distributed`
    looks for several).

    Returns:
      the names it set.
    """
    import glob

    env = os.environ if environ is None else environ
    if any(glob.glob(g) for g in device_globs):
        return []
    added = [k for k, _ in LIBTPU_QUIET_ENV if k not in env]
    for k, v in LIBTPU_QUIET_ENV:
        env.setdefault(k, v)
    return added


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
