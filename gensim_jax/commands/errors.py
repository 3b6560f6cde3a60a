"""One-line errors of every command: :func:`run_command` runs a command's body, :func:`error_line` words the error.

An error a user can cause (a missing extra, a missing or damaged export, checkpoint or data directory,
a bad config value, an unreadable file) ends as ONE line on stderr, ``COMMAND: error: WHAT (FIX)``,
with exit status 2 (1 for an internal error, which also says how to get the traceback).  ``--debug``
anywhere on the command line, or ``GENSIM_JAX_DEBUG=1``, shows the traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Callable, Optional, Sequence

__all__ = ["DEBUG_ENV", "UsageError", "debugging", "error_line", "one_line", "run_command", "user_code_location"]

#: Environment variable that makes every command show tracebacks (as ``--debug`` does).
DEBUG_ENV = "GENSIM_JAX_DEBUG"

#: Top-level modules of the optional dependencies -> the extra that installs them (for an ImportError
#: raised by a library rather than by :func:`gensim_jax._extras.require`).
_EXTRA_OF_MODULE = {
    "flax": "models",
    "optax": "train",
    "orbax": "train",
    "tqdm": "train",
    "tensorboardX": "train",
    "tensorflow": "data",
    "tensorflow_datasets": "data",
    "sklearn": "eval",
    "matplotlib": "eval",
    "PIL": "eval",
    "torch": "torch",
    "safetensors": "torch",
    "nltk": "wordnet",
}


class UsageError(Exception):
    """A command-line usage error (argparse's ``error``) raised instead of exiting when ``--debug`` is on, so
    that it ends with its traceback like any other error."""


def debugging() -> bool:
    """True when tracebacks are asked for: ``--debug`` was given (:func:`run_command` sets ``GENSIM_JAX_DEBUG``)
    or ``GENSIM_JAX_DEBUG`` is set to anything but ``""`` or ``0``."""
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


#: Folders whose code is not the user's: this package and the installed libraries and the standard library.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _is_library_file(filename: str) -> bool:
    path = os.path.abspath(filename)
    if filename.startswith("<") or path.startswith(_PACKAGE_DIR + os.sep):
        return True
    parts = path.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    return path.startswith(os.path.abspath(os.path.dirname(os.__file__)) + os.sep)  # the standard library


def user_code_location(err: BaseException) -> Optional[str]:
    """``FILE:LINE in FUNCTION`` of the innermost frame of ``err``'s traceback that is the user's own code
    (an experiment file given by path, a script): not gensim_jax, not an installed library, not the
    standard library. ``None`` when the error did not pass through such code."""
    import traceback

    frames = traceback.extract_tb(err.__traceback__) if err.__traceback__ is not None else []
    for frame in reversed(frames):
        if not _is_library_file(frame.filename):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    return None


def one_line(text: str) -> str:
    """``text`` on one line (runs of white space, newlines included, as one space)."""
    return " ".join(str(text).split())


def error_line(prog: str, err: BaseException) -> tuple[str, int]:
    """``(message, exit status)`` for an exception that ended the command ``prog`` (see the module docstring)."""
    if isinstance(err, ImportError):
        name = (getattr(err, "name", None) or "").split(".")[0]
        msg = str(err)
        if "comes with pip install" not in msg and name in _EXTRA_OF_MODULE:
            msg = f"{name} is not installed; it comes with pip install 'gensim-jax[{_EXTRA_OF_MODULE[name]}]'"
        return f"{prog}: error: {one_line(msg)}", 2
    if isinstance(err, OSError) and not str(err).startswith(("[Errno", "Errno")) and str(err):
        return f"{prog}: error: {one_line(err)}", 2
    if isinstance(err, OSError):  # e.g. [Errno 13] Permission denied: 'x': name the file and the reason
        what = err.filename if err.filename is not None else ""
        reason = err.strerror or type(err).__name__
        return f"{prog}: error: {what}{': ' if what else ''}{reason}", 2
    if isinstance(err, SyntaxError):  # an experiment file given by path
        where = ":".join(str(x) for x in (err.filename, err.lineno) if x is not None)
        return f"{prog}: error: {where}: {err.msg} (a syntax error in that file)", 2
    # the package's own error classes (CheckpointRestoreError, ...) are raised on purpose, with a message
    where = user_code_location(err)  # a fork's or a script's own line, where the error passed through one
    own = type(err).__module__.startswith("gensim_jax.")
    if own or isinstance(err, (ValueError, TypeError, KeyError, LookupError)):
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        return f"{prog}: error: {one_line(msg)}" + (f" (at {where})" if where else ""), 2
    if where is not None:  # a bug in a fork's own file: say where; the traceback is one flag away
        return f"{prog}: error: {type(err).__name__}: {one_line(err)} (at {where}; --debug for the traceback)", 2
    how = f"--debug or {DEBUG_ENV}=1"
    return (
        f"{prog}: internal error: {type(err).__name__}: {one_line(err)} (run again with {how} for the traceback)",
        1,
    )


@contextlib.contextmanager
def _terminal_parsers(debug: bool = False):
    """argparse for a terminal, while a command runs: its errors one line (``PROG: error: MESSAGE (see PROG
    --help)``) instead of usage + error, or with ``debug`` a :class:`UsageError` whose traceback shows where it
    came from; its ``--help`` without the reStructuredText markup of the docstrings it is built from."""
    from gensim_jax.commands.text import plain_text

    def error(self, message):  # noqa: ANN001 - argparse's signature
        if debug:
            raise UsageError(f"{self.prog}: {message}")
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")

    original_error, original_help = argparse.ArgumentParser.error, argparse.ArgumentParser.format_help
    argparse.ArgumentParser.error = error
    argparse.ArgumentParser.format_help = lambda self: plain_text(original_help(self))
    try:
        yield
    finally:
        argparse.ArgumentParser.error, argparse.ArgumentParser.format_help = original_error, original_help


@contextlib.contextmanager
def _debug_environment(debug: bool):
    """``GENSIM_JAX_DEBUG=1`` while the command runs with ``--debug`` (code below it asks :func:`debugging`),
    restored afterwards (commands also run in-process, from tests and other commands)."""
    before = os.environ.get(DEBUG_ENV)
    if debug:
        os.environ[DEBUG_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DEBUG_ENV, None)
        else:
            os.environ[DEBUG_ENV] = before


def run_command(
    fn: Callable[[list], Optional[int]], argv: Sequence[str], prog: str, *, debug: Optional[bool] = None
) -> int:
    """Run ``fn(argv)`` as the command ``prog``; any exception ends as one line on stderr and a non-zero status.

    ``--debug`` in ``argv`` (removed before ``fn`` sees it) or ``GENSIM_JAX_DEBUG=1`` lets the
    exception propagate with its traceback.  ``SystemExit`` (argparse, ``--help``) passes through,
    argparse's errors shortened to one line; Ctrl-C is exit status 130 with one line.
    """
    argv = list(argv)
    if debug is None:
        debug = "--debug" in argv or debugging()
    argv = [a for a in argv if a != "--debug"]
    with _terminal_parsers(debug), _debug_environment(debug):
        try:
            return int(fn(argv) or 0)
        except SystemExit:
            raise
        except KeyboardInterrupt:
            if debug:
                raise
            print(f"{prog}: interrupted", file=sys.stderr, flush=True)
            return 130
        except Exception as err:  # noqa: BLE001 - the point: no traceback for the user
            if debug:
                raise
            line, status = error_line(prog, err)
            print(line, file=sys.stderr, flush=True)
            return status
