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

Preemption: :class:`PreemptionGuard` turns SIGTERM (what SLURM, Kubernetes and TPU maintenance
send before killing a job) into a flag that the loop polls after each step; the loop then saves,
waits for the write, and exits with status 0.  On multi-host runs orbax's
``reached_preemption(step)`` (JAX's preemption sync manager) makes every host stop at the same step.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any, Optional

import flax.serialization
import jax
import orbax.checkpoint as ocp

__all__ = ["Checkpointer", "PreemptionGuard", "restore_or_init"]


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

    def __init__(self, directory, *, save_every: int = 1000, max_to_keep: Optional[int] = 3,
                 async_save: bool = True):
        if save_every < 1:
            raise ValueError(f"save_every must be >= 1, got {save_every}")
        self.directory = Path(directory).absolute()
        self.save_every = int(save_every)
        options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True,
                                               enable_async_checkpointing=async_save)
        self.manager = ocp.CheckpointManager(self.directory, options=options, item_names=("state", "data"))

    # -- saving --------------------------------------------------------------------------------
    def save(self, state, data: Optional[dict] = None, *, step: Optional[int] = None) -> bool:
        """Save ``state`` (and the JSON-able ``data``) at ``step`` (default ``int(state.step)``), asynchronously."""
        step = int(jax.device_get(state.step)) if step is None else int(step)
        if step in self.manager.all_steps():
            return False
        args = ocp.args.Composite(state=ocp.args.StandardSave(flax.serialization.to_state_dict(state)),
                                  data=ocp.args.JsonSave(dict(data or {})))
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
        """Restore ``(state, data)`` of ``step`` (default latest) into the structure/shardings of ``target``.

        ``target`` is a :class:`TrainState` with the right tree structure (e.g. a freshly initialised
        one, possibly placed on a mesh); its static ``apply_fn`` and ``tx`` are kept.
        """
        step = self.latest_step() if step is None else int(step)
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        target_dict = flax.serialization.to_state_dict(target)
        restored = self.manager.restore(step, args=ocp.args.Composite(
            state=ocp.args.StandardRestore(_abstract(target_dict)), data=ocp.args.JsonRestore()))
        state_dict = _fill_empty(target_dict, restored["state"])
        return flax.serialization.from_state_dict(target, state_dict), dict(restored["data"] or {})

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
    """Resume from the latest checkpoint if there is one, else start from ``init_state``.

    Returns:
      ``(state, data, resumed)``: the state, the saved JSON data (``{}`` for a fresh start) and
      whether a checkpoint was restored.
    """
    if checkpointer.latest_step() is None:
        return init_state, {}, False
    state, data = checkpointer.restore(init_state)
    return state, data, True


class PreemptionGuard:
    """Context manager that turns SIGTERM (and optionally SIGINT) into a flag instead of death.

    ``guard.requested`` becomes True when the signal arrives; the training loop checks it after each
    step, saves a checkpoint and exits cleanly.  The previous handlers are restored on exit.  Signal
    handlers can only be installed from the main thread; elsewhere the guard is inert.
    """

    def __init__(self, signals=(signal.SIGTERM,)):
        self.signals = tuple(signals)
        self._event = threading.Event()
        self._previous: dict = {}

    @property
    def requested(self) -> bool:
        """Whether a guarded signal has arrived."""
        return self._event.is_set()

    def _handler(self, signum, frame) -> None:
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
