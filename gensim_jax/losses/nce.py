"""Noise-contrastive estimation and its multi-example forms (text 002, Chapter 10).

All three take *energy differences* ``h(y) = E_n(y) - E(y; theta)`` (text 002 Eq. 10.3): the log of
the model-to-noise density ratio, i.e. the logit that ``y`` came from the data rather than the noise.
In contrastive representation learning ``h`` is usually a similarity divided by a temperature.

* :func:`nce_loss`: binary NCE, the cross entropy of Eq. 10.4;
* :func:`infonce_cross_entropy`: one positive among ``K`` examples, a softmax (Eq. 10.7);
* :func:`local_nce_loss`: ``K`` independent coin flips, a sum of sigmoids (Eq. 10.13, as in wav2vec).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from gensim_jax.losses._common import as_float, as_mask, check_reduction, reduce

Array = jax.Array


def nce_loss(h, is_data, *, mask=None, reduction: str = "mean") -> Array:
    """Binary NCE (text 002 Eq. 10.4).

        L = 1/2 < -log sigma(h(Y+)) >_{Y+}  +  1/2 < -log sigma(-h(Y-)) >_{Y-}

    The two expectations are taken separately (data and noise samples are equally likely a priori,
    Eq. 10.1), so "mean" is ``0.5 * mean over data + 0.5 * mean over noise`` whatever their counts.
    A side with no sample contributes 0.

    Args:
      h: ``(N,)`` energy differences (logits) of the samples.
      is_data: ``(N,)`` booleans, True for samples from the data (``Y+``), False for noise (``Y-``).
      mask: optional ``(N,)`` validity.
      reduction: "mean" (Eq. 10.4), "sum" (sum of the per-sample terms), or "none" (``(N,)`` terms
        ``-log sigma(+-h)``).
    """
    check_reduction(reduction)
    h = as_float(h, "h", ndim=1)
    is_data = jnp.asarray(is_data).astype(bool)
    if is_data.shape != h.shape:
        raise ValueError(f"is_data has shape {is_data.shape} but h has {h.shape}")
    valid = as_mask(mask, h.shape[0])
    values = jnp.where(is_data, -jax.nn.log_sigmoid(h), -jax.nn.log_sigmoid(-h))
    if reduction != "mean":
        return reduce(values, valid, reduction)
    pos = reduce(values, valid & is_data, "mean")
    neg = reduce(values, valid & ~is_data, "mean")
    return 0.5 * pos + 0.5 * neg


def _check_logits(h, positive_index):
    h = as_float(h, "h", ndim=2)
    k = h.shape[1]
    idx = jnp.asarray(positive_index)
    if idx.ndim == 0:
        if isinstance(positive_index, int) and not 0 <= positive_index < k:
            raise ValueError(f"positive_index must be in [0, {k}), got {positive_index}")
        idx = jnp.full((h.shape[0],), idx)
    elif idx.shape != (h.shape[0],):
        raise ValueError(f"positive_index must be an int or have shape ({h.shape[0]},), got {idx.shape}")
    return h, idx


def infonce_cross_entropy(h, positive_index=0, *, mask=None, reduction: str = "mean") -> Array:
    """Multi-example NCE / InfoNCE cross entropy (text 002 Eq. 10.7).

        L = < -log softmax{ h(Y^1), ..., h(Y^K) }_+ >

    Args:
      h: ``(B, K)`` energy differences; row ``b`` holds one positive and ``K - 1`` noise examples.
      positive_index: the column of the positive, an int or ``(B,)`` ints (default 0).
      mask: optional ``(B,)`` validity.  reduction: "mean", "sum", "none" (``(B,)``).
    """
    h, idx = _check_logits(h, positive_index)
    pos = jnp.take_along_axis(h, idx[:, None], axis=1)[:, 0]
    values = jax.nn.logsumexp(h, axis=1) - pos
    return reduce(values, as_mask(mask, h.shape[0]), reduction)


def local_nce_loss(h, positive_index=0, *, mask=None, reduction: str = "mean") -> Array:
    """Local NCE (text 002 Eq. 10.13): each example is its own data-versus-noise coin flip.

        L = < -log sigma(h(Y+)) - sum_{j != +} log sigma(-h(Y^j)) >

    Args:
      h: ``(B, K)`` energy differences.  positive_index: int or ``(B,)`` ints.
      mask: optional ``(B,)``.  reduction: "mean", "sum", "none" (``(B,)``).
    """
    h, idx = _check_logits(h, positive_index)
    is_pos = jnp.arange(h.shape[1])[None, :] == idx[:, None]
    terms = jnp.where(is_pos, -jax.nn.log_sigmoid(h), -jax.nn.log_sigmoid(-h))
    return reduce(jnp.sum(terms, axis=1), as_mask(mask, h.shape[0]), reduction)
