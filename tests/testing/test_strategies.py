"""The hypothesis strategies draw inputs the shipped kernels accept (gensim_jax.testing.strategies)."""

import numpy as np
import pytest
from hypothesis import given, settings

from gensim_jax.kernels import beta_bernoulli as bb
from gensim_jax.kernels import hierarchy as H
from gensim_jax.testing import strategies as gst


@settings(max_examples=25, deadline=None)
@given(pair=gst.feature_pairs(max_features=7, max_pairs=5))
@pytest.mark.slow
def test_feature_pairs_are_binary_and_aligned(pair):
    a, b = pair
    assert a.shape == b.shape and a.ndim == 2 and set(np.unique(np.r_[a.ravel(), b.ravel()])) <= {0.0, 1.0}
    assert np.all(np.isfinite(np.asarray(bb.log_similarity(a, b, 1.0, 1.0))))


@settings(max_examples=25, deadline=None)
@given(data=gst.trees_with_leaf_pairs(max_nodes=10, max_pairs=4), normalized=gst.st.booleans())
def test_trees_and_leaf_pairs_are_valid(data, normalized):
    tree, (a, b) = data
    assert isinstance(tree, H.Tree) and tree.parents[0] == -1
    leaves = set(tree.leaves.tolist())
    assert set(a.tolist()) <= leaves and set(b.tolist()) <= leaves
    par = tree.parents
    sums = np.bincount(par[1:], weights=np.exp(tree.log_edge_prob[1:]), minlength=tree.num_nodes)
    np.testing.assert_allclose(sums[tree.num_children > 0], 1.0, rtol=1e-9)
    assert np.all(np.isfinite(H.log_similarity_pairs(tree, a, b)))


@settings(max_examples=10, deadline=None)
@given(tree=gst.trees(max_nodes=8, normalized=False))
def test_substochastic_trees(tree):
    par = tree.parents
    sums = np.bincount(par[1:], weights=np.exp(tree.log_edge_prob[1:]), minlength=tree.num_nodes)
    assert np.all(sums <= 1 + 1e-9)


@settings(max_examples=10, deadline=None)
@given(p=gst.point_pairs(dim=3, max_pairs=4), pts=gst.points(dim=2, max_rows=3))
def test_points(p, pts):
    assert p[0].shape == p[1].shape and p[0].shape[1] == 3 and pts.shape[1] == 2
    assert np.all(np.abs(p[0]) <= 10)


def test_clear_import_error_without_hypothesis(monkeypatch):
    import importlib
    import sys

    import pytest

    monkeypatch.setitem(sys.modules, "hypothesis", None)
    monkeypatch.delitem(sys.modules, "gensim_jax.testing.strategies")
    with pytest.raises(ImportError, match="pip install hypothesis"):
        importlib.import_module("gensim_jax.testing.strategies")


@pytest.mark.slow
def test_toolkit_is_lean():
    """gensim_jax.testing needs neither hypothesis nor flax, TensorFlow, torch or the training package."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['hypothesis'] = None; import gensim_jax.testing; "
        "print(sorted(m for m in ('hypothesis', 'flax', 'tensorflow', 'torch', 'optax', 'gensim_jax.training') "
        "if sys.modules.get(m) is not None))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]", out
