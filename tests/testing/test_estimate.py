"""Tests of the Monte Carlo estimator of paper Eq. 1 (gensim_jax.testing.estimate).

Independent references: the same draws of theta pushed through a float64 NumPy computation of the
three plain means and the delta-method variance; the spread of estimates over independent keys
(which the standard error must predict); closed forms computed with scipy here.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from gensim_jax.kernels import gaussian_mixture as gm
from gensim_jax.testing import (
    GenerativeModel,
    Proposal,
    assert_log_similarity_close,
    categorical_model,
    estimate_log_similarity,
    gaussian_mixture_model,
    path_prior,
    sample_pairs,
)
from gensim_jax.testing import estimate as est_mod

MIX = gm.make_mixture(
    [0.5, 0.3, 0.2],
    [[0.0, 0.0], [2.0, 1.0], [-1.0, 2.5]],
    [[[1.0, 0.3], [0.3, 0.5]], [[0.6, -0.2], [-0.2, 0.8]], [[0.4, 0.0], [0.0, 1.5]]],
)
GM_MODEL = gaussian_mixture_model(MIX)
X1, X2 = sample_pairs(GM_MODEL, jax.random.key(3), 6)


def scipy_mixture_log_s(x1, x2):
    """Eq. H2 with scipy densities, float64."""
    w = np.exp(np.asarray(MIX.log_weights, np.float64))
    means = np.asarray(MIX.means, np.float64)
    scale = np.asarray(MIX.scale, np.float64)
    covs = scale @ np.swapaxes(scale, -1, -2)
    out = []
    for a, b in zip(np.asarray(x1, np.float64), np.asarray(x2, np.float64)):
        pa = np.array([stats.multivariate_normal(means[k], covs[k]).pdf(a) for k in range(3)])
        pb = np.array([stats.multivariate_normal(means[k], covs[k]).pdf(b) for k in range(3)])
        out.append(math.log((w * pa * pb).sum()) - math.log((w * pa).sum()) - math.log((w * pb).sum()))
    return np.array(out)


@pytest.mark.slow
def test_matches_float64_numpy_on_the_same_draws():
    key, n = jax.random.key(11), 3000
    est = estimate_log_similarity(GM_MODEL, X1, X2, key, n, chunk_size=256)  # 12 chunks, the last one partial

    @jax.jit
    def draws():  # documented: sample i uses the key fold_in(key, i)
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n))
        thetas = jax.vmap(GM_MODEL.prior_sampler)(keys)
        table = lambda xs: jax.vmap(lambda t: jax.vmap(lambda x: GM_MODEL.log_likelihood(x, t))(xs))(thetas)  # noqa: E731
        return table(X1), table(X2)

    l1, l2 = (np.asarray(t, np.float64) for t in draws())
    a, b, c = np.exp(l1 + l2), np.exp(l1), np.exp(l2)
    ref = np.log(a.mean(0)) - np.log(b.mean(0)) - np.log(c.mean(0))
    u = a / a.mean(0) - b / b.mean(0) - c / c.mean(0)
    ref_se = u.std(0, ddof=1) / math.sqrt(n)
    np.testing.assert_allclose(est.log_similarity, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(est.stderr, ref_se, rtol=1e-3)
    np.testing.assert_allclose(est.ess, a.sum(0) ** 2 / (a * a).sum(0), rtol=1e-3)
    np.testing.assert_allclose(est.log_marginal1, np.log(b.mean(0)), rtol=1e-4, atol=1e-4)


def _float64_on_the_same_draws(model, x1, x2, key, n):
    """log s, se and ESS from the estimator's own draws (sample i uses fold_in(key, i)), in float64 NumPy."""

    @jax.jit
    def draws():
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n))
        thetas = jax.vmap(model.prior_sampler)(keys)
        table = lambda xs: jax.vmap(lambda t: jax.vmap(lambda x: model.log_likelihood(x, t))(xs))(thetas)  # noqa: E731
        return table(x1), table(x2)

    l1, l2 = (np.asarray(t, np.float64) for t in draws())
    shift = l1.max(0) + l2.max(0)  # float64 has the range for these
    a, b, c = np.exp(l1 + l2 - shift), np.exp(l1 - l1.max(0)), np.exp(l2 - l2.max(0))
    log_s = np.log(a.mean(0)) - np.log(b.mean(0)) - np.log(c.mean(0))
    u = a / a.mean(0) - b / b.mean(0) - c / c.mean(0)
    return log_s, u.std(0, ddof=1) / math.sqrt(n), a.sum(0) ** 2 / (a * a).sum(0)


def _tilted_normal_model():
    """theta ~ N(0, 1), log p(x | theta) = x theta (unnormalised, enough for the sums): a large |x| makes the
    likelihood steep, and points of opposite signs prefer opposite draws (a large max l1 + max l2 - max(l1 + l2))."""
    return GenerativeModel(
        prior_sampler=lambda k: jax.random.normal(k),
        likelihood_sampler=lambda k, t: t,
        log_likelihood=lambda x, t: x * t,
        name="tilted_normal",
    )


def _tables(model, x1, x2, key, n):
    """The (n, P) tables l1, l2 of the first n draws."""
    thetas = jax.vmap(model.prior_sampler)(jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n)))
    return jnp.outer(thetas, x1), jnp.outer(thetas, x2)


@pytest.mark.parametrize(
    "case, x1, x2",
    [
        # later chunks' maxima far above the first chunk's (squares overflow): general form for them
        ("overflow_fallback", [60.0, 45.0, 1.0], [60.0, 50.0, 1.0]),
        # x1 and x2 prefer opposite draws by far more than e^20: general form throughout
        ("gap_fallback", [30.0, 2.0], [-30.0, 1.0]),
        # the product form throughout
        ("product_form", [1.0, -0.5, 2.0], [0.5, -1.0, 1.5]),
    ],
)
@pytest.mark.slow
def test_two_exponential_form_and_its_fallbacks_match_float64(case, x1, x2):
    model = _tilted_normal_model()
    x1, x2, key, n = jnp.array(x1), jnp.array(x2), jax.random.key(5), 2000
    chunk = 8  # a small first chunk: the later chunks hold draws far above its maximum
    ok = bool(est_mod._prior_shifts(*_tables(model, x1, x2, key, chunk)).ok)
    assert ok == (case != "gap_fallback")
    est = estimate_log_similarity(model, x1, x2, key, n, chunk_size=chunk)
    ref, ref_se, ref_ess = _float64_on_the_same_draws(model, x1, x2, key, n)
    np.testing.assert_allclose(est.log_similarity, ref, rtol=1e-4, atol=2e-4)
    np.testing.assert_allclose(est.stderr, ref_se, rtol=1e-3)
    np.testing.assert_allclose(est.ess, ref_ess, rtol=1e-3)
    # the same sums as the general three-exponential form over all draws as one chunk (but the sum of
    # B C, which that form loses to underflow when x1 and x2 prefer opposite draws: it is the sum of A)
    general = np.asarray(est_mod._chunk_log_sums(jnp.zeros((n, 1)), *_tables(model, x1, x2, key, n)))
    ours = np.asarray(est_mod._log_sums(model, x1, x2, key, jnp.asarray(n, jnp.int32), chunk, None))
    np.testing.assert_allclose(ours[:8], general[:8], rtol=1e-4, atol=1e-4)
    if case != "gap_fallback":  # the general form, chunk by chunk, loses part of it too
        np.testing.assert_allclose(ours[8], ours[0], rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_standard_error_predicts_the_spread_over_keys():
    exact = scipy_mixture_log_s(X1, X2)
    runs = [estimate_log_similarity(GM_MODEL, X1, X2, jax.random.key(100 + r), 400, chunk_size=256) for r in range(40)]
    values = np.stack([r.log_similarity for r in runs])
    ses = np.stack([r.stderr for r in runs])
    ratio = values.std(0, ddof=1) / np.median(ses, 0)
    assert np.all((ratio > 0.65) & (ratio < 1.45)), ratio
    z_of_mean = (values.mean(0) - exact) / (np.median(ses, 0) / math.sqrt(40))
    assert np.all(np.abs(z_of_mean) < 4.0), z_of_mean


@pytest.mark.slow
def test_minus_infinity_pairs_and_exact_categorical():
    pi = jnp.array([0.1, 0.2, 0.3, 0.4])
    y1, y2 = jnp.array([0, 1, 3, 2]), jnp.array([0, 2, 3, 1])
    model = categorical_model(pi)
    est = estimate_log_similarity(model, y1, y2, jax.random.key(0), 20000)
    # the estimate does not depend on the chunking (sample i always uses fold_in(key, i))
    again = estimate_log_similarity(model, y1, y2, jax.random.key(0), 20000, chunk_size=999)
    np.testing.assert_allclose(again.log_similarity, est.log_similarity, rtol=1e-5)
    assert np.isneginf(est.log_similarity[[1, 3]]).all() and np.isinf(est.stderr[[1, 3]]).all()
    assert np.all(est.ess[[1, 3]] == 0)
    assert np.all(np.abs(est.log_similarity[[0, 2]] + np.log([0.1, 0.4])) < 5 * est.stderr[[0, 2]])


# --------------------------------------------------------------------- importance sampling, peaked likelihood

SIGMA = 0.01  # x ~ N(theta, SIGMA^2), theta ~ N(0, 1): the likelihood is 100 times narrower than the prior


def _normal_model():
    return GenerativeModel(
        prior_sampler=lambda k: jax.random.normal(k),
        likelihood_sampler=lambda k, t: t + SIGMA * jax.random.normal(k),
        log_likelihood=lambda x, t: jax.scipy.stats.norm.logpdf(x, t, SIGMA),
        log_prior=lambda t: jax.scipy.stats.norm.logpdf(t),
        name="normal_mean_1d",
    )


def _mixture_proposal():
    """Equal mixture of N(x1, (2 sigma)^2), N(x2, (2 sigma)^2) and the prior (defensive)."""

    def sampler(key, x1, x2):
        kc, kz = jax.random.split(key)
        comp = jax.random.randint(kc, (), 0, 3)
        z = jax.random.normal(kz)
        centre = jnp.stack([x1, x2, 0.0])[comp]
        width = jnp.stack([2 * SIGMA, 2 * SIGMA, 1.0])[comp]
        return centre + width * z

    def log_prob(t, x1, x2):
        parts = jnp.stack(
            [
                jax.scipy.stats.norm.logpdf(t, x1, 2 * SIGMA),
                jax.scipy.stats.norm.logpdf(t, x2, 2 * SIGMA),
                jax.scipy.stats.norm.logpdf(t),
            ]
        )
        return jax.scipy.special.logsumexp(parts) - math.log(3.0)

    return Proposal(sampler, log_prob, pair_conditional=True)


def _normal_exact(x1, x2):
    v, c = 1.0 + SIGMA**2, 1.0
    joint = stats.multivariate_normal([0, 0], [[v, c], [c, v]])
    return np.array(
        [
            joint.logpdf([a, b]) - stats.norm(0, math.sqrt(v)).logpdf(a) - stats.norm(0, math.sqrt(v)).logpdf(b)
            for a, b in zip(np.asarray(x1, np.float64), np.asarray(x2, np.float64))
        ]
    )


@pytest.mark.slow
def test_importance_sampling_for_a_peaked_likelihood():
    model = _normal_model()
    x1 = jnp.array([0.3, -1.2, 0.3, 2.0, 0.0])
    x2 = jnp.array([0.305, -1.19, 0.33, 1.95, 0.0])
    n = 4000
    plain = estimate_log_similarity(model, x1, x2, jax.random.key(1), n)
    assert plain.ess.max() < 0.05 * n  # prior draws rarely land under the likelihood
    with pytest.raises(AssertionError, match="effective sample size too small"):  # even for the exact kernel
        assert_log_similarity_close(_normal_exact, None, (x1, x2), estimate=plain)
    report = assert_log_similarity_close(
        _normal_exact, model, (x1, x2), jax.random.key(2), num_samples=n, proposal=_mixture_proposal()
    )
    assert report.min_ess > 0.1 * n and report.max_z < 4
    est = report.estimate
    bad = assert_log_similarity_close  # a kernel off by a factor 2 fails by far
    with pytest.raises(AssertionError) as info:
        bad(lambda a, b: 2 * _normal_exact(a, b), None, (x1, x2), estimate=est)
    assert info.value.report.worst_z > 100


# --------------------------------------------------------------------- hierarchical prior, memory, errors


def test_path_prior_walks_level_by_level():
    prior = path_prior(lambda k: jnp.zeros((), jnp.int32), lambda k, s, level: s + level + 1, 4)
    np.testing.assert_array_equal(prior(jax.random.key(0)), [0, 1, 3, 6, 10])
    tree_prior = path_prior(lambda k: {"a": jnp.zeros(2)}, lambda k, s, level: {"a": s["a"] + 1.0}, 2)
    assert tree_prior(jax.random.key(0))["a"].shape == (3, 2)
    assert path_prior(lambda k: jnp.ones(()), lambda k, s, level: s, 0)(jax.random.key(0)).shape == (1,)
    with pytest.raises(ValueError, match="num_levels"):
        path_prior(lambda k: 0, lambda k, s, level: s, -1)


@pytest.mark.slow
def test_memory_is_bounded_by_the_chunk_not_the_sample_count():
    # 10**6 samples x 1,000 pairs: the compiled program's temporaries stay O(chunk x pairs)
    model = categorical_model(jnp.full(10, 0.1))
    y = jnp.zeros(1000, jnp.int32)
    temp = est_mod.estimate_temp_bytes(model, y, y, 10**6, chunk_size=1 << 10)
    assert 0 < temp < 64 * 2**20, temp
    # the same chunk over 100x fewer samples compiles to the same buffers: memory does not grow with S
    assert est_mod.estimate_temp_bytes(model, y, y, 10**4, chunk_size=1 << 10) == temp
    with pytest.raises(ValueError, match="num_samples"):
        est_mod.estimate_temp_bytes(model, y, y, 1)


def test_bad_input_raises():
    model = GM_MODEL
    with pytest.raises(ValueError, match="same number of pairs"):
        estimate_log_similarity(model, X1, X2[:3], jax.random.key(0), 10)
    with pytest.raises(ValueError, match="num_samples"):
        estimate_log_similarity(model, X1, X2, jax.random.key(0), 1)
    with pytest.raises(ValueError, match="chunk_size"):
        estimate_log_similarity(model, X1, X2, jax.random.key(0), 10, chunk_size=0)
    no_prior = GenerativeModel(model.prior_sampler, model.likelihood_sampler, model.log_likelihood)
    with pytest.raises(ValueError, match="log_prior"):
        estimate_log_similarity(no_prior, X1, X2, jax.random.key(0), 10, proposal=Proposal(lambda k: 0, lambda t: 0.0))
    with pytest.raises(TypeError, match="GenerativeModel"):
        estimate_log_similarity(object(), X1, X2, jax.random.key(0), 10)
    with pytest.raises(TypeError, match="log_likelihood"):
        GenerativeModel(model.prior_sampler, model.likelihood_sampler, None)
    with pytest.raises(ValueError, match="inputs must be a pair"):
        assert_log_similarity_close(lambda a, b: a, model, X1, jax.random.key(0))
