"""bench.runner_device_idle's quick run: one line per arm and ratio, the measured idle fraction near the
simulated device's own log where the device is starved."""

import pytest

from bench import runner_device_idle


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
    starved = lines[1]
    assert starved["true_idle_fraction"] > 0.2
    assert abs(starved["device_idle_fraction"] - starved["true_idle_fraction"]) <= runner_device_idle.STARVED_TOLERANCE
