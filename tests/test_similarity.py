"""Similarities and distances against plain numpy, and their guards at degenerate inputs."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gensim_jax import similarity as S


def np_cos(x, y):
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    if nx == 0 or ny == 0:
        return 0.0
    return float(np.dot(x, y) / (nx * ny))


REFERENCE = {
    "cosine": np_cos,
    "neg_arc_length": lambda x, y: 1 - np.arccos(np.clip(np_cos(x, y), -1, 1)) / np.pi,
    "neg_euclidean": lambda x, y: -float(np.linalg.norm(x - y)),
    "dot": lambda x, y: float(np.dot(x, y)),
    "exp_neg_euclidean": lambda x, y: float(np.exp(-np.linalg.norm(x - y))),
    "euclidean": lambda x, y: float(np.linalg.norm(x - y)),
    "squared_euclidean": lambda x, y: float(np.sum((x - y) ** 2)),
    "l1": lambda x, y: float(np.sum(np.abs(x - y))),
    "normalized_l1": lambda x, y: float(np.mean(np.abs(x - y))),
}
ALL = {**S.SIMILARITIES, **S.DISTANCES}


@pytest.mark.parametrize("name", sorted(ALL))
def test_elementwise_and_pairwise_match_numpy_loops(name):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 5)).astype(np.float32)
    y = rng.normal(size=(4, 5)).astype(np.float32)
    elem, pair = ALL[name]
    ref = np.array(
        [[REFERENCE[name](x[i].astype(np.float64), y[j].astype(np.float64)) for j in range(4)] for i in range(6)]
    )
    got_pair = pair(x, y)
    chex.assert_shape(got_pair, (6, 4))
    np.testing.assert_allclose(got_pair, ref, rtol=1e-5, atol=2e-5)
    got_elem = elem(x[:, None, :], y[None, :, :])  # broadcasting
    np.testing.assert_allclose(got_elem, ref, rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(jax.jit(pair)(x, y), ref, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.slow
def test_pairwise_self_has_exact_diagonal(name):
    x = np.random.default_rng(1).normal(size=(7, 3)).astype(np.float32) * 10
    m = np.asarray(ALL[name][1](x))
    expected = {
        "cosine": 1.0,
        "neg_arc_length": 1.0,
        "neg_euclidean": 0.0,
        "exp_neg_euclidean": 1.0,
        "euclidean": 0.0,
        "squared_euclidean": 0.0,
        "l1": 0.0,
        "normalized_l1": 0.0,
    }
    if name in expected:
        np.testing.assert_allclose(np.diag(m), expected[name], atol=1e-6)
    np.testing.assert_allclose(m, m.T, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("case", ["zero_x", "zero_both", "equal", "opposite"])
def test_value_and_gradient_finite_at_degenerate_inputs(name, case):
    v = jnp.array([1.0, -2.0, 0.5])
    x, y = {
        "zero_x": (jnp.zeros(3), v),
        "zero_both": (jnp.zeros(3), jnp.zeros(3)),
        "equal": (v, v),
        "opposite": (v, -v),
    }[case]
    elem, pair = ALL[name]
    val, grad = jax.value_and_grad(lambda a: elem(a, y))(x)
    assert np.isfinite(val) and np.all(np.isfinite(grad))
    gx = jax.grad(lambda a: jnp.sum(pair(a)))(jnp.stack([x, y, v]))
    assert np.all(np.isfinite(gx))


def test_cosine_gradient_is_zero_at_equal_vectors_and_arc_length_is_exact():
    v = jnp.array([0.3, 0.4, 1.2])
    np.testing.assert_allclose(jax.grad(lambda a: S.cosine_similarity(a, v))(v), 0.0, atol=1e-6)
    assert float(S.neg_arc_length(v, v)) == 1.0
    assert float(S.neg_arc_length(v, -v)) == pytest.approx(0.0, abs=1e-7)
    # a small angle is resolved (arccos of a rounded cosine would give ~3e-4 rad of error)
    w = jnp.array([0.3, 0.4 + 1e-4, 1.2])
    ang = np.arccos(np.clip(np_cos(np.float64(v), np.float64(w)), -1, 1))
    assert float(1 - S.neg_arc_length(v, w)) * np.pi == pytest.approx(ang, rel=1e-3)


def test_temperature_divides_similarities():
    x = np.random.default_rng(2).normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_allclose(
        S.pairwise_cosine_similarity(x, temperature=0.1), S.pairwise_cosine_similarity(x) / 0.1, rtol=1e-6
    )
    np.testing.assert_allclose(S.similarity_matrix(x, kind="euclidean"), -S.pairwise_euclidean_distance(x), rtol=1e-6)
    with pytest.raises(ValueError, match="temperature"):
        S.cosine_similarity(x, x, temperature=0.0)


def test_exp_neg_distance_is_s0_exp_minus_d():
    d = jnp.array([0.0, 1.0, 2.0])
    np.testing.assert_allclose(S.exp_neg_distance(d, s0=2.0), 2.0 * np.exp(-np.array([0.0, 1.0, 2.0])), rtol=1e-6)


def test_distance_and_similarity_views():
    x = np.random.default_rng(3).normal(size=(4, 2)).astype(np.float32)
    np.testing.assert_allclose(S.distance_fn("cosine", pairwise=True)(x), -S.pairwise_cosine_similarity(x), rtol=1e-6)
    np.testing.assert_allclose(S.similarity_fn("l1", pairwise=True)(x), -S.pairwise_l1_distance(x), rtol=1e-6)
    with pytest.raises(ValueError, match="unknown similarity or distance 'nope'"):
        S.distance_fn("nope")


def test_bad_shapes_name_the_argument():
    with pytest.raises(ValueError, match="same feature size"):
        S.cosine_similarity(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="x must be a matrix"):
        S.pairwise_euclidean_distance(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="y must be a matrix"):
        S.pairwise_euclidean_distance(np.ones((2, 3)), np.ones(3))
    with pytest.raises(ValueError, match="do not broadcast"):
        S.l1_distance(np.ones((2, 3)), np.ones((5, 3)))
    with pytest.raises(ValueError, match="scalar"):
        S.dot_product(1.0, 2.0)


@settings(max_examples=40, deadline=None)
@given(arrays(np.float32, (5, 3), elements=st.floats(-100, 100, width=32)), st.floats(0.01, 50.0))
def test_cosine_and_arc_length_are_invariant_to_positive_rescaling(x, scale):
    c1 = S.pairwise_cosine_similarity(x)
    c2 = S.pairwise_cosine_similarity(x * np.float32(scale))
    ok = np.linalg.norm(x, axis=1) * min(scale, 1.0) > 1e-3  # rows far from the zero-vector floor
    sel = np.ix_(ok, ok)
    np.testing.assert_allclose(np.asarray(c1)[sel], np.asarray(c2)[sel], atol=1e-5)


@pytest.mark.slow
def test_pairwise_matrix_form_does_not_depend_on_batch_split():
    """The N x M matrix equals its rows computed one at a time (no cross-row leakage)."""
    x = np.random.default_rng(4).normal(size=(9, 6)).astype(np.float32)
    for name, (_, pair) in ALL.items():
        full = np.asarray(pair(x, x))
        rows = np.concatenate([np.asarray(pair(x[i : i + 1], x)) for i in range(9)])
        # the matmul form of Euclidean distances cancels |x|^2 + |y|^2 - 2x.y: absolute error
        # ~ sqrt(eps_f32 * |x|^2) ~ 1e-3 near 0 (as torch.cdist); other measures agree to rounding
        atol = 3e-3 if "euclidean" in name else 1e-5
        np.testing.assert_allclose(full, rows, rtol=1e-5, atol=atol, err_msg=name)


# --------------------------------------------------------------------------- Gram derivative rule


@pytest.mark.parametrize("symmetric_rule", [True, False])
@pytest.mark.slow
def test_self_gram_derivatives_match_closed_form(symmetric_rule, monkeypatch):
    """d/dx sum(W * (x @ x.T)) = (W + W.T) @ x by reverse and forward mode, and the Hessian-vector
    product (W + W.T) @ v, with and without the symmetric derivative rule of small N."""
    n = 6
    monkeypatch.setattr(S, "SYMMETRIC_GRAM_MAX_N", n if symmetric_rule else n - 1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    w = rng.standard_normal((n, n)).astype(np.float32)
    v = rng.standard_normal((n, 3)).astype(np.float32)
    expected = (w + w.T).astype(np.float64) @ x

    def f(x):
        return jnp.sum(jnp.asarray(w) * S.pairwise_dot_product(x))

    np.testing.assert_allclose(jax.grad(f)(x), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jax.jacfwd(f)(x), expected, rtol=1e-5, atol=1e-5)
    hvp = jax.jvp(jax.grad(f), (jnp.asarray(x),), (jnp.asarray(v),))[1]
    np.testing.assert_allclose(hvp, (w + w.T).astype(np.float64) @ v, rtol=1e-5, atol=1e-5)
