import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from gensim_jax import losses
from tests.losses import reference as ref


class TestTriplet(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_all_forms_equal_loop_over_triplets(self):
        rng = np.random.default_rng(0)
        a, p, n = (rng.normal(size=(7, 4)).astype(np.float32) for _ in range(3))
        valid = np.array([1, 1, 1, 0, 1, 1, 1], bool)
        for form in losses.triplet.TRIPLET_FORMS:
            f = self.variant(
                lambda a, p, n, m, form=form: losses.triplet_loss(
                    a, p, n, form=form, margin=0.3, mask=m, reduction="none"
                )
            )
            expected = np.array(ref.triplet(a, p, n, form, 0.3)) * valid
            np.testing.assert_allclose(f(a, p, n, valid), expected, rtol=1e-5, atol=1e-6)
            mean = losses.triplet_loss(a, p, n, form=form, margin=0.3, mask=valid)
            np.testing.assert_allclose(mean, expected.sum() / valid.sum(), rtol=1e-5, atol=1e-6)


def test_similarity_as_distance_and_quadratic_is_eq_h1():
    rng = np.random.default_rng(1)
    a, p, n = (rng.normal(size=(5, 1)).astype(np.float32) for _ in range(3))
    # Eq. H1 on 1-D embeddings: (phi(x) - phi(x+))^2 - (phi(x) - phi(x-))^2
    h1 = np.mean((a - p) ** 2 - (a - n) ** 2)
    np.testing.assert_allclose(losses.triplet_loss(a, p, n, form="quadratic"), h1, rtol=1e-5)
    # a similarity s is read as the distance -s
    a, p, n = (rng.normal(size=(5, 3)).astype(np.float32) for _ in range(3))
    lin = losses.triplet_loss(a, p, n, form="linear", distance="cosine", reduction="none")
    np.testing.assert_allclose(lin, [ref.cos(x, z) - ref.cos(x, y) for x, y, z in zip(a, p, n)], rtol=1e-5, atol=1e-6)


def test_hinge_agrees_with_optax_triplet_margin_loss():
    rng = np.random.default_rng(2)
    a, p, n = (rng.normal(size=(6, 8)).astype(np.float32) for _ in range(3))
    ours = losses.triplet_loss(a, p, n, form="hinge", margin=1.0, reduction="none")
    theirs = optax.losses.triplet_margin_loss(a, p, n, margin=1.0, eps=0.0)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("soft", [False, True])
def test_batch_hard_equals_loop(layout, soft):
    _, z, y, valid = layout
    got = losses.batch_hard_triplet_loss(z, y, margin=0.5, soft=soft, mask=valid)
    np.testing.assert_allclose(got, ref.batch_hard(z, y, valid, 0.5, soft), rtol=1e-5, atol=1e-6)
    g = jax.grad(lambda z: losses.batch_hard_triplet_loss(z, y, mask=valid))(z)
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("smooth", [False, True])
@pytest.mark.slow
def test_lifted_structured_equals_loop(layout, smooth):
    _, z, y, valid = layout
    got = losses.lifted_structured_loss(z, y, margin=1.0, smooth=smooth, mask=valid)
    np.testing.assert_allclose(got, ref.lifted(z, y, valid, 1.0, smooth), rtol=1e-5, atol=1e-6)
    g = jax.grad(lambda z: losses.lifted_structured_loss(z, y, smooth=smooth, mask=valid))(z)
    assert np.all(np.isfinite(g))


@pytest.mark.slow
def test_batches_without_positives_or_negatives_give_zero_and_zero_gradient():
    z = jnp.asarray(np.random.default_rng(3).normal(size=(4, 3)), jnp.float32)
    for y in (jnp.arange(4), jnp.zeros(4, int)):
        for fn in (losses.batch_hard_triplet_loss, losses.lifted_structured_loss):
            v, g = jax.value_and_grad(lambda z: fn(z, y))(z)
            assert v == 0.0 and np.all(g == 0.0)
    # identical embeddings: finite everywhere
    same = jnp.ones((4, 3))
    y = jnp.array([0, 0, 1, 1])
    for fn in (losses.batch_hard_triplet_loss, losses.lifted_structured_loss):
        v, g = jax.value_and_grad(lambda z: fn(z, y))(same)
        assert np.isfinite(v) and np.all(np.isfinite(g))
    v, g = jax.value_and_grad(lambda z: losses.triplet_loss(z, z, z, distance="neg_arc_length"))(same)
    assert np.isfinite(v) and np.all(np.isfinite(g))


def test_bad_inputs():
    with pytest.raises(ValueError, match="form must be one of"):
        losses.triplet_loss(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3)), form="cube")
    with pytest.raises(ValueError, match="negative has shape"):
        losses.triplet_loss(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="labels has length 3 but the batch has 2"):
        losses.batch_hard_triplet_loss(np.zeros((2, 3)), np.zeros(3))
