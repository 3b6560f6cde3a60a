"""Tests for gensim_jax.kernels.targets against numpy formulas and the defining properties."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax.kernels import beta_bernoulli as bb
from gensim_jax.kernels import categorical as cat
from gensim_jax.kernels import targets


def _table():
    f = np.random.default_rng(0).integers(0, 2, size=(10, 22))
    return np.asarray(bb.pairwise_log_similarity(f, f, 0.1, 0.1), np.float64)


def test_raw_is_identity():
    t = _table()
    np.testing.assert_array_equal(np.asarray(targets.raw(t)), t.astype(np.float32))
    assert targets.raw(jnp.array([1, 2])).dtype == jnp.float32


@pytest.mark.parametrize("transform", [lambda fn: fn, jax.jit], ids=["eager", "jit"])
@pytest.mark.slow
def test_affine_maps_table_onto_unit_interval(transform):
    t = _table()
    lo, hi = targets.table_range(t)
    np.testing.assert_allclose([float(lo), float(hi)], [t.min(), t.max()], rtol=1e-6)
    got = np.asarray(transform(targets.affine)(t, lo, hi))
    np.testing.assert_allclose(got, 2 * (t - t.min()) / (t.max() - t.min()) - 1, rtol=1e-5, atol=1e-6)
    assert got.min() == pytest.approx(-1.0, abs=1e-6) and got.max() == pytest.approx(1.0, abs=1e-6)
    # Order is preserved (a monotone map): same ranking as log s.
    order = np.argsort(t.ravel())
    assert np.all(np.diff(got.ravel()[order]) >= -1e-6)
    # A batch sub-matrix uses the table's statistics, not its own.
    sub = t[:3, :4]
    np.testing.assert_allclose(
        np.asarray(targets.regression_target(sub, "affine", t)), got[:3, :4], rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("transform", [lambda fn: fn, jax.jit], ids=["eager", "jit"])
def test_standardized_has_zero_mean_unit_std_over_table(transform):
    t = _table()
    mean, std = targets.table_moments(t)
    np.testing.assert_allclose([float(mean), float(std)], [t.mean(), t.std()], rtol=1e-5)
    got = np.asarray(transform(targets.standardized)(t, mean, std))
    np.testing.assert_allclose(got, (t - t.mean()) / t.std(), rtol=1e-4, atol=1e-5)
    assert abs(got.mean()) < 1e-5 and abs(got.std() - 1) < 1e-5
    np.testing.assert_allclose(np.asarray(targets.regression_target(t, "standardized")), got, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_class_table_with_floor():
    table = cat.log_similarity_table(cat.uniform_class_probs(4), log_floor=-np.log(4.0))
    np.testing.assert_allclose(
        np.asarray(targets.regression_target(table, "affine", table)), np.where(np.eye(4) > 0, 1.0, -1.0), atol=1e-6
    )
    grad = jax.grad(lambda x: jnp.sum(targets.regression_target(x, "standardized")))(jnp.asarray(_table(), jnp.float32))
    assert np.all(np.isfinite(np.asarray(grad)))


def test_invalid_inputs_raise():
    with pytest.raises(ValueError, match="method"):
        targets.regression_target(jnp.zeros(3), "minmax")
    with pytest.raises(ValueError, match="table must be finite"):
        targets.regression_target(jnp.zeros(3), "affine", cat.log_similarity_table(cat.uniform_class_probs(3)))
    with pytest.raises(ValueError, match="table_min < table_max"):
        targets.affine(jnp.zeros(3), 1.0, 1.0)
    with pytest.raises(ValueError, match="table_std > 0"):
        targets.regression_target(jnp.ones((2, 2)), "standardized")
    with pytest.raises(ValueError, match="non-empty"):
        targets.table_range(jnp.zeros((0,)))


@pytest.mark.parametrize("transform", targets.TABLE_TRANSFORMS)
def test_transform_table_against_an_entrywise_loop(transform):
    t = _table()  # float64 (10, 10)
    ref = t[:5, 5:]  # statistics from an off-diagonal block (the experiments use the training block)
    vals = [float(v) for v in ref.ravel()]
    lo, hi = min(vals), max(vals)
    mean = sum(vals) / len(vals)
    std = (sum((v - mean) ** 2 for v in vals) / len(vals)) ** 0.5
    maps = {
        "unit": lambda v: (v - lo) / (hi - lo),
        "raw": lambda v: v,
        "exp": lambda v: math.exp(v),
        "affine": lambda v: 2 * (v - lo) / (hi - lo) - 1,
        "standardized": lambda v: (v - mean) / std,
    }
    expected = [[maps[transform](float(t[i, j])) for j in range(10)] for i in range(10)]
    got = targets.transform_table(t, transform, ref)
    # unit, raw and exp keep the table's dtype; affine and standardized are the step's float32 maps
    exact = transform in ("unit", "raw", "exp")
    assert got.dtype == (np.float64 if exact else np.float32) and got.shape == (10, 10)
    tol = 1e-12 if exact else 2e-6
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)
    # the dtype of the table is kept (float32 tables give float32 targets); default reference: the table
    got32 = targets.transform_table(t.astype(np.float32), transform)
    assert got32.dtype == np.float32
    if transform == "unit":
        assert got32.min() == 0.0 and got32.max() == 1.0
        assert got.min() < 0 or got.max() > 1  # entries outside the reference's range map outside [0, 1]


def test_transform_table_rejects_bad_input():
    with pytest.raises(ValueError, match="transform"):
        targets.transform_table(np.zeros((2, 2)), "log")
    with pytest.raises(ValueError, match="constant"):
        targets.transform_table(np.ones((2, 2)), "unit")
    with pytest.raises(ValueError, match="square"):
        targets.transform_table(np.zeros((2, 3)), "raw")
    with pytest.raises(ValueError, match="finite"):
        targets.transform_table(np.array([[0.0, -np.inf], [-np.inf, 0.0]]), "unit")
    with pytest.raises(ValueError, match="exp of log_table overflows float32"):
        targets.transform_table(np.array([[100.0, 0.0], [0.0, 1.0]], np.float32), "exp")


def test_exp_transform_of_the_hierarchy_table_is_eq4_s():
    # balanced 2-3-3 tree, Eq. 4 with uniform edges: s = 1 (part at the root), 2, (2 + 6) / 2, (2 + 6 + 18) / 3
    from gensim_jax.kernels.hierarchy import log_similarity_table
    from gensim_jax.stimuli.hierarchy import balanced_tree

    tree = balanced_tree((2, 3, 3))
    got = targets.transform_table(log_similarity_table(tree, tree.leaves), "exp")
    depth = lambda a, b: next((k for k, d in enumerate((9, 3, 1)) if a // d != b // d), 3)  # noqa: E731
    s_of_depth = [1.0, 2.0, 4.0, 26.0 / 3.0]
    expected = [[s_of_depth[depth(a, b)] for b in range(18)] for a in range(18)]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
