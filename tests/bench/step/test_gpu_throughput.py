"""Smoke test of bench/step/gpu_throughput.py on the CPU at a tiny size (no timing asserted).

Checks the device prefetcher against the plain iteration (same batches, same order), the FLOP
count against the dense layer's own ``2 * B * in * out`` count, and that one short run of the
GenSim step on LeNet-5 (bfloat16 compute, both input kinds) reports consistent numbers.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bench.step import gpu_throughput as gt


def test_prefetch_yields_the_same_batches_in_order():
    rng = np.random.default_rng(0)
    host = [{"x": rng.standard_normal((3, 2)).astype(np.float32), "i": np.int32(i)} for i in range(5)]
    for size in (1, 2, 7):
        out = list(gt.prefetch_to_device(iter(host), size=size))
        assert len(out) == 5
        for h, d in zip(host, out):
            assert isinstance(d["x"], jax.Array)
            np.testing.assert_array_equal(np.asarray(d["x"]), h["x"])
            assert int(d["i"]) == int(h["i"])
    with pytest.raises(ValueError, match="prefetch size"):
        next(gt.prefetch_to_device(iter(host), size=0))


def test_cost_analysis_counts_a_matmul():
    # XLA's cost analysis of x @ w is 2 * B * I * O flops; the helper reads the same field.
    x, w = jnp.ones((8, 16)), jnp.ones((16, 4))
    cost = jax.jit(lambda a, b: a @ b).lower(x, w).cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    assert cost["flops"] == pytest.approx(2 * 8 * 16 * 4, rel=0.05)


def test_input_streams_shapes_and_device_conversion():
    syn = next(gt.synthetic_batches(3, 32, seed=0))
    assert syn["image"].shape == (3, 32, 32, 3) and syn["features"].shape == (3, gt.N_FEATURES)
    quad = next(gt.quadrilateral_batches(3, 32, seed=0))
    assert quad["image"].shape == (3, 32, 32) and quad["image"].dtype == np.uint8
    model_in = gt._to_model_input(quad)
    assert model_in["image"].shape == (3, 32, 32, 3) and model_in["image"].dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(model_in["image"][..., 2]), quad["image"] / 255.0, rtol=1e-6)


@pytest.mark.slow
def test_tiny_run_reports_consistent_numbers():
    input_kind = "quadrilaterals"
    out = gt.measure(
        batch=4,
        size=32,
        steps=2,
        warmup=1,
        dtype="bfloat16",
        input_kind=input_kind,
        prefetch=2,
        peak_tflops=1.0,
        model_name="lenet5",
    )
    assert out["backend"] == jax.default_backend() and out["input"] == input_kind
    assert out["loss_finite"] and out["step_s"] > 0 and out["compile_s"] > 0
    assert math.isclose(out["images_per_s"], 4 / out["step_s"], rel_tol=1e-2)
    assert out["flops_per_image"] > 0
    assert math.isclose(out["achieved_tflops"], out["flops_per_image"] * out["images_per_s"] / 1e12, rel_tol=1e-2)
    assert math.isclose(out["mfu"], out["achieved_tflops"] / 1.0, rel_tol=1e-3)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="batch"):
        gt.measure(batch=1, size=32, model_name="lenet5")
    with pytest.raises(ValueError, match="input"):
        gt.measure(batch=4, size=32, input_kind="imagenet", model_name="lenet5")
    with pytest.raises(ValueError, match="tiny"):
        gt.measure(batch=4, size=32, tiny=True, model_name="lenet5")
