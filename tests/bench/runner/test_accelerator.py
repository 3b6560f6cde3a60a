"""bench/runner/accelerator.py: its pure helpers, and the whole command in the CPU smoke mode (``make test``).

The smoke run is a fresh interpreter with two host devices (``--xla_force_host_platform_device_count=2``):
cpu:1 stands in for the accelerator against cpu:0 (a), the small config's step is timed and compared
with the planner's compile (b), and the two-device mesh is compared with one device (c).
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from bench.runner import accelerator

REPO = Path(__file__).resolve().parents[3]


def test_compare_curves():
    assert accelerator.compare_curves([1.0, 2.0], [1.0, 2.0]) == 0.0
    assert accelerator.compare_curves([1.0, 2.1], [1.0, 2.0]) == pytest.approx(0.05)
    assert accelerator.compare_curves([0.01, 0.02], [0.0, 0.0]) == pytest.approx(0.02)  # absolute below |loss| 1
    assert math.isinf(accelerator.compare_curves([1.0, float("nan")], [1.0, 2.0]))
    assert accelerator.compare_curves([float("nan")], [float("nan")]) == 0.0


def test_synthetic_batch_follows_the_spec():
    spec = {
        "image": jax.ShapeDtypeStruct((4, 8, 8, 3), np.float32),
        "label": jax.ShapeDtypeStruct((4,), np.int32),
        "mask": jax.ShapeDtypeStruct((4,), np.bool_),
        "pixels": jax.ShapeDtypeStruct((4, 8, 8, 3), np.uint8),
    }
    b = accelerator._synthetic_batch(spec, 0)
    assert b["pixels"].dtype == np.uint8 and b["pixels"].max() > 200
    assert b["image"].shape == (4, 8, 8, 3) and b["image"].dtype == np.float32 and 0 <= b["image"].min() < 1
    assert (b["label"] == 0).all() and b["mask"].all()


def test_markdown_table_of_hand_made_lines():
    lines = [
        {
            "bench": "accel_loss_curve",
            "experiment": "e",
            "config": "cpu_small",
            "dtype": "float32",
            "steps": 20,
            "device": "cuda:0 (H100)",
            "reference_device": "cpu:0 (cpu)",
            "max_rel_deviation": 3e-4,
            "one_step_update_deviation": [1e-5, 2e-5],
            "curve_max_rel_deviation": 4.7e-2,
            "tolerance": 0.02,
            "met": True,
        },
        {"bench": "accel_multi_device", "experiment": "e", "config": "cpu_small", "skipped": "one device", "met": True},
    ]
    table = accelerator.markdown_table(lines)
    row = "| e | cpu_small | float32 | 20 | cuda:0 (H100) | cpu:0 (cpu) | 3.00e-04 | 2.00e-05 | 4.70e-02 | 0.02 | yes |"
    assert row in table
    assert "skipped: one device" in table


def test_the_full_run_refuses_a_cpu_only_machine():
    if jax.default_backend() != "cpu":
        pytest.skip("an accelerator is present")
    with pytest.raises(SystemExit, match="--smoke"):
        accelerator.accelerator_and_cpu(smoke=False)


@pytest.mark.slow
def test_smoke_run_on_two_host_devices(tmp_path):
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    out, table = tmp_path / "accel.jsonl", tmp_path / "accel.md"
    cmd = [sys.executable, "-m", "bench.runner.accelerator", "--smoke", "--experiments", "gaussian_mixture"]
    cmd += ["--dtypes", "float32", "--out", str(out), "--table", str(table), "--strict"]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(t) for t in out.read_text().splitlines()]
    by = {ln["bench"]: ln for ln in lines}
    assert by["accel_machine"]["smoke"] and by["accel_machine"]["devices"] == ["cpu:0", "cpu:1"]
    curve = by["accel_loss_curve"]
    assert curve["device"].startswith("cpu:1") and curve["reference_device"].startswith("cpu:0")
    assert len(curve["losses"]) == 3 and all(math.isfinite(x) for x in curve["losses"])
    assert curve["met"] and curve["max_rel_deviation"] <= accelerator.F32_RTOL
    # each step from the same state on two CPU devices: the same program, the same numbers
    assert curve["one_step_loss_deviation"] == [0.0] * 3 and curve["one_step_update_deviation"] == [0.0] * 3
    step = by["accel_paper_step"]
    assert "skipped" not in step, step
    assert step["step_s"] > 0 and step["images_per_s"] > 0 and step["compile_s"] > 0 and step["loss_finite"]
    assert step["predicted"]["memory_bytes"] > 0 and step["flops_per_step"] > 0
    multi = by["accel_multi_device"]
    assert multi["num_devices"] == 2 and multi["met"]
    text = table.read_text()
    assert "max loss dev." in text and "max rel. deviation" in text and "images/s" in text and "2x cpu" in text
    assert text.strip() in proc.stdout  # the table is printed too
