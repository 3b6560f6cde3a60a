"""A short real run wired as the runner will wire it (timer, recorder, profile window, input-bound
check, FLOPs of the compiled step): its event files hold what metrics.jsonl holds, the profile
leaves a trace, the perf scalars are there.  The loop body here is the integration sketch of
docs/OBSERVABILITY.md's modules (gensim_jax.training.records / timing / profiling)."""

import io
import json

import jax
import numpy as np
import pytest

from gensim_jax.training import CrossEntropy, make_train_step
from gensim_jax.training.profiling import ProfileWindow
from gensim_jax.training.records import RunRecorder, image_grid
from gensim_jax.training.timing import (
    InputBoundDetector, MetricWindow, StepTimer, compiled_flops, learning_rate_at, param_norm)
from tests.training._events import event_files, read_events
from tests.training._tiny import stream, tiny_state


def observed_run(workdir, num_steps=12, log_every=4, profile="5:7", lr=0.05, peak=1e9):
    state, objective = tiny_state(lr=lr), CrossEntropy()
    step_fn = make_train_step(objective)
    batches = iter(stream(0)(0))
    norm = jax.jit(param_norm)
    timer = StepTimer(global_batch_size=8, peak_flops_per_s=peak)
    detector = InputBoundDetector(stream=io.StringIO())
    prof = ProfileWindow.parse(profile, workdir)
    window = MetricWindow()
    step = 0
    with RunRecorder(workdir, start_step=step) as rec:
        timer.start()
        while step < num_steps:
            host_batch = timer.next_batch(batches)
            batch = jax.device_put(host_batch)
            if step == 0:
                with timer.excluded():
                    rec.write_images(0, {"train/stimuli": image_grid(host_batch["image"].reshape(8, 2, 3))})
            if prof:
                prof.maybe_start(step)
            with prof.annotate(step) if prof else _null():
                state, metrics = timer.step(step_fn, state, batch)
            if step == 0:
                timer.flops_per_step = compiled_flops(step_fn, state, batch)
            window.add(metrics)
            step += 1
            if prof:
                prof.maybe_stop(step, wait_for=metrics)
            if step % log_every == 0 or step == num_steps:
                values = window.mean()  # waits for the window's steps
                values["opt/param_norm"] = float(norm(state.params))
                values["opt/lr"] = learning_rate_at(lr, step)
                perf = timer.window()
                detector.check(step, perf)
                rec.write(step, {**values, **perf})
        if prof:
            prof.close(wait_for=state)
    return state


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_short_run_events_equal_metrics_jsonl_and_profile_leaves_a_trace(tmp_path):
    observed_run(tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [4, 8, 12]
    expected = {}
    for r in lines:
        for k, v in r.items():
            if k not in ("step", "time"):
                expected.setdefault(k, {})[r["step"]] = v
    scalars, images = read_events(tmp_path)
    assert set(scalars) == set(expected)
    for tag, by_step in expected.items():
        assert {s: np.float32(v) for s, v in by_step.items()} == scalars[tag], tag
    for key in ("loss", "accuracy", "grad_norm", "opt/param_norm", "opt/lr", "perf/step_time_s",
                "perf/examples_per_s", "perf/data_wait_fraction", "perf/flops_per_s", "perf/mfu"):
        assert key in expected, key
    assert "perf/first_step_s" in lines[0] and "perf/first_step_s" not in lines[1]
    assert lines[0]["perf/mfu"] == pytest.approx(lines[0]["perf/flops_per_s"] / 1e9)
    assert images["train/stimuli"][0][:3] == (3 * (2 + 2) + 2, 3 * (3 + 2) + 2, 1)  # 8 images of 2 x 3, 3 per row
    assert len(list((tmp_path / "plugins" / "profile").glob("*/*.xplane.pb"))) == 1
    assert len(event_files(tmp_path)) == 1


def test_flops_of_the_train_step_come_from_its_compiled_program():
    state, objective = tiny_state(), CrossEntropy()
    step_fn = make_train_step(objective)
    batch = jax.device_put(next(iter(stream(0)(0))))
    flops = compiled_flops(step_fn, state, batch)
    # the MLP 6 -> 16 -> 4 -> 3 on 8 examples: forward + backward matmuls are at least 3x the forward's
    forward = 2 * 8 * (6 * 16 + 16 * 4 + 4 * 3)
    assert flops is not None and flops >= 3 * forward
