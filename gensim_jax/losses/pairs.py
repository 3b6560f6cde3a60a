"""Margin contrastive loss on pairs (Chopra, Hadsell and LeCun 2005; note 004).

A pair labelled "same" is pulled together, a pair labelled "different" is pushed apart until its
distance exceeds the margin ``m``:

    L(z, z+) = d(z, z+),        L(z, z-) = max(0, m - d(z, z-))          (note 004)

``squared=True`` gives Hadsell et al.'s (2006) ``d^2 / 2`` and ``max(0, m - d)^2 / 2``.
Note 004 writes ``s`` for what must be a distance here (the loss grows with it for positives).
"""

from __future__ import annotations

from typing import Callable, Union

import jax
import jax.numpy as jnp

from gensim_jax import similarity as sim
from gensim_jax.losses._common import as_float, as_mask, labelled_batch, reduce

Array = jax.Array


def _terms(d: Array, same: Array, margin, squared: bool) -> Array:
    if squared:
        return jnp.where(same, 0.5 * jnp.square(d), 0.5 * jnp.square(jax.nn.relu(margin - d)))
    return jnp.where(same, d, jax.nn.relu(margin - d))


def margin_contrastive_loss(
    x1,
    x2,
    same,
    *,
    margin: float = 1.0,
    distance: Union[str, Callable] = "euclidean",
    squared: bool = False,
    mask=None,
    reduction: str = "mean",
) -> Array:
    """Margin contrastive loss on explicit pairs ``(x1_b, x2_b)`` (note 004; Chopra et al. 2005).

    Args:
      x1, x2: ``(B, D)`` the two members of each pair.
      same: ``(B,)`` booleans, True when the pair shares a class (or a generating distribution).
      margin: ``m``.  distance: a distance/similarity name or elementwise callable.
      squared: Hadsell et al.'s squared form.  mask: optional ``(B,)``.
      reduction: "mean", "sum", "none" (``(B,)``).
    """
    a = as_float(x1, "x1", ndim=2)
    b = as_float(x2, "x2", ndim=2)
    if a.shape != b.shape:
        raise ValueError(f"x2 has shape {b.shape} but x1 has {a.shape}")
    same = jnp.asarray(same).astype(bool)
    if same.shape != (a.shape[0],):
        raise ValueError(f"same must have shape ({a.shape[0]},), got {same.shape}")
    d = sim.distance_fn(distance)(a, b)
    return reduce(_terms(d, same, margin, squared), as_mask(mask, a.shape[0]), reduction)


def pairwise_margin_contrastive_loss(
    embeddings,
    labels,
    *,
    margin: float = 1.0,
    distance: Union[str, Callable] = "euclidean",
    squared: bool = False,
    mask=None,
    reduction: str = "mean",
) -> Array:
    """Margin contrastive loss over all ordered pairs ``i != j`` of a labelled batch.

    Args:
      embeddings: ``(B, D)``.  labels: ``(B,)``.  Other arguments as in :func:`margin_contrastive_loss`;
      "none" returns the ``(B, B)`` per-pair matrix (invalid pairs and the diagonal 0).
    """
    z, _, pos, _, off = labelled_batch(embeddings, labels, mask)
    d = sim.distance_fn(distance, pairwise=True)(z)
    return reduce(_terms(d, pos, margin, squared), off, reduction)
