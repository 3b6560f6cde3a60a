"""Tests for gensim_jax.kernels.categorical.

Reference: brute-force enumeration of the generative process (class, then an example from a finite
per-class pool with class-specific likelihoods) evaluating paper Eq. 1 by explicit sums; the
noisy-label table against an explicit sum over the hidden class with the noise matrix; Python loops.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax.kernels import categorical as cat


def _enumerated_log_s(pi, rng):
    """Eq. 1 by enumeration: examples 0..E-1, each owned by one class, p(x|c) random on the pool."""
    c = len(pi)
    owner = np.repeat(np.arange(c), 3)  # 3 examples per class, disjoint supports
    lik = np.zeros((c, owner.size))
    for k in range(c):
        w = rng.random(3) + 0.1
        lik[k, owner == k] = w / w.sum()
    out = np.empty((owner.size, owner.size))
    for i in range(owner.size):
        for j in range(owner.size):
            p_same = sum(pi[k] * lik[k, i] * lik[k, j] for k in range(c))
            p_diff = sum(pi[k] * lik[k, i] for k in range(c)) * sum(pi[k] * lik[k, j] for k in range(c))
            out[i, j] = np.log(p_same / p_diff) if p_same > 0 else -np.inf
    return owner, out


@pytest.mark.slow
def test_matches_enumeration_of_generative_process():
    pi = np.array([0.1, 0.2, 0.3, 0.4])
    owner, ref = _enumerated_log_s(pi, np.random.default_rng(0))
    got = np.asarray(cat.pairwise_log_similarity(jnp.asarray(owner), jnp.asarray(owner), jnp.asarray(pi, jnp.float32)))
    finite = np.isfinite(ref)
    np.testing.assert_array_equal(np.isfinite(got), finite)
    assert np.all(got[~finite] == -np.inf)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-6)
    table = np.asarray(cat.log_similarity_table(jnp.asarray(pi, jnp.float32)))
    np.testing.assert_allclose(table[owner[:, None], owner[None, :]][finite], ref[finite], rtol=1e-6)
    np.testing.assert_allclose(np.diag(table), -np.log(pi), rtol=1e-6)


@pytest.mark.slow
def test_log_floor_and_uniform_prior():
    pi = cat.uniform_class_probs(5)
    table = np.asarray(cat.log_similarity_table(pi, log_floor=-np.log(5.0)))
    expected = np.where(np.eye(5, dtype=bool), np.log(5.0), -np.log(5.0))
    np.testing.assert_allclose(table, expected, rtol=1e-6)
    y1 = jnp.array([0, 1, 4, 4])
    y2 = jnp.array([0, 2, 4])
    pair = np.asarray(cat.pairwise_log_similarity(y1, y2, pi, log_floor=-3.0))
    loop = np.array([[np.log(5.0) if a == b else -3.0 for b in np.asarray(y2)] for a in np.asarray(y1)])
    np.testing.assert_allclose(pair, loop, rtol=1e-6)
    via_table = np.asarray(cat.pairwise_table_lookup(cat.log_similarity_table(pi, -3.0), y1, y2))
    np.testing.assert_allclose(via_table, loop, rtol=1e-6)


def test_noisy_label_table_matches_explicit_sum_and_limits():
    pi = np.array([0.5, 0.3, 0.15, 0.05])
    c = pi.size
    for eps in (1e-6, 0.1, 0.5, 1.0):
        noise = (1 - eps) * np.eye(c) + eps / c  # noise[k, y] = p(y | k)
        p_same = np.einsum("k,ka,kb->ab", pi, noise, noise)
        q = pi @ noise
        ref = np.log(p_same) - np.log(q)[:, None] - np.log(q)[None, :]
        got = np.asarray(cat.noisy_label_log_similarity_table(jnp.asarray(pi, jnp.float32), eps))
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        np.asarray(cat.noisy_label_log_similarity_table(jnp.asarray(pi, jnp.float32), 1.0)), 0.0, atol=1e-6
    )
    small = np.asarray(cat.noisy_label_log_similarity_table(jnp.asarray(pi, jnp.float32), 1e-6))
    np.testing.assert_allclose(np.diag(small), -np.log(pi), rtol=1e-4)
    assert np.all(small[~np.eye(c, dtype=bool)] < -10)


@pytest.mark.slow
@pytest.mark.parametrize("transform", [lambda fn: fn, jax.jit], ids=["eager", "jit"])
def test_elementwise_broadcasting_jit_and_grad(transform):
    pi = jnp.array([0.2, 0.3, 0.5])
    y1 = jnp.array([[0], [1], [2]])
    y2 = jnp.array([0, 1, 2, 2])
    fn = transform(lambda a, b, p: cat.log_similarity(a, b, p, log_floor=-1.0))
    got = np.asarray(fn(y1, y2, pi))
    assert got.shape == (3, 4)
    loop = np.array([[-np.log(float(pi[a])) if a == b else -1.0 for b in [0, 1, 2, 2]] for a in range(3)])
    np.testing.assert_allclose(got, loop, rtol=1e-6)
    g = jax.grad(lambda p: jnp.sum(cat.log_similarity(y1, y2, p, log_floor=-1.0)))(pi)
    # d/dpi_c of sum over same-class pairs of -log pi_c = -(count_c) / pi_c
    counts = np.array([1, 1, 2])
    np.testing.assert_allclose(np.asarray(g), -counts / np.asarray(pi), rtol=1e-6)
    g_inf = jax.grad(lambda p: jnp.sum(jnp.diagonal(cat.pairwise_log_similarity(y2, y2, p))))(pi)
    assert np.all(np.isfinite(np.asarray(g_inf)))


def test_invalid_inputs_raise():
    pi = jnp.array([0.5, 0.5])
    with pytest.raises(ValueError, match="class_probs.*sum"):
        cat.log_similarity_table(jnp.array([0.5, 0.6]))
    with pytest.raises(ValueError, match=r"class_probs.*\(0, 1\]"):
        cat.log_similarity_table(jnp.array([1.5, -0.5]))
    with pytest.raises(ValueError, match=r"class_probs.*\(0, 1\]"):
        cat.log_similarity_table(jnp.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="class_probs"):
        cat.log_similarity_table(jnp.ones((2, 2)) / 4)
    with pytest.raises(ValueError, match=r"y2.*\[0, 2\)"):
        cat.pairwise_log_similarity(jnp.array([0]), jnp.array([2]), pi)
    with pytest.raises(ValueError, match=r"y1.*\[0, 2\)"):
        cat.log_similarity(jnp.array([-1]), jnp.array([0]), pi)
    with pytest.raises(TypeError, match="y1"):
        cat.log_similarity(jnp.array([0.0]), jnp.array([0]), pi)
    with pytest.raises(ValueError, match="log_floor"):
        cat.log_similarity(jnp.array([0]), jnp.array([0]), pi, log_floor=float("nan"))
    with pytest.raises(ValueError, match="label_noise"):
        cat.noisy_label_log_similarity_table(pi, 0.0)
    with pytest.raises(ValueError, match="label_noise"):
        cat.noisy_label_log_similarity_table(pi, 1.5)
    with pytest.raises(ValueError, match="y1"):
        cat.pairwise_log_similarity(jnp.array([[0]]), jnp.array([0]), pi)
    with pytest.raises(ValueError, match="num_classes"):
        cat.uniform_class_probs(0)
