"""Orbax checkpoints: asynchronous saves every N steps and on SIGTERM, exact resume, no pickle.

A checkpoint of step ``t`` holds two items:

* ``"state"``: the array leaves of the :class:`~gensim_jax.training.state.TrainState` as a nested
  dict (``flax.serialization.to_state_dict``: ``step``, ``params``, ``batch_stats``, ``opt_state``,
  ``rng``), written by ``ocp.args.StandardSave`` (tensorstore/OCDBT arrays);
* ``"data"``: JSON (``ocp.args.JsonSave``) with the data stream position and any extra
  bookkeeping.

Restoring reads the arrays back into the structure, dtypes and shardings of a target state
(``ocp.args.StandardRestore`` with an abstract target), so nothing is unpickled and a run restarted
on a different mesh gets its arrays resharded.  Saves are asynchronous (the step loop continues
while tensorstore writes); :meth:`Checkpointer.wait` blocks until they are durable.

Damaged checkpoints: restoring the newest checkpoint tries the saved steps from the newest down;
a step whose files cannot be read (truncated or missing array data, broken JSON, a missing item)
is skipped with a :class:`CheckpointFallbackWarning` naming the step and the error, and the next
older one is restored.  :func:`restore_or_init` then deletes the unreadable steps newer than the
restored one, so that the resumed run writes them again.  When no checkpoint can be restored,
:class:`CheckpointRestoreError` lists every step with its error.  (A step that a killed process
was still writing is not a damaged checkpoint: orbax writes into ``<step>.orbax-checkpoint-tmp``
and renames it only when complete, and ignores such directories.)

Preemption: :class:`PreemptionGuard` turns SIGTERM (what SLURM, Kubernetes and TPU maintenance
send before killing a job) and, in a single process, SIGINT (Ctrl-C) into a flag that the loop
polls after each step; the loop then saves, waits for the write, and exits (status 0 after
SIGTERM, 130 after SIGINT).  A second SIGINT interrupts at once (``KeyboardInterrupt``).  On
multi-host runs orbax's ``reached_preemption(step)`` (JAX's preemption sync manager) makes every
host stop at the same step.
"""

from __future__ import annotations

import logging
import re
import signal
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Optional

import flax.serialization
import jax
import orbax.checkpoint as ocp

__all__ = ["CheckpointFallbackWarning", "CheckpointRestoreError", "Checkpointer", "PreemptionGuard", "restore_or_init"]

_MAX_ERROR_CHARS = 160  # tensorstore errors carry the whole spec; the head says what went wrong
# the bracketed annotations of a tensorstore error: its whole JSON spec, the C++ source locations
_TENSORSTORE_NOTES = re.compile(r"\s*\[(?:tensorstore_spec|source locations)='.*?'\]", re.S)


def _is_preemption_sync_notice(record: logging.LogRecord) -> bool:
    """orbax's ``Reached preemption sync point, step=S``: a WARNING that every process logs (through absl) when
    the processes agree to stop; the loop's own stop line (process 0) says the same once."""
    return "Reached preemption sync point" in str(record.msg)


class _DropPreemptionSyncNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _is_preemption_sync_notice(record)


def _quiet_preemption_sync_notice() -> None:
    """Keep orbax's per-process ``WARNING:absl:... Reached preemption sync point`` lines out of the job's output."""
    logger = logging.getLogger("absl")
    if not any(isinstance(f, _DropPreemptionSyncNotice) for f in logger.filters):
        logger.addFilter(_DropPreemptionSyncNotice())


class CheckpointFallbackWarning(RuntimeWarning):
    """The newest checkpoint could not be restored; an older one was used instead."""


class CheckpointRestoreError(RuntimeError):
    """No checkpoint of a directory could be restored (each step's error is in the message).

    Attributes:
      errors: ``{step: "ExceptionType: message"}`` for every step that was tried.
    """

    def __init__(self, message: str, errors: dict):
        super().__init__(message)
        self.errors = dict(errors)


def _describe(err: BaseException) -> str:
    """``"Type: message"`` of a failed restore on one short line (tensorstore's spec and source notes dropped)."""
    text = " ".join(_TENSORSTORE_NOTES.sub("", str(err)).split())
    if len(text) > _MAX_ERROR_CHARS:
        text = text[:_MAX_ERROR_CHARS] + " ..."
    return f"{type(err).__name__}: {text}"


def _is_closed_loop_callback(unraisable) -> bool:
    """Whether an unraisable exception is ``RuntimeError('Event loop is closed')`` from asyncio's
    ``call_soon_threadsafe``: what a tensorstore read of a failed orbax restore raises when it completes."""
    if unraisable.exc_type is not RuntimeError or str(unraisable.exc_value) != "Event loop is closed":
        return False
    tb, last = unraisable.exc_traceback, None
    while tb is not None:
        last, tb = tb.tb_frame, tb.tb_next
    return last is not None and last.f_code.co_name == "_check_closed" and "asyncio" in last.f_code.co_filename


def _drop_closed_loop_callbacks() -> None:
    """Keep the late callbacks of a failed restore off stderr (process-wide, chained to the current hook).

    orbax runs a restore on a fresh event loop and closes it as soon as the restore raises
    (``orbax.checkpoint._src.asyncio_utils._run_sync_via_new_loop``: ``run_until_complete`` then
    ``close``), while tensorstore is still reading the step's other arrays. Each of those reads, when it
    completes, schedules its result on the closed loop, and Python prints ``Exception ignored in: None
    ... RuntimeError: Event loop is closed`` (pytest: a ``PytestUnraisableExceptionWarning``). The restore's
    own error is raised (or a fallback to an older step handles it), so from the first restore on exactly
    that exception is dropped; any other unraisable exception goes to the previous hook.
    """
    current = sys.unraisablehook
    if getattr(current, "_drops_closed_loop_callbacks", False):
        return

    def hook(unraisable):
        if not _is_closed_loop_callback(unraisable):
            current(unraisable)

    hook._drops_closed_loop_callbacks = True
    sys.unraisablehook = hook


def _abstract(tree):
    def leaf(x):
        sh = getattr(x, "sharding", None)
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sh)

    return jax.tree.map(leaf, tree)


class Checkpointer:
    """A thin wrapper over ``orbax.checkpoint.CheckpointManager`` for :class:`TrainState`.

    Args:
      directory: checkpoint root (created; one sub-directory per step).
      save_every: save when ``step % save_every == 0`` (:meth:`maybe_save`); :meth:`save` always saves.
      max_to_keep: number of most recent checkpoints kept.
      async_save: write in a background thread (default True).

    Example:
      >>> import tempfile, optax
      >>> from gensim_jax.models import get_model
      >>> from gensim_jax.training.state import create_train_state
      >>> st = create_train_state(get_model("mlp"), optax.sgd(0.1), 0)
      >>> with Checkpointer(tempfile.mkdtemp(), save_every=10) as ck:
      ...     _ = ck.save(st, data={"position": 0}); ck.wait()
      ...     restored, data = ck.restore(st)
      >>> data["position"], ck.latest_step()
      (0, 0)
    """

    def __init__(self, directory, *, save_every: int = 1000, max_to_keep: Optional[int] = 3, async_save: bool = True):
        if save_every < 1:
            raise ValueError(f"save_every must be >= 1, got {save_every}")
        self.directory = Path(directory).absolute()
        _quiet_preemption_sync_notice()
        self.save_every = int(save_every)
        options = ocp.CheckpointManagerOptions(
            max_to_keep=max_to_keep, create=True, enable_async_checkpointing=async_save
        )
        self.manager = ocp.CheckpointManager(self.directory, options=options, item_names=("state", "data"))

    # -- saving --------------------------------------------------------------------------------
    def save(self, state, data: Optional[dict] = None, *, step: Optional[int] = None) -> bool:
        """Save ``state`` (and the JSON-able ``data``) at ``step`` (default ``int(state.step)``), asynchronously."""
        step = int(jax.device_get(state.step)) if step is None else int(step)
        if step in self.manager.all_steps():
            return False
        args = ocp.args.Composite(
            state=ocp.args.StandardSave(flax.serialization.to_state_dict(state)),
            data=ocp.args.JsonSave(dict(data or {})),
        )
        return self.manager.save(step, args=args, force=True)

    def maybe_save(self, state, data: Optional[dict] = None) -> bool:
        """Save when the state's step is a multiple of ``save_every``."""
        step = int(jax.device_get(state.step))
        if step % self.save_every:
            return False
        return self.save(state, data, step=step)

    def reached_preemption(self, step: int) -> bool:
        """Orbax's multi-host preemption agreement (False on a single process without a notice)."""
        try:
            return bool(self.manager.reached_preemption(int(step)))
        except Exception:  # no distributed client: no preemption service
            return False

    def wait(self) -> None:
        """Block until every pending asynchronous save is on disk."""
        self.manager.wait_until_finished()

    # -- restoring -----------------------------------------------------------------------------
    def latest_step(self) -> Optional[int]:
        """The newest saved step, or None."""
        return self.manager.latest_step()

    def all_steps(self) -> list[int]:
        """All saved steps, ascending."""
        return sorted(self.manager.all_steps())

    def restore(self, target, step: Optional[int] = None) -> tuple[Any, dict]:
        """Restore ``(state, data)`` into the structure/shardings of ``target``.

        ``target`` is a :class:`TrainState` with the right tree structure (e.g. a freshly initialised
        one, possibly placed on a mesh); its static ``apply_fn`` and ``tx`` are kept.

        Args:
          target: the restore target.
          step: the step to restore; errors propagate.  ``None`` (default): the newest step that
            can be restored, falling back past unreadable steps with a
            :class:`CheckpointFallbackWarning` each (see :meth:`restore_newest`).

        Raises:
          FileNotFoundError: no checkpoint in the directory.
          CheckpointRestoreError: ``step=None`` and no checkpoint could be restored.
        """
        if step is not None:
            return self._restore_step(target, int(step))
        state, data, _, _ = self.restore_newest(target)
        return state, data

    def restore_newest(self, target) -> tuple[Any, dict, int, dict]:
        """The newest restorable checkpoint: ``(state, data, step, damaged)``.

        Tries the saved steps from the newest down.  A step whose restore raises (truncated or
        missing array files, unreadable JSON, a missing item, a tree that does not match
        ``target``) is recorded in ``damaged`` (``{step: "Error: message"}``) and a
        :class:`CheckpointFallbackWarning` names it, its error and the step tried next.  Nothing
        is deleted here (:func:`restore_or_init` removes the damaged steps of a resumed run).

        Raises:
          FileNotFoundError: no checkpoint in the directory.
          CheckpointRestoreError: every checkpoint failed; the message lists each step's error.
        """
        steps = sorted(self.manager.all_steps(), reverse=True)
        if not steps:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        damaged: dict = {}
        for i, step in enumerate(steps):
            try:
                state, data = self._restore_step(target, step)
            except Exception as err:  # tensorstore, JSON and orbax raise many types for broken files
                damaged[step] = _describe(err)
                then = f"falling back to step {steps[i + 1]}" if i + 1 < len(steps) else "no older checkpoint left"
                warnings.warn(
                    f"checkpoint step {step} in {self.directory} could not be restored ({damaged[step]}); {then}",
                    CheckpointFallbackWarning,
                    stacklevel=2,
                )
                continue
            return state, data, step, damaged
        newest = next(iter(damaged.items()))
        raise CheckpointRestoreError(  # the fix first; every step's error is in .errors (and under --debug)
            f"delete {self.directory} to start the run over (or use a new workdir): none of its "
            f"{len(steps)} checkpoints could be restored; "
            f"step {newest[0]}: {newest[1][:80]}{' ...' if len(newest[1]) > 80 else ''}",
            damaged,
        )

    def _restore_step(self, target, step: int) -> tuple[Any, dict]:
        target_dict = flax.serialization.to_state_dict(target)
        # before, not after, the restore: a late read can complete while orbax's error is still propagating
        _drop_closed_loop_callbacks()
        restored = self.manager.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(_abstract(target_dict)), data=ocp.args.JsonRestore()
            ),
        )
        if restored.get("state") is None:
            raise ValueError(f"checkpoint step {step} has no 'state' item")
        state_dict = _fill_empty(target_dict, restored["state"])
        return flax.serialization.from_state_dict(target, state_dict), dict(restored["data"] or {})

    def delete(self, step: int) -> None:
        """Delete the checkpoint of ``step`` (e.g. a damaged one, so that it can be written again)."""
        self.manager.delete(int(step))

    def close(self) -> None:
        """Wait for pending saves and release the manager."""
        self.manager.wait_until_finished()
        self.manager.close()

    def __enter__(self) -> "Checkpointer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _fill_empty(target, restored):
    """Put back empty sub-dicts (e.g. ``batch_stats = {}``) that a checkpoint does not store."""
    if isinstance(target, dict):
        restored = {} if restored is None else dict(restored)
        return {k: _fill_empty(v, restored.get(k)) for k, v in target.items()}
    return restored


def restore_or_init(checkpointer: Checkpointer, init_state) -> tuple[Any, dict, bool]:
    """Resume from the newest restorable checkpoint if there is one, else start from ``init_state``.

    Unreadable newer checkpoints are skipped with a :class:`CheckpointFallbackWarning` (see
    :meth:`Checkpointer.restore_newest`) and then deleted, so that the resumed run can save those
    steps again.

    Returns:
      ``(state, data, resumed)``: the state, the saved JSON data (``{}`` for a fresh start) and
      whether a checkpoint was restored.

    Raises:
      CheckpointRestoreError: there are checkpoints but none can be restored (nothing is deleted).
    """
    if checkpointer.latest_step() is None:
        return init_state, {}, False
    state, data, step, damaged = checkpointer.restore_newest(init_state)
    for bad in sorted(damaged):
        if bad > step:
            checkpointer.delete(bad)
    if damaged:
        warnings.warn(
            f"resumed from checkpoint step {step} in {checkpointer.directory}; deleted the damaged "
            f"step(s) {sorted(damaged)}, which the run will write again",
            CheckpointFallbackWarning,
            stacklevel=2,
        )
    return state, data, True


class PreemptionGuard:
    """Context manager that turns SIGTERM (and optionally SIGINT) into a flag instead of death.

    ``guard.requested`` becomes True when a guarded signal arrives and ``guard.signum`` records
    which one; the training loop checks the flag after each step, saves a checkpoint and exits
    cleanly.  A second SIGINT while the flag is already set raises ``KeyboardInterrupt`` (press
    Ctrl-C twice to stop without waiting for the save).  The previous handlers are restored on
    exit.  Signal handlers can only be installed from the main thread; elsewhere the guard is inert.

    Args:
      signals: the signals to catch (default SIGTERM only; the loop passes SIGTERM and SIGINT).

    Example:
      >>> import os, signal
      >>> with PreemptionGuard(signals=(signal.SIGTERM,)) as guard:
      ...     os.kill(os.getpid(), signal.SIGTERM)
      ...     while not guard.requested:
      ...         pass
      >>> guard.signum == signal.SIGTERM
      True
    """

    def __init__(self, signals=(signal.SIGTERM,)):
        self.signals = tuple(signals)
        self._event = threading.Event()
        self._previous: dict = {}
        self.signum: Optional[int] = None

    @property
    def requested(self) -> bool:
        """Whether a guarded signal has arrived."""
        return self._event.is_set()

    def _handler(self, signum, frame) -> None:
        if self._event.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if self.signum is None:
            self.signum = signum
        self._event.set()

    def __enter__(self) -> "PreemptionGuard":
        if threading.current_thread() is threading.main_thread():
            for s in self.signals:
                self._previous[s] = signal.signal(s, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        for s, h in self._previous.items():
            signal.signal(s, h)
        self._previous.clear()
