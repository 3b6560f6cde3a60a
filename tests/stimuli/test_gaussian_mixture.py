"""Tests of gensim_jax.stimuli.gaussian_mixture: moments, component metadata, Eq. A3 triplets."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from gensim_jax.kernels import gaussian_mixture as kgm
from gensim_jax.stimuli import gaussian_mixture as gmm


class _Params:
    """numpy view of a mixture's parameters for the checks below."""

    def __init__(self, mixture):
        self.mixture = mixture
        self.weights = np.exp(np.asarray(mixture.log_weights, np.float64))
        self.means = np.asarray(mixture.means, np.float64)
        self.covariances = gmm.covariances(mixture)


def _three_component_mixture():
    a = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, -0.4], [0.0, -0.4, 0.5]])
    b = np.array([[0.2, 0.05, 0.0], [0.05, 3.0, 0.0], [0.0, 0.0, 1.0]])
    c = np.diag([1.0, 0.1, 4.0])
    means = [[0.0, 1.0, -2.0], [5.0, -1.0, 0.0], [-3.0, 4.0, 2.0]]
    return gmm.make_mixture(np.array([0.2, 0.5, 0.3]), np.array(means), np.stack([a, b, c]))


def test_appendix_h_mixture():
    m = _Params(gmm.appendix_h_mixture())
    np.testing.assert_array_equal(m.means, [[5.0, 5.0], [1.0, 1.0]])
    np.testing.assert_allclose(m.covariances, np.stack([np.eye(2)] * 2))
    np.testing.assert_allclose(m.weights, [0.5, 0.5])
    x, c = gmm.sample_points(m.mixture, 0, 40000)
    for k, mu in enumerate(([5.0, 5.0], [1.0, 1.0])):
        xk = x[c == k]
        # 5 standard errors of a unit-variance mean
        np.testing.assert_allclose(xk.mean(0), mu, atol=5 / np.sqrt(len(xk)))
        np.testing.assert_allclose(np.cov(xk.T), np.eye(2), atol=0.05)


def test_sample_moments_and_weights_match():
    m = _Params(_three_component_mixture())
    n = 150000
    x, c = gmm.sample_points(m.mixture, np.random.default_rng(1), n)
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
    m = _Params(_three_component_mixture())
    x, c = gmm.sample_points(m.mixture, 7, 30000)
    for k in range(3):
        diff = x[c == k] - m.means[k]
        d2 = np.einsum("ni,ij,nj->n", diff, np.linalg.inv(m.covariances[k]), diff)
        assert stats.kstest(d2, stats.chi2(df=3).cdf).pvalue > 1e-3
        # and against a wrong component it is not
        wrong = x[c == k] - m.means[(k + 1) % 3]
        d2w = np.einsum("ni,ij,nj->n", wrong, np.linalg.inv(m.covariances[k]), wrong)
        assert stats.kstest(d2w, stats.chi2(df=3).cdf).pvalue < 1e-10


def test_sampled_points_follow_the_density_of_the_kernel_module():
    """The sampler and kernels.gaussian_mixture.log_marginal describe the same distribution (1-D KS)."""
    m = gmm.make_mixture(np.array([0.25, 0.75]), np.array([[-2.0], [1.5]]), np.array([[0.5], [2.0]]))
    x, _ = gmm.sample_points(m, 11, 20000)
    grid = np.linspace(-8, 8, 4001)
    pdf = np.exp(np.asarray(kgm.log_marginal(grid[:, None].astype(np.float32), m), np.float64))
    cdf = np.cumsum(pdf) * (grid[1] - grid[0])
    assert integrate.trapezoid(pdf, grid) == pytest.approx(1.0, abs=1e-4)
    assert stats.kstest(x[:, 0], lambda t: np.interp(t, grid, cdf)).pvalue > 1e-3


def test_triplet_structure_eq_a3():
    m = _Params(_three_component_mixture())
    n = 60000
    t = gmm.sample_triplets(m.mixture, 3, n)
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
        assert np.all(
            np.abs(cross_cov) < 5 * np.sqrt(np.outer(np.diag(m.covariances[k]), np.diag(m.covariances[k])) / sel.sum())
        )
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


def test_bad_input():
    m = gmm.appendix_h_mixture()
    with pytest.raises(ValueError, match="n must be"):
        gmm.sample_points(m, 0, -1)
    with pytest.raises(ValueError, match="rng"):
        gmm.sample_triplets(m, 0.5, 3)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        gmm.sample_given(m, 0, np.array([0, 2]))
    with pytest.raises(ValueError, match="mixture must be a GaussianMixture"):
        gmm.sample_points({"means": [[0.0]]}, 0, 3)
