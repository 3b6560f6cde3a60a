"""The pair-by-pair comparison of gensim_jax.testing.asserts on hand-made estimates (no sampling)."""

import numpy as np
import pytest

from gensim_jax.testing import (
    KernelMismatchError,
    LogSimilarityEstimate,
    assert_log_similarity_close,
    compare_log_similarity,
)


def fake_estimate(values, se):
    values, se = np.asarray(values, float), np.asarray(se, float)
    return LogSimilarityEstimate(
        values, se, values, np.zeros_like(values), np.zeros_like(values), np.full_like(values, 500.0), 1000
    )


X = (np.arange(4.0), np.arange(4.0) + 10)


def test_tolerance_is_num_se_standard_errors_plus_float_slack():
    est = fake_estimate([1.0, 2.0, -np.inf, 0.0], [0.1, 0.1, np.inf, 0.1])
    ok = compare_log_similarity(lambda a, b: np.array([1.45, 2.0, -np.inf, -0.49]), est, X)
    assert ok.passed and ok.worst_index == 3  # -0.49 is 4.9 se away, the largest ratio
    assert ok.worst_z == pytest.approx(4.9)
    bad = compare_log_similarity(lambda a, b: np.array([1.55, 2.0, -np.inf, 0.0]), est, X)
    assert not bad.passed and bad.num_failed == 1 and bad.worst_index == 0 and bad.worst_z == pytest.approx(5.5)
    assert bad.worst_x1 == 0.0 and bad.worst_x2 == 10.0


def test_infinities_and_nans_fail_with_the_worst_pair_named():
    est = fake_estimate([1.0, -np.inf, 0.0, 0.0], [0.1, np.inf, 0.1, 0.1])
    with pytest.raises(KernelMismatchError) as info:  # a finite value where the model gives -inf
        assert_log_similarity_close(lambda a, b: np.array([1.0, -3.0, 0.0, 0.0]), None, X, estimate=est)
    report = info.value.report
    assert report.worst_index == 1 and np.isinf(report.worst_ratio)
    assert "worst pair #1" in str(info.value) and "FAILED on 1 of 4" in str(info.value)
    nan = compare_log_similarity(lambda a, b: np.array([np.nan, -np.inf, 0.0, 0.0]), est, X)
    assert not nan.passed and nan.worst_index == 0


def test_bad_arguments():
    est = fake_estimate([1.0, 2.0, 3.0, 4.0], [0.1] * 4)
    with pytest.raises(ValueError, match="one value per pair"):
        compare_log_similarity(lambda a, b: np.zeros(3), est, X)
    with pytest.raises(ValueError, match="num_se"):
        compare_log_similarity(lambda a, b: np.zeros(4), est, X, num_se=0)
    with pytest.raises(TypeError, match="LogSimilarityEstimate"):
        compare_log_similarity(lambda a, b: np.zeros(4), (1, 2), X)
    with pytest.raises(ValueError, match="model and key"):
        assert_log_similarity_close(lambda a, b: np.zeros(4), None, X)


def test_a_tiny_effective_sample_size_fails_with_a_clear_message():
    values, se = np.array([1.0, 2.0, -np.inf, 0.0]), np.array([0.1, 0.1, np.inf, 0.1])
    ess = np.array([6.5, 500.0, 0.0, 49.0])  # issue #22: ESS 6.5 of 100,000 used to pass
    est = LogSimilarityEstimate(values, se, values, np.zeros(4), np.zeros(4), ess, 100_000)
    kernel = lambda a, b: np.array([1.0, 2.0, -np.inf, 0.0])  # noqa: E731  (agrees to the digit)
    with pytest.raises(KernelMismatchError) as info:
        assert_log_similarity_close(kernel, None, X, estimate=est)
    report, text = info.value.report, str(info.value)
    assert not report.passed and report.num_low_ess == 2 and report.low_ess_index == 0 and report.num_failed == 2
    assert report.min_ess_required == 50.0
    assert "effective sample size too small on 2 of 4 pairs" in text and "ESS 6.5 of 100000" in text
    assert "Proposal" in text
    # the -inf pair (ESS 0) is exempt; the threshold is adjustable and can be switched off
    assert compare_log_similarity(kernel, est, X, min_ess=5).passed
    assert assert_log_similarity_close(kernel, None, X, estimate=est, min_ess=0).passed
    with pytest.raises(ValueError, match="min_ess"):
        compare_log_similarity(kernel, est, X, min_ess=-1)
