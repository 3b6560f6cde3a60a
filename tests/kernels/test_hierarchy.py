"""Tests for gensim_jax.kernels.hierarchy (paper Eq. 4, Appendix K).

Independent references: exact enumeration of the Appendix K sampling process on small
random trees, a Monte Carlo simulation of it, explicit Python loops (walking parent
pointers) for LCA depths, tables, gathers and levels, and exact big-integer arithmetic
for a depth-20, branching-1000 hierarchy.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gensim_jax.kernels import hierarchy as H

# ----------------------------------------------------------------------------- helpers


def random_tree(rng: np.random.Generator, n: int, substochastic: bool = False):
    """Random rooted tree (node 0 root, parent of i uniform in 0..i-1) and edge probs."""
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    probs = np.ones(n)
    for v in range(n):
        kids = [i for i in range(n) if parents[i] == v]
        if kids:
            w = rng.dirichlet(np.ones(len(kids)))
            if substochastic:
                w = w * rng.uniform(0.3, 1.0)
            probs[kids] = w
    return parents, probs


def path_up(parents, v):
    """Root-to-v node list by walking parent pointers."""
    out = [v]
    while parents[out[-1]] != -1:
        out.append(parents[out[-1]])
    return out[::-1]


def lca_depth_loop(parents, a, b):
    pa, pb = path_up(parents, a), path_up(parents, b)
    k = 0
    while k < min(len(pa), len(pb)) and pa[k] == pb[k]:
        k += 1
    return k - 1  # the root is shared by all, at depth 0


def eq4_loop(probs_along_path):
    """Eq. 4 in plain Python: (1/K) sum_k prod_{j<=k} 1/p_j, returned as log."""
    k_max = len(probs_along_path)
    if k_max == 0:
        return 0.0
    total, prod = 0.0, 1.0
    for p in probs_along_path:
        prod /= p
        total += prod
    return math.log(total / k_max)


def log_s_loop(parents, probs, a, b):
    k = lca_depth_loop(parents, a, b)
    shared = path_up(parents, a)[1 : k + 1]
    return eq4_loop([probs[v] for v in shared])


def children_of(parents):
    kids = {i: [] for i in range(len(parents))}
    for i, p in enumerate(parents):
        if p >= 0:
            kids[p].append(i)
    return kids


def leaves_below(parents, probs, v):
    """{leaf: probability of walking from v down to that leaf} by recursion."""
    kids = children_of(parents)

    def rec(u, pr):
        if not kids[u]:
            yield u, pr
        for c in kids[u]:
            yield from rec(c, pr * probs[c])

    return dict(rec(v, 1.0))


def stops_at_depth(parents, probs, k):
    """{node: probability} of a walk from the root that stops after k edges or at a
    leaf reached earlier."""
    kids = children_of(parents)
    out = {}
    for v in range(len(parents)):
        p = path_up(parents, v)
        if len(p) - 1 == k or (len(p) - 1 < k and not kids[v]):
            out[v] = float(np.prod([probs[u] for u in p[1:]]))
    return out


def enumerate_appendix_k(parents, probs, sizes, item_i, item_j):
    """Exact p(x_i, x_j | same) / (p(x_i) p(x_j)) by enumerating the sampling processes.

    Items are (leaf, index) with index uniform among sizes[leaf]. Marginal: walk from the
    root to a leaf, then pick an item. Joint (Appendix K): pick a stop depth k uniformly
    among the depths 1..K on the shared path (k = 0 only when K = 0), walk jointly from
    the root to depth k (or to a leaf reached earlier, which keeps the joint process a
    distribution), then continue twice independently and pick two items. Every
    outcome of each process is enumerated with its probability.
    """
    root = parents.index(-1)
    marg = {}
    for leaf, pr in leaves_below(parents, probs, root).items():
        for idx in range(sizes[leaf]):
            marg[(leaf, idx)] = pr / sizes[leaf]
    k_sep = lca_depth_loop(parents, item_i[0], item_j[0])
    stops = [0] if k_sep == 0 else list(range(1, k_sep + 1))
    joint = {}
    for k in stops:
        for v, pv in stops_at_depth(parents, probs, k).items():
            below = leaves_below(parents, probs, v)
            for (l1, q1), (l2, q2) in itertools.product(below.items(), repeat=2):
                for i1 in range(sizes[l1]):
                    for i2 in range(sizes[l2]):
                        key = ((l1, i1), (l2, i2))
                        pr = pv * q1 / sizes[l1] * q2 / sizes[l2] / len(stops)
                        joint[key] = joint.get(key, 0.0) + pr
    return joint, marg


# ------------------------------------------------------------- Eq. 4 vs Appendix K


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 11), sub=st.booleans())
def test_table_equals_enumerated_sampling_process(seed, n, sub):
    rng = np.random.default_rng(seed)
    parents, probs = random_tree(rng, n, substochastic=sub)
    tree = H.Tree.from_parents(parents, probs)
    leaves = [int(v) for v in tree.leaves]
    sizes = {leaf: int(rng.integers(1, 4)) for leaf in leaves}
    table = H.log_similarity_table(tree, leaves)
    for a, b in itertools.product(range(len(leaves)), repeat=2):
        xi = (leaves[a], int(rng.integers(sizes[leaves[a]])))
        xj = (leaves[b], int(rng.integers(sizes[leaves[b]])))
        joint, marg = enumerate_appendix_k(parents, probs, sizes, xi, xj)
        if not sub:  # a proper distribution when edge probabilities are normalised
            assert sum(marg.values()) == pytest.approx(1.0)
            assert sum(joint.values()) == pytest.approx(1.0)
        expected = math.log(joint[(xi, xj)] / (marg[xi] * marg[xj]))
        assert table[a, b] == pytest.approx(expected, rel=1e-9, abs=1e-9)


@pytest.mark.slow
def test_table_equals_monte_carlo_simulation():
    """Simulate both processes (leaf level) on a fixed tree and compare the ratio."""
    parents = [-1, 0, 0, 1, 1, 3, 3, 2, 2]  # leaves 4, 5, 6, 7, 8
    probs = np.array([1, 0.3, 0.7, 0.6, 0.4, 0.2, 0.8, 0.5, 0.5])
    tree = H.Tree.from_parents(parents, probs)
    kids = children_of(parents)
    rng = np.random.default_rng(0)
    n = 400_000

    def walk(node, steps):
        """Move each walker down ``steps`` edges (or until it reaches a leaf)."""
        node = node.copy()
        for t in range(int(steps.max(initial=0))):
            nxt = node.copy()
            for v, cs in kids.items():
                m = (node == v) & (steps > t)
                if cs and m.any():
                    nxt[m] = rng.choice(cs, size=m.sum(), p=probs[cs] / probs[cs].sum())
            node = nxt
        return node

    to_leaf = np.full(n, 10)
    marg = np.bincount(walk(np.zeros(n, int), to_leaf), minlength=9) / n
    for a, b in [(5, 6), (5, 4), (7, 8), (5, 7), (6, 6)]:
        k = lca_depth_loop(parents, a, b)
        stop_depth = rng.integers(1, k + 1, size=n) if k else np.zeros(n, int)
        shared = walk(np.zeros(n, int), stop_depth)  # joint walk from the root to depth k
        hit = (walk(shared, to_leaf) == a) & (walk(shared, to_leaf) == b)  # then apart
        ratio = hit.mean() / (marg[a] * marg[b])
        expected = math.exp(H.log_similarity_pairs(tree, [a], [b])[0])
        assert ratio == pytest.approx(expected, rel=0.05), (a, b)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), sub=st.booleans())
def test_table_and_pairs_equal_python_loops(seed, n, sub):
    rng = np.random.default_rng(seed)
    parents, probs = random_tree(rng, n, substochastic=sub)
    tree = H.Tree.from_parents(parents, probs)
    nodes = rng.permutation(n)[: int(rng.integers(1, n + 1))]  # any node set, any order
    table = H.log_similarity_table(tree, nodes)
    lca = H.lca_depth(tree, nodes)
    chex.assert_shape(table, (nodes.size, nodes.size))
    for i, a in enumerate(nodes):
        for j, b in enumerate(nodes):
            assert lca[i, j] == lca_depth_loop(parents, a, b)
            assert table[i, j] == pytest.approx(log_s_loop(parents, probs, a, b), rel=1e-12, abs=1e-12)
    a = rng.integers(0, n, size=50)
    b = rng.integers(0, n, size=50)
    got = H.log_similarity_pairs(tree, a, b)
    want = [log_s_loop(parents, probs, x, y) for x, y in zip(a, b)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(table, table.T, rtol=0, atol=1e-12)


def test_default_probabilities_are_uniform_per_node():
    parents = [-1, 0, 0, 0, 1, 1, 2]
    tree = H.Tree.from_parents(parents)
    np.testing.assert_allclose(np.exp(tree.log_edge_prob), [1, 1 / 3, 1 / 3, 1 / 3, 1 / 2, 1 / 2, 1])
    # leaves 4, 5 share root->1 (p = 1/3): s = 3; with themselves K = 2: (3 + 6) / 2
    assert H.log_similarity_pairs(tree, [4, 4, 6], [5, 4, 6]).tolist() == pytest.approx(
        [math.log(3), math.log(4.5), math.log((3 + 3) / 2)]
    )


# ------------------------------------------------------------------ monotonicity


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 40))
def test_monotone_in_lca_depth_along_each_path(seed, n):
    rng = np.random.default_rng(seed)
    parents, probs = random_tree(rng, n)
    tree = H.Tree.from_parents(parents, probs)
    leaves = tree.leaves
    table, lca = H.log_similarity_table(tree, leaves), H.lca_depth(tree, leaves)
    for i in range(leaves.size):
        order = np.argsort(lca[i], kind="stable")
        k, s = lca[i][order], table[i][order]
        same = k[1:] == k[:-1]
        assert np.all((s[1:] == s[:-1])[same])  # same LCA, exactly the same value
        assert np.all((s[1:] - s[:-1])[~same] > -1e-12)  # deeper LCA, never smaller
        # edges with p < 1 make it strictly larger
        path = path_up(parents, leaves[i])
        strict = ~same & np.array([probs[path[kk]] < 1 for kk in k[1:]], dtype=bool)
        assert np.all((s[1:] - s[:-1])[strict] > 0)
        assert np.all(s[k == 0] == 0.0) and np.all(s >= 0)


def test_chain_of_certain_edges_is_exactly_zero():
    # Found by hypothesis (seed 493, n 4 above): the chain 0 -> 1 -> 2 -> 3 with p = 1 on
    # every edge. Eq. 4 gives s = (1 + 1 + 1) / 3 = 1 at K = 3, but logsumexp([0, 0, 0]) - log 3
    # rounded to -2.2e-16.
    tree = H.Tree.from_parents([-1, 0, 1, 2], [1.0, 1.0, 1.0, 1.0])
    assert H.log_similarity_table(tree).tolist() == [[0.0]]
    nodes = np.arange(4)
    table = H.log_similarity_table(tree, nodes)
    assert np.all(table == 0.0)  # s = 1 at every LCA depth, no entry below 0
    assert H.log_similarity_pairs(tree, nodes, nodes).tolist() == [0.0] * 4
    # the same with a certain chain above an uncertain split: entries >= 0, exact per LCA depth
    tree = H.Tree.from_parents([-1, 0, 1, 2, 3, 3], [1, 1, 1, 1, 0.25, 0.75])
    table = H.log_similarity_table(tree)
    assert table[0, 1] == table[1, 0] == 0.0
    np.testing.assert_allclose(np.diag(table), [eq4_loop([1, 1, 1, 0.25]), eq4_loop([1, 1, 1, 0.75])], rtol=1e-12)
    got = H.log_similarity_from_path(jnp.zeros((4, 3)), jnp.arange(4))
    assert np.asarray(got).tolist() == [0.0] * 4


def test_table_is_never_negative_and_exact_per_lca_depth_on_many_trees():
    # Many small random trees, a third of the edges certain (p = 1, -log p = 0: the case that rounds).
    for seed in range(300):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(2, 12))
        parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
        probs = np.where(rng.random(n) < 0.33, 1.0, rng.uniform(0.05, 1.0, n))
        probs = np.array([1.0 if parents.count(parents[v]) == 1 else min(probs[v], 1 / n) for v in range(n)])
        probs[0] = 1.0
        tree = H.Tree.from_parents(parents, probs)
        nodes = np.arange(n)
        table, lca = H.log_similarity_table(tree, nodes), H.lca_depth(tree, nodes)
        assert np.all(table >= 0) and np.all(table == table.T)
        for i in range(n):
            for k in np.unique(lca[i]):
                assert np.unique(table[i][lca[i] == k]).size == 1
            for j in range(n):
                assert table[i, j] == pytest.approx(log_s_loop(parents, probs, i, j), rel=1e-12, abs=1e-15)


def test_monotone_in_lca_depth_for_a_regular_tree():
    branching = [3, 2, 4, 2]  # per level
    parents, level_nodes = [-1], [0]
    for b in branching:
        nxt = []
        for v in level_nodes:
            for _ in range(b):
                parents.append(v)
                nxt.append(len(parents) - 1)
        level_nodes = nxt
    tree = H.Tree.from_parents(parents)
    table, lca = H.log_similarity_table(tree), H.lca_depth(tree, tree.leaves)
    values = [np.unique(np.round(table[lca == k], 12)) for k in range(len(branching) + 1)]
    assert all(v.size == 1 for v in values)
    values = np.concatenate(values)
    assert np.all(np.diff(values) > 0)
    want = [eq4_loop([1 / b for b in branching[:k]]) for k in range(len(branching) + 1)]
    np.testing.assert_allclose(values, want, rtol=1e-12)


# ------------------------------------------------------------ deep hierarchies


def exact_log_eq4_uniform(branching: int, k: int) -> float:
    """log((1/K) sum_{k'=1..K} b^k') with exact integers."""
    if k == 0:
        return 0.0
    return math.log(sum(branching**j for j in range(1, k + 1))) - math.log(k)


def test_depth_20_branching_1000_is_finite_and_exact():
    depth = 20
    neg_log_p = jnp.full((depth + 1, depth), math.log(1000.0), jnp.float32)
    ks = jnp.arange(depth + 1)
    got = jax.jit(H.log_similarity_from_path)(neg_log_p, ks)
    assert got.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(got)))
    want = np.array([exact_log_eq4_uniform(1000, k) for k in range(depth + 1)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6)
    grads = jax.jit(jax.grad(lambda x: H.log_similarity_from_path(x, ks).sum()))(neg_log_p)
    assert bool(jnp.all(jnp.isfinite(grads)))


def test_deep_tree_table_is_finite():
    # A pruned view of a depth-21, branching-1000 tree: one chain of 20 edges with
    # p = 1/1000 each (the other 999 siblings left out), then two leaves.
    depth = 20
    parents = [-1] + list(range(depth)) + [depth, depth]
    probs = [1.0] + [1e-3] * depth + [1e-3, 1e-3]
    tree = H.Tree.from_parents(parents, probs)
    table = H.log_similarity_table(tree)
    assert np.all(np.isfinite(table))
    assert table[0, 1] == pytest.approx(exact_log_eq4_uniform(1000, 20), rel=1e-12)
    assert table[0, 0] == pytest.approx(exact_log_eq4_uniform(1000, 21), rel=1e-12)
    tab32 = H.gather_log_similarity(jnp.asarray(table, jnp.float32), jnp.array([0, 1]))
    assert bool(jnp.all(jnp.isfinite(tab32)))


# --------------------------------------------------------- jit / vmap / gather


class TestJax(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    @pytest.mark.slow
    def test_log_similarity_from_path_matches_loop(self):
        rng = np.random.default_rng(1)
        p = rng.uniform(0.05, 1.0, size=(6, 7))
        ks = np.array([0, 1, 3, 7, 5, 2])
        got = self.variant(H.log_similarity_from_path)(jnp.asarray(-np.log(p), jnp.float32), jnp.asarray(ks))
        chex.assert_shape(got, (6,))
        want = [eq4_loop(list(p[i, : ks[i]])) for i in range(6)]
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)

    @pytest.mark.slow
    def test_vmap_and_broadcast(self):
        x = jnp.log(jnp.array([[2.0, 3.0, 5.0]] * 4))
        ks = jnp.array([0, 1, 2, 3])
        got = jax.jit(jax.vmap(H.log_similarity_from_path))(x, ks)
        want = [0.0, math.log(2), math.log((2 + 6) / 2), math.log((2 + 6 + 30) / 3)]
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(H.log_similarity_from_path(x[0], ks)), want, rtol=1e-6)

    def test_gradient_matches_finite_differences(self):
        x = jnp.asarray([0.7, 0.2, 1.3, 0.0], jnp.float32)
        grad = jax.jit(jax.grad(H.log_similarity_from_path))
        for k in range(5):
            g = grad(x, jnp.asarray(k))
            assert bool(jnp.all(jnp.isfinite(g)))
            for j in range(4):
                e = np.zeros(4)
                e[j] = 1e-4
                xp, xm = np.asarray(x, np.float64) + e, np.asarray(x, np.float64) - e
                fd = (eq4_loop(list(np.exp(-xp[:k]))) - eq4_loop(list(np.exp(-xm[:k])))) / 2e-4
                assert float(g[j]) == pytest.approx(fd, abs=1e-3)

    @chex.variants(with_jit=True, without_jit=True)
    @pytest.mark.slow
    def test_gather_equals_pairwise_loop(self):
        rng = np.random.default_rng(2)
        parents, probs = random_tree(rng, 30)
        tree = H.Tree.from_parents(parents, probs)
        table = H.log_similarity_table(tree)
        labels = rng.integers(0, table.shape[0], size=16)
        other = rng.integers(0, table.shape[0], size=5)
        tab = jnp.asarray(table, jnp.float32)
        got = self.variant(H.gather_log_similarity)(tab, jnp.asarray(labels))
        got2 = self.variant(H.gather_log_similarity)(tab, jnp.asarray(labels), jnp.asarray(other))
        chex.assert_shape(got, (16, 16))
        chex.assert_shape(got2, (16, 5))
        leaves = tree.leaves
        for i, a in enumerate(labels):
            for j, b in enumerate(labels):
                want = log_s_loop(parents, probs, leaves[a], leaves[b])
                assert float(got[i, j]) == pytest.approx(want, rel=1e-5, abs=1e-5)
            for j, b in enumerate(other):
                assert float(got2[i, j]) == float(tab[a, b])


# ------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(parents=[]), "parents"),
        (dict(parents=[[-1, 0]]), "parents"),
        (dict(parents=[-1, 0.5]), "parents"),
        (dict(parents=[-1, -1, 0]), "parents"),  # two roots
        (dict(parents=[0, 0, 1]), "parents"),  # no root / self loop
        (dict(parents=[-1, 2, 1]), "parents"),  # cycle 1 <-> 2
        (dict(parents=[-1, 3, 1, 2]), "parents"),  # cycle 1 -> 3 -> 2 -> 1
        (dict(parents=[-1, 5]), "parents"),  # out of range
        (dict(parents=[-1, 0], edge_probs=[1.0]), "edge_probs"),
        (dict(parents=[-1, 0], edge_probs=[1.0, 0.0]), "edge_probs"),
        (dict(parents=[-1, 0], edge_probs=[1.0, 1.5]), "edge_probs"),
        (dict(parents=[-1, 0], edge_probs=[1.0, float("nan")]), "edge_probs"),
        (dict(parents=[-1, 0, 0], edge_probs=[1.0, 0.6, 0.6]), "edge_probs"),  # sum > 1
        (dict(parents=[-1, 0], names=["a"]), "names"),
    ],
)
def test_tree_rejects_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        H.Tree.from_parents(**kwargs)


def test_tree_accepts_substochastic_and_ignores_root_prob():
    tree = H.Tree.from_parents([-1, 0, 0], [float("nan"), 0.2, 0.3])
    assert tree.log_edge_prob[0] == 0.0
    assert tree.log_edge_prob[1:] == pytest.approx(np.log([0.2, 0.3]))


def test_functions_reject_bad_input():
    tree = H.Tree.from_parents([-1, 0, 0, 1, 1])
    with pytest.raises(ValueError, match="separation_depth"):
        H.log_similarity_from_path(jnp.ones(3), 4)
    with pytest.raises(ValueError, match="separation_depth"):
        H.log_similarity_from_path(jnp.ones(3), -1)
    with pytest.raises(ValueError, match="separation_depth"):
        H.log_similarity_from_path(jnp.ones(3), 1.0)
    with pytest.raises(ValueError, match="separation_depth"):
        H.log_similarity_from_path(jnp.ones((2, 3)), jnp.array([1, 1, 1]))
    with pytest.raises(ValueError, match="neg_log_probs"):
        H.log_similarity_from_path(jnp.array([0.5, -0.1]), 2)
    with pytest.raises(ValueError, match="neg_log_probs"):
        H.log_similarity_from_path(jnp.array([0.5, jnp.inf]), 2)
    with pytest.raises(ValueError, match="neg_log_probs"):
        H.log_similarity_from_path(jnp.float32(1.0), 0)
    with pytest.raises(ValueError, match="nodes"):
        H.log_similarity_table(tree, [0, 7])
    with pytest.raises(ValueError, match="nodes"):
        H.log_similarity_table(tree, [0.0, 1.0])
    with pytest.raises(ValueError, match="nodes_b"):
        H.log_similarity_pairs(tree, [1, 2], [1])
    with pytest.raises(ValueError, match="nodes_a"):
        H.lca_depth(tree, [-1])
    with pytest.raises(ValueError, match="labels_a"):
        H.gather_log_similarity(jnp.zeros((3, 3)), jnp.array([0, 3]))
    with pytest.raises(ValueError, match="labels_b"):
        H.gather_log_similarity(jnp.zeros((3, 2)), jnp.array([0, 2]), jnp.array([2]))
    with pytest.raises(ValueError, match="labels_a"):
        H.gather_log_similarity(jnp.zeros((3, 3)), jnp.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="table"):
        H.gather_log_similarity(jnp.zeros((3, 2)), jnp.array([0, 1]))
    with pytest.raises(ValueError, match="table"):
        H.gather_log_similarity(jnp.zeros(3), jnp.array([0, 1]))
    with pytest.raises(ValueError, match="fill"):
        H.level_ancestors(tree, fill="parent")


# ------------------------------------------------------------------------ levels


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40))
def test_levels_equal_parent_walks(seed, n):
    rng = np.random.default_rng(seed)
    parents, _ = random_tree(rng, n)
    tree = H.Tree.from_parents(parents)
    leaves = tree.leaves
    anc = H.level_ancestors(tree)
    anc_none = H.level_ancestors(tree, fill="none")
    labels, counts = H.level_labels(tree)
    depth_max = max(len(path_up(parents, v)) - 1 for v in leaves)
    chex.assert_shape(anc, (leaves.size, depth_max + 1))
    for i, v in enumerate(leaves):
        path = path_up(parents, v)
        for level in range(depth_max + 1):
            assert anc[i, level] == (path[level] if level < len(path) else v)
            assert anc_none[i, level] == (path[level] if level < len(path) else -1)
    for level in range(depth_max + 1):
        assert counts[level] == len(set(anc[:, level].tolist()))
        # same label iff same ancestor
        same_anc = anc[:, level][:, None] == anc[:, level][None, :]
        same_lab = labels[:, level][:, None] == labels[:, level][None, :]
        assert np.array_equal(same_anc, same_lab)
        assert labels[:, level].min() == 0 and labels[:, level].max() == counts[level] - 1
    assert np.all(anc[:, 0] == 0)


# ------------------------------------------------------------ ImageNet-1k asset


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def test_imagenet1k_hierarchy_is_consistent():
    h = H.imagenet1k_hierarchy()
    tree = h.tree
    data = json.loads((_repo_root() / "gensim_jax" / "assets" / "imagenet1k_hierarchy.json").read_text())
    assert h.num_classes == 1000 and tree.num_nodes == data["num_nodes"] == len(h.wnids)
    assert tree.names[tree.root] == "entity.n.01"
    # class order = tensorflow-datasets imagenet2012 labels (the label ids of the dataset)
    spec = importlib.util.find_spec("tensorflow_datasets")
    if spec is not None:
        labels_txt = Path(spec.submodule_search_locations[0]) / "datasets" / "imagenet2012" / "labels.txt"
        assert list(h.class_wnids) == labels_txt.read_text().split()
    # the classes are exactly the leaves; statistics recomputed by walking parents
    assert set(tree.leaves.tolist()) == set(h.class_nodes.tolist())
    parents = data["parents"]
    depths = [len(path_up(parents, v)) - 1 for v in range(len(parents))]
    stats = data["stats"]
    assert max(depths) == stats["max_depth"] == tree.max_depth == 18
    assert len(set(p for p in parents if p >= 0)) == stats["num_internal_nodes"] == 818
    assert [depths.count(d) for d in range(max(depths) + 1)] == stats["nodes_per_level"]
    _, counts = h.level_labels()
    assert counts.tolist() == stats["level_classes"]
    assert counts[0] == 1 and counts[-1] == 1000


def test_imagenet1k_table():
    h = H.imagenet1k_hierarchy()
    table = h.log_similarity_table()
    chex.assert_shape(table, (1000, 1000))
    assert np.all(np.isfinite(table)) and np.all(table >= 0)
    np.testing.assert_array_equal(table, table.T)
    assert np.all(np.diag(table)[:, None] >= table - 1e-12)  # a class is most similar to itself
    rng = np.random.default_rng(3)
    parents = h.tree.parents.tolist()
    probs = np.exp(h.tree.log_edge_prob)
    for a, b in rng.integers(0, 1000, size=(40, 2)):
        assert table[a, b] == pytest.approx(log_s_loop(parents, probs, a, b), rel=1e-12, abs=1e-12)
    # two dog breeds share a deeper path than a dog and a tench
    names = h.tree.names
    beagle, basset, tench = names.index("beagle.n.01"), names.index("basset.n.01"), names.index("tench.n.01")
    assert table[beagle, basset] > table[beagle, tench] > 0
