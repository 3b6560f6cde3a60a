"""The training loop: resume, step, log, evaluate, checkpoint, and stop cleanly on SIGTERM or SIGINT.

:func:`train` drives any objective.  The data come from a factory ``batches(position)`` that
returns an iterator over host batches starting at the given position (number of batches already
consumed); a seeded, deterministic stream (e.g. ``numpy.random.default_rng((seed, position))``
per batch, or a tf.data pipeline that skips ``position`` batches) makes a resumed run see exactly
the batches an uninterrupted run would have seen.

Files written to ``workdir``:

* ``config.json``: the config, the seed and the device summary (process 0, at the start);
* ``metrics.jsonl``: one JSON object per logged step (``{"step", "time", "loss", ...}``) and per
  evaluation (keys prefixed ``eval/``); at the start, lines beyond the step the run starts from
  (the restored step, or 0) are dropped, and so is a line cut short by a killed process;
* ``checkpoints/``: orbax checkpoints (:mod:`gensim_jax.training.checkpoints`).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional

import jax
import jax.numpy as jnp
from tqdm.auto import tqdm

from gensim_jax.jsonable import to_jsonable
from gensim_jax.training.checkpoints import Checkpointer, PreemptionGuard, restore_or_init
from gensim_jax.training.step import make_train_step

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
    """Write ``workdir/config.json`` with ``config``, ``seed`` and the device summary; returns the path."""
    from gensim_jax import parallel

    path = Path(workdir) / "config.json"
    if jax.process_index() == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"seed": int(seed), "config": to_jsonable(dict(config)), "devices": parallel.device_summary(),
                  "argv": list(sys.argv)}
        path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return path


def _prefetch(host_batches: Iterator, to_device: Callable, depth: int, ended: Callable[[int], str]) -> Iterator:
    """Device batches of ``host_batches``, ``depth`` of them transferred ahead of the one yielded.

    JAX dispatches asynchronously, so transfers issued while a step runs overlap it.  A stream that
    ends early raises ``ValueError(ended(number of batches consumed))``.
    """
    queue: collections.deque = collections.deque()
    consumed = 0
    exhausted = False
    while True:
        while not exhausted and len(queue) <= max(depth, 0):
            try:
                queue.append(to_device(next(host_batches)))
            except StopIteration:
                exhausted = True
        if not queue:
            raise ValueError(ended(consumed))
        consumed += 1
        yield queue.popleft()


def read_metrics(workdir) -> list[dict]:
    """The JSON-lines metrics history of a run directory."""
    path = Path(workdir) / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _truncate_history(path: Path, step: int) -> None:
    """Keep the lines of ``metrics.jsonl`` up to ``step``; drop later ones and unparsable (cut-off) lines."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # the last line of a process killed while writing it
            continue
        if isinstance(record, dict) and record.get("step", 0) <= step:
            kept.append(line)
    path.write_text("".join(line + "\n" for line in kept))


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
        mean over the window leaves it, every ``log_every`` steps and at the last step.
      eval_every, eval_fn: call ``eval_fn(state, step) -> dict`` every ``eval_every`` steps and at
        the end; its scalars are logged with the prefix ``eval/``.
      progress: show a tqdm bar (rate, ETA, loss) on process 0.
      exit_on_preemption: after saving on SIGTERM, raise ``SystemExit(0)``; after saving on SIGINT
        (single process), ``SystemExit(130)`` (else return with ``preempted=True``).
      step_fn: a ready ``step(state, batch) -> (state, metrics)`` instead of :func:`make_train_step`.
      prefetch: host batches put on the device ahead of the step that needs them (the transfer
        overlaps the running step).

    Returns:
      :class:`TrainResult`.
    """
    if num_steps < 0:
        raise ValueError(f"num_steps must be >= 0, got {num_steps}")
    workdir = Path(workdir).absolute()
    workdir.mkdir(parents=True, exist_ok=True)
    save_run_config(workdir, dict(config or {}), seed)
    metrics_path = workdir / "metrics.jsonl"
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
    if is_main:
        _truncate_history(metrics_path, start)  # lines past the restored step (or all, on a fresh start) are stale
        if resumed:
            print(f"train: resumed from step {start} of {num_steps} ({ckpt.directory})", file=sys.stderr, flush=True)
    if step_fn is None:
        step_fn = make_train_step(objective, accum_steps=accum_steps, mesh=mesh, state=state, fsdp=fsdp)

    history: list[dict] = []
    preempted = False
    stop_signal: Optional[str] = None

    def log(record: dict) -> None:
        history.append(record)
        if is_main:
            with metrics_path.open("a") as f:
                f.write(json.dumps(to_jsonable(record)) + "\n")

    def run_eval(step: int) -> None:
        if eval_fn is None:
            return
        out = eval_fn(state, step)
        log({"step": step, "time": time.time(), **{f"eval/{k}": v for k, v in dict(out).items()}})

    bar = tqdm(total=num_steps, initial=start, disable=not (progress and is_main), unit="step",
               dynamic_ncols=True, desc="train")
    t0 = time.time()
    step = start
    try:
        # multi-host: JAX's preemption sync manager owns SIGTERM and orbax makes all hosts agree on
        # the step; single process: our own SIGTERM/SIGINT flag
        multi = jax.process_count() > 1
        with PreemptionGuard(signals=() if multi else (signal.SIGTERM, signal.SIGINT)) as guard:
            device_batches = _prefetch(iter(batches(position)), to_device, prefetch,
                                       lambda consumed: f"the data stream ended at position {position + consumed} "
                                                        f"before step {num_steps}")
            window, window_steps = None, 0  # metrics summed on the device since the last log
            while step < num_steps:
                state, metrics = step_fn(state, next(device_batches))
                window = metrics if window is None else jax.tree.map(jnp.add, window, metrics)
                window_steps += 1
                step += 1
                position += 1
                bar.update(1)
                if step % log_every == 0 or step == num_steps:
                    values = {k: float(v) / window_steps for k, v in jax.device_get(window).items()}
                    window, window_steps = None, 0
                    log({"step": step, "time": time.time() - t0, **values})
                    bar.set_postfix(loss=f"{values['loss']:.4g}")
                if eval_every and step % eval_every == 0 and step != num_steps:
                    run_eval(step)
                if (ckpt.reached_preemption(step) if multi else guard.requested):
                    ckpt.save(state, {"position": position}, step=step)
                    ckpt.wait()
                    preempted = True
                    stop_signal = signal.Signals(guard.signum).name if guard.signum is not None else "SIGTERM"
                    break
                if step % checkpoint_every == 0:
                    ckpt.save(state, {"position": position}, step=step)
        if not preempted and step == num_steps and num_steps > start:
            run_eval(step)
        if not preempted:
            ckpt.save(state, {"position": position}, step=step)
    finally:
        bar.close()
        ckpt.close()
    if preempted and is_main:
        print(f"train: {stop_signal} at step {step} of {num_steps}: saved a checkpoint in {ckpt.directory}; "
              "run again with the same workdir to resume (python -m train ... --resume)", file=sys.stderr, flush=True)
    if preempted and exit_on_preemption:
        raise SystemExit(130 if stop_signal == "SIGINT" else 0)
    return TrainResult(state=state, history=history, start_step=start, preempted=preempted, stop_signal=stop_signal)
