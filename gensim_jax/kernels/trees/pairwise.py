"""Moschitti's tree kernels between two trees (ST, SST, PTK), in log space.

``K(T1, T2) = sum_{n1 in T1} sum_{n2 in T2} Delta(n1, n2)`` (Moschitti 2006 Eq. 1) with the subtree
(ST), subset-tree (SST) and partial-tree (PTK, Eq. 3) ``Delta`` of :mod:`gensim_jax.kernels.trees`,
and the normalized kernel ``K(T1, T2) / sqrt(K(T1, T1) K(T2, T2))``. One pair at a time with
Moschitti's fast tree kernel: the node lists sorted by production or label and merged, so that only
the node pairs whose ``Delta`` can be non-zero are visited, ``Delta`` memoized in post-order. The
argument checks and log-space helpers here serve :mod:`gensim_jax.kernels.trees.gram` too.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from gensim_jax.kernels.trees.tree import Tree

__all__ = ["TreeKind", "tree_kernel", "log_tree_kernel", "normalized_tree_kernel"]

#: The tree kernels: ``"st"`` subtree, ``"sst"`` subset tree, ``"ptk"`` partial tree kernel (Moschitti).
TreeKind = Literal["st", "sst", "ptk"]
_KINDS = ("st", "sst", "ptk")
_NEG_INF = -math.inf
_MAX_LOG_FLOAT = math.log(np.finfo(np.float64).max)


# --------------------------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------------------------


def _check_kind(kind: str) -> str:
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    return kind


def _check_decay(name: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}") from None
    if not (0.0 < v <= 1.0):
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return v


def _check_tree(name: str, t: object) -> Tree:
    if not isinstance(t, Tree):
        raise TypeError(f"{name} must be a Tree, got {type(t).__name__}")
    return t


def _check_trees(trees: Sequence[Tree]) -> list[Tree]:
    trees = list(trees)
    if not trees:
        raise ValueError("trees must be a non-empty sequence of Tree, got 0 trees")
    for i, t in enumerate(trees):
        if not isinstance(t, Tree):
            raise TypeError(f"trees[{i}] must be a Tree, got {type(t).__name__}")
    return trees


def _log1pexp(x: float) -> float:
    """log(1 + exp(x)) for x in [-inf, inf)."""
    if x == _NEG_INF:
        return 0.0
    if x > 30.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


def _lae(a: float, b: float) -> float:
    """log(exp(a) + exp(b)) for scalars, -inf safe."""
    if a == _NEG_INF:
        return b
    if b == _NEG_INF:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


# --------------------------------------------------------------------------------------------
# single pair: Moschitti's fast tree kernel
# --------------------------------------------------------------------------------------------


class _Flat:
    """A tree flattened in post-order: labels, child index tuples (one entry per position)."""

    __slots__ = ("labels", "kids")

    def __init__(self, tree: Tree):
        labels: list[str] = []
        kids: list[tuple[int, ...]] = []
        stack: list[tuple[Tree, int, list[int]]] = [(tree, 0, [])]
        while stack:
            node, k, acc = stack[-1]
            if k < len(node.children):
                stack[-1] = (node, k + 1, acc)
                stack.append((node.children[k], 0, []))
            else:
                stack.pop()
                i = len(labels)
                labels.append(node.label)
                kids.append(tuple(acc))
                if stack:
                    stack[-1][2].append(i)
        self.labels = labels
        self.kids = kids

    def production_key(self, i: int) -> tuple:
        return (
            self.labels[i],
            tuple((self.labels[c], not self.kids[c]) for c in self.kids[i]),
        )


def _matching_pairs(keys1: list, keys2: list) -> list[tuple[int, int]]:
    """Node pairs with equal keys, by merging the two key-sorted node lists (Moschitti's FTK).

    ``keys`` are small integers (None for nodes that never match). Returns pairs sorted by the
    post-order index of the first node, so that children pairs precede their parents.
    """
    o1 = sorted((k, i) for i, k in enumerate(keys1) if k is not None)
    o2 = sorted((k, j) for j, k in enumerate(keys2) if k is not None)
    pairs: list[tuple[int, int]] = []
    a = b = 0
    while a < len(o1) and b < len(o2):
        k1, k2 = o1[a][0], o2[b][0]
        if k1 < k2:
            a += 1
        elif k1 > k2:
            b += 1
        else:
            a_end = a
            while a_end < len(o1) and o1[a_end][0] == k1:
                a_end += 1
            b_end = b
            while b_end < len(o2) and o2[b_end][0] == k1:
                b_end += 1
            for x in range(a, a_end):
                for y in range(b, b_end):
                    pairs.append((o1[x][1], o2[y][1]))
            a, b = a_end, b_end
    pairs.sort()
    return pairs


def _ptk_children_sum(a, b, get, log_lam: float) -> float:
    """Log of PTK's child-subsequence sum for two child lists (Moschitti 2006, Eq. 3).

    ``S = sum_{I1, I2} lam^(d(I1) + d(I2)) prod_j Delta(a[I1_j], b[I2_j])`` over equal-length
    (>= 1) increasing index sequences. With ``E[i, r]`` the part of ``S`` whose last matched pair
    is ``(i, r)`` (spans measured up to ``i`` and ``r``)::

        E[i, r] = Delta(a_i, b_r) * lam^2 * (1 + F[i-1, r-1])
        F[i, r] = sum_{i' <= i, r' <= r} lam^((i - i') + (r - r')) E[i', r']
                = G[i, r] + lam F[i-1, r],   G[i, r] = E[i, r] + lam G[i, r-1]
        S = sum_{i, r} E[i, r]

    (extending a chain that ends at ``(i', r')`` to ``(i, r)`` lengthens both spans by
    ``i - i'`` and ``r - r'``). All terms are non-negative, so the recursion runs in log space
    with ``logaddexp`` only. ``get(x, y)`` returns ``log Delta`` or -inf.
    """
    m = len(b)
    two = 2.0 * log_lam
    prev = [_NEG_INF] * (m + 1)  # log F[i-1, 0..m]
    total = _NEG_INF
    for x in a:
        row = [_NEG_INF] * (m + 1)
        g = _NEG_INF
        for r in range(1, m + 1):
            d = get(x, b[r - 1])
            e = _NEG_INF if d == _NEG_INF else d + two + _log1pexp(prev[r - 1])
            total = _lae(total, e)
            g = _lae(e, log_lam + g if g != _NEG_INF else _NEG_INF)
            up = prev[r]
            row[r] = _lae(g, log_lam + up if up != _NEG_INF else _NEG_INF)
        prev = row
    return total


def _log_kernel_pair(t1: Tree, t2: Tree, kind: str, lam: float, mu: float) -> float:
    f1, f2 = _Flat(t1), _Flat(t2)
    log_lam = math.log(lam)
    ids: dict = {}
    if kind == "ptk":
        keys1 = [ids.setdefault(lab, len(ids)) for lab in f1.labels]
        keys2 = [ids.setdefault(lab, len(ids)) for lab in f2.labels]
    else:
        keys1 = [ids.setdefault(f1.production_key(i), len(ids)) if f1.kids[i] else None for i in range(len(f1.labels))]
        keys2 = [ids.setdefault(f2.production_key(j), len(ids)) if f2.kids[j] else None for j in range(len(f2.labels))]
    pairs = _matching_pairs(keys1, keys2)
    delta: dict[tuple[int, int], float] = {}
    total = _NEG_INF
    if kind == "ptk":
        log_mu = math.log(mu)

        def get(x: int, y: int) -> float:
            return delta.get((x, y), _NEG_INF)

        for i, j in pairs:
            a, b = f1.kids[i], f2.kids[j]
            s = _ptk_children_sum(a, b, get, log_lam) if (a and b) else _NEG_INF
            d = log_mu + _lae(2.0 * log_lam, s)
            delta[(i, j)] = d
            total = _lae(total, d)
        return total
    for i, j in pairs:
        d = log_lam
        for c1, c2 in zip(f1.kids[i], f2.kids[j]):
            if not f1.kids[c1]:  # leaf child: equal by the production match
                continue
            dc = delta.get((c1, c2), _NEG_INF)
            if kind == "st":
                if dc == _NEG_INF:
                    d = _NEG_INF
                    break
                d += dc
            else:
                d += _log1pexp(dc)
        if d != _NEG_INF:
            delta[(i, j)] = d
            total = _lae(total, d)
    return total


def log_tree_kernel(t1: Tree, t2: Tree, kind: TreeKind = "st", lam: float = 1.0, mu: float = 1.0) -> float:
    """Log of Moschitti's tree kernel ``K(T1, T2) = sum_{n1, n2} Delta(n1, n2)``.

    Implements Moschitti (2006) Eq. 1 with the ST / SST ``Delta`` of Sec. 2 (decay ``lam``) or
    the PTK ``Delta`` of Eq. 3 (decays ``lam``, ``mu``); see :mod:`gensim_jax.kernels.trees`. Uses the fast
    tree kernel algorithm (production- or label-sorted node lists, memoized ``Delta`` in
    post-order) and log-space arithmetic, so huge fragment counts stay finite.

    Args:
      t1, t2: trees.
      kind: ``"st"`` (subtrees), ``"sst"`` (subset trees) or ``"ptk"`` (partial trees).
      lam: decay per node (ST/SST) or per child-span position and node (PTK), in (0, 1].
      mu: PTK decay per node, in (0, 1]; ignored by ST and SST.

    Returns:
      ``log K`` as a Python float; ``-inf`` when the trees share no fragment.

    Example:
      >>> t = Tree.from_bracket("(S (A a) (B b))")
      >>> round(math.exp(log_tree_kernel(t, t, "sst")), 6)  # 6 subset trees, each matched once
      6.0
    """
    _check_tree("t1", t1)
    _check_tree("t2", t2)
    kind = _check_kind(kind)
    lam = _check_decay("lam", lam)
    mu = _check_decay("mu", mu)
    return _log_kernel_pair(t1, t2, kind, lam, mu)


def tree_kernel(t1: Tree, t2: Tree, kind: TreeKind = "st", lam: float = 1.0, mu: float = 1.0) -> float:
    """Moschitti's tree kernel ``K(T1, T2)`` (Moschitti 2006 Eq. 1), as ``exp(log_tree_kernel)``.

    Args and kinds as in :func:`log_tree_kernel`. Returns a float >= 0 (``inf`` only if the
    count overflows float64; use :func:`log_tree_kernel` for big trees with ``lam = 1``).

    Example:
      >>> t1 = Tree.from_bracket("(S (A a) (B b))")
      >>> t2 = Tree.from_bracket("(S (A a) (B c))")
      >>> tree_kernel(t1, t2, "st")  # the shared complete subtree (A a)
      1.0
    """
    logk = log_tree_kernel(t1, t2, kind, lam, mu)
    return math.inf if logk > _MAX_LOG_FLOAT else math.exp(logk)


def normalized_tree_kernel(t1: Tree, t2: Tree, kind: TreeKind = "st", lam: float = 1.0, mu: float = 1.0) -> float:
    """Normalized kernel ``K(T1, T2) / sqrt(K(T1, T1) K(T2, T2))`` in ``[0, 1]``.

    Cosine normalization of Moschitti (2006) Eq. 1; equals 1 for identical trees.

    Raises:
      ValueError: for ST/SST when a tree is a single leaf (it has no production, its
        self-kernel is 0 and the normalization is undefined).

    Example:
      >>> t = Tree.from_bracket("(S (A a) (B b))")
      >>> normalized_tree_kernel(t, t, "sst")
      1.0
    """
    _check_tree("t1", t1)
    _check_tree("t2", t2)
    kind = _check_kind(kind)
    lam = _check_decay("lam", lam)
    mu = _check_decay("mu", mu)
    k11 = _self_log_kernel(t1, kind, lam, mu)
    k22 = _self_log_kernel(t2, kind, lam, mu)
    _check_self(kind, [k11, k22], ["t1", "t2"])
    if t1 == t2:
        return 1.0
    k12 = _log_kernel_pair(t1, t2, kind, lam, mu)
    if k12 == _NEG_INF:
        return 0.0
    return float(min(1.0, math.exp(k12 - 0.5 * (k11 + k22))))


@functools.lru_cache(maxsize=4096)
def _self_log_kernel(t: Tree, kind: str, lam: float, mu: float) -> float:
    """``log K(T, T)``, cached (trees are immutable and hash in O(1))."""
    return _log_kernel_pair(t, t, kind, lam, mu)


def _check_self(kind: str, logs: Sequence[float], names: Sequence[str]) -> None:
    for v, name in zip(logs, names):
        if v == _NEG_INF:
            raise ValueError(
                f"{name} is a single leaf: it has no production, so its {kind.upper()} "
                "self-kernel is 0 and the normalized kernel is undefined"
            )
