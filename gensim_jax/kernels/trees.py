"""Labelled ordered trees and Moschitti's tree kernels (ST, SST, PTK), in log space.

The GenSim Geoclidean experiment (paper Appendix M) regresses the cosine similarity of two image
embeddings onto the log of a *tree kernel* between the parse trees of the programs that generated
the images. This module holds everything about those trees that does not know about Geoclidean:

* :class:`Tree`: a small immutable labelled ordered tree ``(label, children)``. A node without
  children is a *leaf* (a terminal symbol of a grammar); every other node has a *production*
  ``label -> child labels`` (leaf children written in quotes, as NLTK prints productions).
* Three convolution kernels of Moschitti (2006), each a sum over pairs of nodes
  ``K(T1, T2) = sum_{n1 in T1} sum_{n2 in T2} Delta(n1, n2)``:

  - ``"st"``  subtree kernel (Vishwanathan & Smola 2002; Moschitti 2006 Sec. 2.1): a fragment is
    a node together with *all* its descendants.
    ``Delta = 0`` if the productions differ, else ``lam * prod_j Delta(c1_j, c2_j)`` over the
    non-leaf children (so ``lam`` for a pre-terminal). Equivalently ``Delta(n1, n2) = lam^size``
    when the complete subtrees below ``n1`` and ``n2`` are identical (``size`` = number of
    non-leaf nodes), else 0.
  - ``"sst"`` subset-tree kernel (Collins & Duffy 2002; Moschitti 2006 Eq. 2): a fragment is any
    connected piece that keeps whole productions.
    ``Delta = 0`` if the productions differ, else ``lam * prod_j (1 + Delta(c1_j, c2_j))``.
  - ``"ptk"`` partial-tree kernel (Moschitti 2006, "Efficient convolution kernels for dependency
    and constituent syntactic trees", Eq. 3): fragments may keep any subsequence of a node's
    children. ``Delta = 0`` if the labels differ, else
    ``mu * (lam^2 + sum_{I1, I2, |I1|=|I2|} lam^(d(I1)+d(I2)) prod_j Delta(c1[I1_j], c2[I2_j]))``
    where ``I1, I2`` are increasing child index sequences and ``d(I) = I_last - I_first + 1``.
    Every node, leaves included, roots fragments.

  The ST and SST sums run over nodes that have a production (leaves root no fragment), the PTK
  sum over all nodes.
* The normalized kernel ``K(T1, T2) / sqrt(K(T1, T1) K(T2, T2))`` (in ``[0, 1]``, 1 on identical
  trees) and its log, the GenSim regression target (paper Appendix M, Eq. 2 with the tree kernel
  as similarity).

Everything is computed in **log space** (``logaddexp``), so fragment counts that overflow
float64 (``lam = 1`` on large trees) stay finite. A kernel value of 0 (no shared fragment) has
log ``-inf`` in :func:`log_tree_kernel` and :func:`log_gram_matrix`; :func:`gram_log_table`, the
table a training step gathers from, clips it to a finite floor ``log_floor`` (default ``-30``,
i.e. ``K_norm ~ 1e-13``) so that the regression target is never infinite.

Algorithms. A single pair uses Moschitti's fast tree kernel (FTK): the nodes of each tree are
sorted by production (ST/SST) or label (PTK), the two sorted lists are merged to list only the
node pairs whose ``Delta`` can be non-zero, and ``Delta`` is memoized over those pairs in
post-order (children before parents). PTK's sum over child subsequences uses an ``O(n m)``
dynamic program (derived below in :func:`_ptk_children_sum`). A Gram matrix over a corpus uses
the same recursions, but observes that ``Delta(n1, n2)`` depends only on the two subtrees below
``n1`` and ``n2``: all subtrees of the corpus are interned into integer *types*, ``Delta`` is
computed once per pair of types (vectorized with numpy per production/label group and height
level), and ``K = C D C^T`` with ``C`` the (trees x types) count matrix. The ST Gram is a weighted
count match, ``C diag(lam^size) C^T``. These routines are plain numpy/scipy (trees are ragged,
nothing here is jitted); a training step gathers from the precomputed table.

References: A. Moschitti (2006), "Making tree kernels practical for natural language learning"
(EACL) and "Efficient convolution kernels for dependency and constituent syntactic trees" (ECML);
M. Collins and N. Duffy (2002), "New ranking algorithms for parsing and tagging: kernels over
discrete structures"; S. V. N. Vishwanathan and A. J. Smola (2002), "Fast kernels for string and
tree matching".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:  # imported where used: scipy.sparse is 0.26 s of every gensim-jax process's start-up
    import scipy.sparse as sp

__all__ = [
    "Tree",
    "TreeKind",
    "tree_kernel",
    "log_tree_kernel",
    "normalized_tree_kernel",
    "log_gram_matrix",
    "gram_matrix",
    "gram_log_table",
]

#: The tree kernels: ``"st"`` subtree, ``"sst"`` subset tree, ``"ptk"`` partial tree kernel (Moschitti).
TreeKind = Literal["st", "sst", "ptk"]
_KINDS = ("st", "sst", "ptk")
_NEG_INF = -math.inf
_MAX_LOG_FLOAT = math.log(np.finfo(np.float64).max)


# --------------------------------------------------------------------------------------------
# Tree
# --------------------------------------------------------------------------------------------


class Tree:
    """An immutable labelled ordered tree: a ``label`` and a tuple of ``children``.

    Leaves (no children) are terminal symbols; any other node has the production
    ``label -> child labels``. Trees hash and compare structurally (label and ordered children);
    the hash is computed once at construction, so trees can key dictionaries cheaply. Deep trees
    are fine: nothing here recurses in Python.

    Args:
      label: non-empty string.
      children: iterable of :class:`Tree`.

    Example:
      >>> t = Tree("S", [Tree("A", [Tree("a")]), Tree("b")])
      >>> t.production
      "S -> A 'b'"
      >>> str(t)
      '(S (A a) b)'
      >>> Tree.from_bracket("(S (A a) b)") == t
      True
    """

    __slots__ = ("label", "children", "_hash", "_n_nodes", "_height")

    label: str
    children: tuple[Tree, ...]

    def __init__(self, label: str, children: Sequence[Tree] | Iterator[Tree] = ()):
        if not isinstance(label, str):
            raise TypeError(f"Tree label must be a str, got {type(label).__name__}")
        if not label:
            raise ValueError("Tree label must be a non-empty string")
        kids = tuple(children)
        for i, c in enumerate(kids):
            if not isinstance(c, Tree):
                raise TypeError(f"Tree children must be Tree instances; child {i} of {label!r} is {type(c).__name__}")
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "children", kids)
        object.__setattr__(self, "_hash", hash((label, tuple(c._hash for c in kids))))
        object.__setattr__(self, "_n_nodes", 1 + sum(c._n_nodes for c in kids))
        object.__setattr__(self, "_height", 1 + max(c._height for c in kids) if kids else 0)

    def __setattr__(self, name, value):
        raise AttributeError("Tree is immutable")

    def __delattr__(self, name):
        raise AttributeError("Tree is immutable")

    def __reduce__(self):
        return (Tree, (self.label, self.children))

    # -- structure ------------------------------------------------------------------------
    @property
    def is_leaf(self) -> bool:
        """True when the node has no children (a terminal symbol)."""
        return not self.children

    @property
    def n_nodes(self) -> int:
        """Number of nodes, leaves included."""
        return self._n_nodes

    @property
    def height(self) -> int:
        """Length of the longest root-to-leaf path in edges (0 for a leaf)."""
        return self._height

    @property
    def production(self) -> str | None:
        """The production ``"label -> c1 c2 ..."`` (leaf children quoted), or None for a leaf."""
        if not self.children:
            return None
        parts = [repr(c.label) if c.is_leaf else c.label for c in self.children]
        return f"{self.label} -> {' '.join(parts)}"

    def productions(self) -> list[str]:
        """Productions of all non-leaf nodes in post-order (children before parents)."""
        return [n.production for n in self.postorder() if n.children]  # type: ignore[misc]

    def postorder(self) -> list[Tree]:
        """All nodes (one entry per position) in post-order, computed without recursion."""
        out: list[Tree] = []
        stack: list[tuple[Tree, int]] = [(self, 0)]
        while stack:
            node, k = stack[-1]
            if k < len(node.children):
                stack[-1] = (node, k + 1)
                stack.append((node.children[k], 0))
            else:
                stack.pop()
                out.append(node)
        return out

    # -- equality and display ---------------------------------------------------------------
    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        stack = [(self, other)]
        while stack:
            a, b = stack.pop()
            if a is b:
                continue
            if (
                a._hash != b._hash
                or a.label != b.label
                or len(a.children) != len(b.children)
                or a._n_nodes != b._n_nodes
            ):
                return False
            stack.extend(zip(a.children, b.children))
        return True

    def __repr__(self) -> str:
        return f"Tree.from_bracket({self.to_bracket()!r})"

    def __str__(self) -> str:
        return self.to_bracket()

    def to_bracket(self) -> str:
        """Bracket notation ``(label child ...)``; leaves are bare, labels that contain space,
        quotes or parentheses are written in double quotes (with backslash escapes)."""
        parts: list[str] = []
        stack: list[tuple[Tree, int]] = [(self, 0)]
        while stack:
            node, k = stack.pop()
            if not node.children:
                parts.append(_quote_label(node.label))
                continue
            if k == 0:
                parts.append("(" + _quote_label(node.label))
            if k < len(node.children):
                stack.append((node, k + 1))
                stack.append((node.children[k], 0))
            else:
                parts.append(")")
        out = []
        for p in parts:
            if p == ")":
                out.append(p)
            elif out and not out[-1].endswith("("):
                out.append(" " + p)
            else:
                out.append(p)
        return "".join(out)

    @classmethod
    def from_bracket(cls, text: str) -> Tree:
        """Parse bracket notation, e.g. ``"(S (NP a) (VP b c))"``; a bare token is a leaf.

        Labels may be double-quoted (``"("`` for a literal parenthesis). Raises ValueError with
        the character offset on malformed input.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        tokens = _bracket_tokens(text)
        if not tokens:
            raise ValueError("empty bracket string")
        # stack of (label, children) for open nodes
        stack: list[tuple[str, list[Tree]]] = []
        result: Tree | None = None
        i = 0
        while i < len(tokens):
            kind, val, pos = tokens[i]
            if result is not None:
                raise ValueError(f"unexpected text after the tree at offset {pos}")
            if kind == "(":
                if i + 1 >= len(tokens) or tokens[i + 1][0] != "label":
                    raise ValueError(f"expected a label after '(' at offset {pos}")
                stack.append((tokens[i + 1][1], []))
                i += 2
                continue
            if kind == ")":
                if not stack:
                    raise ValueError(f"unbalanced ')' at offset {pos}")
                lab, kids = stack.pop()
                node = cls(lab, kids)
            else:
                node = cls(val)
            if stack:
                stack[-1][1].append(node)
            else:
                result = node
            i += 1
        if stack or result is None:
            raise ValueError("unbalanced '(' in bracket string")
        return result


def _quote_label(label: str) -> str:
    if any(ch in label for ch in ' ()"\\\t\n'):
        return '"' + label.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return label


def _bracket_tokens(text: str) -> list[tuple[str, str, int]]:
    toks: list[tuple[str, str, int]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "()":
            toks.append((ch, ch, i))
            i += 1
        elif ch == '"':
            j, buf = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                buf.append(text[j])
                j += 1
            if j >= n:
                raise ValueError(f"unterminated quoted label starting at offset {i}")
            if not buf:
                raise ValueError(f"empty quoted label at offset {i}")
            toks.append(("label", "".join(buf), i))
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '()"':
                j += 1
            toks.append(("label", text[i:j], i))
            i = j
    return toks


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
    the PTK ``Delta`` of Eq. 3 (decays ``lam``, ``mu``); see the module docstring. Uses the fast
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


# --------------------------------------------------------------------------------------------
# corpus: interned subtree types, Delta once per pair of types
# --------------------------------------------------------------------------------------------


class _Corpus:
    """All subtrees of a list of trees, interned into integer types.

    Type ``u`` has a label id, a tuple of child types, a height, a number of non-leaf nodes and
    (if not a leaf) a production id. ``counts`` is the sparse (trees x types) matrix of how many
    positions of each tree hold a subtree of each type.
    """

    def __init__(self, trees: list[Tree]):
        label_ids: dict[str, int] = {}
        type_ids: dict[tuple, int] = {}
        prod_ids: dict[tuple, int] = {}
        t_label: list[int] = []
        t_kids: list[tuple[int, ...]] = []
        t_height: list[int] = []
        t_size: list[int] = []
        t_prod: list[int] = []
        rows: list[int] = []
        cols: list[int] = []
        data: list[int] = []
        memo: dict[int, int] = {}  # id(Tree) -> type; valid while `trees` keeps them alive
        for ti, tree in enumerate(trees):
            # distinct node objects of this tree in post-order (shared subtrees visited once)
            order: list[Tree] = []
            seen: set[int] = set()
            stack: list[tuple[Tree, bool]] = [(tree, False)]
            while stack:
                node, expanded = stack.pop()
                if expanded:
                    order.append(node)
                    continue
                if id(node) in seen:
                    continue
                seen.add(id(node))
                stack.append((node, True))
                for c in reversed(node.children):
                    if id(c) not in seen:
                        stack.append((c, False))
            for node in order:
                if id(node) in memo:
                    continue
                lab = label_ids.setdefault(node.label, len(label_ids))
                kids = tuple([memo[id(c)] for c in node.children])
                key = (lab, kids)
                u = type_ids.get(key)
                if u is None:
                    u = len(t_label)
                    type_ids[key] = u
                    t_label.append(lab)
                    t_kids.append(kids)
                    if kids:
                        t_height.append(1 + max([t_height[c] for c in kids]))
                        t_size.append(1 + sum([t_size[c] for c in kids]))
                        pkey = (lab, tuple([(t_label[c], not t_kids[c]) for c in kids]))
                        t_prod.append(prod_ids.setdefault(pkey, len(prod_ids)))
                    else:
                        t_height.append(0)
                        t_size.append(0)
                        t_prod.append(-1)
                memo[id(node)] = u
            # multiplicity of each distinct node = number of positions it occupies
            mult: dict[int, int] = {id(tree): 1}
            for node in reversed(order):  # parents before children
                m = mult[id(node)]
                for c in node.children:
                    mult[id(c)] = mult.get(id(c), 0) + m
            for node in order:
                rows.append(ti)
                cols.append(memo[id(node)])
                data.append(mult[id(node)])
        self.n_trees = len(trees)
        self.n_types = len(t_label)
        self.n_labels = len(label_ids)
        self.n_prods = len(prod_ids)
        self.label = np.asarray(t_label, dtype=np.int64)
        self.kids = t_kids
        self.n_kids = np.asarray([len(k) for k in t_kids], dtype=np.int64)
        self.height = np.asarray(t_height, dtype=np.int64)
        self.size = np.asarray(t_size, dtype=np.int64)
        self.prod = np.asarray(t_prod, dtype=np.int64)
        import scipy.sparse as sp

        self.counts = sp.csr_matrix(
            (np.asarray(data, dtype=np.float64), (np.asarray(rows), np.asarray(cols))),
            shape=(self.n_trees, self.n_types),
        )
        self.counts.sum_duplicates()

    def kid_matrix(self, members: np.ndarray, n: int) -> np.ndarray:
        """(len(members), n) array of child types (members all have n children)."""
        if n == 0:
            return np.zeros((len(members), 0), dtype=np.int64)
        return np.asarray([self.kids[u] for u in members], dtype=np.int64).reshape(-1, n)


class _Groups:
    """Types partitioned into groups (by production or label), each sorted by height, with a
    dense ``log Delta`` matrix per group."""

    def __init__(self, corpus: _Corpus, group_of: np.ndarray, n_groups: int):
        self.group_of = group_of  # -1 for types outside every group
        self.pos = np.full(corpus.n_types, -1, dtype=np.int64)
        self.members: list[np.ndarray] = []
        self.levels: list[dict[int, tuple[int, int]]] = []
        for g in range(n_groups):
            mem = np.nonzero(group_of == g)[0]
            mem = mem[np.argsort(corpus.height[mem], kind="stable")]
            self.members.append(mem)
            self.pos[mem] = np.arange(len(mem))
            hs = corpus.height[mem]
            spans = {}
            for h in np.unique(hs):
                lo = int(np.searchsorted(hs, h, side="left"))
                hi = int(np.searchsorted(hs, h, side="right"))
                spans[int(h)] = (lo, hi)
            self.levels.append(spans)
        self.logd = [np.full((len(m), len(m)), _NEG_INF) for m in self.members]

    def gather(self, rows_t: np.ndarray, cols_t: np.ndarray) -> np.ndarray:
        """``log Delta`` between each row type and each column type (-inf across groups)."""
        out = np.full((len(rows_t), len(cols_t)), _NEG_INF)
        gr = self.group_of[rows_t]
        gc = self.group_of[cols_t]
        for g in np.intersect1d(np.unique(gr[gr >= 0]), np.unique(gc[gc >= 0])):
            ri = np.nonzero(gr == g)[0]
            ci = np.nonzero(gc == g)[0]
            out[np.ix_(ri, ci)] = self.logd[g][np.ix_(self.pos[rows_t[ri]], self.pos[cols_t[ci]])]
        return out


_CHUNK = 1 << 19  # entries per row block of the vectorized Delta computations (memory bound)


def _row_chunks(lo: int, hi: int, n_cols: int) -> list[tuple[int, int]]:
    step = max(1, _CHUNK // max(1, n_cols))
    return [(a, min(a + step, hi)) for a in range(lo, hi, step)]


def _sst_deltas(corpus: _Corpus, lam: float) -> _Groups:
    """``log Delta_SST`` for every pair of types with the same production (Moschitti Eq. 2)."""
    groups = _Groups(corpus, corpus.prod.copy(), corpus.n_prods)
    log_lam = math.log(lam)
    max_h = int(corpus.height.max()) if corpus.n_types else 0
    for h in range(1, max_h + 1):
        for g, spans in enumerate(groups.levels):
            if h not in spans:
                continue
            lo, hi = spans[h]
            mem = groups.members[g]
            n = int(corpus.n_kids[mem[0]])
            kc = corpus.kid_matrix(mem[:hi], n)
            for a, b in _row_chunks(lo, hi, hi):
                kr = corpus.kid_matrix(mem[a:b], n)
                val = np.full((b - a, hi), log_lam)
                for j in range(n):
                    if corpus.n_kids[kr[0, j]] == 0:  # leaf child: equal by the production
                        continue
                    val += np.logaddexp(0.0, groups.gather(kr[:, j], kc[:, j]))
                groups.logd[g][a:b, :hi] = val
                groups.logd[g][:hi, a:b] = val.T
    return groups


def _ptk_deltas(corpus: _Corpus, lam: float, mu: float) -> _Groups:
    """``log Delta_PTK`` for every pair of types with the same label (Moschitti 2006 Eq. 3),
    with the child-subsequence dynamic program of :func:`_ptk_children_sum` run on arrays."""
    groups = _Groups(corpus, corpus.label.copy(), corpus.n_labels)
    log_lam, log_mu = math.log(lam), math.log(mu)
    two = 2.0 * log_lam
    max_h = int(corpus.height.max()) if corpus.n_types else 0
    for h in range(0, max_h + 1):
        for g, spans in enumerate(groups.levels):
            if h not in spans:
                continue
            lo, hi = spans[h]
            mem = groups.members[g]
            cols = np.arange(hi)
            nk_c = corpus.n_kids[mem[cols]]
            for a, b in _row_chunks(lo, hi, hi):
                rows = np.arange(a, b)
                val = np.full((b - a, hi), log_mu + two)  # the lam^2 single-node term
                nk_r = corpus.n_kids[mem[rows]]
                for n in np.unique(nk_r[nk_r > 0]):
                    ri = rows[nk_r == n]
                    kr = corpus.kid_matrix(mem[ri], int(n))
                    for m in np.unique(nk_c[nk_c > 0]):
                        ci = cols[nk_c == m]
                        kc = corpus.kid_matrix(mem[ci], int(m))
                        s = _ptk_children_sum_arrays(groups, kr, kc, log_lam)
                        val[np.ix_(ri - a, ci)] = log_mu + np.logaddexp(two, s)
                groups.logd[g][a:b, :hi] = val
                groups.logd[g][:hi, a:b] = val.T
    return groups


def _ptk_children_sum_arrays(groups: _Groups, kr: np.ndarray, kc: np.ndarray, log_lam: float):
    """Vectorized :func:`_ptk_children_sum` for all (row type, column type) pairs of a block.

    ``kr`` (R, n) and ``kc`` (C, m) are the child types; returns the (R, C) log sums. When a
    bound shows that every term and partial sum of the block lies safely inside float64's range
    the recursion runs in linear space (same formulas, about ten times faster); otherwise in
    log space with ``logaddexp``.
    """
    n, m = kr.shape[1], kc.shape[1]
    shape = (kr.shape[0], kc.shape[0])
    logk = [[groups.gather(kr[:, i], kc[:, r]) for r in range(m)] for i in range(n)]
    kmax, kmin = _NEG_INF, math.inf
    for row_k in logk:
        for k in row_k:
            fin = k[np.isfinite(k)]
            if fin.size:
                kmax = max(kmax, float(fin.max()))
                kmin = min(kmin, float(fin.min()))
    if kmax == _NEG_INF:
        return np.full(shape, _NEG_INF)
    # S <= prod_i (1 + sum_r K_ir) for lam <= 1 (every matched subsequence is one term of the
    # expanded product); every non-zero term and partial sum is >= exp(p kmin) lam^(2(n+m)).
    upper = n * float(np.logaddexp(0.0, math.log(m) + kmax))
    lower = min(n, m) * min(kmin, 0.0) + 2.0 * (n + m) * log_lam
    if upper < 600.0 and lower > -600.0:
        lam = math.exp(log_lam)
        lam2 = lam * lam
        kl = [[np.exp(k) for k in row_k] for row_k in logk]
        prev_l = [np.zeros(shape) for _ in range(m + 1)]
        total_l = np.zeros(shape)
        for i in range(n):
            row_l = [prev_l[0]]
            g_l = np.zeros(shape)
            for r in range(1, m + 1):
                e_l = kl[i][r - 1] * lam2 * (1.0 + prev_l[r - 1])
                total_l += e_l
                g_l = e_l + lam * g_l
                row_l.append(g_l + lam * prev_l[r])
            prev_l = row_l
        with np.errstate(divide="ignore"):
            return np.log(total_l)
    two = 2.0 * log_lam
    prev = [np.full(shape, _NEG_INF) for _ in range(m + 1)]
    total = np.full(shape, _NEG_INF)
    for i in range(n):
        row = [prev[0]]
        g = np.full(shape, _NEG_INF)
        for r in range(1, m + 1):
            e = logk[i][r - 1] + two + np.logaddexp(0.0, prev[r - 1])
            total = np.logaddexp(total, e)
            g = np.logaddexp(e, log_lam + g)
            row.append(np.logaddexp(g, log_lam + prev[r]))
        prev = row
    return total


_BAND = 200.0  # width (in nats) of the value bands used by the log-space bilinear forms


def _log_bilinear_sum(blocks: list[tuple[sp.csr_matrix, np.ndarray]], n: int) -> np.ndarray:
    """``log(sum_g C_g exp(logD_g) C_g^T)`` for count matrices ``C_g`` and dense symmetric
    ``logD_g`` (entries -inf allowed).

    The finite entries of all ``logD_g`` are split into value bands of width 200 nats; within a
    band every entry is exponentiated relative to the band's top (nothing overflows, no finite
    entry underflows), the band's products are summed in linear space, and the bands are
    combined with ``logaddexp``. Usually all entries fall into one band.
    """
    out = np.full((n, n), _NEG_INF)
    ranges = []
    for _, logd in blocks:
        finite = logd[np.isfinite(logd)]
        ranges.append((float(finite.max()), float(finite.min())) if finite.size else None)
    present = [r for r in ranges if r is not None]
    if not present:
        return out
    top = max(r[0] for r in present)
    bottom = min(r[1] for r in present)
    k = 0
    while top - k * _BAND >= bottom:
        hi = top - k * _BAND
        lo = hi - _BAND
        acc = np.zeros((n, n))
        used = False
        for (counts, logd), r in zip(blocks, ranges):
            if r is None or r[0] <= lo or r[1] > hi:
                continue
            if r[0] <= hi and r[1] > lo:  # the whole block lies in this band
                e = np.exp(logd - hi)
            else:
                band = (logd > lo) & (logd <= hi)
                e = np.exp(np.where(band, logd - hi, _NEG_INF))
            acc += counts @ np.asarray(counts @ e).T  # C E^T C^T, E symmetric
            used = True
        if used:
            with np.errstate(divide="ignore"):
                out = np.logaddexp(out, np.log(acc) + hi)
        k += 1
    return out


def _log_bilinear_diag(counts: sp.csr_matrix, logw: np.ndarray) -> np.ndarray:
    """``log(C diag(exp(logw)) C^T)``, banded as in :func:`_log_bilinear`."""
    import scipy.sparse as sp

    n = counts.shape[0]
    out = np.full((n, n), _NEG_INF)
    if len(logw) == 0:
        return out
    top, bottom = float(logw.max()), float(logw.min())
    k = 0
    while top - k * _BAND >= bottom:
        hi = top - k * _BAND
        band = (logw <= hi) & (logw > hi - _BAND)
        if band.any():
            w = np.where(band, np.exp(np.where(band, logw - hi, 0.0)), 0.0)
            prod = (counts @ sp.diags(w) @ counts.T).toarray()
            with np.errstate(divide="ignore"):
                out = np.logaddexp(out, np.log(prod) + hi)
        k += 1
    return out


def _log_gram_shared(trees: list[Tree], kind: str, lam: float, mu: float) -> np.ndarray:
    corpus = _Corpus(trees)
    if kind == "st":
        internal = np.nonzero(corpus.n_kids > 0)[0]
        logw = corpus.size[internal] * math.log(lam)
        counts = corpus.counts[:, internal]
        return _log_bilinear_diag(counts, logw.astype(np.float64))
    groups = _sst_deltas(corpus, lam) if kind == "sst" else _ptk_deltas(corpus, lam, mu)
    counts_csc = corpus.counts.tocsc()
    blocks = [(counts_csc[:, mem].tocsr(), groups.logd[g]) for g, mem in enumerate(groups.members) if len(mem)]
    return _log_bilinear_sum(blocks, corpus.n_trees)


def _log_gram_pairwise(trees: list[Tree], kind: str, lam: float, mu: float) -> np.ndarray:
    n = len(trees)
    out = np.empty((n, n))
    for a in range(n):
        for b in range(a, n):
            out[a, b] = out[b, a] = _log_kernel_pair(trees[a], trees[b], kind, lam, mu)
    return out


def log_gram_matrix(
    trees: Sequence[Tree],
    kind: TreeKind = "st",
    lam: float = 1.0,
    mu: float = 1.0,
    normalize: bool = True,
    method: Literal["shared", "pairwise"] = "shared",
) -> np.ndarray:
    """Log Gram matrix ``log K(T_a, T_b)`` (normalized by default) over a list of trees.

    Implements Moschitti (2006) Eq. 1 (ST/SST/PTK as in :func:`log_tree_kernel`) for all pairs;
    with ``normalize`` the entries are ``log K_ab - (log K_aa + log K_bb) / 2``, the log of the
    cosine-normalized kernel (0 on the diagonal, <= 0 elsewhere).

    Args:
      trees: N trees.
      kind: ``"st"``, ``"sst"`` or ``"ptk"``.
      lam, mu: decays in (0, 1] (``mu`` only for PTK).
      normalize: return the log of the normalized kernel (default) or of the raw kernel.
      method: ``"shared"`` (default): intern all subtrees of the corpus and compute ``Delta``
        once per pair of distinct subtrees, vectorized; ``"pairwise"``: run the single-pair fast
        tree kernel on each of the N(N+1)/2 pairs (slower; kept for cross-checks).

    Returns:
      (N, N) float64 numpy array, symmetric; ``-inf`` where the trees share no fragment.

    Raises:
      ValueError: empty list, unknown kind, decays outside (0, 1], or (normalized ST/SST) a tree
        that is a single leaf.

    Example:
      >>> ts = [Tree.from_bracket("(S (A a) (B b))"), Tree.from_bracket("(S (A a) (B c))")]
      >>> np.round(np.exp(log_gram_matrix(ts, "st", normalize=False)), 6).tolist()
      [[3.0, 1.0], [1.0, 3.0]]
    """
    trees = _check_trees(trees)
    kind = _check_kind(kind)
    lam = _check_decay("lam", lam)
    mu = _check_decay("mu", mu)
    if method == "shared":
        logk = _log_gram_shared(trees, kind, lam, mu)
    elif method == "pairwise":
        logk = _log_gram_pairwise(trees, kind, lam, mu)
    else:
        raise ValueError(f"method must be 'shared' or 'pairwise', got {method!r}")
    logk = np.minimum(logk, logk.T)  # exact symmetry (the two triangles agree to rounding)
    if not normalize:
        return logk
    diag = np.diag(logk).copy()
    bad = np.nonzero(~np.isfinite(diag))[0]
    if len(bad):
        raise ValueError(
            f"trees[{int(bad[0])}] is a single leaf: it has no production, so its "
            f"{kind.upper()} self-kernel is 0 and the normalized kernel is undefined"
        )
    out = logk - 0.5 * (diag[:, None] + diag[None, :])
    out = np.minimum(out, 0.0)  # Cauchy-Schwarz; removes rounding above 0
    np.fill_diagonal(out, 0.0)
    return out


def gram_matrix(
    trees: Sequence[Tree],
    kind: TreeKind = "st",
    lam: float = 1.0,
    mu: float = 1.0,
    normalize: bool = True,
    method: Literal["shared", "pairwise"] = "shared",
) -> np.ndarray:
    """Gram matrix ``K(T_a, T_b)`` (normalized by default), ``exp`` of :func:`log_gram_matrix`.

    Moschitti (2006) Eq. 1 over all pairs; arguments as in :func:`log_gram_matrix`.

    Returns:
      (N, N) float64 numpy array, symmetric positive semidefinite.

    Example:
      >>> ts = [Tree.from_bracket("(S (A a) (B b))"), Tree.from_bracket("(S (A a) (B c))")]
      >>> np.round(gram_matrix(ts, "st"), 4).tolist()
      [[1.0, 0.3333], [0.3333, 1.0]]
    """
    return np.exp(log_gram_matrix(trees, kind, lam, mu, normalize, method))


def gram_log_table(
    trees: Sequence[Tree],
    kind: TreeKind = "st",
    lam: float = 1.0,
    mu: float = 1.0,
    normalize: bool = True,
    log_floor: float = -30.0,
) -> np.ndarray:
    """The (N, N) float32 table of GenSim targets ``log K`` for a training step to gather from.

    Paper Appendix M: the target for two images generated by programs ``a`` and ``b`` is the log
    of the tree kernel between their parse trees (Eq. 2 with the tree kernel as the generative
    similarity). Entries are ``max(log K_ab, log_floor)`` with ``K`` normalized by default
    (diagonal 0). The floor is the convention for ``K = 0`` (trees that share no fragment), whose
    log would be ``-inf``: it keeps the regression target finite (``-30`` ~ ``K = 1e-13``). The
    same floor clips any smaller positive kernel value, so the table stays monotone in ``K``.

    Args:
      trees: N trees (e.g. the parse trees of the training programs, indexed by program id).
      kind, lam, mu, normalize: as in :func:`log_gram_matrix`.
      log_floor: finite lower bound for the log values.

    Returns:
      (N, N) float32 numpy array.

    Example:
      >>> ts = [Tree.from_bracket("(S (A a))"), Tree.from_bracket("(T (B b))")]
      >>> gram_log_table(ts, "st").tolist()
      [[0.0, -30.0], [-30.0, 0.0]]
    """
    if not isinstance(log_floor, (int, float)) or not math.isfinite(log_floor):
        raise ValueError(f"log_floor must be a finite number, got {log_floor!r}")
    logk = log_gram_matrix(trees, kind, lam, mu, normalize)
    return np.maximum(logk, float(log_floor)).astype(np.float32)
