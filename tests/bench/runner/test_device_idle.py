"""bench.runner.device_idle on a small stream: one line per ratio with the measured figures and the simulated
device's own log (the figure's accuracy is tested with controlled times in tests/training/test_device_idle.py;
at a few milliseconds per step on a loaded CPU it is only within about 0.1)."""

import pytest

from bench.runner import device_idle as runner_device_idle


@pytest.mark.slow
def test_quick_rows_compare_the_metric_with_the_device_log():
    lines = runner_device_idle.measure(
        "imagenet_hierarchy",
        "cpu_small",
        "simclr",
        {"data.image_size": 32, "batch_size": 16, "data.train_per_leaf": 2},
        log_every=3,
        windows=2,
    )
    assert [ln["params"]["ratio"] for ln in lines] == list(runner_device_idle.RATIOS)
    for ln in lines:
        assert ln["bench"] == "runner_device_idle" and ln["params"]["size"] == 32
        assert 0 <= ln["device_idle_fraction"] <= 1 and 0 <= ln["input_idle_fraction"] <= ln["device_idle_fraction"]
        assert ln["host_ms_per_batch"] > 0 and ln["params"]["simulated_step_ms"] > 0
    for ln in lines:
        assert 0 <= ln["true_idle_fraction"] <= 1
        assert ln["metric_error"] == pytest.approx(ln["device_idle_fraction"] - ln["true_idle_fraction"], abs=1e-3)
