"""Triplet losses: the Monte Carlo GenSim objective and its margin relatives.

With an embedding distance ``d`` and ``Delta = d(a, p) - d(a, n)`` for an anchor ``a``, a positive
``p`` drawn from the same distribution and a negative ``n`` from another (paper Eq. A3), the triplet
objective is ``E[l(Delta)]`` (paper Eq. A2) for

* ``"linear"``: ``l(Delta) = Delta`` (Appendix M, the class-based Geoclidean baseline; Appendix D);
* ``"softplus"``: ``l(Delta) = log(1 + exp(Delta))`` (Appendix A; Sohn 2016);
* ``"hinge"``: ``l(Delta) = max(0, Delta + margin)`` (FaceNet; note 004);
* ``"quadratic"``: ``d(a, p)^2 - d(a, n)^2`` (Eq. H1; with the Euclidean distance this is the
  difference of squared distances the authors used for the Gaussian mixture).

Any similarity of :mod:`gensim_jax.similarity` can stand in for the distance: ``s`` is read as
``d = -s`` (paper Appendix D: ``d -> s0 - s``, the constant cancels in ``Delta``).

Note 004 writes the margin losses with a "similarity" ``s`` that must be read as a dissimilarity (the
loss grows with ``s(z, z+)``); the functions here follow the original papers and use distances.

Where definitions coincide this module agrees with ``optax.losses.triplet_margin_loss`` ("hinge" with
the Euclidean distance); optax adds ``eps`` inside the norm, so the two differ by ``O(eps)``.
"""

from __future__ import annotations

from typing import Callable, Union

import jax
import jax.numpy as jnp

from gensim_jax import similarity as sim
from gensim_jax.losses._common import as_float, as_mask, labelled_batch, reduce

Array = jax.Array

TRIPLET_FORMS = ("linear", "softplus", "hinge", "quadratic")
_BIG = 1e30


def triplet_loss(
    anchor,
    positive,
    negative,
    *,
    distance: Union[str, Callable] = "euclidean",
    form: str = "softplus",
    margin: float = 1.0,
    mask=None,
    reduction: str = "mean",
) -> Array:
    """Triplet loss ``l(d(a, p) - d(a, n))`` (paper Eqs. A2, A3, H1; note 004).

    >>> import jax.numpy as jnp
    >>> a = jnp.zeros((1, 2)); p = jnp.array([[0.0, 1.0]]); n = jnp.array([[0.0, 3.0]])
    >>> float(triplet_loss(a, p, n, form="linear"))     # 1 - 3
    -2.0
    >>> float(triplet_loss(a, p, n, form="quadratic"))  # 1 - 9
    -8.0

    Args:
      anchor, positive, negative: ``(B, D)`` embeddings of the triplets.
      distance: a name of :mod:`gensim_jax.similarity` (similarities are read as ``-s``) or an
        elementwise callable ``(B, D), (B, D) -> (B,)``.
      form: one of ``"linear"``, ``"softplus"``, ``"hinge"``, ``"quadratic"``.
      margin: the margin of the hinge form.
      mask: optional ``(B,)`` booleans, False for padded triplets.
      reduction: "mean", "sum" or "none" (per-triplet values).

    Returns:
      A scalar, or ``(B,)`` for ``reduction="none"``.
    """
    if form not in TRIPLET_FORMS:
        raise ValueError(f"form must be one of {TRIPLET_FORMS}, got {form!r}")
    a = as_float(anchor, "anchor", ndim=2)
    p = as_float(positive, "positive", ndim=2)
    n = as_float(negative, "negative", ndim=2)
    for name, x in (("positive", p), ("negative", n)):
        if x.shape != a.shape:
            raise ValueError(f"{name} has shape {x.shape} but anchor has {a.shape}")
    d = sim.distance_fn(distance)
    d_ap, d_an = d(a, p), d(a, n)
    if form == "linear":
        values = d_ap - d_an
    elif form == "softplus":
        values = jax.nn.softplus(d_ap - d_an)
    elif form == "hinge":
        values = jax.nn.relu(d_ap - d_an + margin)
    else:
        values = jnp.square(d_ap) - jnp.square(d_an)
    return reduce(values, as_mask(mask, a.shape[0]), reduction)


def batch_hard_triplet_loss(
    embeddings,
    labels,
    *,
    distance: Union[str, Callable] = "euclidean",
    margin: float = 1.0,
    soft: bool = False,
    mask=None,
    reduction: str = "mean",
) -> Array:
    """Batch-hard triplet loss (Hermans et al. 2017; note 004).

    For each anchor ``a``: ``max(0, max_{p: y_p = y_a, p != a} d(a, p) + m - min_{n: y_n != y_a} d(a, n))``,
    or ``softplus(max d(a, p) - min d(a, n))`` with ``soft=True`` (Hermans' soft margin).
    Anchors without a positive or without a negative are skipped (they do not count in the mean).

    Args:
      embeddings: ``(B, D)``.  labels: ``(B,)`` integer class labels.
      distance: a distance/similarity name or a pairwise callable ``(B, D) -> (B, B)``.
      margin: the margin ``m``; soft: use the soft-margin form.
      mask: optional ``(B,)`` booleans, False for padded examples.
      reduction: "mean", "sum", or "none" (per-anchor values).
    """
    z, valid, pos, neg, _ = labelled_batch(embeddings, labels, mask)
    dist = sim.distance_fn(distance, pairwise=True)(z)
    hardest_pos = jnp.max(jnp.where(pos, dist, -_BIG), axis=1)
    hardest_neg = jnp.min(jnp.where(neg, dist, _BIG), axis=1)
    has_both = jnp.any(pos, axis=1) & jnp.any(neg, axis=1)
    gap = jnp.where(has_both, hardest_pos - hardest_neg, 0.0)
    values = jax.nn.softplus(gap) if soft else jax.nn.relu(gap + margin)
    return reduce(values, has_both & valid, reduction)


def lifted_structured_loss(
    embeddings,
    labels,
    *,
    distance: Union[str, Callable] = "euclidean",
    margin: float = 1.0,
    smooth: bool = False,
    mask=None,
    reduction: str = "mean",
) -> Array:
    """Lifted structured loss over every positive pair of the batch (Oh Song et al. 2016; note 004).

    For a positive pair ``(i, j)`` (same label, ``i < j``) the hardest negative of either end is used:

        J_ij = d(i, j) + m - min( min_{k in N(i)} d(i, k), min_{l in N(j)} d(j, l) )
        loss_ij = max(0, J_ij)                                   (note 004, hard form)

    With ``smooth=True`` the minimum is replaced by Oh Song's smooth upper bound and the hinge is
    squared, as in their Eq. 4: ``J_ij = d(i,j) + log(sum_k exp(m - d(i,k)) + sum_l exp(m - d(j,l)))``,
    ``loss_ij = max(0, J_ij)^2 / 2``.  Pairs whose ends have no negative are skipped.

    Args:
      embeddings: ``(B, D)``.  labels: ``(B,)``.
      distance: distance/similarity name or pairwise callable.  margin: ``m``.
      smooth: use the log-sum-exp form.  mask: optional ``(B,)`` validity.
      reduction: "mean" over positive pairs, "sum", or "none" (``(B, B)`` per-pair values, each
        unordered pair stored once at ``i < j``).
    """
    z, valid, pos, neg, _ = labelled_batch(embeddings, labels, mask)
    b = z.shape[0]
    upper = jnp.triu(jnp.ones((b, b), dtype=bool), k=1)
    pos = pos & upper
    dist = sim.distance_fn(distance, pairwise=True)(z)
    has_neg = jnp.any(neg, axis=1)
    if smooth:
        # log sum_k exp(m - d(i, k)) per row, over negatives
        row = jax.nn.logsumexp(jnp.where(neg, margin - dist, -_BIG), axis=1)
        j = dist + jnp.logaddexp(row[:, None], row[None, :])
        values = 0.5 * jnp.square(jax.nn.relu(j))
    else:
        row_min = jnp.min(jnp.where(neg, dist, _BIG), axis=1)
        hardest = jnp.minimum(row_min[:, None], row_min[None, :])
        values = jax.nn.relu(dist + margin - hardest)
    pair_valid = pos & (has_neg[:, None] | has_neg[None, :])
    values = jnp.where(pair_valid, values, 0.0)
    return reduce(values, pair_valid, reduction)
