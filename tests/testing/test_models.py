"""Tests of the ready models' samplers (gensim_jax.testing.models) against scipy distributions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special, stats

from gensim_jax.testing import beta_bernoulli_model, categorical_model
from gensim_jax.testing import models as M


@pytest.mark.parametrize("a", [0.01, 0.5, 1.0, 3.7])
@pytest.mark.slow
def test_log_gamma_sampler_matches_gamma_distribution(a):
    g = np.asarray(M._log_gamma_sample(jax.random.key(0), a, (40_000,)), np.float64)
    assert np.all(np.isfinite(g))
    # E[log G] = digamma(a), Var[log G] = trigamma(a)
    se = np.sqrt(special.polygamma(1, a) / g.size)
    assert abs(g.mean() - special.digamma(a)) < 5 * se
    assert g.var() == pytest.approx(special.polygamma(1, a), rel=0.06)
    assert (
        stats.kstest(
            np.exp(g) if a > 0.1 else g,
            (lambda t: stats.gamma(a).cdf(t)) if a > 0.1 else (lambda t: stats.gamma(a).cdf(np.exp(t))),
        ).pvalue
        > 1e-3
    )


@pytest.mark.slow
def test_beta_prior_draws_and_feature_frequencies():
    model = beta_bernoulli_model(3, [0.5, 2.0, 5.0], [1.5, 2.0, 1.0])

    @jax.jit
    def draw(keys):  # one compile for the prior and the likelihood sampler
        thetas = jax.vmap(model.prior_sampler)(keys)
        return thetas, jax.vmap(model.likelihood_sampler)(jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys), thetas)

    thetas, x = draw(jax.random.split(jax.random.key(1), 20_000))
    p = np.exp(np.asarray(thetas["log_p"], np.float64))
    np.testing.assert_allclose(p + np.exp(np.asarray(thetas["log_q"], np.float64)), 1.0, atol=1e-5)
    for i, (a, b) in enumerate([(0.5, 1.5), (2.0, 2.0), (5.0, 1.0)]):
        assert stats.kstest(p[:, i], stats.beta(a, b).cdf).pvalue > 1e-3
    np.testing.assert_allclose(np.asarray(x).mean(0), [0.25, 0.5, 5 / 6], atol=0.015)


@pytest.mark.slow
def test_categorical_model_label_noise():
    model = categorical_model(jnp.array([0.5, 0.5]), label_noise=0.4)
    t = model.sample_triplets(jax.random.key(3), 20_000)
    agree = np.mean(np.asarray(t.anchor) == np.asarray(t.theta_positive))
    assert agree == pytest.approx(0.6 + 0.4 / 2, abs=0.015)
    with pytest.raises(ValueError, match="label_noise"):
        categorical_model(jnp.array([0.5, 0.5]), label_noise=1.5)
    with pytest.raises(ValueError, match="num_features"):
        beta_bernoulli_model(0)
    with pytest.raises(ValueError, match="alpha and beta"):
        beta_bernoulli_model(2, alpha=-1.0)
