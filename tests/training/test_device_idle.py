"""perf/device_idle_fraction against a device whose idle time is known (SimulatedDevice's own log), in a
bare timer loop and through the training loop; the input-bound warning fires on it; FLOPs never below
the HLO count of dots and convolutions.

The simulated runs are timed by sleeps (the host's batches and the device's steps). Their precondition is
a machine that wakes a sleeping thread on time: each run measures how late its host's sleeps woke, and on
a busy machine (later than ``LATE_S`` on average, where the figures' tolerances no longer hold) the test
skips with that measurement instead of comparing figures that the load, not the code, decided. What the
timer computes from a given log is tested against a fake clock in tests/training/test_timing.py."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax.training import CrossEntropy, train
from gensim_jax.training.hlo import matmul_flops, parse_hlo, program_flops
from gensim_jax.training.simulated_device import SimulatedDevice
from gensim_jax.training.timing import StepTimer
from tests.training._tiny import tiny_state

#: the mean lateness of the simulation's sleeps above which the machine is too busy for its figures
LATE_S = 0.002


def _source(host_s: float, late: list):
    """An endless stream whose every batch costs ``host_s`` seconds of host time (sleep: no CPU); appends
    to ``late`` how much later than asked each sleep woke."""
    x = np.zeros((4, 6), np.float32)
    while True:
        t0 = time.perf_counter()
        time.sleep(host_s)
        late.append(time.perf_counter() - t0 - host_s)
        yield {"x": x}


def _require_timely(late: list, what: str) -> None:
    """Skip (with the measurement) when the sleeps that time the simulation woke late: a busy machine."""
    mean = float(np.mean(late)) if late else 0.0
    if mean > LATE_S:
        pytest.skip(
            f"machine too busy for a sleep-timed simulation ({what}): its {len(late)} host sleeps woke "
            f"{1e3 * mean:.1f} ms late on average (max {1e3 * max(late):.1f} ms; the figures need under "
            f"{1e3 * LATE_S:.0f} ms)"
        )


def _timer_loop(host_s: float, device_s: float, steps: int = 16, log_every: int = 4):
    """A bare loop: wait for a batch, dispatch a step on the simulated device, sync at log boundaries.
    Returns the windows after the first (which holds the start) and the true idle fraction over them."""
    dev = SimulatedDevice(device_s)
    timer = StepTimer(global_batch_size=4)
    late: list = []
    it = _source(host_s, late)
    windows, spans = [], []
    t_window = time.perf_counter()
    timer.start()
    for i in range(1, steps + 1):
        timer.next_batch(it)
        _, metrics = timer.step(dev.step_fn(), None, None)
        timer.watch(metrics)
        if i % log_every == 0:
            jax.block_until_ready(metrics)
            now = time.perf_counter()
            windows.append(timer.window())
            spans.append((t_window, now))
            t_window = now
    timer.close()
    dev.close()
    _require_timely(late, f"a bare loop of {host_s * 1e3:.0f} ms batches and {device_s * 1e3:.0f} ms steps")
    idle = sum(dev.idle_seconds(a, b) for a, b in spans[1:])
    wall = sum(b - a for a, b in spans[1:])
    return windows[1:], idle / wall


@pytest.mark.slow
@pytest.mark.parametrize("ratio", [0.5, 0.25])
def test_idle_fraction_of_a_starved_device_matches_its_log(ratio):
    windows, truth = _timer_loop(host_s=0.04, device_s=0.04 * ratio)
    measured = np.mean([w["perf/device_idle_fraction"] for w in windows])
    assert truth == pytest.approx(1 - ratio, abs=0.1)  # the device runs ratio of each host batch's time
    assert measured == pytest.approx(truth, abs=0.05)
    # in this bare loop the host does nothing but wait for batches: all of the idle time is for want of one
    assert np.mean([w["perf/input_idle_fraction"] for w in windows]) == pytest.approx(measured, abs=0.02)


@pytest.mark.slow
def test_a_fed_device_reads_little_idle_time_while_the_host_waits():
    """The device's step (60 ms) is longer than the host's batch (40 ms): the host spends most of its time
    blocked on the next batch (what the old metric called input-bound), while the device idles only
    after each log boundary's fetch drained its queue (one batch's wait per window)."""
    windows, truth = _timer_loop(host_s=0.04, device_s=0.06, steps=24, log_every=8)
    measured = np.mean([w["perf/device_idle_fraction"] for w in windows])
    assert truth < 0.12 and measured == pytest.approx(truth, abs=0.05)
    assert all(w["perf/data_wait_fraction"] > 0.4 for w in windows)


def test_without_watched_steps_there_is_no_idle_figure():
    timer = StepTimer(track_device_idle=False)
    timer.step(lambda: 0)
    assert "perf/device_idle_fraction" not in timer.window()
    timer.close()


def _train(tmp_path, capsys, host_s, device_s, steps=24, log_every=6):
    """Train through the loop on the simulated device; returns the windows after the first two, the true
    idle fraction over them (the device's log, from the end of the step that closed the second window:
    the first boundaries compile the loop's metric reductions, host time that belongs to their windows)
    and what the run printed on stderr."""
    dev = SimulatedDevice(device_s)
    late: list = []
    try:
        res = train(
            tiny_state(),
            CrossEntropy(input_key="x"),
            lambda position: _source(host_s, late),
            num_steps=steps,
            workdir=tmp_path,
            log_every=log_every,
            progress=False,
            tensorboard=False,
            step_fn=dev.step_fn(),
        )
    finally:
        dev.close()
    _require_timely(late, f"a training loop of {host_s * 1e3:.0f} ms batches and {device_s * 1e3:.0f} ms steps")
    windows = [r for r in res.history if "perf/device_idle_fraction" in r and r["step"] > 2 * log_every]
    start, end = dev.busy[2 * log_every - 1][1], dev.busy[-1][1]
    return windows, dev.idle_seconds(start, end) / (end - start), capsys.readouterr().err


def _weighted(windows, key="perf/device_idle_fraction"):
    w = np.array([r["perf/step_time_s"] for r in windows])
    return float(np.sum(w * [r[key] for r in windows]) / np.sum(w))


@pytest.mark.slow
def test_the_training_loop_records_idle_time_and_warns_only_when_starved(tmp_path, capsys):
    starved, truth, warned = _train(tmp_path / "starved", capsys, host_s=0.03, device_s=0.01)
    assert truth > 0.5 and _weighted(starved) == pytest.approx(truth, abs=0.05)
    assert _weighted(starved, "perf/input_idle_fraction") > 0.5  # most of it for want of the next batch
    assert "the device sat idle waiting for the next batch" in warned
    # fed: the device idles only after each log boundary's fetch has drained its queue (one batch's wait)
    fed, truth, quiet = _train(tmp_path / "fed", capsys, host_s=0.01, device_s=0.04)
    assert _weighted(fed) == pytest.approx(truth, abs=0.05) and truth < 0.1
    assert "input-bound" not in quiet


_CUDNN = 'window={size=3x3}, dim_labels=b01f_o01i->b01f, custom_call_target="__cudnn$conv%s"'
_GPU_TEXT = f"""HloModule m

ENTRY %main (x: f32[8,32,32,4], w: f32[16,3,3,4]) -> f32[8,30,30,16] {{
  %x = f32[8,32,32,4]{{3,2,1,0}} parameter(0)
  %w = f32[16,3,3,4]{{3,2,1,0}} parameter(1)
  ROOT %y = (f32[8,30,30,16]{{3,2,1,0}}, u8[0]{{0}}) custom-call(%x, %w), {_CUDNN % "Forward"}
}}
"""


class _Compiled:
    """What program_flops reads of a compiled program: a cost analysis and the HLO text."""

    def __init__(self, cost, text):
        self._cost, self._text = cost, text

    def cost_analysis(self):
        return self._cost

    def as_text(self):
        return self._text


def test_flops_add_the_cudnn_calls_that_the_cost_analysis_leaves_out():
    conv = 2 * (8 * 30 * 30 * 16) * (3 * 3 * 4)
    got = program_flops(_Compiled({"flops": 1234.0}, _GPU_TEXT))  # GPU cost analysis: the fusions only
    assert got.flops == 1234.0 + conv and got.compiler == 1234.0 and got.hlo == conv
    assert got.source.startswith("compiler cost analysis (1234, without library calls) + the cuBLAS/cuDNN")
    none = program_flops(_Compiled({}, _GPU_TEXT))  # a compile-only plug-in with no count at all
    assert none.flops == conv and none.compiler is None and none.source.startswith("counted from the compiled HLO")
    # a cost analysis that counts the call (at least half of the HLO count, which includes padding taps)
    counted = program_flops(_Compiled({"flops": 0.8 * conv}, _GPU_TEXT))
    assert counted.flops == 0.8 * conv and counted.source == "compiler cost analysis"


def test_a_complete_cost_analysis_is_kept():
    """XLA:CPU counts the convolution itself and makes no library call: its figure stays."""
    x = jnp.ones((8, 32, 32, 4))
    w = jnp.ones((3, 3, 4, 16))
    f = jax.jit(
        lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    )
    compiled = f.lower(x, w).compile()
    got = program_flops(compiled)
    counted = matmul_flops(parse_hlo(compiled.as_text()))
    assert counted == 2 * (8 * 30 * 30 * 16) * (3 * 3 * 4)
    assert got.source == "compiler cost analysis" and got.flops >= counted
