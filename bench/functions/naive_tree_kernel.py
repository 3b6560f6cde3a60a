"""Straightforward recursive Python tree kernels (the reference of the tree-kernel benchmark).

``K(T1, T2) = sum_{n1 in T1} sum_{n2 in T2} Delta(n1, n2)`` (Moschitti 2006, Eq. 1), with the
recursive ``Delta`` of the subtree (ST, Vishwanathan & Smola) and subset-tree (SST, Collins &
Duffy) kernels evaluated directly for every pair of nodes: no sorting of node lists, no
memoisation, no sharing across tree pairs.  This is the textbook algorithm the library's
``log_gram_matrix`` is compared with.
"""

from __future__ import annotations

from gensim_jax.kernels.trees import Tree


def nodes(t: Tree) -> list[Tree]:
    """All nodes of ``t``, pre-order, recursively."""
    out = [t]
    for c in t.children:
        out.extend(nodes(c))
    return out


def _production(t: Tree):
    return (t.label, tuple((c.label, c.is_leaf) for c in t.children))


def delta(n1: Tree, n2: Tree, kind: str, lam: float) -> float:
    """``Delta(n1, n2)``: 0 unless both have the same production; then
    ``lam * prod_j Delta(c1_j, c2_j)`` (ST) or ``lam * prod_j (1 + Delta(c1_j, c2_j))`` (SST)
    over the non-leaf children."""
    if n1.is_leaf or n2.is_leaf or _production(n1) != _production(n2):
        return 0.0
    value = lam
    for c1, c2 in zip(n1.children, n2.children):
        if not c1.is_leaf:
            d = delta(c1, c2, kind, lam)
            value *= d if kind == "st" else 1.0 + d
    return value


def kernel(t1: Tree, t2: Tree, kind: str = "st", lam: float = 1.0) -> float:
    """``K(T1, T2)`` by the double loop over nodes."""
    return sum(delta(a, b, kind, lam) for a in nodes(t1) for b in nodes(t2))
