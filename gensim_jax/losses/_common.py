"""Shared plumbing of the losses: input checks, masks and reductions.

Every loss ends with :func:`reduce`, so ``reduction`` means the same everywhere:

* ``"mean"``: the sum of the valid terms divided by the number of valid terms (0 when there is none,
  with a zero gradient, never NaN);
* ``"sum"``: the sum of the valid terms;
* ``"none"``: the per-term values (per pair, per triplet or per anchor), invalid terms set to 0.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

Array = jax.Array

REDUCTIONS = ("mean", "sum", "none")

#: Logit given to excluded entries of a softmax: finite, so no ``-inf - -inf`` NaN can reach a gradient.
MASKED_LOGIT = -1e30


def check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")


def as_float(x, name: str, ndim: Optional[int] = None) -> Array:
    """``x`` as an array of at least float32 (bf16/f16 inputs are computed in float32)."""
    x = jnp.asarray(x)
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes, got shape {x.shape}")
    if not jnp.issubdtype(x.dtype, jnp.floating) or jnp.finfo(x.dtype).bits < 32:
        x = x.astype(jnp.float32)
    return x


def check_batch(name: str, x: Array, batch: int, what: str = "batch size") -> None:
    if x.shape[0] != batch:
        raise ValueError(f"{name} has {what} {x.shape[0]}, expected {batch}")


def as_labels(labels, batch: int, name: str = "labels") -> Array:
    labels = jnp.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be a vector of shape ({batch},), got shape {labels.shape}")
    if labels.shape[0] != batch:
        raise ValueError(f"{name} has length {labels.shape[0]} but the batch has {batch} embeddings")
    return labels


def as_mask(mask, batch: int, name: str = "mask") -> Array:
    """Boolean validity mask of shape ``(batch,)``; ``None`` means every example is valid."""
    if mask is None:
        return jnp.ones((batch,), dtype=bool)
    mask = jnp.asarray(mask)
    if mask.shape != (batch,):
        raise ValueError(f"{name} must have shape ({batch},), got {mask.shape}")
    return mask.astype(bool)


def reduce(values: Array, valid: Array, reduction: str, weights: Optional[Array] = None) -> Array:
    """Reduce ``values`` over the entries where ``valid`` (see the module docstring).

    With ``weights``, "mean" is the weighted mean ``sum(w v) / sum(w)`` over valid entries.
    Invalid entries must already hold finite values; they are replaced by 0 here.
    """
    check_reduction(reduction)
    valid = jnp.broadcast_to(valid, values.shape)
    w = valid.astype(values.dtype)
    if weights is not None:
        w = w * jnp.broadcast_to(weights, values.shape).astype(values.dtype)
    terms = jnp.where(valid, values, 0.0)
    if reduction == "none":
        return terms if weights is None else terms * w
    total = jnp.sum(terms * w)
    if reduction == "sum":
        return total
    denom = jnp.sum(w)
    return total / jnp.where(denom > 0, denom, 1.0)


def pair_masks(labels: Array, valid: Array) -> tuple[Array, Array, Array]:
    """``(positive, negative, off_diagonal_valid)`` boolean ``B x B`` masks from labels.

    ``positive[i, j]``: same label, ``i != j``, both valid.  ``negative[i, j]``: different labels,
    both valid.  ``off_diagonal_valid[i, j]``: ``i != j``, both valid.
    """
    b = labels.shape[0]
    both = valid[:, None] & valid[None, :]
    off = both & ~jnp.eye(b, dtype=bool)
    same = labels[:, None] == labels[None, :]
    return off & same, off & ~same, off


def masked_logsumexp(logits: Array, mask: Array, axis: int = -1) -> Array:
    """``log sum_j exp(logits_j)`` over ``mask``; ``MASKED_LOGIT`` (finite) when the mask is empty."""
    return jax.nn.logsumexp(jnp.where(mask, logits, MASKED_LOGIT), axis=axis)


def labelled_batch(embeddings, labels, mask) -> tuple[Array, Array, Array, Array, Array]:
    """Validate a labelled batch; return ``(z, valid, positive, negative, off_diagonal_valid)``.

    ``z`` is ``(B, D)`` float; the three ``B x B`` masks are those of :func:`pair_masks`.
    """
    z = as_float(embeddings, "embeddings", ndim=2)
    b = z.shape[0]
    labels = as_labels(labels, b)
    valid = as_mask(mask, b)
    return (z, valid, *pair_masks(labels, valid))


def two_views(view1, view2) -> tuple[Array, Array]:
    """Validate two ``(N, D)`` views of the same ``N`` instances."""
    v1 = as_float(view1, "view1", ndim=2)
    v2 = as_float(view2, "view2", ndim=2)
    if v1.shape != v2.shape:
        raise ValueError(f"view1 has shape {v1.shape} but view2 has {v2.shape}")
    return v1, v2
