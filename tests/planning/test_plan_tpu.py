"""Ahead-of-time plans of the train step for a 4-chip TPU v5e slice (libtpu, no TPU needed).

Each compile here is of a small two-layer perceptron under the all-pairs GenSim regression and
takes seconds; the module shares them through module-scoped fixtures.
"""

import json
import re
import warnings

import jax
import pytest

from gensim_jax import planning
from tests.planning._steps import all_pairs_build

IN, HIDDEN, EMBED = 32, 256, 256
B = 1024


@pytest.fixture(scope="module")
def build():
    return all_pairs_build(IN, HIDDEN, EMBED)


@pytest.fixture(scope="module")
def plan_4(build):
    sb = build(B)
    return planning.plan_step(sb.fn, sb.args, topology="v5e:2x2", experiment="mlp", config="test", keep_hlo=True)


def analytic_flops_per_device(b, n, loss_products=3, dims=(IN, HIDDEN, EMBED)):
    """Matmul FLOPs of one step, per device (data parallel over n devices).

    Encoder: forward ``2 b (in h + h d)``; backward: layer 2 needs ``dW`` and ``dh`` (2 x its forward),
    layer 1 only ``dW`` (the input is not differentiated: 1 x).  Loss: each device forms its
    ``(b/n) x b`` block of ``S = Z Z^T`` (``2 (b/n) b d``); the backward pass needs ``dS Z + dS^T Z``:
    two more such products, or one when XLA rewrites it as ``(dS + dS^T) Z`` (an all-to-all brings
    the transposed blocks; seen at small shapes), hence ``loss_products`` = 3 or 2.
    """
    i, h, d = dims
    enc = 2 * b * i * h * 2 + 2 * b * h * d * 3
    loss = loss_products * 2 * (b // n) * b * d
    return enc / n + loss


def _closest_count(got, b, n):
    return min((analytic_flops_per_device(b, n, k) for k in (3, 2)), key=lambda e: abs(got - e))


@pytest.mark.slow
def test_plan_on_four_chips(plan_4):
    """FLOPs against the analytic count; memory parts, collectives and roofline of the report (one compile)."""
    got = plan_4["flops_per_device"]
    expected = _closest_count(got, B, 4)
    assert plan_4["flops_source"] == "compiler cost analysis"
    assert abs(got - expected) / expected < 0.05, (got, expected)
    # the HLO matmul counter (used where the compiler gives no FLOPs: GPU) finds the same matmuls
    assert abs(plan_4["matmul_flops_per_device_hlo"] - expected) / expected < 0.02
    assert plan_4["flops_per_example"] == pytest.approx(got * 4 / B)

    d = json.loads(plan_4.to_json())
    assert d["fits"] is True and d["num_devices"] == 4 and d["per_device_batch"] == B // 4
    br = d["memory_breakdown_bytes"]
    n_params = IN * HIDDEN + HIDDEN + HIDDEN * EMBED + EMBED
    assert br["params"] == 4 * n_params  # replicated float32 parameters
    assert br["opt_state"] == pytest.approx(2 * 4 * n_params, abs=64)  # Adam's two moments (+ count)
    assert br["batch"] == (B // 4) * (IN * 4 + 4)  # this device's rows of x and label
    ma = d["compiler_memory_analysis"]
    assert ma["argument_size_in_bytes"] >= br["params"] + br["opt_state"] + br["batch"]
    assert d["memory_per_device_bytes"] < d["memory_capacity_bytes"]
    ops = {c["op"] for c in d["collectives"]}
    assert "all-reduce" in ops  # the gradients of replicated parameters
    assert "all-gather" in ops  # the embeddings of the global batch for the B x B loss
    r = d["roofline"]
    assert r["step_seconds"] >= max(r["compute_seconds"], r["memory_seconds"])
    assert r["examples_per_second"] == pytest.approx(B / r["step_seconds"])
    text = plan_4.to_text()
    assert "fits:" in text and "from the compiler:" in text and "estimates:" in text


def _has_block(rep, rows, cols):
    return re.search(rf"f32\[{rows},{cols}\]", rep.hlo_text) is not None


@pytest.mark.slow
def test_all_pairs_block_per_device_scales_as_b2_over_n():
    """Each device forms its (B/n) x B block of the B x B similarity: (B/4) x B on 4 chips, (B/8) x B on 8.

    Its matmul FLOPs follow B^2/n: 2 or 3 products of 2 (B/n) B d FLOPs each (see
    :func:`analytic_flops_per_device`).  A smaller encoder than the other tests: two quick compiles.
    """
    dims, b = (16, 128, 128), 512
    sb = all_pairs_build(*dims)(b)
    plans = {
        n: planning.plan_step(sb.fn, sb.args, topology=t, keep_hlo=True) for n, t in ((4, "v5e:2x2"), (8, "v5e:2x4"))
    }
    assert _has_block(plans[4], b // 4, b) and not _has_block(plans[4], b // 8, b)
    assert _has_block(plans[8], b // 8, b)
    for n, rep in plans.items():
        loss = rep["matmul_flops_per_device_hlo"] - analytic_flops_per_device(b, n, 0, dims)
        products = loss / (2 * (b // n) * b * dims[2])
        assert round(products) in (2, 3) and products == pytest.approx(round(products), rel=0.02), (n, products)


@pytest.mark.slow
def test_does_not_fit_names_the_buffer(build):
    sb = build(131072)
    rep = planning.plan_step(sb.fn, sb.args, topology="v5e:2x2")
    assert rep.fits is False
    d = rep.as_dict()
    assert d["margin_bytes"] < 0
    assert d["dominant_buffer"]["buffer"] == "temporaries"
    assert "131072, 131072" in d["dominant_buffer"]["largest_array"]["shape"]
    line = rep.fit_line()
    assert line.startswith("does not fit") and "temporaries" in line
    json.loads(rep.to_json())


# --- a small CORnet-Z config of an experiment (the runner's step), against an analytic count ---

#: CORnet-Z (Kubilius et al. 2018): four areas conv(k, stride, padding k // 2) + ReLU + max-pool 3/2/1,
#: then global average pooling; (kernel, stride, in channels, out channels) of V1, V2, V4, IT.
CORNET_Z = ((7, 2, 3, 64), (3, 1, 64, 128), (3, 1, 128, 256), (3, 1, 256, 512))


def _valid_taps(n_in, k, s, p):
    """Kernel taps that land inside the input, summed over the outputs of a 1-D window (padding excluded)."""
    n_out = (n_in + 2 * p - k) // s + 1
    return n_out, sum(sum(0 <= o * s - p + t < n_in for t in range(k)) for o in range(n_out))


def cornet_z_training_flops_per_example(size, classes, padded=False):
    """Multiply-adds x 2 of one training example: convolutions over the real (unpadded) input, and the classifier.

    A convolution's forward pass is ``2 C_in C_out`` FLOPs per valid (output position, tap) pair; the
    backward pass repeats it for the weight gradient and, except in V1 (the image is not
    differentiated), for the input gradient: 2x the forward in V1, 3x elsewhere.  Elementwise work
    (bias, ReLU, pooling, loss, optimizer) is left out: a few percent at these shapes.  ``padded``:
    count every tap of every window, the zeros of the padding included.
    """
    total, n = 0, size
    for i, (k, s, cin, cout) in enumerate(CORNET_Z):
        n_conv, taps = _valid_taps(n, k, s, k // 2)
        taps = n_conv * k if padded else taps
        total += (2 if i == 0 else 3) * 2 * cin * cout * taps**2
        n = (n_conv + 2 - 3) // 2 + 1  # max-pool 3, stride 2, padding 1
    return total + 3 * 2 * CORNET_Z[-1][3] * classes


@pytest.mark.slow
def test_cornet_z_config_flops_match_the_analytic_count():
    """quadrilaterals' CORnet-Z at 32 x 32 px (supervised arm, SGD), global batch 64 on a 4-chip v5e slice.

    The compiler's FLOPs per example equal the count of the convolutions and the classifier within
    5%; the padded count (every tap of every window) would be 46% higher, so padding is excluded.
    """
    from gensim_jax import experiments as registry
    from gensim_jax.training import runner

    exp = registry.load("quadrilaterals")
    sets = {"data.image_size": 32, "batch_size": 64, "optim.optimizer": "sgd", "optim.momentum": 0.0}
    cfg = exp.get_config("cpu_small", **sets)
    fn, args = runner.abstract_step_inputs(exp, cfg, "supervised")
    params = args[0].params
    # the analytic model is the real one: same kernels, 11 shape classes on the 512-d embedding
    assert [params[a]["conv"]["kernel"].shape for a in ("V1", "V2", "V4", "IT")] == [
        (k, k, cin, cout) for k, _, cin, cout in CORNET_Z
    ]
    classes = params["classifier"]["kernel"].shape[1]
    assert classes == 11 and args[1]["image"].shape == (64, 32, 32, 3)

    rep = planning.plan_step(fn, args, topology="v5e:2x2")
    expected = cornet_z_training_flops_per_example(32, classes)
    assert rep["flops_source"] == "compiler cost analysis"
    assert rep["flops_per_example"] == pytest.approx(expected, rel=0.05)
    assert rep["flops_per_device"] == pytest.approx(rep["flops_per_example"] * 64 / 4)
    # the HLO counter (used on GPU) counts the padding taps of the convolutions XLA keeps as they are:
    # between the exact count and the fully padded one
    padded = cornet_z_training_flops_per_example(32, classes, padded=True)
    assert padded > 1.4 * expected
    per_example_hlo = rep["matmul_flops_per_device_hlo"] * 4 / 64
    assert expected * 0.99 <= per_example_hlo <= padded * 1.01


def test_planning_with_a_persistent_compilation_cache_warns_nothing(build, tmp_path):
    # a user's JAX_COMPILATION_CACHE_DIR: the second plan of the same step would find the first one's
    # entry, which a compile for abstract devices cannot load (JAX warned once per entry)
    keys = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
    before = {k: getattr(jax.config, k) for k in keys}
    jax.config.update("jax_compilation_cache_dir", str(tmp_path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    try:
        sb = build(64)
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            reports = [planning.plan_step(sb.fn, sb.args, topology="v5e:2x2") for _ in range(2)]
    finally:
        for k, v in before.items():
            jax.config.update(k, v)
    assert reports[0]["flops_per_device"] == reports[1]["flops_per_device"] > 0
