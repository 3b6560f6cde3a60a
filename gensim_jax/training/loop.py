"""The training loop: resume, step, log, evaluate, checkpoint, and stop cleanly on SIGTERM or SIGINT.

:func:`train` drives any objective.  The data come from a factory ``batches(position)`` that
returns an iterator over host batches starting at the given position (number of batches already
consumed); a seeded, deterministic stream (e.g. ``numpy.random.default_rng((seed, position))``
per batch, or a tf.data pipeline that skips ``position`` batches) makes a resumed run see exactly
the batches an uninterrupted run would have seen.

Files written to ``workdir``:

* ``config.json``: the config, the seed, the device summary, the command line and what produced the
  run (:func:`gensim_jax.provenance.provenance`: versions, git commit) (process 0, at the start);
* ``metrics.jsonl``: one JSON object per logged step (``{"step", "time", "loss", ...}``) and per
  evaluation (keys prefixed ``eval/``); at the start, lines beyond the step the run starts from
  (the restored step, or 0) are dropped, and so is a line cut short by a killed process (with a
  warning); ``time`` (seconds) keeps counting from the last kept line, so it spans resumes;
* TensorBoard event files: the same scalars, the config as hyperparameters (HParams tab) and as text;
* ``checkpoints/``: orbax checkpoints (:mod:`gensim_jax.training.checkpoints`).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
import json
import queue
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional

import jax
import numpy as np

from gensim_jax.jsonable import to_jsonable
from gensim_jax.training.checkpoints import Checkpointer, PreemptionGuard, restore_or_init
from gensim_jax.training.profiling import ProfileWindow
from gensim_jax.training.progress import progress_bar
from gensim_jax.training.records import RunRecorder, image_grid
from gensim_jax.training.step import make_train_step
from gensim_jax.training.timing import (
    InputBoundDetector,
    MetricWindow,
    StepTimer,
    compiled_flops,
    injected_learning_rate,
    param_norm,
)

__all__ = ["TrainResult", "train", "save_run_config", "read_metrics", "to_jsonable"]


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes:
      state: the final :class:`~gensim_jax.training.state.TrainState`.
      history: the metrics logged by this call (dicts, as in ``metrics.jsonl``).
      start_step: the step the run started (or resumed) from.
      preempted: True if SIGTERM or SIGINT stopped the run (a checkpoint of ``state`` was saved).
      stop_signal: the name of that signal (``"SIGTERM"``, ``"SIGINT"``), else None.
    """

    state: Any
    history: list
    start_step: int
    preempted: bool = False
    stop_signal: Optional[str] = None


def save_run_config(workdir, config: Mapping[str, Any], seed: int) -> Path:
    """Write ``workdir/config.json``; returns the path.

    The record holds ``seed``, ``config``, ``devices`` (:func:`gensim_jax.parallel.device_summary`),
    ``argv`` and ``provenance`` (:func:`gensim_jax.provenance.provenance`: the gensim-jax version,
    the git commit and whether the tree was dirty, the versions of jax, jaxlib, flax, optax, orbax
    and tensorflow, the command as typed, the device kinds and the process count).
    """
    from gensim_jax import parallel
    from gensim_jax.provenance import provenance

    path = Path(workdir) / "config.json"
    if jax.process_index() == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "seed": int(seed),
            "config": to_jsonable(dict(config)),
            "devices": parallel.device_summary(),
            "argv": list(sys.argv),
            "provenance": provenance(),
        }
        path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return path


def _produced_by() -> dict:
    """The gensim-jax version and git commit as hyperparameters (a sweep over commits can be told apart)."""
    from gensim_jax.provenance import git_state, package_version, short_commit

    return {"gensim_jax": package_version(), "commit": short_commit({"git": git_state()})}


#: The interpreter's thread switch interval during a run (Python's default is 5 ms).
_SWITCH_INTERVAL_S = 0.001


class _HostProducer:
    """Iterates ``host_batches`` on a background thread, up to ``depth`` batches ahead of the consumer.

    The loop's main thread blocks at each log boundary's fetch (it waits for the device) and at
    checkpoints and evaluations; a stream built in the consumer's thread would stop meanwhile, and the
    device would then wait for the next batch after every fetch.  Here the host keeps building
    batches through those waits (the stream's own order, one producer).  An exception of the stream
    is raised in the consumer, as it would have been there; :meth:`close` stops the thread.
    """

    _END = object()

    def __init__(self, host_batches: Iterator, depth: int):
        self._queue: queue.Queue = queue.Queue(maxsize=max(int(depth), 1))
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(host_batches,), name="gensim-jax-host-batches", daemon=True
        )
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, host_batches: Iterator) -> None:
        try:
            for batch in host_batches:
                if not self._put(("batch", batch)):
                    return
            self._put(("end", None))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, which raises it
            self._put(("error", e))

    def __iter__(self):
        return self

    def __next__(self):
        kind, value = self._queue.get()
        if kind == "batch":
            return value
        self._queue.put((kind, value))  # every later call ends the same way
        if kind == "error":
            raise value
        raise StopIteration

    def close(self) -> None:
        self._stop.set()
        while True:  # unblock a producer waiting on a full queue
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join(timeout=5.0)


def _prefetch(host_batches: Iterator, to_device: Callable, depth: int, ended: Callable[[int], str]) -> Iterator:
    """Device batches of ``host_batches``, ``depth`` of them transferred ahead of the one yielded.

    JAX dispatches asynchronously, so transfers issued while a step runs overlap it.  A stream that
    ends early raises ``ValueError(ended(number of batches consumed))``.
    """
    queue_: collections.deque = collections.deque()
    consumed = 0
    exhausted = False
    while True:
        while not exhausted and len(queue_) <= max(depth, 0):
            try:
                queue_.append(to_device(next(host_batches)))
            except StopIteration:
                exhausted = True
        if not queue_:
            raise ValueError(ended(consumed))
        consumed += 1
        yield queue_.popleft()


def read_metrics(workdir) -> list[dict]:
    """The JSON-lines metrics history of a run directory (``[]`` without one).

    Every line that cannot be read is named (file and line) in a warning on stderr and skipped
    (:func:`gensim_jax.runs.read_jsonl`).
    """
    from gensim_jax.runs import read_jsonl

    return read_jsonl(Path(workdir) / "metrics.jsonl")


#: One compiled parameter norm for every run of the process (a jit per call would recompile per run).
_param_norm = jax.jit(param_norm)


def _global_rows(batch) -> int:
    """Rows of the global batch (the leading size of any entry: device batches are global arrays)."""
    return int(np.shape(next(iter(batch.values())))[0])


def _image_key(batch) -> Optional[str]:
    """The first batch entry holding images ``(B, H, W, C)``, or None."""
    return next((k for k, v in batch.items() if np.ndim(v) == 4), None)


def _displayable(images) -> np.ndarray:
    """A batch of images as floats in [0, 1] (normalised inputs are min-max scaled per image)."""
    x = np.asarray(images, np.float32)
    if x.ndim == 3:
        x = x[..., None]
    lo = x.min(axis=(1, 2, 3), keepdims=True)
    hi = x.max(axis=(1, 2, 3), keepdims=True)
    return (x - lo) / np.maximum(hi - lo, 1e-12)


def train(
    state,
    objective,
    batches: Callable[[int], Iterable[Mapping[str, Any]]],
    *,
    num_steps: int,
    workdir,
    config: Optional[Mapping[str, Any]] = None,
    seed: int = 0,
    mesh=None,
    fsdp: bool = False,
    accum_steps: int = 1,
    checkpoint_every: int = 1000,
    max_to_keep: Optional[int] = 3,
    log_every: int = 50,
    eval_every: Optional[int] = None,
    eval_fn: Optional[Callable[[Any, int], Mapping[str, Any]]] = None,
    progress: bool = True,
    exit_on_preemption: bool = True,
    step_fn: Optional[Callable] = None,
    prefetch: int = 2,
    tensorboard: bool = True,
    profile_steps: Optional[str] = None,
    peak_flops_per_s: Optional[float] = None,
    stimuli_key: Optional[str] = None,
    input_bound_hint: Optional[str] = None,
) -> TrainResult:
    """Train ``state`` with ``objective`` for ``num_steps`` optimizer steps (resuming if possible).

    Args:
      state: initial :class:`~gensim_jax.training.state.TrainState` (also the restore target).
      objective: an :class:`~gensim_jax.training.objectives.Objective`.
      batches: ``position -> iterator of host batches`` starting at that position (see module
        docstring).  Under a mesh each process yields its own rows (:func:`parallel.shard_batch`).
      num_steps: total number of steps of the run (not of this call).
      workdir: run directory (config, metrics, checkpoints).
      config, seed: recorded in ``config.json``.
      mesh, fsdp: shard the step over a device mesh (:mod:`gensim_jax.parallel`).
      accum_steps: gradient accumulation micro-batches per step.
      checkpoint_every: asynchronous checkpoint period (steps); the last step is always saved.
      log_every: metrics period (steps): the step's metrics are summed on the device and only their
        mean over the window leaves it, every ``log_every`` steps, at the run's first step (step 1) and at
        its last step, so that a run shorter than ``log_every`` still records where it started and ended.
      eval_every, eval_fn: call ``eval_fn(state, step) -> dict`` every ``eval_every`` steps and at
        the end; its scalars are logged with the prefix ``eval/``.
      progress: show a tqdm bar (rate, ETA, loss) on process 0; in a log, a plain line every 30 s.
      exit_on_preemption: after saving on SIGTERM, raise ``SystemExit(0)``; after saving on SIGINT
        (single process), ``SystemExit(130)`` (else return with ``preempted=True``).
      step_fn: a ready ``step(state, batch) -> (state, metrics)`` instead of :func:`make_train_step`.
      prefetch: host batches put on the device ahead of the step that needs them (the transfer
        overlaps the running step); with ``prefetch >= 1`` the host stream itself runs on a background
        thread, up to ``prefetch`` batches ahead of those, so that it goes on while the loop waits for
        the device (0: no look-ahead, the stream is read in the loop's thread when a step needs it).
      tensorboard: write TensorBoard event files beside ``metrics.jsonl`` (same tags and values).
      profile_steps: ``"START:END"``: a ``jax.profiler`` trace of those steps in ``workdir/plugins/profile``.
      peak_flops_per_s: the device's peak, for ``perf/mfu`` (FLOPs from the compiled step).
      stimuli_key: batch entry whose first images are drawn as ``train/stimuli`` at step 0 (``"auto"``:
        the first ``(B, H, W, C)`` entry).
      input_bound_hint: the advice of the input-bound warning (default: the generic settings).

    Returns:
      :class:`TrainResult`.
    """
    if num_steps < 0:
        raise ValueError(f"num_steps must be >= 0, got {num_steps}")
    workdir = Path(workdir).absolute()
    workdir.mkdir(parents=True, exist_ok=True)
    save_run_config(workdir, dict(config or {}), seed)
    is_main = jax.process_index() == 0

    if mesh is not None:
        from gensim_jax import parallel

        state = parallel.place_state(state, mesh, fsdp)
        to_device = lambda b: parallel.shard_batch(b, mesh)  # noqa: E731
    else:
        to_device = lambda b: jax.device_put(dict(b))  # noqa: E731

    ckpt = Checkpointer(workdir / "checkpoints", save_every=checkpoint_every, max_to_keep=max_to_keep)
    try:
        state, data, resumed = restore_or_init(ckpt, state)
    except BaseException:
        ckpt.close()
        raise
    start = int(jax.device_get(state.step))
    position = int(data.get("position", start))
    if is_main and resumed:
        print(f"train: resumed from step {start} of {num_steps} ({ckpt.directory})", file=sys.stderr, flush=True)
    if step_fn is None:
        step_fn = make_train_step(objective, accum_steps=accum_steps, mesh=mesh, state=state, fsdp=fsdp)

    # what the run records (process 0 only): metrics.jsonl + TensorBoard events, lines past `start` dropped
    recorder = RunRecorder(workdir, start_step=start, tensorboard=tensorboard)
    if recorder.active:  # process 0: the config as TensorBoard hyperparameters, with what produced the run
        from gensim_jax.provenance import provenance

        recorder.write_config(
            {**dict(config or {}), "seed": int(seed), **_produced_by()}, step=start, provenance=provenance()
        )
    timer = StepTimer(peak_flops_per_s=peak_flops_per_s)
    detector = InputBoundDetector(hint=input_bound_hint) if input_bound_hint else InputBoundDetector()
    profile = ProfileWindow.parse(profile_steps, workdir)
    history: list[dict] = []
    preempted = False
    stop_signal: Optional[str] = None

    def log(step: int, values: Mapping[str, Any]) -> None:
        scalars, images = {}, {}
        for k, v in values.items():
            (images if np.ndim(v) >= 2 else scalars)[k] = v
        history.append(recorder.write(step, scalars))
        if images:
            recorder.write_images(step, images)

    def run_eval(step: int) -> None:
        if eval_fn is None:
            return
        with timer.excluded():
            out = eval_fn(state, step)
            log(step, {f"eval/{k}": v for k, v in dict(out).items()})

    bar = progress_bar(num_steps, start, "train", enabled=progress and is_main)  # tqdm, or plain lines in a log
    step = start
    producer: Optional[_HostProducer] = None
    # the completion watcher, the host producer and the loop share the GIL: a thread that a device
    # completion wakes takes it within this interval, which bounds the error of the idle-time figures
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(min(switch_interval, _SWITCH_INTERVAL_S))
    try:
        # multi-host: JAX's preemption sync manager owns SIGTERM and orbax makes all hosts agree on
        # the step; single process: our own SIGTERM/SIGINT flag
        multi = jax.process_count() > 1
        with PreemptionGuard(signals=() if multi else (signal.SIGTERM, signal.SIGINT)) as guard:
            host_batches = iter(batches(position))
            if stimuli_key and start == 0 and is_main and recorder.active:
                first = next(host_batches)
                key = _image_key(first) if stimuli_key == "auto" else stimuli_key
                if key in first and np.ndim(first[key]) == 4:
                    with timer.excluded():
                        recorder.write_images(0, {"train/stimuli": image_grid(_displayable(first[key][:16]))})
                host_batches = itertools.chain([first], host_batches)
            if prefetch > 0:  # prefetch=0: no look-ahead at all, the stream read in this thread on demand
                producer = _HostProducer(host_batches, depth=prefetch)
            device_batches = _prefetch(
                producer if producer is not None else host_batches,
                to_device,
                prefetch,
                lambda consumed: f"the data stream ended at position {position + consumed} before step {num_steps}",
            )
            window = MetricWindow()  # metrics summed on the device since the last log
            timer.start()
            while step < num_steps:
                batch = timer.next_batch(device_batches)
                if timer.global_batch_size is None:
                    timer.global_batch_size = _global_rows(batch)
                if profile:
                    profile.maybe_start(step)
                with profile.annotate(step) if profile else contextlib.nullcontext():
                    state, metrics = timer.step(step_fn, state, batch)
                timer.watch(metrics)  # when the step ends on the device: perf/device_idle_fraction
                window.add(metrics)
                if step == start:
                    with timer.excluded():  # the step's own compiled program, from the compilation cache
                        timer.flops_per_step = compiled_flops(step_fn, state, batch)
                step += 1
                position += 1
                bar.update(1)
                if profile:
                    profile.maybe_stop(step, wait_for=metrics)
                # a run's first step is logged too, whatever log_every: its own metrics, fetched alone, with the
                # window left to run on to its boundary (the window means and timings are those of the run
                # without this line; a window of another length would recompile the mean at its boundary)
                boundary = step % log_every == 0 or step == num_steps
                if boundary or step == 1:
                    if boundary:
                        values = window.mean()  # the one device-to-host transfer of the window (it syncs)
                    else:
                        values = {k: float(v) for k, v in jax.device_get(dict(metrics)).items() if np.ndim(v) == 0}
                    values["opt/param_norm"] = float(_param_norm(state.params))
                    lr = injected_learning_rate(state.opt_state)
                    if lr is not None:
                        values["opt/lr"] = lr
                    perf = timer.window() if boundary else {}  # the first step compiles: no rate of its own
                    if boundary:
                        detector.check(step, perf)
                    log(step, {**values, **perf})
                    bar.set_postfix(loss=f"{values['loss']:.4g}")
                if eval_every and step % eval_every == 0 and step != num_steps:
                    run_eval(step)
                if ckpt.reached_preemption(step) if multi else guard.requested:
                    ckpt.save(state, {"position": position}, step=step)
                    ckpt.wait()
                    preempted = True
                    stop_signal = signal.Signals(guard.signum).name if guard.signum is not None else "SIGTERM"
                    break
                if step % checkpoint_every == 0:
                    with timer.excluded():
                        ckpt.save(state, {"position": position}, step=step)
        if not preempted and step == num_steps and num_steps > start:
            run_eval(step)
        if not preempted:
            ckpt.save(state, {"position": position}, step=step)
    finally:
        sys.setswitchinterval(switch_interval)
        bar.close()
        timer.close()
        if producer is not None:
            producer.close()
        if profile:
            profile.close(wait_for=state)
        recorder.close()
        ckpt.close()
    if preempted and is_main:
        from gensim_jax.provenance import command_line

        again = command_line(["--resume"])
        print(
            f"train: {stop_signal} at step {step} of {num_steps}: saved a checkpoint in {ckpt.directory}; "
            + (f"to resume, run: {again}" if again else "run the same command with the same workdir and --resume"),
            file=sys.stderr,
            flush=True,
        )
    if preempted and exit_on_preemption:
        raise SystemExit(130 if stop_signal == "SIGINT" else 0)
    return TrainResult(state=state, history=history, start_step=start, preempted=preempted, stop_signal=stop_signal)
