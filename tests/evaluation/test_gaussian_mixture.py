import numpy as np
import pytest
from scipy import stats

from gensim_jax.evaluation import gaussian_mixture as protocol


def test_threshold_accuracy_counts_nearest_centre():
    fit = np.array([[0.0], [0.2], [10.0], [9.8]])
    fit_c = np.array([0, 0, 1, 1])
    test = np.array([[1.0], [4.0], [6.0], [8.0], [5.2]])
    test_c = np.array([0, 0, 1, 1, 0])
    # centres 0.1 and 9.9: predictions 0, 0, 1, 1, 1 -> 4 of 5 correct
    assert protocol.threshold_accuracy(fit, fit_c, test, test_c) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="at least two components"):
        protocol.threshold_accuracy(fit, np.zeros(4, int), test, test_c)


def test_binned_spearman_on_a_monotone_relation_and_by_hand():
    rng = np.random.default_rng(0)
    d = rng.uniform(0, 10, 5000)
    s = np.exp(-d) + rng.normal(0, 1e-3, d.size)
    rho, p, dof = protocol.binned_spearman(d, s, 50)
    assert rho < -0.99 and p < 1e-10 and dof == 48
    # bins of 2 sorted pairs each: means computed by hand
    d = np.array([4.0, 1.0, 3.0, 2.0])
    s = np.array([1.0, 4.0, 3.0, 2.0])
    rho, _, _ = protocol.binned_spearman(d, s, 2)  # bins {1,2}->s 3.0, {3,4}->s 2.0
    assert rho == pytest.approx(stats.spearmanr([1.5, 3.5], [3.0, 2.0]).statistic)
    with pytest.raises(ValueError, match="num_bins"):
        protocol.binned_spearman(d, s, 10)


def test_mean_ci_is_mean_pm_196_se():
    v = np.arange(10.0)
    lo, hi = protocol.mean_ci(v)
    se = np.std(v, ddof=1) / np.sqrt(10)
    assert lo == pytest.approx(4.5 - 1.96 * se) and hi == pytest.approx(4.5 + 1.96 * se)
