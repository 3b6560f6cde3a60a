"""Tests for gensim_jax.kernels.gaussian_mixture against independent computations.

References: paper Eq. H2 written out literally in numpy; scipy.stats.multivariate_normal densities
combined in float64; a simulation of the same/different process checking that sigmoid(log s) is the
calibrated posterior probability of "same" (paper Eq. 1 with equal prior odds); double loops.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special, stats

from gensim_jax.kernels import gaussian_mixture as gm


def _eq_h2(x1, x2, mu1, mu2, sigma2):
    """Paper Eq. H2 exactly as printed (two components, equal weights, shared isotropic variance)."""

    def e(x, mu):
        return np.exp(-np.sum((np.asarray(x) - mu) ** 2) / (2 * sigma2))

    num = 0.5 * e(x1, mu1) * e(x2, mu1) + 0.5 * e(x1, mu2) * e(x2, mu2)
    den = (0.5 * e(x1, mu1) + 0.5 * e(x1, mu2)) * (0.5 * e(x2, mu1) + 0.5 * e(x2, mu2))
    return np.log(num / den)


def _scipy_log_s(x1, x2, weights, means, covs):
    lw = np.log(weights)
    l1 = np.array([stats.multivariate_normal(m, c).logpdf(x1) for m, c in zip(means, covs)])
    l2 = np.array([stats.multivariate_normal(m, c).logpdf(x2) for m, c in zip(means, covs)])
    return special.logsumexp(lw + l1 + l2) - special.logsumexp(lw + l1) - special.logsumexp(lw + l2)


def _random_spd(rng, k, d):
    a = rng.normal(size=(k, d, d))
    return a @ np.swapaxes(a, -1, -2) + 0.5 * np.eye(d)


@pytest.mark.parametrize("dim", [1, 2])
def test_equals_eq_h2_written_out(dim):
    rng = np.random.default_rng(0)
    mu1, mu2 = np.full(dim, 5.0), np.full(dim, 1.0)
    for sigma2 in (1.0, 2.5):
        mix = gm.make_mixture([0.5, 0.5], np.stack([mu1, mu2]), sigma2)
        x1 = rng.normal(3.0, 2.5, size=(6, dim))
        x2 = rng.normal(3.0, 2.5, size=(6, dim))
        got = np.asarray(gm.log_similarity(x1, x2, mix))
        ref = np.array([_eq_h2(a, b, mu1, mu2, sigma2) for a, b in zip(x1, x2)])
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    h = gm.appendix_h_mixture()
    x = rng.normal(3.0, 2.0, size=(5, 2))
    ref = np.array([[_eq_h2(a, b, np.array([5.0, 5.0]), np.array([1.0, 1.0]), 1.0) for b in x] for a in x])
    np.testing.assert_allclose(np.asarray(gm.pairwise_log_similarity(x, x, h)), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("cov_kind", ["full", "diag", "scalar"])
def test_equals_scipy_multivariate_normal(cov_kind):
    rng = np.random.default_rng(1)
    k, d = 3, 3
    weights = np.array([0.2, 0.5, 0.3])
    means = rng.normal(0, 2, size=(k, d))
    if cov_kind == "full":
        cov_in = _random_spd(rng, k, d)
        covs = cov_in
    elif cov_kind == "diag":
        cov_in = rng.uniform(0.3, 2.0, size=(k, d))
        covs = np.stack([np.diag(c) for c in cov_in])
    else:
        cov_in = 1.7
        covs = np.stack([1.7 * np.eye(d)] * k)
    mix = gm.make_mixture(weights, means, cov_in)
    x1 = rng.normal(0, 3, size=(8, d))
    x2 = rng.normal(0, 3, size=(5, d))
    pair = np.asarray(gm.pairwise_log_similarity(x1, x2, mix))
    ref = np.array([[_scipy_log_s(a, b, weights, means, covs) for b in x2] for a in x1])
    np.testing.assert_allclose(pair, ref, rtol=1e-4, atol=1e-4)
    comp = np.asarray(gm.component_log_densities(x1, mix))
    comp_ref = np.stack([stats.multivariate_normal(m, c).logpdf(x1) for m, c in zip(means, covs)], -1)
    np.testing.assert_allclose(comp, comp_ref, rtol=1e-5, atol=1e-4)
    marg = np.asarray(gm.log_marginal(x1, mix))
    np.testing.assert_allclose(marg, special.logsumexp(np.log(weights) + comp_ref, axis=-1), rtol=1e-5, atol=1e-4)


def test_log_s_is_calibrated_posterior_log_odds_of_same():
    """Simulate Eq. 1's two hypotheses with equal prior; P(same | x1, x2) must equal sigmoid(log s)."""
    rng = np.random.default_rng(2)
    weights = np.array([0.3, 0.7])
    means = np.array([[0.0], [1.5]])
    sds = np.array([1.0, 0.7])
    n = 200_000
    same = rng.random(n) < 0.5
    k1 = rng.choice(2, size=n, p=weights)
    k2 = np.where(same, k1, rng.choice(2, size=n, p=weights))
    x1 = means[k1, 0] + sds[k1] * rng.normal(size=n)
    x2 = means[k2, 0] + sds[k2] * rng.normal(size=n)
    mix = gm.make_mixture(weights, means, (sds**2)[:, None])
    log_s = np.asarray(gm.log_similarity(x1[:, None], x2[:, None], mix), np.float64)
    prob = special.expit(log_s)
    edges = np.quantile(prob, np.linspace(0, 1, 11))
    idx = np.clip(np.searchsorted(edges, prob, side="right") - 1, 0, 9)
    for b in range(10):
        sel = idx == b
        # ~20k pairs per bin: binomial standard error <= 0.0035.
        assert abs(same[sel].mean() - prob[sel].mean()) < 0.015, b
    assert prob.min() < 0.35 and prob.max() > 0.6  # the test exercises a wide range of odds


@pytest.mark.slow
def test_finite_for_distant_points_and_gradients():
    rng = np.random.default_rng(3)
    k, d = 3, 2
    weights = np.array([0.25, 0.25, 0.5])
    means = rng.normal(0, 1, size=(k, d))
    covs = _random_spd(rng, k, d)
    mix = gm.make_mixture(weights, means, covs)
    x = np.array([[1e3, 0.0], [-1e3, 1e3], [0.0, 0.0], [3e3, -3e3]], np.float32)
    pair = np.asarray(gm.pairwise_log_similarity(x, x, mix))
    assert np.all(np.isfinite(pair))
    ref = np.array([[_scipy_log_s(a, b, weights, means, covs) for b in x] for a in x])
    # float32 log-densities near -1e6 carry ~0.1 absolute rounding; the kernel itself is O(1e3).
    np.testing.assert_allclose(pair, ref, rtol=1e-3, atol=1.0)
    elem = np.asarray(gm.log_similarity(x[:, None, :], x[None, :, :], mix))
    np.testing.assert_allclose(elem, pair, rtol=1e-5, atol=1e-3)

    g = jax.jit(jax.grad(lambda z: jnp.sum(gm.pairwise_log_similarity(z, jnp.asarray(x), mix))))(jnp.asarray(x))
    assert np.all(np.isfinite(np.asarray(g)))
    gmix = jax.jit(jax.grad(lambda m: jnp.sum(gm.pairwise_log_similarity(jnp.asarray(x), jnp.asarray(x), m))))(mix)
    for leaf in jax.tree_util.tree_leaves(gmix):
        assert np.all(np.isfinite(np.asarray(leaf)))


@pytest.mark.slow
@pytest.mark.parametrize("transform", [lambda fn: fn, jax.jit], ids=["eager", "jit"])
def test_pairwise_equals_double_loop_and_diag_equals_full(transform):
    rng = np.random.default_rng(4)
    k, d = 4, 3
    weights = rng.dirichlet(np.ones(k))
    means = rng.normal(0, 2, size=(k, d))
    var = rng.uniform(0.5, 2.0, size=(k, d))
    diag = gm.make_mixture(weights, means, var)
    full = gm.make_mixture(weights, means, np.stack([np.diag(v) for v in var]))
    x1 = rng.normal(0, 2, size=(6, d)).astype(np.float32)
    x2 = rng.normal(0, 2, size=(4, d)).astype(np.float32)
    pw = transform(gm.pairwise_log_similarity)
    pair = np.asarray(pw(x1, x2, diag))
    assert pair.shape == (6, 4)
    loop = np.array([[float(gm.log_similarity(a, b, diag)) for b in x2] for a in x1])
    np.testing.assert_allclose(pair, loop, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(pw(x1, x2, full)), pair, rtol=1e-5, atol=1e-5)
    vm = jax.vmap(lambda a, b: gm.log_similarity(a, b, full))(x1[:4], x2)
    np.testing.assert_allclose(np.asarray(vm), np.diag(pair[:4]), rtol=1e-5, atol=1e-5)


def test_normalize_and_generic_mixture_tables():
    mix = gm.make_mixture([2.0, 6.0], [[0.0], [1.0]], 1.0, normalize=True)
    np.testing.assert_allclose(np.exp(np.asarray(mix.log_weights)), [0.25, 0.75], rtol=1e-6)
    # Generic mixture from tables: Bernoulli components over a binary x, checked by enumeration.
    rates = np.array([0.1, 0.8, 0.5])
    w = np.array([0.5, 0.3, 0.2])
    xs = np.array([0, 1])
    lik = np.where(xs[:, None] == 1, rates, 1 - rates)  # (2, K)
    got = np.asarray(gm.pairwise_mixture_log_similarity(np.log(lik), np.log(lik), np.log(w)))
    for i in range(2):
        for j in range(2):
            p_same = np.sum(w * lik[i] * lik[j])
            p_diff = np.sum(w * lik[i]) * np.sum(w * lik[j])
            np.testing.assert_allclose(got[i, j], np.log(p_same / p_diff), rtol=1e-5)


def test_invalid_inputs_raise():
    means = np.zeros((2, 2))
    with pytest.raises(ValueError, match="weights.*sum"):
        gm.make_mixture([0.5, 0.6], means)
    with pytest.raises(ValueError, match="weights"):
        gm.make_mixture([1.5, -0.5], means)
    with pytest.raises(ValueError, match=r"weights.*\(2,\)"):
        gm.make_mixture([1.0], means)
    with pytest.raises(ValueError, match=r"covariances\[1\].*positive definite"):
        gm.make_mixture([0.5, 0.5], means, np.stack([np.eye(2), np.array([[1.0, 2.0], [2.0, 1.0]])]))
    with pytest.raises(ValueError, match=r"covariances\[0\].*symmetric"):
        gm.make_mixture([0.5, 0.5], means, np.stack([np.array([[1.0, 0.5], [0.0, 1.0]]), np.eye(2)]))
    with pytest.raises(ValueError, match="covariances"):
        gm.make_mixture([0.5, 0.5], means, -1.0)
    with pytest.raises(ValueError, match="covariances"):
        gm.make_mixture([0.5, 0.5], means, np.ones((3, 2)))
    with pytest.raises(ValueError, match="means"):
        gm.make_mixture([1.0], np.zeros(2))
    with pytest.raises(ValueError, match="means must be finite"):
        gm.make_mixture([1.0], [[np.inf, 0.0]])
    mix = gm.make_mixture([0.5, 0.5], means)
    with pytest.raises(ValueError, match=r"x2.*mixture.means.*\(3, 3\).*\(2, 2\)"):
        gm.pairwise_log_similarity(np.zeros((3, 2)), np.zeros((3, 3)), mix)
    with pytest.raises(ValueError, match="x1"):
        gm.log_similarity(np.zeros((4, 5)), np.zeros((4, 2)), mix)
    with pytest.raises(ValueError, match="x1"):
        gm.pairwise_log_similarity(np.zeros(2), np.zeros((3, 2)), mix)


@pytest.mark.slow
def test_make_mixture_is_differentiable_under_jit():
    """Learning mixture parameters: gradient w.r.t. a covariance matches a central difference."""
    x = jnp.array([[0.3, -0.2], [1.5, 0.7], [-1.0, 2.0]])

    def f(c00):
        cov = jnp.stack([jnp.array([[c00, 0.3], [0.3, 1.0]]), jnp.eye(2)])
        mix = gm.make_mixture(jnp.array([0.4, 0.6]), jnp.array([[0.0, 0.0], [1.0, 1.0]]), cov)
        return jnp.sum(gm.pairwise_log_similarity(x, x, mix))

    g = float(jax.jit(jax.grad(f))(1.3))
    w = np.array([0.4, 0.6])
    means = np.array([[0.0, 0.0], [1.0, 1.0]])

    def ref(c00):
        covs = np.stack([np.array([[c00, 0.3], [0.3, 1.0]]), np.eye(2)])
        return sum(_scipy_log_s(a, b, w, means, covs) for a in np.asarray(x) for b in np.asarray(x))

    h = 1e-5
    np.testing.assert_allclose(g, (ref(1.3 + h) - ref(1.3 - h)) / (2 * h), rtol=1e-3)
