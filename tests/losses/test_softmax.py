import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from gensim_jax import losses
from tests._optional import importorskip
from tests.losses import reference as ref


class TestInfoNCE(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    @pytest.mark.slow
    def test_infonce_equals_loop(self):
        rng = np.random.default_rng(0)
        a, p = rng.normal(size=(2, 5, 4)).astype(np.float32)
        negs = rng.normal(size=(5, 6, 4)).astype(np.float32)
        f = self.variant(lambda a, p, n: losses.infonce_loss(a, p, n, temperature=0.2))
        np.testing.assert_allclose(f(a, p, negs), ref.infonce(a, p, negs, 0.2), rtol=1e-5)

    @chex.variants(with_jit=True, without_jit=True)
    @pytest.mark.slow
    def test_ntxent_equals_loop_and_optax(self):
        rng = np.random.default_rng(1)
        v1, v2 = rng.normal(size=(2, 6, 8)).astype(np.float32)
        f = self.variant(lambda a, b: losses.ntxent_loss(a, b, temperature=0.3))
        got = f(v1, v2)
        np.testing.assert_allclose(got, ref.ntxent(v1, v2, 0.3), rtol=1e-5)
        labels = jnp.concatenate([jnp.arange(6), jnp.arange(6)])
        np.testing.assert_allclose(got, optax.losses.ntxent(jnp.concatenate([v1, v2]), labels, 0.3), rtol=1e-5)

    @chex.variants(with_jit=True, without_jit=True)
    @pytest.mark.slow
    def test_cross_view_form_of_appendix_l(self):
        rng = np.random.default_rng(2)
        v1, v2 = rng.normal(size=(2, 7, 3)).astype(np.float32)
        f = self.variant(lambda a, b: losses.cross_view_infonce_loss(a, b, temperature=0.5))
        np.testing.assert_allclose(f(v1, v2), ref.cross_view(v1, v2, 0.5), rtol=1e-5)


@pytest.mark.slow
def test_ntxent_padding_drops_both_views():
    rng = np.random.default_rng(3)
    v1, v2 = rng.normal(size=(2, 6, 4)).astype(np.float32)
    mask = np.array([1, 1, 1, 1, 0, 0], bool)
    np.testing.assert_allclose(losses.ntxent_loss(v1, v2, mask=mask), losses.ntxent_loss(v1[:4], v2[:4]), rtol=1e-5)


@pytest.mark.slow
def test_supcon_equals_loop(layout):
    _, z, y, valid = layout
    got = losses.supcon_loss(z, y, temperature=0.2, mask=valid)
    np.testing.assert_allclose(got, ref.supcon(z, y, valid, 0.2), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("average", ["anchor", "pair"])
def test_sincere_equals_loop(layout, average):
    _, z, y, valid = layout
    got = losses.sincere_loss(z, y, temperature=0.2, average=average, mask=valid)
    np.testing.assert_allclose(got, ref.sincere(z, y, valid, 0.2, average), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_sincere_pair_average_is_optax_ntxent_with_labels():
    z = np.random.default_rng(4).normal(size=(9, 4)).astype(np.float32)
    y = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    np.testing.assert_allclose(
        losses.sincere_loss(z, y, temperature=0.3, average="pair"),
        optax.losses.ntxent(jnp.asarray(z), jnp.asarray(y), 0.3),
        rtol=1e-5,
    )


@pytest.mark.slow
def test_supcon_against_khosla_style_torch_definition():
    """SupCon L_out written as Khosla et al.'s reference does it (mask algebra in PyTorch)."""
    torch = importorskip("torch", "torch")
    rng = np.random.default_rng(5)
    z = rng.normal(size=(10, 6)).astype(np.float32)
    y = np.array([0, 1, 0, 2, 1, 0, 2, 3, 1, 0])
    f = torch.nn.functional.normalize(torch.tensor(z), dim=1)
    logits = f @ f.T / 0.1
    logits = logits - logits.max(dim=1, keepdim=True).values.detach()
    lab = torch.tensor(y)
    pos = (lab[:, None] == lab[None, :]).float()
    not_self = 1 - torch.eye(10)
    pos = pos * not_self
    log_prob = logits - torch.log((torch.exp(logits) * not_self).sum(1, keepdim=True))
    per_anchor = -(pos * log_prob).sum(1) / pos.sum(1).clamp(min=1)
    has = pos.sum(1) > 0
    expected = per_anchor[has].mean().item()
    np.testing.assert_allclose(losses.supcon_loss(z, y, temperature=0.1), expected, rtol=1e-5)


@pytest.mark.slow
def test_degenerate_batches_are_finite_and_skip_anchors_without_positives():
    # jitted: one compile per function instead of one per operation (6.0 s -> 2.3 s idle)
    z = jnp.asarray(np.random.default_rng(6).normal(size=(5, 3)), jnp.float32)
    distinct = jnp.arange(5)
    for fn in (losses.supcon_loss, losses.sincere_loss):
        v, g = jax.jit(jax.value_and_grad(lambda z: fn(z, distinct)))(z)
        assert v == 0.0 and np.all(g == 0.0)
        per = jax.jit(lambda z: fn(z, jnp.array([0, 0, 1, 2, 3]), reduction="none"))(z)
        assert np.all(np.asarray(per)[2:] == 0.0) and np.all(np.asarray(per)[:2] > 0)
    # all equal labels: SINCERE has no negatives; identical embeddings; a zero embedding
    same = jnp.concatenate([jnp.ones((4, 3)), jnp.zeros((1, 3))])
    for fn in (losses.supcon_loss, losses.sincere_loss):
        for y in (jnp.zeros(5, int), jnp.array([0, 0, 1, 1, 1])):
            v, g = jax.jit(jax.value_and_grad(lambda z: fn(z, y)))(same)
            assert np.isfinite(v) and np.all(np.isfinite(g))
    for fn in (lambda z: losses.ntxent_loss(z, z), lambda z: losses.cross_view_infonce_loss(z, z)):
        v, g = jax.jit(jax.value_and_grad(fn))(same)
        assert np.isfinite(v) and np.all(np.isfinite(g))
    # a single valid example: nothing to contrast
    v, g = jax.jit(jax.value_and_grad(lambda z: losses.ntxent_loss(z, z, mask=jnp.array([1, 0, 0, 0, 0], bool))))(z)
    assert np.isfinite(v) and np.all(np.isfinite(g))


@pytest.mark.parametrize("scale", [0.01, 3.0, 1000.0])
@pytest.mark.slow
def test_cosine_losses_invariant_to_positive_rescaling(scale):
    rng = np.random.default_rng(7)
    z = rng.normal(size=(8, 4)).astype(np.float32)
    y = np.array([0, 1, 0, 1, 2, 2, 0, 3])
    for fn in (
        lambda z: losses.supcon_loss(z, y),
        lambda z: losses.sincere_loss(z, y),
        lambda z: losses.ntxent_loss(z[:4], z[4:]),
        lambda z: losses.cross_view_infonce_loss(z[:4], z[4:]),
    ):
        np.testing.assert_allclose(fn(z * scale), fn(z), rtol=1e-5)


def test_bad_inputs():
    with pytest.raises(ValueError, match="view1 has shape .* but view2 has"):
        losses.ntxent_loss(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="negatives must have shape"):
        losses.infonce_loss(np.zeros((3, 2)), np.zeros((3, 2)), np.zeros((3, 4, 5)))
    with pytest.raises(ValueError, match="labels must be a vector"):
        losses.supcon_loss(np.zeros((3, 2)), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="temperature must be > 0"):
        losses.supcon_loss(np.zeros((3, 2)), np.zeros(3), temperature=-1.0)
    with pytest.raises(ValueError, match="average must be"):
        losses.sincere_loss(np.zeros((3, 2)), np.zeros(3), average="class")
