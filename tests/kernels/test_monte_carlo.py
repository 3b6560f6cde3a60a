"""Tests for gensim_jax.kernels.monte_carlo (paper Appendix A, Eq. A3; Appendices F-H).

References: moments and frequencies implied by Eq. A3 computed by hand (e.g. P(theta+ = theta-) =
sum pi^2); empirical log ratios of same/different pair frequencies against the Beta-Bernoulli
kernel (itself checked against numerical integration); the Appendix G result that the linear
dot-product triplet objective is -(phi . mu)^2 and is minimised by phi = +-mu_hat.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax.kernels import beta_bernoulli as bb
from gensim_jax.kernels import gaussian_mixture as gm
from gensim_jax.kernels import monte_carlo as mc


@pytest.mark.slow
def test_shapes_pytrees_determinism_jit_and_vmap():
    def prior(k):
        k1, k2 = jax.random.split(k)
        return {"mu": jax.random.normal(k1, (3,)), "log_sd": jax.random.normal(k2, ())}

    def lik(k, th):
        return th["mu"] + jnp.exp(th["log_sd"]) * jax.random.normal(k, (3,))

    keys = jax.random.split(jax.random.key(0), 2)
    t = mc.sample_triplets(keys[0], prior, lik, 11)  # jit-compiled internally (samplers static)
    chex.assert_shape([t.anchor, t.positive, t.negative, t.theta_positive["mu"]], (11, 3))
    chex.assert_shape(t.theta_negative["log_sd"], (11,))
    chex.assert_trees_all_equal(t, mc.sample_triplets(keys[0], prior, lik, 11))  # deterministic
    # vmap over keys (e.g. one key per device) gives the per-key draws.
    per_device = jax.vmap(lambda k: mc.sample_triplets(k, prior, lik, 11))(keys)
    chex.assert_shape(per_device.anchor, (2, 11, 3))
    chex.assert_trees_all_close(jax.tree_util.tree_map(lambda v: v[0], per_device), t, rtol=1e-5, atol=1e-5)
    assert not np.allclose(np.asarray(per_device.anchor[0]), np.asarray(per_device.anchor[1]))


@pytest.mark.slow
def test_beta_bernoulli_triplet_frequencies_match_kernel():
    """log [freq(x, x+) / freq(x, x-)] over the 4 binary cells equals the Beta-Bernoulli kernel."""
    # Beta(1, 1) = Uniform(0, 1): jax.random.uniform compiles much faster than jax.random.beta.
    a, b = 1.0, 1.0

    def prior(k):
        return jax.random.uniform(k, (1,))

    def lik(k, theta):
        return jax.random.bernoulli(k, theta).astype(jnp.int32)

    n = 200_000
    t = mc.sample_triplets(jax.random.key(1), prior, lik, n)
    x, xp, xn = (np.asarray(v)[:, 0] for v in (t.anchor, t.positive, t.negative))
    for u in (0, 1):
        for v in (0, 1):
            same = np.mean((x == u) & (xp == v))
            diff = np.mean((x == u) & (xn == v))
            expected = float(bb.log_similarity(jnp.array([u]), jnp.array([v]), a, b))
            np.testing.assert_allclose(np.log(same / diff), expected, atol=0.04)
    # Anchor and positive share theta+; theta+ and theta- are independent draws.
    tp, tn = np.asarray(t.theta_positive)[:, 0], np.asarray(t.theta_negative)[:, 0]
    assert abs(np.corrcoef(tp, tn)[0, 1]) < 0.01
    assert np.mean(tp == tn) < 1e-3  # a continuous prior: coincidences only from float32 rounding


@pytest.mark.slow
def test_class_triplets_coincidence_rate_and_distinct_option():
    pi = np.array([0.5, 0.3, 0.2])
    n = 60_000

    def lik(k, c):
        return c.astype(jnp.float32) + 0.01 * jax.random.normal(k, ())

    t = mc.sample_class_triplets(jax.random.key(2), jnp.asarray(pi, jnp.float32), lik, n)
    cp, cn = np.asarray(t.theta_positive), np.asarray(t.theta_negative)
    # Eq. A3: independent draws, coincide with probability sum pi^2 = 0.38.
    assert abs(np.mean(cp == cn) - np.sum(pi**2)) < 0.01
    np.testing.assert_allclose(np.bincount(cp, minlength=3) / n, pi, atol=0.01)
    np.testing.assert_allclose(np.rint(np.asarray(t.anchor)), cp)
    np.testing.assert_allclose(np.rint(np.asarray(t.positive)), cp)
    np.testing.assert_allclose(np.rint(np.asarray(t.negative)), cn)
    # The generic sampler with categorical_prior draws from the same process.
    g = mc.sample_triplets(jax.random.key(3), mc.categorical_prior(jnp.asarray(pi, jnp.float32)), lik, n)
    assert abs(np.mean(np.asarray(g.theta_positive) == np.asarray(g.theta_negative)) - np.sum(pi**2)) < 0.01

    d = mc.sample_class_triplets(jax.random.key(4), jnp.asarray(pi, jnp.float32), lik, n, distinct=True)
    dp, dn = np.asarray(d.theta_positive), np.asarray(d.theta_negative)
    assert np.all(dp != dn)
    for c in range(3):
        sel = dp == c
        cond = np.bincount(dn[sel], minlength=3) / sel.sum()
        expected = np.where(np.arange(3) == c, 0.0, pi / (1 - pi[c]))
        np.testing.assert_allclose(cond, expected, atol=0.015)


@pytest.mark.slow
def test_gaussian_mixture_triplets_moments():
    n = 40_000
    t = mc.sample_gaussian_mixture_triplets(jax.random.key(5), n)
    comp = np.asarray(t.theta_positive)
    x, xp = np.asarray(t.anchor), np.asarray(t.positive)
    means = np.array([[5.0, 5.0], [1.0, 1.0]])
    assert abs(np.mean(comp == 0) - 0.5) < 0.01
    for k in range(2):
        np.testing.assert_allclose(x[comp == k].mean(0), means[k], atol=0.03)
        np.testing.assert_allclose(np.cov(x[comp == k].T), np.eye(2), atol=0.04)
    # x and x+ independent given the component: Cov(x - x+) = 2 I.
    np.testing.assert_allclose(np.cov((x - xp).T), 2 * np.eye(2), atol=0.06)
    # Full-covariance mixture: samples have the requested covariance.
    cov = np.array([[[2.0, 0.8], [0.8, 1.0]]])
    mix = gm.make_mixture([1.0], [[0.0, 0.0]], cov)
    s = mc.sample_gaussian_mixture_triplets(jax.random.key(6), n, mix)
    np.testing.assert_allclose(np.cov(np.asarray(s.negative).T), cov[0], atol=0.06)


@pytest.mark.slow
def test_appendix_g_linear_dot_product_objective_minimised_by_mu_direction():
    """Eq. F1 with phi(x) = phi . x: E[l] = -(phi . mu)^2 (Eq. G2), minimised at phi = +-mu_hat."""
    mu = np.array([1.2, -0.7])
    mix = gm.make_mixture([0.5, 0.5], np.stack([mu, -mu]), 1.0)
    t = mc.sample_gaussian_mixture_triplets(jax.random.key(7), 100_000, mix)
    x, xp, xn = (np.asarray(v, np.float64) for v in (t.anchor, t.positive, t.negative))
    angles = np.linspace(0.0, np.pi, 721)
    phis = np.stack([np.cos(angles), np.sin(angles)], -1)  # unit vectors (half circle: phi ~ -phi)
    proj = lambda z: z @ phis.T  # noqa: E731
    objective = np.mean(proj(x) * proj(xn) - proj(x) * proj(xp), axis=0)
    theory = -((phis @ mu) ** 2)
    np.testing.assert_allclose(objective, theory, atol=0.05)
    best = phis[np.argmin(objective)]
    mu_hat = mu / np.linalg.norm(mu)
    assert abs(abs(best @ mu_hat) - 1.0) < 2e-3

    # Projected gradient descent on the unit circle reaches +-mu_hat too.
    xj, xpj, xnj = jnp.asarray(x), jnp.asarray(xp), jnp.asarray(xn)

    def loss(phi):
        return jnp.mean((xj @ phi) * (xnj @ phi) - (xj @ phi) * (xpj @ phi))

    phi = jnp.array([0.0, 1.0])
    step = jax.jit(lambda p: (p - 0.2 * jax.grad(loss)(p)) / jnp.linalg.norm(p - 0.2 * jax.grad(loss)(p)))
    for _ in range(100):
        phi = step(phi)
    assert abs(abs(float(jnp.dot(phi, mu_hat))) - 1.0) < 2e-3


def test_invalid_arguments_raise():
    prior = lambda k: jax.random.normal(k)  # noqa: E731
    lik = lambda k, th: th + jax.random.normal(k)  # noqa: E731
    for bad in (0, -3, 2.0, True):
        with pytest.raises(ValueError, match="num"):
            mc.sample_triplets(jax.random.key(0), prior, lik, bad)
    with pytest.raises(TypeError, match="prior_sampler"):
        mc.sample_triplets(jax.random.key(0), 3, lik, 2)
    with pytest.raises(TypeError, match="likelihood_sampler"):
        mc.sample_triplets(jax.random.key(0), prior, None, 2)
    with pytest.raises(ValueError, match="distinct"):
        mc.sample_class_triplets(jax.random.key(0), jnp.array([1.0]), lik, 2, distinct=True)
    with pytest.raises(ValueError, match="class_probs"):
        mc.sample_class_triplets(jax.random.key(0), jnp.array([0.7, 0.7]), lik, 2)


@pytest.mark.slow
def test_unhashable_sampler_runs_unjitted_and_matches():
    class Lik:
        __hash__ = None  # e.g. a dataclass with eq=True: not usable as a static jit argument

        def __eq__(self, other):
            return isinstance(other, Lik)

        def __call__(self, k, th):
            return th + jax.random.normal(k, ())

    def lik(k, th):
        return th + jax.random.normal(k, ())

    def prior(k):
        return jax.random.normal(k, ())

    key = jax.random.key(9)
    a = mc.sample_triplets(key, prior, Lik(), 5)
    b = mc.sample_triplets(key, prior, lik, 5)
    chex.assert_trees_all_close(a, b, rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match="mixture"):
        mc.sample_gaussian_mixture_triplets(key, 3, mixture={"means": 0})
