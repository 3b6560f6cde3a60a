import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax import losses
from tests._optional import importorskip
from tests.losses import reference as ref


class TestNCE(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_binary_nce_is_eq_10_4(self):
        rng = np.random.default_rng(0)
        h = rng.normal(size=9).astype(np.float32) * 3
        is_data = np.array([1, 1, 0, 0, 0, 1, 0, 0, 0], bool)
        got = self.variant(losses.nce_loss)(h, is_data)
        pos = ref.mean([-ref.log_sigmoid(float(v)) for v, d in zip(h, is_data) if d])
        neg = ref.mean([-ref.log_sigmoid(-float(v)) for v, d in zip(h, is_data) if not d])
        np.testing.assert_allclose(got, 0.5 * pos + 0.5 * neg, rtol=1e-5)

    @chex.variants(with_jit=True, without_jit=True)
    @pytest.mark.slow
    def test_infonce_cross_entropy_and_local_nce(self):
        rng = np.random.default_rng(1)
        h = rng.normal(size=(4, 6)).astype(np.float32) * 2
        idx = np.array([0, 3, 5, 2])
        ce = self.variant(lambda h, i: losses.infonce_cross_entropy(h, i, reduction="none"))(h, idx)
        local = self.variant(lambda h, i: losses.local_nce_loss(h, i, reduction="none"))(h, idx)
        for b in range(4):
            row = [float(v) for v in h[b]]
            np.testing.assert_allclose(ce[b], ref.logsumexp(row) - row[idx[b]], rtol=1e-5)
            exp_local = -ref.log_sigmoid(row[idx[b]]) - sum(
                ref.log_sigmoid(-v) for k, v in enumerate(row) if k != idx[b]
            )
            np.testing.assert_allclose(local[b], exp_local, rtol=1e-5)


@pytest.mark.slow
def test_nce_extreme_logits_are_finite():
    h = jnp.array([1e4, -1e4, 80.0, -80.0])
    d = jnp.array([True, False, False, True])
    v, g = jax.value_and_grad(lambda h: losses.nce_loss(h, d))(h)
    assert np.isfinite(v) and np.all(np.isfinite(g))
    with pytest.raises(ValueError, match="positive_index must be in"):
        losses.infonce_cross_entropy(np.zeros((2, 3)), 3)


@pytest.mark.slow
@pytest.mark.parametrize("squared", [False, True])
def test_margin_contrastive_equals_loop(layout, squared):
    _, z, y, valid = layout
    got = losses.pairwise_margin_contrastive_loss(z, y, margin=2.0, squared=squared, mask=valid)
    np.testing.assert_allclose(got, ref.contrastive_pairs(z, y, valid, 2.0, squared), rtol=1e-5, atol=1e-6)
    same = np.array([1, 0, 1, 0], bool)
    per = losses.margin_contrastive_loss(z[:4], z[4:], same, margin=2.0, squared=squared, reduction="none")
    for k in range(4):
        d = ref.euc(z[k], z[k + 4])
        e = (0.5 * d * d if squared else d) if same[k] else (0.5 * max(0, 2 - d) ** 2 if squared else max(0, 2 - d))
        np.testing.assert_allclose(per[k], e, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_class_center_loss_equals_loop(layout):
    _, z, y, valid = layout
    expected = ref.center(z, y, valid)
    np.testing.assert_allclose(losses.class_center_loss(z, y, mask=valid), expected, rtol=1e-5)
    np.testing.assert_allclose(
        losses.class_center_loss(z, y, num_classes=int(y.max()) + 1, mask=valid), expected, rtol=1e-5
    )
    np.testing.assert_allclose(jax.jit(lambda z: losses.class_center_loss(z, y, mask=valid))(z), expected, rtol=1e-5)


@pytest.mark.slow
def test_thesis_identity_eq_10_pair_loss_is_2_T_times_center_loss():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(12, 6)).astype(np.float32)
    y = np.array([0, 0, 1, 1, 1, 2, 0, 3, 1, 0, 2, 2])
    per_center = np.asarray(losses.class_center_loss(z, y, reduction="none"))
    per_pair = np.asarray(losses.class_pair_loss(z, y, reduction="none"))
    for q in np.unique(y):
        members = y == q
        l_avg = per_center[members].sum()
        l_pair = per_pair[members].sum()
        np.testing.assert_allclose(l_pair, 2 * members.sum() * l_avg, rtol=1e-4)
        np.testing.assert_allclose(l_pair, ref.pair_center(z, y, np.ones(12, bool), q), rtol=1e-4)


@pytest.mark.slow
def test_singleton_class_contributes_zero_with_zero_gradient():
    z = jnp.asarray(np.random.default_rng(3).normal(size=(4, 3)), jnp.float32)
    y = jnp.array([0, 1, 2, 3])
    v, g = jax.value_and_grad(lambda z: losses.class_center_loss(z, y))(z)
    assert v == 0.0 and np.all(g == 0.0)


@pytest.mark.slow
def test_center_objective_is_ce_plus_lambda_lsim():
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(6, 4)).astype(np.float32)
    z = rng.normal(size=(6, 3)).astype(np.float32)
    y = np.array([0, 1, 0, 3, 1, 1])
    ce = np.mean([ref.logsumexp([float(v) for v in logits[i]]) - logits[i, y[i]] for i in range(6)])
    got = losses.center_objective(logits, y, z, lam=0.75)
    np.testing.assert_allclose(got, ce + 0.75 * ref.center(z, y, np.ones(6, bool)), rtol=1e-5)
    with pytest.raises(ValueError, match="lam must be >= 0"):
        losses.center_objective(logits, y, z, lam=-1.0)
    with pytest.raises(ValueError, match="embeddings has 5 rows"):
        losses.center_objective(logits, y, z[:5])


def _numpy_center_mse(z, y, valid):
    """The thesis's "MSE" reading of L_sim by hand: mean over valid rows and columns of (z - mu_y)^2."""
    z = np.asarray(z, np.float64)
    rows = [k for k in range(len(z)) if valid[k]]
    if not rows:
        return 0.0
    mu = {q: np.mean([z[k] for k in rows if y[k] == q], axis=0) for q in set(int(y[k]) for k in rows)}
    return float(np.mean([(z[k] - mu[int(y[k])]) ** 2 for k in rows]))


class TestCenterSimilarityForms(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    @pytest.mark.slow
    def test_mean_form_is_elementwise_mse_and_sum_form_is_eq_11(self):
        rng = np.random.default_rng(5)
        z = rng.normal(size=(10, 7)).astype(np.float32)
        y = np.array([0, 1, 0, 2, 1, 1, 3, 0, 2, 2])
        valid = np.array([1, 1, 1, 1, 0, 1, 1, 1, 1, 0], bool)
        for c in (None, 4):
            mean = self.variant(lambda z: losses.center_similarity_loss(z, y, num_classes=c, mask=valid, form="mean"))(
                z
            )
            total = self.variant(lambda z: losses.center_similarity_loss(z, y, num_classes=c, mask=valid, form="sum"))(
                z
            )
            np.testing.assert_allclose(mean, _numpy_center_mse(z, y, valid), rtol=1e-5)
            np.testing.assert_allclose(total, ref.center(z, y, valid), rtol=1e-5)
            np.testing.assert_allclose(total / (valid.sum() * 7), mean, rtol=1e-5)


@pytest.mark.slow
def test_mean_form_equals_torch_mse_loss_with_batch_centres():
    """PyTorch's nn.MSELoss() (reduction="mean") between z and its class centres, gradients included."""
    torch = importorskip("torch", "torch")

    rng = np.random.default_rng(6)
    z = rng.normal(size=(12, 5)).astype(np.float32)
    y = rng.integers(0, 4, 12)
    zt = torch.tensor(z, dtype=torch.float64, requires_grad=True)
    yt = torch.tensor(y)
    centres = torch.stack(
        [zt[yt == q].mean(0) if (yt == q).any() else torch.zeros(5, dtype=torch.float64) for q in range(4)]
    )
    expected = torch.nn.MSELoss()(zt, centres[yt])
    expected.backward()
    value, grad = jax.value_and_grad(lambda z: losses.center_similarity_loss(z, y, num_classes=4, form="mean"))(z)
    np.testing.assert_allclose(value, expected.item(), rtol=1e-5)
    np.testing.assert_allclose(grad, zt.grad.numpy(), rtol=1e-4, atol=1e-7)


@pytest.mark.slow
def test_center_objective_weights_and_forms():
    rng = np.random.default_rng(7)
    logits = rng.normal(size=(6, 4)).astype(np.float32)
    z = rng.normal(size=(6, 3)).astype(np.float32)
    y = np.array([0, 1, 0, 3, 1, 1])
    ones = np.ones(6, bool)
    ce = np.mean([ref.logsumexp([float(v) for v in logits[i]]) - logits[i, y[i]] for i in range(6)])
    got_ce, got_sim = losses.center_objective_terms(logits, y, z, sim_reduction="mean")
    np.testing.assert_allclose([got_ce, got_sim], [ce, _numpy_center_mse(z, y, ones)], rtol=1e-5)
    np.testing.assert_allclose(
        losses.center_objective(logits, y, z, lam=2.0, sim_reduction="mean", ce_weight=0.5),
        0.5 * ce + 2.0 * _numpy_center_mse(z, y, ones),
        rtol=1e-5,
    )
    # the thesis's Fig. 5 objective: no cross entropy, lambda = 1
    np.testing.assert_allclose(
        losses.center_objective(logits, y, z, lam=1.0, ce_weight=0.0), ref.center(z, y, ones), rtol=1e-5
    )
    with pytest.raises(ValueError, match="sim_reduction must be one of"):
        losses.center_objective(logits, y, z, sim_reduction="none")
    with pytest.raises(ValueError, match="ce_weight must be >= 0"):
        losses.center_objective(logits, y, z, ce_weight=-1.0)
    with pytest.raises(ValueError, match="sim_reduction must be one of"):
        losses.center_similarity_loss(z, y, form="MSE")


@pytest.mark.slow
def test_mean_form_of_a_batch_without_valid_examples_is_zero_with_zero_gradient():
    z = jnp.ones((3, 2))
    v, g = jax.value_and_grad(
        lambda z: losses.center_similarity_loss(z, jnp.array([0, 0, 1]), mask=jnp.zeros(3, bool), form="mean")
    )(z)
    assert v == 0.0 and np.all(g == 0.0)
