"""GenSim regression losses (paper Eq. 2 and Appendix L).

GenSim learns an embedding whose similarity matches the generative similarity:

    phi* = argmin_phi E_p ( s_emb(phi(X1), phi(X2)) - s_gen(X1, X2) )^2          (paper Eq. 2)

Over a batch of ``B`` examples this becomes a mean squared error over all ``B (B - 1)`` ordered
pairs ``i != j`` (the diagonal pairs an example with itself and carries no information), with the
target matrix computed from the batch's generative metadata by a kernel of
:mod:`gensim_jax.kernels` (usually ``log s_gen``, transformed by ``kernels.targets``).

For the quadrilaterals the authors regressed Euclidean embedding distances onto Euclidean distances
between the 22-bit feature vectors (Appendix L); :func:`distance_regression_loss` is that form.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

import jax
import jax.numpy as jnp

from gensim_jax import similarity as sim
from gensim_jax.losses._common import as_float, as_mask, reduce

Array = jax.Array


def _pair_weights(b: int, mask, weights, exclude_diagonal: bool) -> tuple[Array, Optional[Array]]:
    valid = as_mask(mask, b)
    pair_valid = valid[:, None] & valid[None, :]
    if exclude_diagonal:
        pair_valid = pair_valid & ~jnp.eye(b, dtype=bool)
    if weights is not None:
        weights = jnp.asarray(weights)
        if weights.shape != (b, b):
            raise ValueError(f"weights must have shape ({b}, {b}), got {weights.shape}")
    return pair_valid, weights


def gensim_regression_loss(
    embedding_similarity,
    target,
    *,
    mask=None,
    weights=None,
    exclude_diagonal: bool = True,
    reduction: str = "mean",
) -> Array:
    """Mean squared error between a similarity matrix and a target matrix (paper Eq. 2).

    ``loss = sum_{i != j} w_ij (S_ij - T_ij)^2 / sum_{i != j} w_ij`` over valid pairs.

    >>> import jax.numpy as jnp
    >>> s = jnp.array([[1.0, 0.5], [0.5, 1.0]]); t = jnp.array([[0.0, 0.0], [0.0, 0.0]])
    >>> float(gensim_regression_loss(s, t))   # the diagonal is excluded
    0.25

    Args:
      embedding_similarity: ``(B, B)`` embedding similarities ``s_emb(phi(x_i), phi(x_j))``.
      target: ``(B, B)`` targets, e.g. ``log s_gen(x_i, x_j)`` (paper Eq. 1, in log space).
      mask: optional ``(B,)`` booleans; False marks a padded example, whose pairs are dropped.
      weights: optional ``(B, B)`` non-negative pair weights.
      exclude_diagonal: drop the pairs ``(i, i)`` (default True).
      reduction: "mean" (weighted mean over valid pairs), "sum", or "none" (the ``(B, B)`` matrix of
        per-pair squared errors, invalid pairs 0).

    Returns:
      A scalar, or ``(B, B)`` for ``reduction="none"``.
    """
    s = as_float(embedding_similarity, "embedding_similarity", ndim=2)
    t = as_float(target, "target", ndim=2)
    if s.shape[0] != s.shape[1]:
        raise ValueError(f"embedding_similarity must be square (B, B), got {s.shape}")
    if t.shape != s.shape:
        raise ValueError(f"target has shape {t.shape} but embedding_similarity has {s.shape}")
    pair_valid, weights = _pair_weights(s.shape[0], mask, weights, exclude_diagonal)
    err = jnp.square(s - t)
    return reduce(err, pair_valid, reduction, weights)


def gensim_loss(
    embeddings,
    target,
    *,
    similarity: Union[str, Callable] = "cosine",
    temperature=1.0,
    mask=None,
    weights=None,
    exclude_diagonal: bool = True,
    reduction: str = "mean",
) -> Array:
    """GenSim loss from embeddings: :func:`gensim_regression_loss` of their similarity matrix.

    Args:
      embeddings: ``(B, D)`` embeddings.
      target: ``(B, B)`` target similarities (log generative similarity or a transform of it).
      similarity: a name from :mod:`gensim_jax.similarity` (a distance name gives ``-distance``) or
        a pairwise callable ``(B, D) -> (B, B)``.  The paper uses "cosine" (Appendices M, N).
      temperature: divides the similarity.
      mask, weights, exclude_diagonal, reduction: as in :func:`gensim_regression_loss`.
    """
    z = as_float(embeddings, "embeddings", ndim=2)
    s = sim.similarity_fn(similarity, pairwise=True)(z)
    if not (isinstance(temperature, (int, float)) and temperature == 1):
        sim.check_temperature(temperature)
        s = s / temperature
    return gensim_regression_loss(
        s, target, mask=mask, weights=weights, exclude_diagonal=exclude_diagonal, reduction=reduction
    )


def distance_regression_loss(
    embeddings,
    features,
    *,
    embedding_distance: Union[str, Callable] = "euclidean",
    feature_distance: Union[str, Callable] = "euclidean",
    mask=None,
    weights=None,
    exclude_diagonal: bool = True,
    reduction: str = "mean",
) -> Array:
    """MSE between pairwise embedding distances and pairwise feature distances (Appendix L).

    ``loss = mean_{i != j} ( d(phi(x_i), phi(x_j)) - d_f(f_i, f_j) )^2``.  With binary features the
    squared Euclidean feature distance is ``-log s`` of the Beta-Bernoulli model in the limit
    alpha = beta -> 0 up to scale and offset (paper Eq. I10); the authors used the Euclidean one.

    The authors' PyTorch code averages over all ``B^2`` entries of ``cdist`` including the zero
    diagonal; set ``exclude_diagonal=False`` to reproduce that normalisation exactly.

    Args:
      embeddings: ``(B, D)`` embeddings.
      features: ``(B, F)`` generative features (e.g. the 22 geometric features of a quadrilateral).
      embedding_distance, feature_distance: distance names of :mod:`gensim_jax.similarity` or
        pairwise callables.
      mask, weights, exclude_diagonal, reduction: as in :func:`gensim_regression_loss`.
    """
    z = as_float(embeddings, "embeddings", ndim=2)
    f = as_float(features, "features", ndim=2)
    if f.shape[0] != z.shape[0]:
        raise ValueError(f"features has {f.shape[0]} rows but embeddings has {z.shape[0]}")
    de = sim.distance_fn(embedding_distance, pairwise=True)(z)
    df = jax.lax.stop_gradient(sim.distance_fn(feature_distance, pairwise=True)(f))
    return gensim_regression_loss(
        de, df, mask=mask, weights=weights, exclude_diagonal=exclude_diagonal, reduction=reduction
    )
