"""StepTimer windows, the input-bound warning on a slow and a fast data source, FLOPs, optimizer scalars."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from gensim_jax.training.timing import (
    InputBoundDetector,
    MetricWindow,
    StepTimer,
    compiled_flops,
    injected_learning_rate,
    learning_rate_at,
    param_norm,
)


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_window_scalars_from_a_scripted_clock():
    clock = FakeClock()
    timer = StepTimer(global_batch_size=32, flops_per_step=2e9, peak_flops_per_s=1e12, clock=clock)

    def slow_batches():
        while True:
            clock.t += 0.03  # 30 ms blocked on the input pipeline per batch
            yield {}

    def step_fn(state, batch):
        clock.t += 0.001  # 1 ms to dispatch (the first call: 5 s of compilation)
        if state == 0:
            clock.t += 5.0
        return state + 1

    it, state = slow_batches(), 0
    timer.start()
    for _ in range(10):
        state = timer.step(step_fn, state, timer.next_batch(it))
    clock.t += 0.069  # the fetch at the log boundary waits for the device
    perf = timer.window()
    # the whole first call (5.001 s) is left out: wall = 10 * 30 ms waits + 9 * 1 ms dispatches + 69 ms
    wall = 10 * 0.030 + 9 * 0.001 + 0.069
    assert perf["perf/first_step_s"] == pytest.approx(5.001)
    assert perf["perf/step_time_s"] == pytest.approx(wall / 10)
    assert perf["perf/steps_per_s"] == pytest.approx(10 / wall)
    assert perf["perf/examples_per_s"] == pytest.approx(320 / wall)
    assert perf["perf/data_wait_fraction"] == pytest.approx(0.3 / wall)
    assert perf["perf/data_wait_s"] == pytest.approx(0.03)
    assert perf["perf/dispatch_s"] == pytest.approx(0.009 / 10)
    assert perf["perf/flops_per_s"] == pytest.approx(2e10 / wall)
    assert perf["perf/mfu"] == pytest.approx(2e10 / wall / 1e12)
    # next window: evaluation time is excluded; first_step_s is not repeated
    for _ in range(5):
        state = timer.step(step_fn, state, timer.next_batch(it))
    with timer.excluded():
        clock.t += 100.0
    perf = timer.window()
    assert "perf/first_step_s" not in perf
    assert perf["perf/step_time_s"] == pytest.approx(0.031)
    assert timer.window() == {}  # an empty window has no scalars


def test_no_mfu_without_a_peak_and_no_throughput_without_a_batch_size():
    perf = StepTimer(flops_per_step=1e6).window()
    assert perf == {}
    t = StepTimer(flops_per_step=1e6)
    t.count_step(3)
    perf = t.window()
    assert "perf/mfu" not in perf and "perf/examples_per_s" not in perf and perf["perf/flops_per_s"] > 0
    with pytest.raises(ValueError, match="peak_flops_per_s"):
        StepTimer(peak_flops_per_s=0)


def _run(batches, steps=24, log_every=6, detector=None, clock=None, step_s=0.0):
    """A real loop: jitted step, timer, detector at each log boundary; timed by ``clock`` (a FakeClock that
    each step advances by ``step_s``), so that the figures do not depend on how busy the machine is."""
    jitted = jax.jit(lambda w, x: (w - 0.01 * jnp.tanh(x @ w), jnp.mean(x @ w)))

    def step_fn(w, x):
        if clock is not None:
            clock.t += step_s
        return jitted(w, x)

    w = jnp.full((256, 256), 0.01)
    it = iter(batches)
    timer = StepTimer(global_batch_size=64, **({} if clock is None else {"clock": clock}))
    windows = []
    for i in range(1, steps + 1):
        x = timer.next_batch(it)
        w, loss = timer.step(step_fn, w, x)
        if i % log_every == 0:
            jax.device_get(loss)
            perf = timer.window()
            windows.append(perf)
            detector.check(i, perf)
    return windows


@pytest.mark.slow
def test_a_slow_data_source_triggers_one_input_bound_line(capsys):
    clock = FakeClock()

    def slow():  # 20 ms of the clock to produce each batch, 2 ms to dispatch each step
        x = np.ones((256, 256), np.float32)
        while True:
            clock.t += 0.02
            yield x

    det = InputBoundDetector(threshold=0.10, min_interval_s=600, clock=clock)
    windows = _run(slow(), detector=det, clock=clock, step_s=0.002)
    assert all(w["perf/data_wait_fraction"] > 0.5 for w in windows[1:])
    err = capsys.readouterr().err.strip().splitlines()
    assert det.fired == 1 and len(err) == 1  # rate-limited: one line for three input-bound windows
    assert err[0].startswith("input-bound at step 12:")
    for setting in ("prefetch", "parallel", "image size", "hosts"):
        assert setting in err[0], setting


def test_a_fast_data_source_does_not(capsys):
    x = np.ones((256, 256), np.float32)
    clock = FakeClock()  # batches ready at once, 5 ms of the clock a step
    det = InputBoundDetector(threshold=0.10, clock=clock)
    windows = _run(iter([x] * 24), detector=det, clock=clock, step_s=0.005)
    assert det.fired == 0 and capsys.readouterr().err == ""
    assert all(w["perf/data_wait_fraction"] < 0.10 for w in windows)


def test_detector_threshold_and_rate_limit_with_a_scripted_clock(capsys):
    clock = FakeClock()
    det = InputBoundDetector(threshold=0.2, min_interval_s=60, skip_windows=0, clock=clock, hint="raise data.prefetch")
    assert det.check(10, {"perf/data_wait_fraction": 0.2}) is None  # not above the threshold
    assert "raise data.prefetch" in det.check(20, {"perf/data_wait_fraction": 0.5})
    clock.t += 59
    assert det.check(30, {"perf/data_wait_fraction": 0.5}) is None
    clock.t += 2
    assert det.check(40, {"perf/data_wait_fraction": 0.5}) is not None
    assert det.fired == 2 and len(capsys.readouterr().err.splitlines()) == 2
    with pytest.raises(ValueError, match="threshold"):
        InputBoundDetector(threshold=1.5)


def test_compiled_flops_counts_a_matmul():
    m, k, n = 32, 48, 16
    f = jax.jit(lambda a, b: a @ b)
    a, b = jnp.ones((m, k)), jnp.ones((k, n))
    assert compiled_flops(f, a, b) == pytest.approx(2 * m * k * n, rel=1e-3)
    abstract = jax.ShapeDtypeStruct((m, k), jnp.float32), jax.ShapeDtypeStruct((k, n), jnp.float32)
    assert compiled_flops(f, *abstract) == pytest.approx(2 * m * k * n, rel=1e-3)
    assert compiled_flops(lambda a, b: a @ b, a, b) is None  # not a jitted function


def test_param_norm_and_learning_rates():
    params = {"a": jnp.arange(6.0).reshape(2, 3), "b": {"c": jnp.array([3.0, -4.0])}}
    ref = np.sqrt(sum(float(np.sum(np.asarray(x) ** 2)) for x in jax.tree.leaves(params)))
    assert float(param_norm(params)) == pytest.approx(ref)
    assert float(jax.jit(param_norm)(params)) == pytest.approx(ref)

    sched = optax.warmup_cosine_decay_schedule(0.0, 1e-2, warmup_steps=10, decay_steps=100)
    assert learning_rate_at(sched, 5) == pytest.approx(float(sched(5)))
    assert learning_rate_at(3e-4, 7) == 3e-4 and learning_rate_at(None, 1) is None

    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.inject_hyperparams(optax.adam)(learning_rate=sched))
    opt_state, update = tx.init(params), jax.jit(tx.update)
    for _ in range(5):
        _, opt_state = update(jax.tree.map(jnp.ones_like, params), opt_state, params)
    assert injected_learning_rate(opt_state) == pytest.approx(float(sched(4)))  # hyperparams at the last update
    assert injected_learning_rate(optax.adam(1e-3).init(params)) is None


def test_metric_window_is_the_mean_of_the_steps():
    win = MetricWindow()
    vals = [{"loss": jnp.float32(v), "acc": jnp.float32(v / 10)} for v in (1.0, 2.0, 6.0)]
    for v in vals:
        win.add(v)
    assert len(win) == 3
    assert win.mean() == pytest.approx({"loss": 3.0, "acc": 0.3})
    assert len(win) == 0 and win.mean() == {}


def test_a_step_too_short_to_judge_is_not_called_input_bound(capsys):
    """A millisecond step (a small MLP fed from numpy) idles mostly for dispatch: no warning below min_step_s."""
    det = InputBoundDetector(threshold=0.1, skip_windows=0, min_step_s=0.005, clock=FakeClock())
    assert det.check(10, {"perf/input_idle_fraction": 0.4, "perf/step_time_s": 0.0015}) is None
    line = det.check(20, {"perf/input_idle_fraction": 0.4, "perf/step_time_s": 0.020})
    assert line is not None and "8.0 ms of each 20.0 ms step" in line
    assert det.fired == 1 and len(capsys.readouterr().err.splitlines()) == 1


def test_the_advice_fits_what_feeds_the_run():
    """tf.data advice only for a file reader; in-memory stimulus sources and plain Python batches get their own."""
    from types import SimpleNamespace

    from gensim_jax.training.runner import input_bound_hint
    from gensim_jax.training.timing import (
        DEFAULT_INPUT_BOUND_HINT,
        IN_MEMORY_INPUT_BOUND_HINT,
        PYTHON_INPUT_BOUND_HINT,
    )

    assert input_bound_hint(SimpleNamespace(source=None)) == DEFAULT_INPUT_BOUND_HINT  # tfds records
    assert input_bound_hint(SimpleNamespace(source=object())) == IN_MEMORY_INPUT_BOUND_HINT
    assert input_bound_hint((np.zeros(3), np.zeros(3))) == PYTHON_INPUT_BOUND_HINT  # e.g. the mixture's triplets
    assert "tf.data" not in PYTHON_INPUT_BOUND_HINT and "tf.data" not in IN_MEMORY_INPUT_BOUND_HINT
