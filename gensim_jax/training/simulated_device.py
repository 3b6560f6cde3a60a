"""A stand-in accelerator with a known step time, to check the run's idle-time figures on a CPU.

:class:`SimulatedDevice` behaves like one accelerator stream: :meth:`SimulatedDevice.submit` enqueues
one step and returns at once (as a JAX dispatch does); a worker thread runs the queued steps in order,
each for exactly ``step_s`` seconds of sleep (no CPU use, so the host's input work runs at its own
rate beside it), and logs when each began and ended.  Its own log gives the true idle time of any
span (:meth:`SimulatedDevice.idle_seconds`), which ``perf/device_idle_fraction``
(:mod:`gensim_jax.training.timing`) must reproduce without seeing it.

:meth:`SimulatedDevice.step_fn` makes a ``step(state, batch) -> (state, metrics)`` for
:func:`gensim_jax.training.loop.train`: the state passes through unchanged and ``metrics["loss"]`` is a
:class:`DeviceFuture`, which ``jax.block_until_ready`` waits on and which flattens, as a pytree, to a
scalar array once its step has ended (so the loop's metric means and its fetches wait for it as for a
real device's result).  A host callback inside a jitted step would not do: the XLA CPU client runs a
program with host callbacks synchronously, so its dispatch would not return before the step ends.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Optional

import jax
import numpy as np

__all__ = ["SimulatedDevice", "DeviceFuture"]


class DeviceFuture:
    """The result of one simulated step: ready when the step has ended."""

    __slots__ = ("_event", "value")

    def __init__(self, value: float):
        self._event = threading.Event()
        self.value = float(value)

    def is_ready(self) -> bool:
        return self._event.is_set()

    def block_until_ready(self) -> "DeviceFuture":
        self._event.wait()
        return self


jax.tree_util.register_pytree_node(
    DeviceFuture,
    lambda f: ((np.float32(f.block_until_ready().value),), None),
    lambda _aux, children: children[0],
)


class SimulatedDevice:
    """One in-order stream of steps of ``step_s`` seconds each (see the module docstring).

    Args:
      step_s: the device time of one step (> 0).
      clock: the monotonic clock the busy log uses (the timer's, ``time.perf_counter``).
    """

    def __init__(self, step_s: float, clock: Callable[[], float] = time.perf_counter):
        if not float(step_s) > 0:
            raise ValueError(f"SimulatedDevice: step_s must be > 0, got {step_s}")
        self.step_s = float(step_s)
        self._clock = clock
        self._queue: queue.Queue = queue.Queue()
        self.busy: list[tuple[float, float]] = []  # (start, end) of every step run, in order
        self._thread = threading.Thread(target=self._run, name="simulated-device", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        prev_end = float("-inf")
        while True:
            item = self._queue.get()
            if item is None:
                return
            fut, submitted = item
            # an ideal stream starts a step as soon as it is queued and the previous one has ended (the
            # worker thread's own wake-up delay is not the device's idle time)
            start = max(submitted, prev_end)
            end = start + self.step_s
            while (left := end - self._clock()) > 0:
                time.sleep(left)
            self.busy.append((start, end))
            prev_end = end
            fut._event.set()

    def submit(self, value: float = 0.0) -> DeviceFuture:
        """Enqueue one step; returns its future at once."""
        fut = DeviceFuture(value)
        self._queue.put((fut, self._clock()))
        return fut

    def step_fn(self) -> Callable:
        """``step(state, batch) -> (state, {"loss": DeviceFuture})`` for the training loop."""

        def step(state, batch):
            del batch
            return state, {"loss": self.submit(0.0)}

        return step

    def idle_seconds(self, start: float, end: float, busy: Optional[list] = None) -> float:
        """Seconds of ``[start, end]`` (times of ``clock``) during which no step ran."""
        covered = 0.0
        for b0, b1 in busy if busy is not None else list(self.busy):
            covered += max(0.0, min(b1, end) - max(b0, start))
        return max(end - start - covered, 0.0)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=max(5.0, 2 * self.step_s))
