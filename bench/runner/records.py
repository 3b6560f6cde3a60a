"""Cost of a run's records and step timing per training step (issue 18: keep >= 98% of steps/s).

Two loops over the same jitted step and the same host batches, alternated (A, B, B, A, ...):

* reference ("bare"): ``next(batches)``, the step, and every ``log_every`` steps one
  ``jax.device_get`` of the step's metrics -- nothing is recorded;
* ours ("recorded"): the same, plus what the runner does to see inside a run:
  :class:`~gensim_jax.training.timing.StepTimer` around the batch wait and the step, an inactive
  :class:`~gensim_jax.training.profiling.ProfileWindow` (its start/stop checks and step
  annotation), and at each log boundary the window's perf scalars, the input-bound check and one
  :meth:`~gensim_jax.training.records.RunRecorder.write` (``metrics.jsonl`` + TensorBoard event)
  of the metrics, the perf scalars and the learning rate.

``ratio = ours_s / reference_s`` (time of ``steps`` steps); the issue's target is a steps/s ratio
of at least 0.98, i.e. ``ratio <= 1 / 0.98``.  Two step sizes: a small MLP training step (the
runner's steps are larger, so its relative overhead is smaller) and a no-op step (the
bookkeeping's absolute host cost per step, ``overhead_us_per_step``).

Usage: ``python -m bench.runner.records [--steps 1000] [--log-every 50] [--quick]``.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bench._harness import emit, record, sig


def mlp_step(width: int = 256, batch: int = 64, classes: int = 10):
    """A jitted ``step(state, batch) -> (state, {"loss", "accuracy", "grad_norm"})`` of a 2-layer MLP with Adam."""
    k1, k2 = jax.random.split(jax.random.key(0))
    params = {
        "w1": jax.random.normal(k1, (width, width)) / width**0.5,
        "w2": jax.random.normal(k2, (width, classes)) / width**0.5,
    }
    tx = optax.adam(1e-3)

    def loss_fn(p, x, y):
        logits = jnp.tanh(x @ p["w1"]) @ p["w2"]
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), logits

    @jax.jit
    def step(state, b):
        p, o = state
        (loss, logits), g = jax.value_and_grad(loss_fn, has_aux=True)(p, b["x"], b["y"])
        u, o = tx.update(g, o, p)
        return (optax.apply_updates(p, u), o), {
            "loss": loss,
            "accuracy": jnp.mean(jnp.argmax(logits, -1) == b["y"]),
            "grad_norm": optax.global_norm(g),
        }

    rng = np.random.default_rng(0)
    batches = [
        {"x": rng.normal(size=(batch, width)).astype(np.float32), "y": rng.integers(0, classes, batch).astype(np.int32)}
        for _ in range(8)
    ]
    return step, (params, tx.init(params)), batches, batch


def noop_step():
    """A step that does nothing on the device (the bookkeeping's pure host cost)."""
    metrics = {"loss": jnp.float32(1.0), "accuracy": jnp.float32(0.5), "grad_norm": jnp.float32(2.0)}
    return (lambda state, b: (state, metrics)), 0, [{"x": np.zeros(1, np.float32)}], 64


def _cycle(batches):
    while True:
        yield from batches


def bare_loop(step, state, batches, steps: int, log_every: int):
    it = _cycle(batches)
    for i in range(1, steps + 1):
        state, metrics = step(state, next(it))
        if i % log_every == 0:
            jax.device_get(metrics)
    return state


def recorded_loop(step, state, batches, steps: int, log_every: int, rec, global_batch: int):
    """The loop with timing and records; ``rec`` is an open RunRecorder (opening and closing it,
    once per run, is left out: this measures the steady per-step cost)."""
    from gensim_jax.training.profiling import ProfileWindow
    from gensim_jax.training.timing import InputBoundDetector, StepTimer, learning_rate_at

    it = _cycle(batches)
    timer = StepTimer(global_batch_size=global_batch, flops_per_step=1e6, peak_flops_per_s=1e12)
    detector = InputBoundDetector(min_interval_s=1e9, stream=io.StringIO())
    prof = ProfileWindow(10**9, 10**9 + 1, rec.workdir, enabled=True)  # never reached: checks only
    timer.start()
    for i in range(1, steps + 1):
        batch = timer.next_batch(it)
        prof.maybe_start(i - 1)
        with prof.annotate(i - 1):
            state, metrics = timer.step(step, state, batch)
        prof.maybe_stop(i)
        if i % log_every == 0:
            host = jax.device_get(metrics)
            perf = timer.window()
            detector.check(i, perf)
            rec.write(i, {**{k: float(v) for k, v in host.items()}, **perf, "opt/lr": learning_rate_at(1e-3, i)})
    return state


def measure(make, steps: int, log_every: int, repeats: int) -> dict:
    from gensim_jax.training.records import RunRecorder

    step, state, batches, gb = make()
    state = bare_loop(step, state, batches, 2 * log_every, log_every)  # compile and warm up
    with tempfile.TemporaryDirectory() as d, RunRecorder(Path(d) / "run") as rec:
        recorded_loop(step, state, batches, log_every, log_every, rec, gb)  # imports, first writes
        t_bare, t_rec, c_bare, c_rec = [], [], [], []
        for r in range(repeats):
            order = ("bare", "rec") if r % 2 == 0 else ("rec", "bare")
            for which in order:
                t0, c0 = time.perf_counter(), time.thread_time()
                if which == "bare":
                    bare_loop(step, state, batches, steps, log_every)
                    t_bare.append(time.perf_counter() - t0)
                    c_bare.append(time.thread_time() - c0)
                else:
                    recorded_loop(step, state, batches, steps, log_every, rec, gb)
                    t_rec.append(time.perf_counter() - t0)
                    c_rec.append(time.thread_time() - c0)
    # thread_time: CPU seconds of this (the dispatching) thread, which a loaded machine inflates
    # far less than wall time; their difference is the bookkeeping's host cost
    return {
        "ours_s": statistics.median(t_rec),
        "reference_s": statistics.median(t_bare),
        "ours_min_s": min(t_rec),
        "reference_min_s": min(t_bare),
        "repeats": repeats,
        "compile_s": 0.0,
        "ours_thread_cpu_s": statistics.median(c_rec),
        "reference_thread_cpu_s": statistics.median(c_bare),
    }


def image_costs(repeats: int = 3) -> dict:
    """Seconds to draw the similarity scatter, and to write it and a 1024 x 1024 stimuli grid as events."""
    from gensim_jax.training.records import RunRecorder, image_grid, similarity_scatter_image

    rng = np.random.default_rng(0)
    stimuli = rng.uniform(size=(16, 256, 256, 3)).astype(np.float32)  # noise: the worst case for PNG
    e, t = rng.normal(size=(256, 256)), rng.normal(size=(256, 256))
    similarity_scatter_image(e, t)  # imports matplotlib
    out = {"scatter_draw_s": [], "scatter_write_s": [], "grid_1024_write_s": []}
    with tempfile.TemporaryDirectory() as d, RunRecorder(Path(d)) as rec:
        for i in range(repeats):
            t0 = time.perf_counter()
            img = similarity_scatter_image(e, t)
            t1 = time.perf_counter()
            rec.write_images(i, {"eval/similarity_scatter": img})
            t2 = time.perf_counter()
            rec.write_images(i, {"train/stimuli": image_grid(stimuli, ncol=4, pad=0)})
            t3 = time.perf_counter()
            for k, v in zip(out, (t1 - t0, t2 - t1, t3 - t2)):
                out[k].append(v)
    return {k: sig(statistics.median(v)) for k, v in out.items()}


def run(quick: bool = False, steps: int = 1000, log_every: int = 50, repeats: int = 7):
    if quick:
        steps, repeats = 200, 3
    for name, make in (("mlp_256_batch64", mlp_step), ("noop", noop_step)):
        timing = measure(make, steps, log_every, repeats)
        line = record(
            "runner_overhead_records",
            {"step": name, "steps": steps, "log_every": log_every},
            timing,
            reference="the same loop recording nothing",
            target=round(1 / 0.98, 4),
            note="ours: StepTimer + inactive ProfileWindow + InputBoundDetector + RunRecorder "
            "(jsonl + TensorBoard) at every log boundary",
        )
        line["steps_per_s_kept"] = sig(timing["reference_s"] / timing["ours_s"])
        line["overhead_us_per_step"] = sig(1e6 * (timing["ours_s"] - timing["reference_s"]) / steps)
        line["step_us_bare"] = sig(1e6 * timing["reference_s"] / steps)
        line["overhead_thread_cpu_us_per_step"] = sig(
            1e6 * (timing["ours_thread_cpu_s"] - timing["reference_thread_cpu_s"]) / steps
        )
        yield line
    yield {
        "bench": "runner_overhead_records_images",
        "params": {"scatter_pairs": 256 * 255 // 2, "grid": "16 x 256 px noise, 1024 x 1024"},
        **image_costs(),
        "load_avg_1m": round(__import__("os").getloadavg()[0], 2),
        "note": "once per evaluation (scatter) and at step 0 (grid); no target",
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args(argv)
    for line in run(quick=a.quick, steps=a.steps, log_every=a.log_every, repeats=a.repeats):
        emit(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
