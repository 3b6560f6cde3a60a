"""Classifier replacement/extension (paper Appendix L) and the projection head."""

import chex
import jax
import numpy as np
import pytest

from gensim_jax.models import ProjectionHead, extend_classifier, lenet5, replace_classifier

from ._compare import random_variables


@pytest.fixture(scope="module")
def lenet_vars():
    model = lenet5()
    return model, random_variables(model, seed=0)


@pytest.mark.slow
def test_extend_classifier_keeps_old_classes(lenet_vars):
    model, v = lenet_vars
    x = jax.random.uniform(jax.random.key(3), (4, 32, 32, 3))
    old = jax.jit(model.apply)(v, x)
    v11 = extend_classifier(v, 11, jax.random.key(1))
    new = jax.jit(model.clone(num_classes=21).apply)(v11, x)
    chex.assert_shape(new["logits"], (4, 21))
    np.testing.assert_allclose(new["logits"][:, :10], old["logits"], rtol=1e-6, atol=1e-6)
    # new logits: embedding @ new columns (+ zero bias), computed by hand
    k = np.asarray(v11["params"]["classifier"]["kernel"])[:, 10:]
    np.testing.assert_allclose(new["logits"][:, 10:], np.asarray(old["embedding"]) @ k, rtol=1e-5, atol=1e-6)
    bound = 1.0 / np.sqrt(84)
    assert np.all(np.abs(k) <= bound) and np.std(k) > 0.3 * bound
    assert v["params"]["classifier"]["kernel"].shape == (84, 10)  # input untouched


def test_replace_classifier(lenet_vars):
    model, v = lenet_vars
    v3 = replace_classifier(v, 3, jax.random.key(2))
    out = jax.eval_shape(model.clone(num_classes=3).apply, v3, model.example_input(2))
    chex.assert_shape(out["logits"], (2, 3))
    np.testing.assert_array_equal(v3["params"]["conv1"]["kernel"], v["params"]["conv1"]["kernel"])
    with pytest.raises(ValueError, match="num_classes"):
        replace_classifier(v, 0, jax.random.key(2))
    with pytest.raises(ValueError, match="classifier"):
        extend_classifier({"params": {}}, 2, jax.random.key(2))


def test_projection_head_matches_explicit_mlp():
    head = ProjectionHead((16, 4))
    h = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    v = random_variables(head.clone(), seed=1, example=h)
    p = v["params"]
    ref = np.maximum(np.asarray(h) @ p["dense_0"]["kernel"] + p["dense_0"]["bias"], 0)
    ref = ref @ p["dense_1"]["kernel"] + p["dense_1"]["bias"]
    np.testing.assert_allclose(jax.jit(head.apply)(v, h), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_projection_head_batchnorm_train_eval():
    head = ProjectionHead((16, 4), use_batchnorm=True)
    h = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float32)
    v = random_variables(head, seed=1, example=h)
    _, upd = head.apply(v, h, train=True, mutable=["batch_stats"])
    assert not np.allclose(upd["batch_stats"]["bn_0"]["mean"], 0.0)
    _, upd_e = head.apply(v, h, train=False, mutable=["batch_stats"])
    chex.assert_trees_all_equal(upd_e["batch_stats"], v["batch_stats"])
    with pytest.raises(ValueError, match="projection features"):
        ProjectionHead(()).init(jax.random.key(0), h)
