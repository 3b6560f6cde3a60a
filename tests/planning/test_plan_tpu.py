"""Ahead-of-time plans of the train step for a 4-chip TPU v5e slice (libtpu, no TPU needed).

Each compile here is of a small two-layer perceptron under the all-pairs GenSim regression and
takes seconds; the module shares them through module-scoped fixtures.
"""

import json
import re

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
