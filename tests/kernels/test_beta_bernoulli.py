"""Tests for gensim_jax.kernels.beta_bernoulli against independent computations.

References used here: numerical integration of paper Eq. 1 over theta (scipy.integrate.quad with
the Beta density as an algebraic weight), scipy.special.betaln in paper Eq. I3, the closed forms
of paper Eqs. I5-I7, a Monte Carlo simulation of the generative process (paper Eq. 3), and double
Python loops over pairs.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special

from gensim_jax.kernels import beta_bernoulli as bb

PARAMS = [(0.5, 0.5), (1.0, 1.0), (0.3, 2.0), (2.5, 0.7), (7.0, 3.0)]


def _quad_log_similarity(f1, f2, a, b):
    """log of Eq. 1, each theta_i integrated numerically; features are independent given theta."""
    log_b = special.betaln(a, b)
    total = 0.0
    for u, v in zip(f1, f2):
        # quad's 'alg' weight multiplies the integrand by t^(a-1) (1-t)^(b-1) and handles the
        # endpoint singularities for a, b < 1 exactly.
        def integral(k, n):
            val, _ = integrate.quad(lambda t: t**k * (1 - t) ** (n - k), 0.0, 1.0, weight="alg", wvar=(a - 1, b - 1))
            return val / np.exp(log_b)

        p_same = integral(u + v, 2)
        p_diff = integral(u, 1) * integral(v, 1)
        total += np.log(p_same) - np.log(p_diff)
    return total


def _betaln_log_similarity(f1, f2, a, b):
    """Paper Eq. I3 written with scipy.special.betaln, float64."""
    f1 = np.asarray(f1, np.float64)
    f2 = np.asarray(f2, np.float64)
    g1, g2 = 1 - f1, 1 - f2
    terms = (
        special.betaln(f1 + f2 + a, g1 + g2 + b)
        + special.betaln(a, b)
        - special.betaln(f1 + a, g1 + b)
        - special.betaln(f2 + a, g2 + b)
    )
    return terms.sum(-1)


@pytest.mark.parametrize("a,b", PARAMS)
def test_matches_numerical_integration_of_eq1(a, b):
    rng = np.random.default_rng(0)
    f1 = rng.integers(0, 2, size=5)
    f2 = rng.integers(0, 2, size=5)
    f2[:2] = f1[:2]  # make sure both matches and mismatches occur
    f2[2] = 1 - f1[2]
    expected = _quad_log_similarity(f1, f2, a, b)
    got = bb.log_similarity(jnp.asarray(f1), jnp.asarray(f2), a, b)
    np.testing.assert_allclose(float(got), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a,b", PARAMS + [(1e-6, 1e-6), (1e-3, 50.0), (1e4, 1e4)])
def test_table_matches_betaln_and_closed_forms(a, b):
    table = np.asarray(bb.log_feature_table(a, b), np.float64)
    for u, v in itertools.product((0, 1), repeat=2):
        ref = _betaln_log_similarity([u], [v], a, b)
        np.testing.assert_allclose(table[u, v], ref, rtol=1e-5, atol=1e-6)
    # Paper Eqs. I5, I6, I7 (written independently of the log1p form used by the module).
    np.testing.assert_allclose(table[1, 1], np.log((a + 1) / (a + b + 1) * (a + b) / a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(table[1, 0], np.log(b / (a + b + 1) * (a + b) / b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(table[0, 0], np.log((b + 1) / (a + b + 1) * (a + b) / b), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(table, table.T)


def test_matches_monte_carlo_simulation_of_generative_process():
    """Sample Eq. 3 (same: one theta for both; different: two thetas) and count feature pairs."""
    a, b = 0.7, 1.3
    n_feat, n = 2, 400_000
    rng = np.random.default_rng(1)
    theta = rng.beta(a, b, size=(n, n_feat))
    same1 = rng.random((n, n_feat)) < theta
    same2 = rng.random((n, n_feat)) < theta
    theta1, theta2 = rng.beta(a, b, size=(2, n, n_feat))
    diff1 = rng.random((n, n_feat)) < theta1
    diff2 = rng.random((n, n_feat)) < theta2

    def code(x1, x2):
        bits = np.concatenate([x1, x2], axis=1).astype(int)
        return bits @ (2 ** np.arange(2 * n_feat))

    p_same = np.bincount(code(same1, same2), minlength=2 ** (2 * n_feat)) / n
    p_diff = np.bincount(code(diff1, diff2), minlength=2 ** (2 * n_feat)) / n
    for idx in range(2 ** (2 * n_feat)):
        bits = [(idx >> k) & 1 for k in range(2 * n_feat)]
        f1, f2 = np.array(bits[:n_feat]), np.array(bits[n_feat:])
        got = float(bb.log_similarity(jnp.asarray(f1), jnp.asarray(f2), a, b))
        # Cells have probability >= ~1%; 4e5 samples give a relative error of a few percent at worst.
        np.testing.assert_allclose(got, np.log(p_same[idx] / p_diff[idx]), atol=0.06)


@pytest.mark.parametrize("b", [1.0, 0.1, 1e-2, 1e-4, 1e-6])
def test_alpha_equal_beta_is_exactly_affine_in_squared_distance(b):
    rng = np.random.default_rng(2)
    n = 22
    f = rng.integers(0, 2, size=(12, n))
    exact = np.asarray(bb.pairwise_log_similarity(f, f, b, b), np.float64)
    dist = -np.asarray(bb.pairwise_limit_log_similarity(f, f), np.float64)
    manual = ((f[:, None, :] - f[None, :, :]) ** 2).sum(-1)
    np.testing.assert_array_equal(dist, manual)
    expected = n * np.log(2 * (b + 1) / (2 * b + 1)) - np.log((b + 1) / b) * manual
    np.testing.assert_allclose(exact, expected, rtol=1e-5, atol=1e-4)


def test_limit_is_approached_as_alpha_equal_beta_to_zero():
    """(log s - n log 2) / (d * log((b+1)/b)) -> -1 (paper Eq. I10), monotonically."""
    f1 = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    f2 = np.array([1, 1, 0, 1, 0, 1, 1, 0])
    n = f1.size
    d = float(((f1 - f2) ** 2).sum())
    ratios = []
    for b in [1.0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6]:
        log_s = float(bb.log_similarity(f1, f2, b, b))
        scale, offset = bb.limit_scale_and_offset(b, n)
        np.testing.assert_allclose(float(scale), np.log((b + 1) / b), rtol=1e-6)
        np.testing.assert_allclose(float(offset), n * np.log(2), rtol=1e-6)
        ratios.append((log_s - n * np.log(2)) / (d * np.log((b + 1) / b)))
    ratios = np.array(ratios)
    assert np.all(np.diff(np.abs(ratios + 1)) < 0)
    assert abs(ratios[-1] + 1) < 1e-5
    assert float(bb.limit_log_similarity(f1, f2)) == -d
    # The limit kernel is a strictly decreasing function of the exact one at small alpha = beta.
    g = np.random.default_rng(3).integers(0, 2, size=(30, n))
    exact = np.asarray(bb.pairwise_log_similarity(g, g, 1e-3, 1e-3)).ravel()
    limit = np.asarray(bb.pairwise_limit_log_similarity(g, g)).ravel()
    order = np.argsort(limit)
    assert np.all(np.diff(exact[order]) >= -1e-4)


@pytest.mark.slow
def test_finite_values_and_gradients_for_22_features_tiny_alpha():
    rng = np.random.default_rng(4)
    f = jnp.asarray(rng.integers(0, 2, size=(16, 22)), jnp.float32)
    a = b = 1e-6
    vals = bb.pairwise_log_similarity(f, f, a, b)
    assert np.all(np.isfinite(np.asarray(vals)))
    ref = _betaln_log_similarity(np.asarray(f)[:, None, :], np.asarray(f)[None, :, :], a, b)
    np.testing.assert_allclose(np.asarray(vals), ref, rtol=1e-5, atol=1e-3)

    def total(alpha, beta):
        return jnp.sum(bb.pairwise_log_similarity(f, f, alpha, beta))

    ga, gb = jax.grad(total, argnums=(0, 1))(jnp.float32(a), jnp.float32(b))
    assert np.isfinite(float(ga)) and np.isfinite(float(gb))
    g_elem = jax.grad(lambda al: jnp.sum(bb.log_similarity(f[:3], f[3:6], al, b)))(jnp.float32(a))
    assert np.isfinite(float(g_elem))

    # Gradient against a float64 central difference of Eq. I3 (betaln).
    alpha0, beta0 = 0.4, 1.7
    ga = jax.grad(lambda al: jnp.sum(bb.log_similarity(f[:4], f[4:8], al, beta0)))(jnp.float32(alpha0))
    h = 1e-6
    fd = (
        _betaln_log_similarity(np.asarray(f[:4]), np.asarray(f[4:8]), alpha0 + h, beta0).sum()
        - _betaln_log_similarity(np.asarray(f[:4]), np.asarray(f[4:8]), alpha0 - h, beta0).sum()
    ) / (2 * h)
    np.testing.assert_allclose(float(ga), fd, rtol=1e-4)


@pytest.mark.parametrize("transform", [lambda fn: fn, jax.jit], ids=["eager", "jit"])
def test_pairwise_equals_double_loop_and_jit_agrees(transform):
    rng = np.random.default_rng(5)
    f1 = rng.integers(0, 2, size=(7, 9))
    f2 = rng.integers(0, 2, size=(5, 9)).astype(bool)
    alpha = rng.uniform(0.1, 3.0, size=9)  # per-feature prior
    beta = 0.8
    pair = transform(bb.pairwise_log_similarity)(f1, f2, alpha, beta)
    assert pair.shape == (7, 5)
    loop = np.zeros((7, 5))
    for i in range(7):
        for j in range(5):
            loop[i, j] = float(bb.log_similarity(f1[i], f2[j], alpha, beta))
            np.testing.assert_allclose(
                loop[i, j], _betaln_log_similarity(f1[i], f2[j], alpha, beta), rtol=1e-5, atol=1e-5
            )
    np.testing.assert_allclose(np.asarray(pair), loop, rtol=1e-5, atol=1e-5)
    elem = transform(bb.log_similarity)(f1[:, None, :], f2[None, :, :], alpha, beta)
    np.testing.assert_allclose(np.asarray(elem), loop, rtol=1e-5, atol=1e-5)
    lim = transform(bb.pairwise_limit_log_similarity)(f1, f2)
    lim_loop = np.array([[-np.sum((f1[i] - f2[j].astype(int)) ** 2) for j in range(5)] for i in range(7)])
    np.testing.assert_array_equal(np.asarray(lim), lim_loop)


def test_fractional_features_are_expected_log_similarity():
    """For features in [0, 1] the kernel is E[log s] under independent Bern(f) features."""
    a, b = 0.6, 1.9
    p1 = np.array([0.2, 1.0, 0.5])
    p2 = np.array([0.9, 0.3, 0.0])
    expected = 0.0
    for bits1 in itertools.product((0, 1), repeat=3):
        for bits2 in itertools.product((0, 1), repeat=3):
            w = np.prod(np.where(bits1, p1, 1 - p1)) * np.prod(np.where(bits2, p2, 1 - p2))
            expected += w * _betaln_log_similarity(bits1, bits2, a, b)
    np.testing.assert_allclose(float(bb.log_similarity(p1, p2, a, b)), expected, rtol=1e-5)
    np.testing.assert_allclose(float(bb.pairwise_log_similarity(p1[None], p2[None], a, b)[0, 0]), expected, rtol=1e-5)


def test_vmap_and_broadcasting():
    rng = np.random.default_rng(6)
    f1 = jnp.asarray(rng.integers(0, 2, size=(4, 6)))
    f2 = jnp.asarray(rng.integers(0, 2, size=(4, 6)))
    via_vmap = jax.vmap(lambda x, y: bb.log_similarity(x, y, 1.5, 0.5))(f1, f2)
    direct = bb.log_similarity(f1, f2, 1.5, 0.5)
    np.testing.assert_allclose(np.asarray(via_vmap), np.asarray(direct), rtol=1e-6)
    # Broadcasting one vector against many.
    one_vs_many = bb.log_similarity(f1[0], f2, 1.5, 0.5)
    assert one_vs_many.shape == (4,)
    np.testing.assert_allclose(
        np.asarray(one_vs_many), np.asarray(bb.pairwise_log_similarity(f1[:1], f2, 1.5, 0.5))[0], rtol=1e-5
    )
    # Symmetry.
    np.testing.assert_allclose(np.asarray(bb.log_similarity(f2, f1, 1.5, 0.5)), np.asarray(direct), rtol=1e-6)


@pytest.mark.parametrize(
    "name,kwargs",
    [("alpha", dict(alpha=0.0)), ("alpha", dict(alpha=-1.0)), ("beta", dict(beta=-0.5)), ("beta", dict(beta=np.nan))],
)
def test_invalid_parameters_raise(name, kwargs):
    f = jnp.ones((2, 3))
    params = dict(alpha=1.0, beta=1.0)
    params.update(kwargs)
    for fn in (bb.log_similarity, bb.pairwise_log_similarity):
        with pytest.raises(ValueError, match=name):
            fn(f, f, **params)
    with pytest.raises(ValueError, match=name):
        bb.log_feature_table(**params)


def test_invalid_shapes_and_values_raise():
    with pytest.raises(ValueError, match=r"f1.*f2.*\(2, 3\).*\(2, 4\)"):
        bb.pairwise_log_similarity(jnp.ones((2, 3)), jnp.ones((2, 4)))
    with pytest.raises(ValueError, match="f1 and f2"):
        bb.log_similarity(jnp.ones(3), jnp.ones(4))
    with pytest.raises(ValueError, match="f1 and f2"):
        bb.limit_log_similarity(jnp.ones(3), jnp.ones(4))
    with pytest.raises(ValueError, match="f2"):
        bb.pairwise_limit_log_similarity(jnp.ones((2, 3)), jnp.ones(3))
    with pytest.raises(ValueError, match="f1"):
        bb.pairwise_log_similarity(jnp.ones(3), jnp.ones((2, 3)))
    with pytest.raises(ValueError, match=r"f2.*\[0, 1\]"):
        bb.log_similarity(jnp.ones(3), jnp.array([0.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match=r"alpha.*\(3,\)"):
        bb.log_similarity(jnp.ones(3), jnp.ones(3), alpha=jnp.ones(4))
    with pytest.raises(ValueError, match="num_features"):
        bb.limit_scale_and_offset(1.0, 0)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    log_a=st.floats(-12.0, 8.0),
    log_b=st.floats(-12.0, 8.0),
)
def test_property_pairwise_matches_betaln_reference(seed, log_a, log_b):
    """Random binary features and alpha, beta over 20 orders of magnitude vs float64 Eq. I3."""
    a, b = float(np.exp(log_a)), float(np.exp(log_b))
    rng = np.random.default_rng(seed)
    f1 = rng.integers(0, 2, size=(4, 6))
    f2 = rng.integers(0, 2, size=(3, 6))
    ref = _betaln_log_similarity(f1[:, None, :], f2[None, :, :], a, b)
    got = np.asarray(bb.pairwise_log_similarity(f1, f2, a, b), np.float64)
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-4)
    sym = np.asarray(bb.pairwise_log_similarity(f2, f1, a, b), np.float64)
    # float32 sums in another order: a few ulp apart (1.9e-6 seen at |log s| = 0.6)
    np.testing.assert_allclose(sym, got.T, rtol=1e-5, atol=1e-5)
