"""Step timing of a run: throughput, time waiting for data, model FLOP utilisation, and the
input-bound warning; plus the optimizer scalars a run records (learning rate, parameter norm).

The loop dispatches jitted steps asynchronously and fetches metrics from the device only every
``log_every`` steps, so a single step's duration is not observable without slowing the run down.
:class:`StepTimer` therefore measures *windows*: the host wall time between two log boundaries
(each ends with a device-to-host fetch, which waits for the window's steps to finish), the part
of it the host spent blocked on the next host batch, and the number of steps.  Per window:

* ``perf/step_time_s = wall / steps``;
* ``perf/steps_per_s = steps / wall`` and ``perf/examples_per_s = global_batch * steps / wall``;
* ``perf/data_wait_fraction = wait / wall``: the share of the window the host spent blocked on the
  next batch.  This is *host* time: JAX dispatches asynchronously, so the device is usually still
  running earlier steps meanwhile, and a fed device can show a large wait (an H100 trained at the
  bare step's rate while this read 0.30-0.34).
* ``perf/device_idle_fraction = idle / wall``: the share of the window the device had no step to
  run.  A background thread records when each step's outputs become ready (``completion_N``,
  :meth:`StepTimer.watch`); step N+1 is dispatched at ``dispatch_N+1``; the device sat idle during
  ``[completion_N, dispatch_N+1]`` when that interval is not empty (excluded spans left out).
* ``perf/input_idle_fraction``: the part of that idle time during which the host was waiting for
  the next batch, ``[completion_N, dispatch_N+1] ∩ [wait_start, wait_end]``: the device idled for
  want of data.  The rest of the idle time is host overhead between steps (logging, the fetch at
  each log boundary, Python work of the loop).
  No profiler is involved; the thread's wake-up latency (tens of microseconds) bounds the error.
* ``perf/flops_per_s = flops_per_step * steps / wall`` and ``perf/mfu = perf/flops_per_s / peak``
  when the step's FLOPs are known (:func:`compiled_flops`) and, for MFU, the device's peak FLOP/s.
  Both are *per device*: XLA's cost analysis of a compiled SPMD program counts one device's share.

Time the caller marks as excluded (evaluation, checkpoint writes, the first step's compilation)
is left out of ``wall``.  :class:`InputBoundDetector` turns ``perf/device_idle_fraction`` into one
warning line on stderr naming the settings to change.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Optional, TextIO

__all__ = [
    "StepTimer",
    "CompletionWatcher",
    "InputBoundDetector",
    "MetricWindow",
    "compiled_flops",
    "param_norm",
    "learning_rate_at",
    "injected_learning_rate",
    "DEFAULT_INPUT_BOUND_HINT",
    "IN_MEMORY_INPUT_BOUND_HINT",
]


class CompletionWatcher:
    """Records, on a background thread, when each watched step's outputs become ready on the device.

    :meth:`watch` queues ``(step id, outputs)``; the thread calls ``jax.block_until_ready`` on them
    in order (it releases the GIL while it waits) and stores ``clock()`` at return.  Watch outputs
    that no later step donates (the step's metrics, not the state).  Any pytree whose leaves have
    ``block_until_ready`` works (tests and the idle benchmark pass simulated device futures).
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self._clock = clock
        self._queue: queue.Queue = queue.Queue()
        self._done: dict[int, float] = {}
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition(self._lock)
        self._thread = threading.Thread(target=self._run, name="gensim-jax-completion-watcher", daemon=True)
        self._thread.start()

    def watch(self, step_id: int, outputs) -> None:
        with self._lock:
            self._pending += 1
        self._queue.put((int(step_id), outputs))

    def _run(self) -> None:
        import jax

        while True:
            item = self._queue.get()
            if item is None:
                return
            step_id, outputs = item
            try:
                jax.block_until_ready(outputs)
                t = self._clock()
            except Exception:  # noqa: BLE001 - a deleted or failed output: its completion stays unknown
                t = None
            with self._lock:
                if t is not None:
                    self._done[step_id] = t
                self._pending -= 1
                self._idle.notify_all()

    def completions(self, timeout: float = 60.0) -> dict[int, float]:
        """``{step id: completion time}`` of every watched step, after waiting (at most ``timeout``
        seconds) until the thread has processed all of them; entries are handed over once."""
        with self._lock:
            self._idle.wait_for(lambda: self._pending == 0, timeout=timeout)
            out, self._done = self._done, {}
        return out

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=5.0)


class StepTimer:
    """Per-window timing of the training loop (see the module docstring for the scalars).

    Use::

        timer = StepTimer(global_batch_size=256, flops_per_step=f, peak_flops_per_s=p)
        timer.start()
        while ...:
            batch = timer.next_batch(iterator)            # time blocked on the input pipeline
            state, m = timer.step(step_fn, state, batch)  # dispatch (the 1st also compiles)
            timer.watch(m)                                # when the step finishes (device idle time)
            if at a log boundary:
                host = jax.device_get(...)                # waits for the window's steps
                perf = timer.window()                     # {"perf/...": float}; starts a new window
            with timer.excluded():                        # evaluation, checkpoint saves
                ...

    Args:
      global_batch_size: examples per optimizer step over all processes (for ``examples_per_s``).
      flops_per_step: FLOPs of one step on one device (:func:`compiled_flops`), or None.
      peak_flops_per_s: one device's peak FLOP/s (the chip table, or given by the user), or None;
        ``perf/mfu`` is reported only when both are known.
      clock: a monotonic clock in seconds (tests pass a fake one).
      exclude_first_step: leave the first :meth:`step` call's time (tracing and compilation) out
        of the windows and report it once as ``perf/first_step_s``.
      track_device_idle: start a :class:`CompletionWatcher` so that :meth:`watch` can time the
        device's idle gaps (``perf/device_idle_fraction``); call :meth:`close` at the end.
    """

    def __init__(
        self,
        global_batch_size: Optional[int] = None,
        *,
        flops_per_step: Optional[float] = None,
        peak_flops_per_s: Optional[float] = None,
        clock: Callable[[], float] = time.perf_counter,
        exclude_first_step: bool = True,
        track_device_idle: bool = True,
    ):
        if global_batch_size is not None and int(global_batch_size) <= 0:
            raise ValueError(f"StepTimer: global_batch_size must be > 0, got {global_batch_size}")
        if peak_flops_per_s is not None and not float(peak_flops_per_s) > 0:
            raise ValueError(f"StepTimer: peak_flops_per_s must be > 0, got {peak_flops_per_s}")
        if flops_per_step is not None and not float(flops_per_step) >= 0:
            raise ValueError(f"StepTimer: flops_per_step must be >= 0, got {flops_per_step}")
        self.global_batch_size = None if global_batch_size is None else int(global_batch_size)
        self.flops_per_step = None if flops_per_step is None else float(flops_per_step)
        self.peak_flops_per_s = None if peak_flops_per_s is None else float(peak_flops_per_s)
        self._clock = clock
        self._exclude_first = bool(exclude_first_step)
        self._first_step_s: Optional[float] = None
        self._first_reported = False
        self._seen_step = False
        self._watcher = CompletionWatcher(clock) if track_device_idle else None
        self._step_id = 0  # steps dispatched so far (the id of the next one)
        self._last_wait: Optional[tuple[float, float]] = None  # the batch wait before the next step
        self._dispatches: list[tuple[int, float, Optional[tuple[float, float]]]] = []
        self._completed: dict[int, float] = {}
        self._excluded_spans: list[tuple[float, float]] = []
        self._watched_in_window = 0
        self.start()

    def start(self) -> None:
        """Begin a new window now (call right before the loop; :meth:`window` calls it too)."""
        self._t_start = self._clock()
        self._wait = 0.0
        self._dispatch = 0.0
        self._excluded = 0.0
        self._steps = 0
        self._watched_in_window = 0

    # -- per step ----------------------------------------------------------------------------
    def next_batch(self, iterator: Iterator):
        """``next(iterator)``, timing how long it blocks (StopIteration passes through)."""
        t = self._clock()
        try:
            return next(iterator)
        finally:
            t_end = self._clock()
            self._wait += t_end - t
            self._last_wait = (t, t_end)

    def add_wait(self, seconds: float) -> None:
        """Count ``seconds`` of waiting for data measured by the caller (instead of :meth:`next_batch`)."""
        self._wait += float(seconds)

    def step(self, fn: Callable, *args, **kwargs):
        """``fn(*args, **kwargs)`` (the jitted step), counted as one step and its dispatch timed."""
        t = self._clock()
        out = fn(*args, **kwargs)
        dt = self._clock() - t
        first = not self._seen_step
        if self._watcher is not None:
            # the device may start step N+1 once it is dispatched; it was idle for want of its batch
            # only while the host was waiting for that batch (the wait is dropped for the 1st step)
            self._dispatches.append((self._step_id, t, None if first else self._last_wait))
        self._last_wait = None
        self._step_id += 1
        if self._exclude_first and not self._seen_step:
            self._first_step_s = dt
            self._excluded += dt
            self._excluded_spans.append((t, t + dt))
        else:
            self._dispatch += dt
        self._seen_step = True
        self._steps += 1
        return out

    def watch(self, outputs) -> None:
        """Time the completion of the step just dispatched by :meth:`step` from ``outputs`` (its
        metrics: arrays no later step donates).  A no-op without ``track_device_idle``."""
        if self._watcher is not None and self._step_id > 0:
            self._watcher.watch(self._step_id - 1, outputs)
            self._watched_in_window += 1

    def close(self) -> None:
        """Stop the completion watcher's thread (the timer keeps working, without idle times)."""
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None

    def _device_idle(self, now: float) -> Optional[tuple[float, float]]:
        """``(idle, input_idle)``: seconds of this window (``[start, now]``) during which the device had
        no step to run (excluded spans left out), and the part of it the host spent waiting for the
        next batch; None when no step of the window could be timed."""
        if self._watcher is None or not self._watched_in_window:
            self._dispatches = []
            self._excluded_spans = []
            return None
        self._completed.update(self._watcher.completions())
        start = self._t_start
        idle, input_idle, timed = 0.0, 0.0, 0

        def gap(lo: float, hi: float) -> float:
            """Seconds of ``[lo, hi]`` inside this window and outside its excluded spans."""
            lo = max(lo, start)
            g = hi - lo
            for e0, e1 in self._excluded_spans:  # evaluation, checkpoints: not part of the window
                g -= max(0.0, min(e1, hi) - max(e0, lo))
            return max(g, 0.0)

        for step_id, dispatch, wait in self._dispatches:
            prev = self._completed.get(step_id - 1)
            if prev is None:  # the step before it was not watched
                continue
            timed += 1
            if dispatch <= prev:
                continue  # step N+1 was queued before step N ended: no gap
            idle += gap(prev, dispatch)
            if wait is not None:
                input_idle += max(min(dispatch, wait[1]) - max(prev, wait[0], start), 0.0)
        last_id = self._step_id - 1
        if timed and last_id in self._completed and self._completed[last_id] < now:
            idle += gap(self._completed[last_id], now)  # idle since the last step ended (the log's fetch)
        self._dispatches = []
        self._excluded_spans = []
        last = max(self._completed, default=None)  # the next window's first step follows it
        self._completed = {last: self._completed[last]} if last is not None else {}
        return (idle, min(input_idle, idle)) if timed else None

    def count_step(self, n: int = 1) -> None:
        """Count ``n`` steps run without :meth:`step`."""
        self._steps += int(n)
        self._seen_step = True

    def excluded(self):
        """Context manager: the time spent inside is left out of the current window."""
        return _Excluded(self)

    # -- per window --------------------------------------------------------------------------
    @property
    def steps_in_window(self) -> int:
        return self._steps

    def window(self) -> dict[str, float]:
        """The scalars of the window that ends now (call after the fetch that syncs), then restart.

        Returns ``{}`` when the window has no step.  Keys: ``perf/step_time_s``,
        ``perf/steps_per_s``, ``perf/data_wait_fraction``, ``perf/data_wait_s`` (per step),
        ``perf/device_idle_fraction`` and ``perf/input_idle_fraction`` (when steps were watched: see
        the module docstring),
        ``perf/dispatch_s`` (host time per step spent calling the step),
        ``perf/examples_per_s`` (with a global batch size), ``perf/flops_per_s`` (with FLOPs),
        ``perf/mfu`` (with FLOPs and a peak), ``perf/first_step_s`` (once, in the first window).
        """
        now = self._clock()
        steps = self._steps
        wall = max(now - self._t_start - self._excluded, 1e-12)
        out: dict[str, float] = {}
        if steps > 0:
            out["perf/step_time_s"] = wall / steps
            out["perf/steps_per_s"] = steps / wall
            out["perf/data_wait_fraction"] = min(max(self._wait / wall, 0.0), 1.0)
            out["perf/data_wait_s"] = self._wait / steps
            out["perf/dispatch_s"] = self._dispatch / steps
            idle = self._device_idle(now)
            if idle is not None:
                out["perf/device_idle_fraction"] = min(max(idle[0] / wall, 0.0), 1.0)
                out["perf/input_idle_fraction"] = min(max(idle[1] / wall, 0.0), 1.0)
            if self.global_batch_size is not None:
                out["perf/examples_per_s"] = self.global_batch_size * steps / wall
            if self.flops_per_step is not None:
                out["perf/flops_per_s"] = self.flops_per_step * steps / wall
                if self.peak_flops_per_s is not None:
                    out["perf/mfu"] = out["perf/flops_per_s"] / self.peak_flops_per_s
            if self._first_step_s is not None and not self._first_reported:
                out["perf/first_step_s"] = self._first_step_s
                self._first_reported = True
        self.start()
        return out


class _Excluded:
    __slots__ = ("_timer", "_t")

    def __init__(self, timer: StepTimer):
        self._timer = timer

    def __enter__(self):
        self._t = self._timer._clock()
        return self

    def __exit__(self, *exc):
        t = self._timer._clock()
        self._timer._excluded += t - self._t
        self._timer._excluded_spans.append((self._t, t))
        return False


#: The settings an input-bound run should change when its batches come from a tf.data pipeline.
DEFAULT_INPUT_BOUND_HINT = (
    "raise the prefetch depth, decode and augment in parallel (tf.data num_parallel_calls=AUTOTUNE, "
    "more host CPU threads), augment on the device (data.augment=device), cache or pre-resize images "
    "to a smaller image size, or read the data on more hosts (each host reads its own shard)"
)

#: For batches that Python code builds on the host from arrays in memory (no file reader, no stimulus source).
PYTHON_INPUT_BOUND_HINT = (
    "the batches are built by Python code on this host: make the batch function cheaper (vectorise it), "
    "or run more processes (each builds only its rows of every batch)"
)

#: The same for batches built in Python from an in-memory source (rendered or generated stimuli).
IN_MEMORY_INPUT_BOUND_HINT = (
    "the batches are built in Python on this host from an in-memory source: augment on the device "
    "(data.augment=device) so the host only gathers uint8 images, render at a smaller image size, "
    "or run more processes (each builds only its rows of every batch)"
)


class InputBoundDetector:
    """Warns, in one line on stderr, when the device sat idle for want of data for too long.

    It reads ``perf/input_idle_fraction`` (the device idle for want of the next batch); a window
    without it (no step was watched) falls back on ``perf/data_wait_fraction`` and says that it
    measured only the host's wait.

    Args:
      threshold: the fraction above which a window counts as input bound (default 0.10: the device
        idle for want of the next batch during more than 10% of the window's wall time).
      hint: what to change (default :data:`DEFAULT_INPUT_BOUND_HINT`); experiments may name their
        own config fields.
      min_interval_s: at most one line per this many seconds of ``clock`` (default 10 minutes).
      skip_windows: windows ignored at the start (the first one holds pipeline start-up).
      min_step_s: windows whose mean step is shorter are not judged (default 5 ms): at a millisecond a step
        the measured idle time is dispatch overhead, which no input setting changes.
      stream: where the line goes (default ``sys.stderr``, looked up at each warning).
      clock: monotonic clock in seconds.

    Attributes:
      fired: how many lines were printed; ``last_message``: the last one.
    """

    def __init__(
        self,
        threshold: float = 0.10,
        *,
        hint: str = DEFAULT_INPUT_BOUND_HINT,
        min_interval_s: float = 600.0,
        skip_windows: int = 1,
        min_step_s: float = 0.005,
        stream: Optional[TextIO] = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not 0.0 < float(threshold) < 1.0:
            raise ValueError(f"InputBoundDetector: threshold must be in (0, 1), got {threshold}")
        if float(min_interval_s) < 0 or int(skip_windows) < 0:
            raise ValueError(
                f"InputBoundDetector: need min_interval_s >= 0 and skip_windows >= 0, "
                f"got {min_interval_s}, {skip_windows}"
            )
        self.threshold = float(threshold)
        self.hint = hint
        self.min_interval_s = float(min_interval_s)
        self._skip = int(skip_windows)
        self.min_step_s = float(min_step_s)
        self._stream = stream
        self._clock = clock
        self._last_t: Optional[float] = None
        self.fired = 0
        self.last_message: Optional[str] = None

    def check(self, step: int, perf: Mapping[str, float]) -> Optional[str]:
        """Look at one window's scalars (:meth:`StepTimer.window`) ending at ``step``.

        Returns the warning line if one was printed, else None.
        """
        if self._skip > 0:
            self._skip -= 1
            return None
        measured = "perf/input_idle_fraction" in perf
        frac = perf.get("perf/input_idle_fraction" if measured else "perf/data_wait_fraction")
        if frac is None or not frac > self.threshold:
            return None
        if not perf.get("perf/step_time_s", float("inf")) >= self.min_step_s:  # too short a step to judge
            return None
        now = self._clock()
        if self._last_t is not None and now - self._last_t < self.min_interval_s:
            return None
        self._last_t = now
        step_t = perf.get("perf/step_time_s", float("nan"))
        if measured:
            what = (
                f"the device sat idle waiting for the next batch ({_duration(frac * step_t)} of each "
                f"{_duration(step_t)} step)"
            )
        else:
            wait = perf.get("perf/data_wait_s", float("nan"))
            what = (
                f"the host waited for the next batch ({_duration(wait)} of each {_duration(step_t)} step; "
                "whether the device idled meanwhile was not measured)"
            )
        msg = (
            f"input-bound at step {int(step)}: during {100 * frac:.0f}% of the last window's wall time "
            f"(over the {100 * self.threshold:.0f}% threshold) {what}. To fix: {self.hint}."
        )
        print(msg, file=self._stream or sys.stderr, flush=True)
        self.fired += 1
        self.last_message = msg
        return msg


def _duration(seconds: float) -> str:
    if not seconds == seconds:  # NaN
        return "? s"
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{1e3 * seconds:.1f} ms"
    return f"{1e6 * seconds:.0f} us"


class MetricWindow:
    """Means of the step metrics over a logging window, kept on the device until the log boundary.

    :meth:`add` only keeps a reference to the step's (device) metrics; :meth:`mean` stacks and
    averages them in one jitted call and fetches the result, i.e. one dispatch and one transfer per
    window instead of one per step.  Use when the logged loss should be the window's mean rather
    than the last step's.
    """

    def __init__(self):
        self._items: list = []
        self._mean = None

    def __len__(self) -> int:
        return len(self._items)

    def add(self, metrics: Mapping[str, Any]) -> None:
        self._items.append(metrics)

    def mean(self) -> dict[str, float]:
        """Host floats ``{key: mean over the window}``; empties the window. ``{}`` when empty."""
        import jax

        if not self._items:
            return {}
        if self._mean is None:
            import jax.numpy as jnp

            self._mean = jax.jit(lambda items: jax.tree.map(lambda *xs: jnp.mean(jnp.stack(xs), axis=0), *items))
        items, self._items = self._items, []
        out = jax.device_get(self._mean(items))
        return {k: float(v) for k, v in out.items()}


def compiled_flops(fn, *args, **kwargs) -> Optional[float]:
    """FLOPs of one call of the jitted ``fn`` on one device, or None.

    Lowers and compiles ``fn`` for ``args`` (the in-memory compilation cache makes this cheap when
    ``fn`` has already run on arguments of these shapes; abstract ``jax.ShapeDtypeStruct`` args
    work too) and counts with :func:`gensim_jax.training.hlo.program_flops`: XLA's cost analysis,
    never below the HLO count of dots and convolutions (on a GPU the cost analysis leaves out the
    convolutions lowered to cuDNN calls).  For an SPMD program sharded over several devices this is
    one device's share.  Returns None when ``fn`` cannot be lowered (not a ``jax.jit`` function) or
    no positive count is found.
    """
    from gensim_jax.training.hlo import program_flops

    lower = getattr(fn, "lower", None)
    if lower is None:
        return None
    try:
        compiled = lower(*args, **kwargs).compile()
    except Exception:  # noqa: BLE001 - FLOPs are optional; the step itself reports real errors
        return None
    flops = program_flops(compiled).flops
    return flops if flops is not None and flops > 0 else None


def param_norm(params) -> Any:
    """Global L2 norm ``sqrt(sum_i ||p_i||^2)`` over the leaves of ``params`` (jittable; a scalar)."""
    import jax
    import jax.numpy as jnp

    leaves = jax.tree.leaves(params)
    if not leaves:
        return jnp.zeros((), jnp.float32)
    return jnp.sqrt(sum(jnp.sum(jnp.square(jnp.asarray(x, jnp.float32))) for x in leaves))


def learning_rate_at(learning_rate, step: int) -> Optional[float]:
    """The learning rate at ``step``: a constant, or an optax schedule (``step -> lr``) called at ``step``.

    None gives None (nothing to record).
    """
    if learning_rate is None:
        return None
    if callable(learning_rate):
        import numpy as np

        return float(np.asarray(learning_rate(int(step))))
    return float(learning_rate)


def injected_learning_rate(opt_state) -> Optional[float]:
    """The current ``learning_rate`` of an ``optax.inject_hyperparams`` optimizer state, or None.

    Searches ``opt_state`` (nested tuples/chains) for an ``InjectHyperparamsState`` and reads its
    ``hyperparams["learning_rate"]`` (a device scalar: fetching it waits for the device).
    """
    stack = [opt_state]
    while stack:
        s = stack.pop()
        hp = getattr(s, "hyperparams", None)
        if isinstance(hp, Mapping) and "learning_rate" in hp:
            import numpy as np

            return float(np.asarray(hp["learning_rate"]))
        if isinstance(s, (tuple, list)):
            stack.extend(reversed(s))
        elif isinstance(s, Mapping):
            stack.extend(s.values())
        else:
            inner = getattr(s, "inner_state", None)
            if inner is not None:
                stack.append(inner)
    return None
