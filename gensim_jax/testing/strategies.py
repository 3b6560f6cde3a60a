"""Hypothesis strategies for kernel inputs: binary features, points, trees, leaf pairs.

``hypothesis`` is a test dependency, not part of the core install: this module imports it and
raises an ``ImportError`` naming ``pip install hypothesis`` when it is missing (the rest of
:mod:`gensim_jax.testing` does not need it).

Every strategy draws numpy arrays (or a :class:`~gensim_jax.kernels.hierarchy.Tree`) that the
kernels accept as they are; pair strategies return ``(x1, x2)`` with a leading pair axis, the
``inputs`` of :func:`~gensim_jax.testing.assert_log_similarity_close`.

Example:
    >>> from hypothesis import given, settings
    >>> from gensim_jax.testing import strategies as gst
    >>> @settings(max_examples=5)
    ... @given(gst.feature_pairs(num_features=4, max_pairs=3))
    ... def check(pair):
    ...     assert pair[0].shape == pair[1].shape
    >>> check()
"""

from __future__ import annotations

try:
    from hypothesis import strategies as st
except ImportError as err:  # pragma: no cover - exercised only without hypothesis
    raise ImportError(
        "gensim_jax.testing.strategies needs the 'hypothesis' package: pip install hypothesis "
        "(or pip install 'gensim-jax[test]')"
    ) from err

import numpy as np

from gensim_jax.kernels import hierarchy as _hier

__all__ = ["binary_features", "feature_pairs", "points", "point_pairs", "trees", "leaf_pairs", "trees_with_leaf_pairs"]


def _size(min_value: int, max_value: int, name: str):
    if not (isinstance(min_value, int) and isinstance(max_value, int) and 1 <= min_value <= max_value):
        raise ValueError(f"{name}: need integers 1 <= min <= max; got {min_value}, {max_value}")
    return st.integers(min_value, max_value)


@st.composite
def binary_features(draw, num_features=None, max_features: int = 12, num_rows=None, max_rows: int = 8):
    """``(N, F)`` float32 0/1 feature matrices (Beta-Bernoulli inputs, paper Eq. 3).

    ``num_features``/``num_rows``: fixed sizes, or ``None`` to draw ``F`` in ``[1, max_features]``
    and ``N`` in ``[1, max_rows]``.
    """
    f = num_features if num_features is not None else draw(_size(1, max_features, "max_features"))
    n = num_rows if num_rows is not None else draw(_size(1, max_rows, "max_rows"))
    bits = draw(st.lists(st.booleans(), min_size=n * f, max_size=n * f))
    return np.asarray(bits, np.float32).reshape(n, f)


@st.composite
def feature_pairs(draw, num_features=None, max_features: int = 12, num_pairs=None, max_pairs: int = 8):
    """``(x1, x2)``, two ``(P, F)`` binary matrices with the same ``F`` and ``P``.

    Fix ``num_features`` and ``num_pairs`` to keep shapes constant across examples (one compile
    of the estimator for all of them).
    """
    f = num_features if num_features is not None else draw(_size(1, max_features, "max_features"))
    p = num_pairs if num_pairs is not None else draw(_size(1, max_pairs, "max_pairs"))
    return draw(binary_features(f, num_rows=p)), draw(binary_features(f, num_rows=p))


def _floats(scale: float):
    return st.floats(-scale, scale, allow_nan=False, allow_infinity=False, width=32)


@st.composite
def points(draw, dim: int = 2, max_rows: int = 8, scale: float = 10.0):
    """``(N, dim)`` float32 points with coordinates in ``[-scale, scale]`` (mixture inputs, Eq. H2)."""
    n = draw(_size(1, max_rows, "max_rows"))
    vals = draw(st.lists(_floats(scale), min_size=n * dim, max_size=n * dim))
    return np.asarray(vals, np.float32).reshape(n, dim)


@st.composite
def point_pairs(draw, dim: int = 2, max_pairs: int = 8, scale: float = 10.0):
    """``(x1, x2)``, two ``(P, dim)`` point arrays."""
    p = draw(_size(1, max_pairs, "max_pairs"))
    vals = draw(st.lists(_floats(scale), min_size=2 * p * dim, max_size=2 * p * dim))
    arr = np.asarray(vals, np.float32).reshape(2, p, dim)
    return arr[0], arr[1]


@st.composite
def trees(draw, min_nodes: int = 2, max_nodes: int = 12, normalized: bool = True):
    """A random :class:`~gensim_jax.kernels.hierarchy.Tree` (paper Eq. 4, Appendix K).

    Node ``i > 0`` hangs under a node ``< i`` (so node 0 is the root); edge probabilities are
    random positive weights normalised per node (``normalized=True``, a proper walk usable by
    :func:`~gensim_jax.testing.hierarchy_model`) or scaled to sum to at most one.
    """
    n = draw(_size(max(min_nodes, 2), max(max_nodes, 2), "nodes"))
    parents = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    weights = np.asarray([1.0] + [draw(st.floats(0.05, 1.0)) for _ in range(1, n)])
    par = np.asarray(parents)
    sums = np.bincount(par[1:], weights=weights[1:], minlength=n)
    probs = weights / np.where(par >= 0, sums[np.maximum(par, 0)], 1.0)
    if not normalized:
        probs = probs * np.asarray([1.0] + [draw(st.floats(0.5, 1.0)) for _ in range(1, n)])
    probs[0] = 1.0
    return _hier.Tree.from_parents(parents, probs)


@st.composite
def leaf_pairs(draw, tree: _hier.Tree, max_pairs: int = 8):
    """``(a, b)``, two ``(P,)`` int32 arrays of leaf ids of ``tree``."""
    leaves = tree.leaves
    p = draw(_size(1, max_pairs, "max_pairs"))
    pick = st.sampled_from([int(v) for v in leaves])
    a = [draw(pick) for _ in range(p)]
    b = [draw(pick) for _ in range(p)]
    return np.asarray(a, np.int32), np.asarray(b, np.int32)


@st.composite
def trees_with_leaf_pairs(draw, min_nodes: int = 2, max_nodes: int = 12, max_pairs: int = 8, normalized: bool = True):
    """``(tree, (a, b))``: a random tree and leaf pairs of it."""
    tree = draw(trees(min_nodes, max_nodes, normalized))
    return tree, draw(leaf_pairs(tree, max_pairs))
