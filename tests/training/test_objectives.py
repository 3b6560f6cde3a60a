"""Each objective's loss equals the gensim_jax.losses function on model outputs computed outside the step.

The independent path: ``model.apply`` on each input separately (no concatenation, eval mode), the
target matrix from explicit Python loops over pairs, then the library loss function.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax import losses
from gensim_jax.kernels import beta_bernoulli, gaussian_mixture
from gensim_jax.training import (
    BetaBernoulliTarget,
    CenterLoss,
    CrossEntropy,
    DistanceRegression,
    GaussianMixtureTarget,
    GenSimRegression,
    NTXent,
    Sincere,
    SupCon,
    TableTarget,
    TripletObjective,
    forward,
)
from tests.training._tiny import CLASSES, tiny_batch, tiny_state

TABLE = np.array([[2.0, 0.5, 0.1], [0.5, 1.5, 0.3], [0.1, 0.3, 1.0]], np.float32)


@pytest.fixture(scope="module")
def setup():
    state = tiny_state(batchnorm=True)
    batch = tiny_batch(np.random.default_rng(3), 8)
    batch["mask"] = np.array([True] * 7 + [False])
    return state, batch


def outputs_of(state, x):
    """Independent forward pass of one input in eval mode."""
    return state.apply_fn(state.variables, jnp.asarray(x), train=False)


def pair_loop(fn, n):
    return np.array([[fn(i, j) for j in range(n)] for i in range(n)], np.float64)


def expected(obj, state, batch):
    m = batch["mask"]
    o = lambda k: outputs_of(state, batch[k])  # noqa: E731
    if isinstance(obj, GenSimRegression):
        f = batch["features"]
        t = pair_loop(lambda i, j: float(beta_bernoulli.log_similarity(f[i], f[j], 0.5, 2.0)), len(f))
        return losses.gensim_loss(o("x")["embedding"], t, similarity="cosine", mask=m)
    if isinstance(obj, DistanceRegression):
        return losses.distance_regression_loss(o("image")["embedding"], batch["features"], mask=m)
    if isinstance(obj, TripletObjective):
        return losses.triplet_loss(
            o("anchor")["embedding"], o("positive")["embedding"], o("negative")["embedding"], form="quadratic", mask=m
        )
    if isinstance(obj, NTXent):
        return losses.ntxent_loss(o("view1")["projection"], o("view2")["projection"], temperature=0.3, mask=m)
    if isinstance(obj, Sincere):
        z = jnp.concatenate([o("view1")["projection"], o("view2")["projection"]])
        y = np.concatenate([batch["label"]] * 2)
        return losses.sincere_loss(z, y, temperature=0.2, mask=np.concatenate([m, m]))
    if isinstance(obj, SupCon):
        return losses.supcon_loss(o("image")["projection"], batch["label"], temperature=0.2, mask=m)
    if isinstance(obj, CenterLoss):
        out = o("image")
        return losses.center_objective(out["logits"], batch["label"], out["embedding"], lam=0.7, mask=m)
    if isinstance(obj, CrossEntropy):
        lg = np.asarray(o("image")["logits"], np.float64)
        ce = [np.log(np.exp(lg[i]).sum()) - lg[i, batch["label"][i]] for i in range(len(lg)) if m[i]]
        return np.mean(ce)
    raise AssertionError(obj)


OBJECTIVES = [
    GenSimRegression(target=BetaBernoulliTarget(alpha=0.5, beta=2.0), input_key="x"),
    DistanceRegression(),
    TripletObjective(form="quadratic"),
    NTXent(temperature=0.3),
    SupCon(temperature=0.2),
    Sincere(input_names=("view1", "view2"), temperature=0.2),
    CrossEntropy(),
    CenterLoss(lam=0.7),
]


@pytest.mark.slow
@pytest.mark.parametrize("obj", OBJECTIVES, ids=lambda o: type(o).__name__)
def test_loss_matches_library_loss_on_independent_outputs(setup, obj):
    state, batch = setup
    loss, aux = jax.jit(lambda s, b, o: o(s, b, jax.random.key(0)))(state, batch, obj)
    np.testing.assert_allclose(float(loss), float(expected(obj, state, batch)), rtol=2e-5, atol=1e-6)
    assert aux["batch_stats"] is state.batch_stats or jax.tree.all(
        jax.tree.map(lambda a, b: bool(jnp.array_equal(a, b)), aux["batch_stats"], state.batch_stats)
    )


@pytest.mark.slow
def test_train_mode_uses_one_forward_over_all_views(setup):
    """Two views go through the model as one batch: BatchNorm statistics over 2B examples."""
    state, batch = setup
    obj = NTXent(temperature=0.3)
    loss, aux = obj(state, batch, jax.random.key(0), train=True)
    x = jnp.concatenate([batch["view1"], batch["view2"]])
    out, mut = state.apply_fn(state.variables, x, train=True, mutable=["batch_stats"])
    ref = losses.ntxent_loss(out["projection"][:8], out["projection"][8:], temperature=0.3, mask=batch["mask"])
    np.testing.assert_allclose(float(loss), float(ref), rtol=1e-6)
    chex_equal = jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), aux["batch_stats"], mut["batch_stats"]
    )
    assert chex_equal is not None


def test_table_target_gathers_pairs():
    y = np.array([2, 0, 1, 1, 2])
    tgt = TableTarget.create(TABLE, key="label")
    got = np.asarray(jax.jit(lambda t, b: t(b))(tgt, {"label": y}))
    np.testing.assert_array_equal(got, pair_loop(lambda i, j: TABLE[y[i], y[j]], len(y)))


@pytest.mark.parametrize("method", ["affine", "standardized"])
@pytest.mark.slow
def test_table_target_transform_uses_table_statistics(method):
    y = np.array([0, 1, 2, 2])
    got = np.asarray(TableTarget.create(TABLE, method=method)({"label": y}))
    raw = pair_loop(lambda i, j: float(TABLE[y[i], y[j]]), len(y))
    t = TABLE.astype(np.float64)
    ref = 2 * (raw - t.min()) / (t.max() - t.min()) - 1 if method == "affine" else (raw - t.mean()) / t.std()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_gensim_regression_with_table_and_mixture_targets(setup):
    state, batch = setup
    mix = gaussian_mixture.make_mixture([0.3, 0.7], np.array([[0.0] * 6, [1.0] * 6]), 1.5)
    run = jax.jit(lambda s, b, o: o(s, b, jax.random.key(0))[0])
    obj = GenSimRegression(target=GaussianMixtureTarget(mixture=mix, key="x"), input_key="x", output="projection")
    loss = run(state, batch, obj)
    x = batch["x"]
    t = pair_loop(lambda i, j: float(gaussian_mixture.log_similarity(x[i], x[j], mix)), len(x))
    ref = losses.gensim_loss(outputs_of(state, x)["projection"], t, mask=batch["mask"])
    np.testing.assert_allclose(float(loss), float(ref), rtol=1e-5)

    obj = GenSimRegression(target=TableTarget.create(TABLE), input_key="x")
    loss = run(state, batch, obj)
    y = batch["label"]
    t = pair_loop(lambda i, j: float(TABLE[y[i], y[j]]), len(y))
    ref = losses.gensim_loss(outputs_of(state, x)["embedding"], t, mask=batch["mask"])
    np.testing.assert_allclose(float(loss), float(ref), rtol=1e-5)


def test_limit_target_is_negative_squared_distance():
    f = (np.random.default_rng(0).random((5, 4)) > 0.5).astype(np.float32)
    got = np.asarray(BetaBernoulliTarget(limit=True)({"features": f}))
    np.testing.assert_allclose(got, pair_loop(lambda i, j: -np.sum((f[i] - f[j]) ** 2), 5))


@pytest.mark.slow
def test_forward_splits_outputs_in_input_order(setup):
    state, batch = setup
    outs, _ = forward(
        state.apply_fn,
        state.params,
        state.batch_stats,
        {"anchor": batch["anchor"], "positive": batch["positive"][:3]},
        train=False,
    )
    np.testing.assert_allclose(
        outs["positive"]["embedding"], outputs_of(state, batch["positive"][:3])["embedding"], rtol=1e-6
    )
    assert outs["anchor"]["embedding"].shape == (8, 4)


def test_errors_name_the_problem(setup):
    state, batch = setup
    with pytest.raises(ValueError, match="view1"):
        NTXent()(state, {"x": batch["x"]}, jax.random.key(0))
    with pytest.raises(ValueError, match="projection"):
        NTXent()(tiny_state(), batch, jax.random.key(0))  # model without a projection head
    with pytest.raises(ValueError, match="finite"):
        TableTarget.create(np.array([[0.0, -np.inf], [-np.inf, 0.0]]))
    with pytest.raises(ValueError, match="square"):
        TableTarget.create(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="variant"):
        NTXent(variant="nope")(state, batch, jax.random.key(0))
    with pytest.raises(ValueError, match="method"):
        TableTarget.create(TABLE, method="log")


def test_class_count_in_helper_batches_is_balanced():
    y = tiny_batch(np.random.default_rng(0), 8)["label"]
    assert set(y.tolist()) == set(range(CLASSES)) and all(
        sum(1 for a, b in itertools.combinations(y, 2) if a == b == c) >= 1 for c in range(CLASSES)
    )


def test_tree_kernel_table_target_by_program_id():
    """Geoclidean path (paper App. M): targets gathered by program id from the log tree-kernel table."""
    from gensim_jax.kernels import trees

    ts = [trees.Tree.from_bracket(b) for b in ("(S (A a) (B b))", "(S (A a) (B c))", "(T (C d))")]
    tgt = TableTarget.create(trees.gram_log_table(ts, "sst"), key="program_id")
    ids = np.array([0, 2, 1, 0])
    got = np.asarray(jax.jit(lambda t, b: t(b))(tgt, {"program_id": ids}))

    def ref(i, j):
        k = trees.normalized_tree_kernel(ts[ids[i]], ts[ids[j]], "sst")
        return max(np.log(k), -30.0) if k > 0 else -30.0

    np.testing.assert_allclose(got, pair_loop(ref, len(ids)), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_center_loss_forms_weights_and_logged_terms(setup):
    """CenterLoss = ce_weight CE + lam L_sim in either form; its metrics are the two unweighted terms."""
    state, batch = setup
    out = outputs_of(state, batch["image"])
    ce, l_sum = losses.center_objective_terms(out["logits"], batch["label"], out["embedding"], mask=batch["mask"])
    valid = int(batch["mask"].sum())
    width = out["embedding"].shape[1]
    step = jax.jit(lambda s, b, o: o(s, b, jax.random.key(0)))
    for obj, expected_loss, expected_sim in (
        (CenterLoss(lam=2.0, sim_reduction="mean"), ce + 2.0 * l_sum / (valid * width), l_sum / (valid * width)),
        (CenterLoss(lam=1.0, ce_weight=0.0), l_sum, l_sum),  # the thesis's Fig. 5 objective
    ):
        loss, aux = step(state, batch, obj)
        np.testing.assert_allclose(float(loss), float(expected_loss), rtol=2e-5)
        np.testing.assert_allclose(float(aux["metrics"]["l_sim"]), float(expected_sim), rtol=2e-5)
        np.testing.assert_allclose(float(aux["metrics"]["ce"]), float(ce), rtol=2e-5)
    with pytest.raises(ValueError, match="ce_weight must be >= 0"):
        CenterLoss(ce_weight=-0.5)
    with pytest.raises(ValueError, match="sim_reduction"):
        CenterLoss(sim_reduction="max")
