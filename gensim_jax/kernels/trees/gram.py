"""Gram matrices of Moschitti's tree kernels over a corpus of trees, and the GenSim target table.

The same ``Delta`` recursions as :mod:`gensim_jax.kernels.trees.pairwise` (Moschitti 2006 Eq. 1 and
3), organised for many trees: ``Delta(n1, n2)`` depends only on the subtrees below ``n1`` and ``n2``,
so every subtree of the corpus is interned into an integer *type*, ``Delta`` is computed once per
pair of types (vectorized with numpy per production or label group and height level), and
``K = C D C^T`` with ``C`` the sparse (trees x types) count matrix; the ST Gram is the weighted count
match ``C diag(lam^size) C^T``. :func:`gram_log_table` is the table of paper Appendix M's regression
targets (Eq. 2 with the tree kernel as the similarity) that a training step gathers from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from gensim_jax.kernels.trees.pairwise import (
    _NEG_INF,
    TreeKind,
    _check_decay,
    _check_kind,
    _check_trees,
    _log_kernel_pair,
)
from gensim_jax.kernels.trees.tree import Tree

if TYPE_CHECKING:  # imported where used: scipy.sparse is 0.26 s of every gensim-jax process's start-up
    import scipy.sparse as sp

__all__ = ["log_gram_matrix", "gram_matrix", "gram_log_table"]


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
