"""scripts/geoclidean_report.py: the 95% t-interval and the order checks against explicit formulas."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("geoclidean_report", REPO / "scripts" / "geoclidean_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_t_interval_and_welch_by_hand():
    report = _load()
    mean, half, n = report.t_interval([0.6, 0.7, 0.8])
    # t_{0.975, 2} = 4.302653; s = 0.1
    assert (mean, n) == (pytest.approx(0.7), 3) and half == pytest.approx(4.302653 * 0.1 / np.sqrt(3), rel=1e-6)
    assert np.isnan(report.t_interval([0.5])[1])
    a, b = [0.7, 0.8, 0.75], [0.5, 0.55, 0.6]
    va, vb = np.var(a, ddof=1) / 3, np.var(b, ddof=1) / 3
    t, p = report.welch(a, b)
    assert t == pytest.approx((np.mean(a) - np.mean(b)) / np.sqrt(va + vb))
    assert 0 < p < 0.05


def test_order_checks_and_summary_from_per_run():
    report = _load()
    runs = lambda c, f: [
        {"acc_close": c + d, "acc_far": f + d, "auc_close": 0.5, "auc_far": 0.5} for d in (-0.01, 0, 0.01)
    ]  # noqa: E731
    results = {
        "per_run": {
            "official/benchmark": {
                "pixels": runs(0.6, 0.6)[:1],
                "gensim": runs(0.8, 0.7),
                "class_triplet": runs(0.7, 0.75),
                "simclr": runs(0.6, 0.6),
            }
        }
    }
    checks = report.order_checks(results)
    assert checks["official/benchmark:acc_close"]["paper_order_on_means"] is True
    assert checks["official/benchmark:acc_far"]["paper_order_on_means"] is False
    summary = report.summarize(results)["official/benchmark"]
    assert summary["gensim"]["acc_close"][0] == pytest.approx(0.8) and summary["pixels"]["acc_close"][2] == 1
