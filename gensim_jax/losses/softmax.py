"""Cross-entropy contrastive losses: InfoNCE, NT-Xent (SimCLR), SupCon and SINCERE.

All are softmax cross entropies whose logits are similarities divided by a temperature ``tau``
(note 004, "Cross Entropy Losses").  Numerical stability is done in the open: log-softmax via a
max-shifted log-sum-exp, excluded entries get a finite ``MASKED_LOGIT`` (never ``-inf``, so neither
value nor gradient can become NaN), and an anchor without any positive is skipped.

Relation to optax: ``optax.losses.ntxent(embeddings, labels, temperature)`` takes, for every positive
pair, a softmax over that positive and the *different-label* examples, averaged over positive pairs.
With two views per instance that is exactly :func:`ntxent_loss`; with larger classes it is SINCERE
averaged over pairs (:func:`sincere_loss` with ``average="pair"``), not SupCon.
"""

from __future__ import annotations

from typing import Callable, Union

import jax
import jax.numpy as jnp

from gensim_jax import similarity as sim
from gensim_jax.losses._common import as_float, as_mask, labelled_batch, masked_logsumexp, reduce, two_views

Array = jax.Array


def _logits(z: Array, similarity, temperature) -> Array:
    sim.check_temperature(temperature)
    return sim.similarity_fn(similarity, pairwise=True)(z) / temperature


def infonce_loss(
    anchor,
    positive,
    negatives,
    *,
    similarity: Union[str, Callable] = "cosine",
    temperature=1.0,
    mask=None,
    reduction: str = "mean",
) -> Array:
    """InfoNCE with one positive and ``n`` negatives per anchor (note 004; Oord et al. 2018).

    ``L = -log( e^{s(z, z+)/tau} / (e^{s(z, z+)/tau} + sum_{i=1..n} e^{s(z, z-_i)/tau}) )``

    Args:
      anchor: ``(B, D)``.  positive: ``(B, D)``.  negatives: ``(B, n, D)``.
      similarity: a name of :mod:`gensim_jax.similarity` or an elementwise callable.
      temperature: ``tau > 0``.  mask: optional ``(B,)``.  reduction: "mean", "sum", "none" (per anchor).
    """
    a = as_float(anchor, "anchor", ndim=2)
    p = as_float(positive, "positive", ndim=2)
    n = as_float(negatives, "negatives", ndim=3)
    if p.shape != a.shape:
        raise ValueError(f"positive has shape {p.shape} but anchor has {a.shape}")
    if n.shape[0] != a.shape[0] or n.shape[2] != a.shape[1]:
        raise ValueError(f"negatives must have shape ({a.shape[0]}, n, {a.shape[1]}), got {n.shape}")
    sim.check_temperature(temperature)
    s = sim.similarity_fn(similarity)
    pos = s(a, p) / temperature
    neg = s(a[:, None, :], n) / temperature
    logits = jnp.concatenate([pos[:, None], neg], axis=1)
    values = jax.nn.logsumexp(logits, axis=1) - pos
    return reduce(values, as_mask(mask, a.shape[0]), reduction)


def ntxent_loss(
    view1,
    view2,
    *,
    temperature=0.5,
    similarity: Union[str, Callable] = "cosine",
    mask=None,
    reduction: str = "mean",
) -> Array:
    """NT-Xent, the SimCLR loss (Chen et al. 2020, Eq. 1), over ``2N`` views.

    With ``z = concat(view1, view2)`` and ``s_ij = cos(z_i, z_j) / tau``, anchor ``i``'s positive is
    its other view ``k(i)`` and

        l_i = -log( exp(s_{i,k(i)}) / sum_{j != i} exp(s_ij) ),   L = (1/2N) sum_i l_i.

    Args:
      view1, view2: ``(N, D)`` embeddings of two augmentations of the same ``N`` images.
      temperature: ``tau > 0`` (SimCLR's default 0.5).  similarity: "cosine" in SimCLR.
      mask: optional ``(N,)`` validity of the *instances* (both views of a padded instance drop out).
      reduction: "mean" over the ``2N`` anchors, "sum", or "none" (``(2N,)`` per anchor).
    """
    v1, v2 = two_views(view1, view2)
    n = v1.shape[0]
    valid = jnp.concatenate([as_mask(mask, n)] * 2)
    z = jnp.concatenate([v1, v2], axis=0)
    logits = _logits(z, similarity, temperature)
    idx = jnp.arange(2 * n)
    partner = jnp.concatenate([idx[n:], idx[:n]])
    others = valid[None, :] & ~jnp.eye(2 * n, dtype=bool)
    pos_logit = logits[idx, partner]
    values = masked_logsumexp(logits, others) - pos_logit
    return reduce(values, valid, reduction)


def cross_view_infonce_loss(
    view1,
    view2,
    *,
    temperature=1.0,
    similarity: Union[str, Callable] = "cosine",
    mask=None,
    reduction: str = "mean",
) -> Array:
    """The InfoNCE form written in the paper's Appendices L and M.

        L = -(1/N) sum_i log( exp f(v_i, v'_i) / ((1/N) sum_j exp f(v_i, v'_j)) )

    with ``f = cos / tau``.  The appendix prints ``f(v_i, v'_i)`` in the numerator; we read it as
    ``exp f`` (otherwise the log of a negative cosine is undefined).  Unlike NT-Xent the softmax runs
    one way, from views to augmented views only, over all ``N`` of them (the positive included), and
    ``1/N`` inside the log adds the constant ``log N``.

    Args:
      view1: ``(N, D)`` embeddings ``v``.  view2: ``(N, D)`` embeddings ``v'`` of the augmented images.
      temperature, similarity, mask, reduction: as in :func:`ntxent_loss` (per anchor ``(N,)``).
    """
    v1, v2 = two_views(view1, view2)
    n = v1.shape[0]
    valid = as_mask(mask, n)
    sim.check_temperature(temperature)
    logits = sim.similarity_fn(similarity, pairwise=True)(v1, v2) / temperature
    count = jnp.maximum(jnp.sum(valid), 1).astype(logits.dtype)
    values = masked_logsumexp(logits, valid[None, :]) - jnp.log(count) - jnp.diagonal(logits)
    return reduce(values, valid, reduction)


def supcon_loss(
    embeddings,
    labels,
    *,
    temperature=0.1,
    similarity: Union[str, Callable] = "cosine",
    mask=None,
    reduction: str = "mean",
) -> Array:
    """Supervised contrastive loss L_out (Khosla et al. 2020, Eq. 2).

    For anchor ``i`` with positives ``P(i) = {p != i : y_p = y_i}`` and ``A(i) = {a != i}``::

        l_i = -1/|P(i)| sum_{p in P(i)} log( exp(s_ip / tau) / sum_{a in A(i)} exp(s_ia / tau) )

    Anchors with ``|P(i)| = 0`` are skipped; "mean" averages over the remaining anchors (Khosla's
    reference code also multiplies by ``tau / base_tau``; that constant is left to the caller).

    Args:
      embeddings: ``(B, D)``; for multi-view batches stack the views along the batch axis.
      labels: ``(B,)``.  temperature: ``tau > 0``.  similarity: "cosine" in SupCon.
      mask: optional ``(B,)`` validity.  reduction: "mean", "sum", "none" (``(B,)`` per anchor).
    """
    z, valid, pos, _, others = labelled_batch(embeddings, labels, mask)
    logits = _logits(z, similarity, temperature)
    log_prob = logits - masked_logsumexp(logits, others)[:, None]
    n_pos = jnp.sum(pos, axis=1)
    has_pos = n_pos > 0
    values = -jnp.sum(jnp.where(pos, log_prob, 0.0), axis=1) / jnp.maximum(n_pos, 1)
    return reduce(values, has_pos & valid, reduction)


def sincere_loss(
    embeddings,
    labels,
    *,
    temperature=0.1,
    similarity: Union[str, Callable] = "cosine",
    average: str = "anchor",
    mask=None,
    reduction: str = "mean",
) -> Array:
    """SINCERE (Feeney and Hughes 2024; note 004): SupCon without same-class negatives.

    For anchor ``i``, positive ``p`` and the different-class set ``N(i) = {n : y_n != y_i}``:

        l_ip = -log( exp(s_ip/tau) / (exp(s_ip/tau) + sum_{n in N(i)} exp(s_in/tau)) )

    ``average="anchor"`` averages ``l_ip`` over the positives of each anchor, then over anchors (as
    :func:`supcon_loss`); ``average="pair"`` averages over all positive pairs, which equals
    ``optax.losses.ntxent``.  Anchors without a positive are skipped.

    Args:
      embeddings: ``(B, D)``.  labels: ``(B,)``.  temperature: ``tau > 0``.
      average: "anchor" or "pair".  mask: optional ``(B,)``.
      reduction: "mean", "sum", or "none" (``(B,)`` per anchor for "anchor", ``(B, B)`` per pair).
    """
    if average not in ("anchor", "pair"):
        raise ValueError(f"average must be 'anchor' or 'pair', got {average!r}")
    z, valid, pos, neg, _ = labelled_batch(embeddings, labels, mask)
    logits = _logits(z, similarity, temperature)
    neg_lse = masked_logsumexp(logits, neg)  # (B,)
    denom = jnp.logaddexp(logits, neg_lse[:, None])  # (B, B): positive + negatives
    pair_loss = jnp.where(pos, denom - logits, 0.0)
    if average == "pair":
        return reduce(pair_loss, pos, reduction)
    n_pos = jnp.sum(pos, axis=1)
    values = jnp.sum(pair_loss, axis=1) / jnp.maximum(n_pos, 1)
    return reduce(values, (n_pos > 0) & valid, reduction)
