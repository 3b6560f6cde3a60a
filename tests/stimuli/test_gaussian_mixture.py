"""Tests of gensim_jax.stimuli.gaussian_mixture: moments, component metadata, Eq. A3 triplets."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from gensim_jax.stimuli import gaussian_mixture as gmm


def _three_component_mixture():
    a = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, -0.4], [0.0, -0.4, 0.5]])
    b = np.array([[0.2, 0.05, 0.0], [0.05, 3.0, 0.0], [0.0, 0.0, 1.0]])
    c = np.diag([1.0, 0.1, 4.0])
    means = [[0.0, 1.0, -2.0], [5.0, -1.0, 0.0], [-3.0, 4.0, 2.0]]
    return gmm.GaussianMixture.create([0.2, 0.5, 0.3], means, np.stack([a, b, c]))


def test_appendix_h_mixture():
    m = gmm.appendix_h_mixture()
    np.testing.assert_array_equal(m.means, [[5.0, 5.0], [1.0, 1.0]])
    np.testing.assert_array_equal(m.covariances, np.stack([np.eye(2)] * 2))
    np.testing.assert_array_equal(m.weights, [0.5, 0.5])
    x, c = gmm.sample_points(m, 0, 40000)
    for k, mu in enumerate(([5.0, 5.0], [1.0, 1.0])):
        xk = x[c == k]
        # 5 standard errors of a unit-variance mean
        np.testing.assert_allclose(xk.mean(0), mu, atol=5 / np.sqrt(len(xk)))
        np.testing.assert_allclose(np.cov(xk.T), np.eye(2), atol=0.05)


def test_sample_moments_and_weights_match():
    m = _three_component_mixture()
    n = 150000
    x, c = gmm.sample_points(m, np.random.default_rng(1), n)
    assert x.shape == (n, 3) and c.shape == (n,)
    freq = np.bincount(c, minlength=3) / n
    np.testing.assert_allclose(freq, m.weights, atol=5 * np.sqrt(0.25 / n))
    for k in range(3):
        xk = x[c == k]
        se = np.sqrt(np.diag(m.covariances[k]) / len(xk))
        assert np.all(np.abs(xk.mean(0) - m.means[k]) < 5 * se)
        # covariance entries: standard error of sample cov ~ sqrt((s_ii s_jj + s_ij^2) / n)
        s = m.covariances[k]
        se_cov = np.sqrt((np.outer(np.diag(s), np.diag(s)) + s**2) / len(xk))
        assert np.all(np.abs(np.cov(xk.T) - s) < 5 * se_cov)
    # overall mean and covariance of the mixture (law of total covariance)
    mean = m.weights @ m.means
    centred = m.means - mean
    cov = np.einsum("k,kij->ij", m.weights, m.covariances) + np.einsum("k,ki,kj->ij", m.weights, centred, centred)
    assert np.all(np.abs(x.mean(0) - mean) < 5 * np.sqrt(np.diag(cov) / n))
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.1)


def test_component_metadata_is_the_generating_component():
    """Given its component, a point is exactly N(mu_k, Sigma_k): Mahalanobis^2 ~ chi^2_D."""
    m = _three_component_mixture()
    x, c = gmm.sample_points(m, 7, 30000)
    for k in range(3):
        diff = x[c == k] - m.means[k]
        d2 = np.einsum("ni,ij,nj->n", diff, np.linalg.inv(m.covariances[k]), diff)
        assert stats.kstest(d2, stats.chi2(df=3).cdf).pvalue > 1e-3
        # and against a wrong component it is not
        wrong = x[c == k] - m.means[(k + 1) % 3]
        d2w = np.einsum("ni,ij,nj->n", wrong, np.linalg.inv(m.covariances[k]), wrong)
        assert stats.kstest(d2w, stats.chi2(df=3).cdf).pvalue < 1e-10


def test_log_density_matches_scipy_and_integrates_to_one():
    m = _three_component_mixture()
    x = np.random.default_rng(0).normal(size=(50, 3)) * 3
    expected = np.log(sum(w * stats.multivariate_normal(mu, s).pdf(x) for w, mu, s in zip(m.weights, m.means, m.covariances)))
    np.testing.assert_allclose(m.log_density(x), expected, rtol=1e-10)
    one_d = gmm.GaussianMixture.create([1.0, 3.0], [[-2.0], [1.5]], [0.5, 2.0])
    total, _ = integrate.quad(lambda t: np.exp(one_d.log_density(np.array([t])))[()], -np.inf, np.inf)
    assert total == pytest.approx(1.0, abs=1e-8)
    # far from every component the log density stays finite (log-sum-exp)
    assert np.isfinite(m.log_density(np.full(3, 1e3)))


def test_triplet_structure_eq_a3():
    m = _three_component_mixture()
    n = 60000
    t = gmm.sample_triplets(m, 3, n)
    for key in ("anchor", "positive", "negative"):
        assert t[key].shape == (n, 3)
    pos_c, neg_c = t["positive_component"], t["negative_component"]
    # anchor and positive share the component, drawn from the prior
    np.testing.assert_allclose(np.bincount(pos_c, minlength=3) / n, m.weights, atol=5 * np.sqrt(0.25 / n))
    # the negative's component is drawn independently from the same prior
    np.testing.assert_allclose(np.bincount(neg_c, minlength=3) / n, m.weights, atol=5 * np.sqrt(0.25 / n))
    joint = np.zeros((3, 3))
    np.add.at(joint, (pos_c, neg_c), 1.0 / n)
    np.testing.assert_allclose(joint, np.outer(m.weights, m.weights), atol=5 * np.sqrt(0.25 / n))
    assert np.mean(pos_c == neg_c) == pytest.approx(np.sum(m.weights**2), abs=5 * np.sqrt(0.25 / n))
    # each point is distributed as its component; anchor and positive are independent draws
    for k in range(3):
        sel = pos_c == k
        for key in ("anchor", "positive"):
            se = np.sqrt(np.diag(m.covariances[k]) / sel.sum())
            assert np.all(np.abs(t[key][sel].mean(0) - m.means[k]) < 5 * se)
        sel_n = neg_c == k
        se_n = np.sqrt(np.diag(m.covariances[k]) / sel_n.sum())
        assert np.all(np.abs(t["negative"][sel_n].mean(0) - m.means[k]) < 5 * se_n)
        a = t["anchor"][sel] - m.means[k]
        p = t["positive"][sel] - m.means[k]
        cross_cov = a.T @ p / sel.sum()
        assert np.all(np.abs(cross_cov) < 5 * np.sqrt(np.outer(np.diag(m.covariances[k]), np.diag(m.covariances[k])) / sel.sum()))
    assert not np.any(np.all(t["anchor"] == t["positive"], axis=1))


def test_determinism_given_seed():
    m = gmm.appendix_h_mixture()
    a = gmm.sample_triplets(m, np.random.default_rng(5), 100)
    b = gmm.sample_triplets(m, np.random.default_rng(5), 100)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    x1, c1 = gmm.sample_points(m, 9, 100)
    x2, c2 = gmm.sample_points(m, 9, 100)
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(c1, c2)
    x3, _ = gmm.sample_points(m, 10, 100)
    assert not np.array_equal(x1, x3)
    assert gmm.sample_points(m, 0, 0)[0].shape == (0, 2)


def test_create_forms_and_bad_input():
    iso = gmm.GaussianMixture.create(None, [[0.0, 0.0], [1.0, 1.0]], [2.0, 0.5])
    np.testing.assert_array_equal(iso.covariances[1], 0.5 * np.eye(2))
    np.testing.assert_array_equal(iso.weights, [0.5, 0.5])
    diag = gmm.GaussianMixture.create([2, 6], [[0.0, 0.0], [1.0, 1.0]], [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(diag.covariances[1], np.diag([3.0, 4.0]))
    np.testing.assert_allclose(diag.weights, [0.25, 0.75])
    with pytest.raises(ValueError, match="means"):
        gmm.GaussianMixture.create([1.0], None)
    with pytest.raises(ValueError, match=r"weights must have shape \(K,\) = \(2,\)"):
        gmm.GaussianMixture.create([1.0, 1.0, 1.0], [[0.0], [1.0]])
    with pytest.raises(ValueError, match="non-negative"):
        gmm.GaussianMixture.create([1.0, -1.0], [[0.0], [1.0]])
    with pytest.raises(ValueError, match="covariances must have shape"):
        gmm.GaussianMixture.create(None, [[0.0, 0.0], [1.0, 1.0]], np.ones((3, 2, 2)))
    with pytest.raises(ValueError, match="positive definite"):
        gmm.GaussianMixture.create(None, [[0.0, 0.0]], [[[1.0, 2.0], [2.0, 1.0]]])
    with pytest.raises(ValueError, match="symmetric"):
        gmm.GaussianMixture.create(None, [[0.0, 0.0]], [[[1.0, 0.5], [0.0, 1.0]]])
    with pytest.raises(ValueError, match="finite"):
        gmm.GaussianMixture.create(None, [[0.0, np.nan]])
    m = gmm.appendix_h_mixture()
    with pytest.raises(ValueError, match="n must be"):
        gmm.sample_points(m, 0, -1)
    with pytest.raises(ValueError, match="rng"):
        gmm.sample_triplets(m, 0.5, 3)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        m.sample_given(0, np.array([0, 2]))
    with pytest.raises(ValueError, match="D=2"):
        m.log_density(np.zeros((4, 3)))
