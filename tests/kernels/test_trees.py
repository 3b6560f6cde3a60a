"""Tests for gensim_jax.kernels.trees: hand-counted fragments, naive recursive definitions,
Gram matrix properties, log-space stability and input validation."""

from __future__ import annotations

import itertools
import math
import pickle
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gensim_jax.kernels.trees import (
    Tree,
    gram_log_table,
    gram_matrix,
    log_gram_matrix,
    log_tree_kernel,
    normalized_tree_kernel,
    tree_kernel,
)

REPO = Path(__file__).resolve().parents[2]
B = Tree.from_bracket


# --------------------------------------------------------------------------------------------
# naive reference implementations: the textbook recursions over ALL node pairs, no sorting,
# no memo, linear space; PTK by explicit enumeration of child index subsequences.
# --------------------------------------------------------------------------------------------


def _nodes(t):
    out = [t]
    for c in t.children:
        out.extend(_nodes(c))
    return out


def _prod(t):
    return (t.label, tuple((c.label, c.is_leaf) for c in t.children))


def naive_delta_st(n1, n2, lam):
    if n1.is_leaf or n2.is_leaf or _prod(n1) != _prod(n2):
        return 0.0
    v = lam
    for c1, c2 in zip(n1.children, n2.children):
        if not c1.is_leaf:
            v *= naive_delta_st(c1, c2, lam)
    return v


def naive_delta_sst(n1, n2, lam):
    if n1.is_leaf or n2.is_leaf or _prod(n1) != _prod(n2):
        return 0.0
    v = lam
    for c1, c2 in zip(n1.children, n2.children):
        if not c1.is_leaf:
            v *= 1.0 + naive_delta_sst(c1, c2, lam)
    return v


def naive_delta_ptk(n1, n2, lam, mu):
    if n1.label != n2.label:
        return 0.0
    a, b = n1.children, n2.children
    s = 0.0
    for p in range(1, min(len(a), len(b)) + 1):
        for i1 in itertools.combinations(range(len(a)), p):
            for i2 in itertools.combinations(range(len(b)), p):
                w = lam ** ((i1[-1] - i1[0] + 1) + (i2[-1] - i2[0] + 1))
                for x, y in zip(i1, i2):
                    w *= naive_delta_ptk(a[x], b[y], lam, mu)
                    if w == 0.0:
                        break
                s += w
    return mu * (lam**2 + s)


def naive_kernel(t1, t2, kind, lam=1.0, mu=1.0):
    total = 0.0
    for n1 in _nodes(t1):
        for n2 in _nodes(t2):
            if kind == "st":
                total += naive_delta_st(n1, n2, lam)
            elif kind == "sst":
                total += naive_delta_sst(n1, n2, lam)
            else:
                total += naive_delta_ptk(n1, n2, lam, mu)
    return total


# --------------------------------------------------------------------------------------------
# hand-counted values
# --------------------------------------------------------------------------------------------

T1 = B("(S (A a) (B b))")
T2 = B("(S (A a) (B c))")


def test_st_hand_counted():
    # Complete subtrees (a node with all its descendants, rooted at a non-leaf):
    #   T1: (A a), (B b), (S (A a) (B b))      T2: (A a), (B c), (S (A a) (B c))
    # Shared: only (A a), one non-leaf node -> weight lam^1.
    # K(T1, T1): (A a) lam, (B b) lam, whole tree lam^3 (3 non-leaf nodes).
    lam = 0.5
    assert tree_kernel(T1, T2, "st", lam) == pytest.approx(lam)
    assert tree_kernel(T1, T1, "st", lam) == pytest.approx(lam + lam + lam**3)
    # normalized: lam / (2 lam + lam^3)
    assert normalized_tree_kernel(T1, T2, "st", lam) == pytest.approx(lam / (2 * lam + lam**3))


def test_sst_hand_counted():
    # Subset trees of T1 (keep whole productions, may stop at non-terminals):
    #   (A a), (B b), (S A B), (S (A a) B), (S A (B b)), (S (A a) (B b))   -> 6
    # Of T2 the same with c for b. Shared with T2: (A a), (S A B), (S (A a) B) -> 3.
    # Weights lam^(#productions): (A a) lam, (S A B) lam, (S (A a) B) lam^2.
    assert tree_kernel(T1, T1, "sst") == pytest.approx(6.0)
    assert tree_kernel(T1, T2, "sst") == pytest.approx(3.0)
    lam = 0.3
    assert tree_kernel(T1, T2, "sst", lam) == pytest.approx(2 * lam + lam**2)
    # self: (A a), (B b), (S A B): lam each; (S (A a) B), (S A (B b)): lam^2; whole: lam^3
    assert tree_kernel(T1, T1, "sst", lam) == pytest.approx(3 * lam + 2 * lam**2 + lam**3)


def test_ptk_hand_counted_unit_decay():
    # PTK fragments (any subsequence of children, leaves are nodes) shared by T1 and T2,
    # with lam = mu = 1 every shared fragment counts 1:
    #   rooted at a:  a                                        -> 1
    #   rooted at A:  A, A(a)                                  -> 2
    #   rooted at B:  B            (b != c)                    -> 1
    #   rooted at S:  S, S(A), S(A(a)), S(B), S(A B), S(A(a) B) -> 6
    # total 10.
    assert tree_kernel(T1, T2, "ptk") == pytest.approx(10.0)


def test_ptk_hand_counted_with_decay_and_gap():
    # T3 = (S a b c), T4 = (S a c); PTK with lam, mu.
    # Delta(leaf x, leaf x) = mu lam^2 (single node), for x = a and x = c.
    # Delta(S, S) = mu (lam^2 + sum over child index sequences with equal labels):
    #   (a)~(a): spans 1 + 1                -> lam^2 Delta(a, a)
    #   (c)~(c): spans 1 + 1                -> lam^2 Delta(c, c)
    #   (a, c)~(a, c): span 3 in T3 (a..c skips b), span 2 in T4 -> lam^5 Delta(a,a) Delta(c,c)
    # K = Delta(S, S) + Delta(a, a) + Delta(c, c).
    lam, mu = 0.5, 0.9
    d_leaf = mu * lam**2
    d_s = mu * (lam**2 + 2 * lam**2 * d_leaf + lam**5 * d_leaf**2)
    expected = d_s + 2 * d_leaf
    t3, t4 = B("(S a b c)"), B("(S a c)")
    assert tree_kernel(t3, t4, "ptk", lam, mu) == pytest.approx(expected, rel=1e-12)
    # ST and SST: productions S -> 'a' 'b' 'c' and S -> 'a' 'c' differ: nothing shared.
    assert tree_kernel(t3, t4, "st") == 0.0
    assert tree_kernel(t3, t4, "sst") == 0.0
    assert log_tree_kernel(t3, t4, "sst") == -math.inf


def test_leaf_child_vs_internal_child_is_not_the_same_st_subtree():
    # In t5 B is a leaf, in t6 B has a child: production strings S -> 'B' vs S -> B differ.
    t5, t6 = B("(S B)"), B("(S (B b))")
    assert t5.production != t6.production
    assert tree_kernel(t5, t6, "st") == 0.0
    assert tree_kernel(t5, t6, "sst") == 0.0
    # PTK: the single node S and the single node B are shared: mu lam^2 for (B, B), and
    # Delta(S, S) = mu (lam^2 + lam^2 Delta(B, B)).
    lam, mu = 0.7, 0.6
    d_b = mu * lam**2
    assert tree_kernel(t5, t6, "ptk", lam, mu) == pytest.approx(mu * (lam**2 + lam**2 * d_b) + d_b)


# --------------------------------------------------------------------------------------------
# fast == naive on random trees
# --------------------------------------------------------------------------------------------


@st.composite
def trees(draw, depth=3):
    label = draw(st.sampled_from(["A", "B", "C"]))
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return Tree(draw(st.sampled_from(["a", "b", "A"])))
    kids = draw(st.lists(trees(depth=depth - 1), min_size=1, max_size=3))
    return Tree(label, kids)


@settings(max_examples=60, deadline=None)
@given(
    trees(),
    trees(),
    st.sampled_from(["st", "sst", "ptk"]),
    st.sampled_from([1.0, 0.6, 0.25]),
    st.sampled_from([1.0, 0.5]),
)
def test_fast_equals_naive_on_random_trees(t1, t2, kind, lam, mu):
    expected = naive_kernel(t1, t2, kind, lam, mu)
    got = tree_kernel(t1, t2, kind, lam, mu)
    assert got == pytest.approx(expected, rel=1e-10, abs=1e-300)
    # the corpus Gram (shared subtree types) gives the same numbers
    logk = log_gram_matrix([t1, t2, t1], kind, lam, mu, normalize=False)
    ref = np.array([[naive_kernel(x, y, kind, lam, mu) for y in (t1, t2, t1)] for x in (t1, t2, t1)])
    np.testing.assert_allclose(np.exp(logk), ref, rtol=1e-10)


def test_gram_shared_equals_pairwise_on_geoclidean_programs():
    from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_NAMES, concept_parse_trees

    ts = concept_parse_trees(CONCEPT_NAMES[:10])
    for kind in ("st", "sst", "ptk"):
        a = log_gram_matrix(ts, kind, 0.4, 0.7, normalize=False, method="shared")
        b = log_gram_matrix(ts, kind, 0.4, 0.7, normalize=False, method="pairwise")
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_against_naive_on_concepts_and_timing():
    """The naive all-pairs recursion and the fast Gram agree on real parse trees; print both
    times (the fast one is expected to be far quicker; the assert only checks values)."""
    from gensim_jax.stimuli.geoclidean.concepts import concept_parse_trees

    ts = concept_parse_trees(["angle", "triangle", "segment", "eq_t", "ccl", "radii"])
    for kind in ("st", "sst"):
        t0 = time.perf_counter()
        ref = np.array([[naive_kernel(x, y, kind, 0.5) for y in ts] for x in ts])
        t_naive = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = gram_matrix(ts, kind, 0.5, normalize=False)
        t_fast = time.perf_counter() - t0
        np.testing.assert_allclose(got, ref, rtol=1e-10)
        print(f"{kind}: naive {t_naive:.3f}s, shared Gram {t_fast:.4f}s for {len(ts)} trees")


# --------------------------------------------------------------------------------------------
# kernel properties
# --------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(trees(), trees(), st.sampled_from([1.0, 0.5]))
def test_st_le_sst(t1, t2, lam):
    # every complete subtree is a subset tree, with the same weight
    assert tree_kernel(t1, t2, "st", lam) <= tree_kernel(t1, t2, "sst", lam) * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(trees(), st.sampled_from(["st", "sst", "ptk"]))
def test_normalized_is_one_on_identical_trees(t, kind):
    if t.is_leaf and kind != "ptk":
        with pytest.raises(ValueError, match="single leaf"):
            normalized_tree_kernel(t, t, kind)
        return
    copy = Tree.from_bracket(t.to_bracket())  # equal, distinct objects
    assert copy == t and copy is not t
    assert normalized_tree_kernel(t, copy, kind, 0.5, 0.5) == 1.0
    g = log_gram_matrix([t, copy], kind, 0.5, 0.5)
    np.testing.assert_allclose(g, 0.0, atol=1e-12)


def test_geoclidean_gram_symmetric_psd():
    from gensim_jax.stimuli.geoclidean.concepts import concept_parse_trees

    ts = concept_parse_trees()
    for kind in ("st", "sst", "ptk"):
        for normalize in (True, False):
            k = gram_matrix(ts, kind, 0.5, 0.5, normalize=normalize)
            assert k.shape == (37, 37)
            np.testing.assert_array_equal(k, k.T)
            eig = np.linalg.eigvalsh(k)
            assert eig.min() >= -1e-8 * eig.max(), (kind, normalize, eig.min())
            if normalize:
                np.testing.assert_allclose(np.diag(k), 1.0)
                assert k.max() <= 1.0 and k.min() > 0.0  # all programs share S -> ...


# --------------------------------------------------------------------------------------------
# log-space stability
# --------------------------------------------------------------------------------------------


def _full_tree(height: int, arity: int) -> Tree:
    t = Tree("x")
    for _ in range(height):
        t = Tree("N", [t] * arity)
    return t


def test_sst_log_space_beyond_float64():
    # Full ternary tree of height h, every non-leaf node has production N -> N N N (or
    # N -> 'x' 'x' 'x' at the bottom). With lam = 1, Delta at a node of height k is
    # D_1 = 1, D_k = (1 + D_{k-1})^3, exactly in Python integers; there are 3^(h-k) nodes of
    # height k and only equal heights match, so K(T, T) = sum_k (3^(h-k))^2 D_k.
    h = 8
    d, exact = 0, 0
    for k in range(1, h + 1):
        d = 1 if k == 1 else (1 + d) ** 3
        exact += (3 ** (h - k)) ** 2 * d
    assert exact > 10**308  # overflows float64
    t = _full_tree(h, 3)
    logk = log_gram_matrix([t], "sst", normalize=False)[0, 0]
    assert np.isfinite(logk)
    assert logk == pytest.approx(math.log(exact), rel=1e-12)


@pytest.mark.parametrize("height,lam", [(7, Fraction(1)), (4, Fraction(1, 2)), (5, Fraction(3, 4))])
def test_ptk_full_ternary_tree_exact(height, lam):
    # Full ternary tree: internal nodes N, leaves x. PTK matches nodes by label only, so an N of
    # height h matches an N of height g. Delta[0][0] = mu lam^2 (leaf x), Delta[h][0] = 0 (N vs
    # x), and for h, g >= 1 with D = Delta[h-1][g-1], over child index sequences of 3 children:
    #   p = 1: 3 x 3 pairs, spans 1 + 1                      -> 9 lam^2 D
    #   p = 2: {0,1}, {1,2} span 2, {0,2} span 3 on each side -> (2 lam^2 + lam^3)^2 D^2
    #   p = 3: span 3 on each side                           -> lam^6 D^3
    #   Delta[h][g] = mu (lam^2 + S).
    # K(T, T) = sum_{h, g} 3^(H-h) 3^(H-g) Delta[h][g], exactly in rationals.
    mu = lam
    H = height
    d = [[Fraction(0)] * (H + 1) for _ in range(H + 1)]
    d[0][0] = mu * lam**2
    for h in range(1, H + 1):
        for g in range(1, H + 1):
            x = d[h - 1][g - 1]
            s = 9 * lam**2 * x + (2 * lam**2 + lam**3) ** 2 * x**2 + lam**6 * x**3
            d[h][g] = mu * (lam**2 + s)
    exact = sum(3 ** (H - h) * 3 ** (H - g) * d[h][g] for h in range(H + 1) for g in range(H + 1))
    log_exact = math.log(exact.numerator) - math.log(exact.denominator)
    t = _full_tree(H, 3)
    got = log_gram_matrix([t], "ptk", float(lam), float(mu), normalize=False)[0, 0]
    assert got == pytest.approx(log_exact, rel=1e-12)


def test_sst_single_pair_log_space_beyond_float64():
    # Caterpillar with one label per level: X_k -> Y_k X_{k-1}, Y_k -> 'y', X_0 -> 'x'.
    # Only equal levels match. With lam = 1: Delta(Y_k) = 1, Delta(X_0) = 1 and
    # Delta(X_k) = (1 + 1)(1 + Delta(X_{k-1})), exact in Python integers.
    n = 1100
    t = Tree("X0", [Tree("x")])
    d, exact = 1, 1
    for k in range(1, n + 1):
        t = Tree(f"X{k}", [Tree(f"Y{k}", [Tree("y")]), t])
        d = 2 * (1 + d)
        exact += d + 1
    assert exact > 10**308
    assert log_tree_kernel(t, t, "sst") == pytest.approx(math.log(exact), rel=1e-12)
    assert tree_kernel(t, t, "sst") == math.inf
    assert log_gram_matrix([t], "sst", normalize=False)[0, 0] == pytest.approx(math.log(exact), rel=1e-12)


def test_tiny_decay_stays_finite_and_positive():
    t = _full_tree(6, 2)
    u = Tree("R", [t, Tree("y")])
    for kind in ("st", "sst", "ptk"):
        logk = log_gram_matrix([t, u], kind, lam=1e-3, mu=1e-3, normalize=False)
        assert np.all(np.isfinite(logk))
        # compare the shared computation with the per-pair one in log space
        assert logk[0, 1] == pytest.approx(log_tree_kernel(t, u, kind, 1e-3, 1e-3), rel=1e-12)


def test_deep_tree_no_recursion_limit():
    t = Tree("x")
    for i in range(1500):
        t = Tree("C", [Tree(f"c{i % 3}"), t])
    assert t.height == 1500
    assert t == Tree.from_bracket(t.to_bracket())
    # ST: the chain shares all its complete subtrees with itself; the subtree rooted at
    # height k occurs once and has k non-leaf nodes: K = sum_{k=1}^{1500} lam^k.
    lam = 0.99
    expected = sum(lam**k for k in range(1, 1501))
    assert tree_kernel(t, t, "st", lam) == pytest.approx(expected, rel=1e-9)
    assert gram_matrix([t], "st", lam, normalize=False)[0, 0] == pytest.approx(expected, rel=1e-9)


# --------------------------------------------------------------------------------------------
# gram_log_table
# --------------------------------------------------------------------------------------------


def test_gram_log_table_floor_and_dtype():
    ts = [B("(S (A a) (B b))"), B("(S (A a) (B c))"), B("(T (D d))")]
    tab = gram_log_table(ts, "st", lam=1.0, log_floor=-12.5)
    assert tab.dtype == np.float32 and tab.shape == (3, 3)
    np.testing.assert_array_equal(np.diag(tab), 0.0)
    # K(T1, T2) = 1 (A a), K(Ti, Ti) = 3 -> log(1/3); T3 shares nothing -> floor
    assert tab[0, 1] == pytest.approx(math.log(1 / 3), rel=1e-6)
    assert tab[0, 2] == tab[2, 1] == np.float32(-12.5)
    raw = gram_log_table(ts, "st", normalize=False)
    assert raw[0, 0] == pytest.approx(math.log(3.0), rel=1e-6)
    with pytest.raises(ValueError, match="log_floor"):
        gram_log_table(ts, log_floor=-math.inf)


# --------------------------------------------------------------------------------------------
# Tree type and validation
# --------------------------------------------------------------------------------------------


def test_tree_basics():
    t = B('(S (A a) "(" b)')
    assert t.label == "S" and len(t.children) == 3
    assert t.production == "S -> A '(' 'b'"
    assert t.children[0].production == "A -> 'a'"
    assert t.children[1].production is None and t.children[1].is_leaf
    assert t.n_nodes == 5 and t.height == 2
    assert t.productions() == ["A -> 'a'", "S -> A '(' 'b'"]
    assert [n.label for n in t.postorder()] == ["a", "A", "(", "b", "S"]
    assert B(t.to_bracket()) == t and hash(B(t.to_bracket())) == hash(t)
    assert t != B("(S (A a) b)")
    assert pickle.loads(pickle.dumps(t)) == t
    with pytest.raises(AttributeError):
        t.label = "X"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Tree("S", ["a"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        Tree("")
    for bad in ["(S (A a)", "(S a))", "()", "", "(S a) b"]:
        with pytest.raises(ValueError):
            B(bad)


def test_argument_validation():
    ts = [T1, T2]
    with pytest.raises(ValueError, match="kind"):
        gram_matrix(ts, "tk")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lam"):
        tree_kernel(T1, T2, "sst", lam=0.0)
    with pytest.raises(ValueError, match="lam"):
        gram_matrix(ts, "sst", lam=1.5)
    with pytest.raises(ValueError, match="mu"):
        gram_matrix(ts, "ptk", mu=-1.0)
    with pytest.raises(ValueError, match="0 trees"):
        gram_matrix([], "st")
    with pytest.raises(TypeError, match=r"trees\[1\]"):
        gram_matrix([T1, "(S a)"], "st")  # type: ignore[list-item]
    with pytest.raises(TypeError, match="t2"):
        tree_kernel(T1, "x", "st")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"trees\[1\] is a single leaf"):
        gram_matrix([T1, Tree("a")], "sst")
    with pytest.raises(ValueError, match="method"):
        gram_matrix(ts, "st", method="fast")  # type: ignore[arg-type]
    # PTK is defined on single leaves
    np.testing.assert_allclose(gram_matrix([Tree("a"), Tree("a")], "ptk"), 1.0)


@pytest.mark.slow
def test_kernels_do_not_import_stimuli_or_tensorflow():
    code = (
        "import sys, gensim_jax.kernels.trees; "
        "bad = [m for m in sys.modules if m.startswith(('gensim_jax.stimuli', 'tensorflow', "
        "'torch'))]; print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
