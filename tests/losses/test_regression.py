import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax import losses
from tests._optional import importorskip
from tests.losses import reference as ref


class TestGensimRegression(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_equals_loop_over_pairs(self):
        rng = np.random.default_rng(0)
        S = rng.normal(size=(6, 6)).astype(np.float32)
        T = rng.normal(size=(6, 6)).astype(np.float32)
        W = rng.uniform(0.1, 2, size=(6, 6)).astype(np.float32)
        valid = np.array([1, 1, 0, 1, 1, 1], bool)
        f = self.variant(lambda s, t, m, w: losses.gensim_regression_loss(s, t, mask=m, weights=w))
        np.testing.assert_allclose(f(S, T, valid, W), ref.gensim_regression(S, T, valid, True, W), rtol=1e-5)
        g = self.variant(lambda s, t: losses.gensim_regression_loss(s, t, exclude_diagonal=False))
        np.testing.assert_allclose(g(S, T), np.mean((S - T) ** 2), rtol=1e-5)
        h = self.variant(lambda s, t: losses.gensim_regression_loss(s, t, reduction="none"))
        per_pair = h(S, T)
        chex.assert_shape(per_pair, (6, 6))
        np.testing.assert_allclose(np.diag(per_pair), 0.0)
        np.testing.assert_allclose(per_pair[0, 1], (S[0, 1] - T[0, 1]) ** 2, rtol=1e-6)


@pytest.mark.slow
def test_gensim_loss_from_embeddings_uses_the_cosine_matrix(layout):
    _, z, _, valid = layout
    T = np.random.default_rng(1).normal(size=(len(z), len(z))).astype(np.float32)
    S = [[ref.cos(a, b) for b in z] for a in z]
    np.testing.assert_allclose(losses.gensim_loss(z, T, mask=valid), ref.gensim_regression(S, T, valid), rtol=1e-5)
    # cosine-based: invariant to positive rescaling of embeddings
    np.testing.assert_allclose(losses.gensim_loss(z * 7.5, T), losses.gensim_loss(z, T), rtol=1e-5)


@pytest.mark.slow
def test_distance_regression_matches_authors_cdist_form():
    torch = importorskip("torch", "torch")
    rng = np.random.default_rng(2)
    z = rng.normal(size=(10, 16)).astype(np.float32)
    f = rng.integers(0, 2, size=(10, 22)).astype(np.float32)
    zt, ft = torch.tensor(z), torch.tensor(f)
    authors = torch.nn.functional.mse_loss(torch.cdist(zt, zt), torch.cdist(ft, ft)).item()
    ours = losses.distance_regression_loss(z, f, exclude_diagonal=False)
    np.testing.assert_allclose(ours, authors, rtol=1e-4)
    loop = ref.gensim_regression(
        [[ref.euc(a, b) for b in z] for a in z], [[ref.euc(a, b) for b in f] for a in f], np.ones(10, bool)
    )
    np.testing.assert_allclose(losses.distance_regression_loss(z, f), loop, rtol=1e-4)


@pytest.mark.slow
def test_gradients_finite_with_identical_embeddings_and_no_valid_pairs():
    z = jnp.ones((4, 3))
    T = jnp.zeros((4, 4))
    for fn in (
        lambda z: losses.gensim_loss(z, T),
        lambda z: losses.distance_regression_loss(z, z + 1.0),
        lambda z: losses.gensim_loss(z, T, similarity="neg_arc_length"),
    ):
        v, g = jax.value_and_grad(fn)(z)
        assert np.isfinite(v) and np.all(np.isfinite(g))
    v, g = jax.value_and_grad(lambda z: losses.gensim_loss(z, T, mask=jnp.array([1, 0, 0, 0], bool)))(z)
    assert v == 0.0 and np.all(g == 0.0)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="target has shape"):
        losses.gensim_regression_loss(np.zeros((3, 3)), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="embedding_similarity must have 2 axes"):
        losses.gensim_regression_loss(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="weights must have shape"):
        losses.gensim_regression_loss(np.zeros((3, 3)), np.zeros((3, 3)), weights=np.ones((2, 2)))
    with pytest.raises(ValueError, match="mask must have shape"):
        losses.gensim_regression_loss(np.zeros((3, 3)), np.zeros((3, 3)), mask=np.ones(4))
    with pytest.raises(ValueError, match="features has 2 rows"):
        losses.distance_regression_loss(np.zeros((3, 4)), np.zeros((2, 22)))
    with pytest.raises(ValueError, match="reduction"):
        losses.gensim_regression_loss(np.zeros((3, 3)), np.zeros((3, 3)), reduction="avg")
