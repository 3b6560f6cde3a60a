"""Gaussian-mixture stimuli: points with their mixture component, and Eq. A3 triplets.

The GenSim paper's sanity check (Appendix F-H) trains a two-layer perceptron on a mixture of two
2-D Gaussians with means (5, 5) and (1, 1) and unit variance (Appendix H), using triplets sampled
by the Monte-Carlo scheme of Eq. A3:

    theta+, theta- ~ p(theta)      (two components drawn independently from the prior)
    x, x+ ~ p(x | theta+)          (anchor and positive from the same component)
    x-    ~ p(x | theta-)          (negative from an independently drawn component)

so the negative may come from the anchor's own component (with probability sum_k w_k^2), which
is what makes the triplet loss an unbiased estimate of the generative-similarity objective.

The mixture's parameters are the validated :class:`gensim_jax.kernels.gaussian_mixture.GaussianMixture`
(built by ``make_mixture`` / ``appendix_h_mixture``, re-exported here), the same object the closed-form
similarity of Eq. H2 takes.  This module samples from it on the host with a ``numpy.random.Generator``
(or an int seed), for data pipelines; ``gensim_jax.kernels.monte_carlo`` samples the same process with
``jax.random`` keys inside jitted code.
"""

from __future__ import annotations

import numpy as np

from gensim_jax.kernels.gaussian_mixture import GaussianMixture, appendix_h_mixture, make_mixture
from gensim_jax.stimuli._random import as_generator as _rng

__all__ = [
    "GaussianMixture",
    "appendix_h_mixture",
    "make_mixture",
    "covariances",
    "sample_components",
    "sample_given",
    "sample_points",
    "sample_triplets",
]


def _count(n, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"{name} must be a non-negative int, got {n!r}")
    return int(n)


def _check_mixture(mixture) -> None:
    if not isinstance(mixture, GaussianMixture):
        raise ValueError(f"mixture must be a GaussianMixture (see make_mixture), got {type(mixture).__name__}")


def _cholesky(mixture: GaussianMixture) -> np.ndarray:
    """``(K, D, D)`` factors ``L_k`` with ``Sigma_k = L_k L_k^T`` (diagonal scales become diagonal L)."""
    scale = np.asarray(mixture.scale, np.float64)
    return np.stack([np.diag(s) for s in scale]) if mixture.is_diagonal else scale


def covariances(mixture: GaussianMixture) -> np.ndarray:
    """``(K, D, D)`` covariance matrices of the mixture's components."""
    chol = _cholesky(mixture)
    return chol @ np.swapaxes(chol, -1, -2)


def sample_components(mixture: GaussianMixture, rng, n: int) -> np.ndarray:
    """``(n,)`` int components drawn from the prior weights (``theta ~ p(theta)``)."""
    _check_mixture(mixture)
    w = np.exp(np.asarray(mixture.log_weights, np.float64))
    return _rng(rng).choice(mixture.num_components, size=_count(n), p=w / w.sum())


def sample_given(mixture: GaussianMixture, rng, components) -> np.ndarray:
    """One point from each given component, ``x_i ~ N(mu_{c_i}, Sigma_{c_i})``.

    Args:
      mixture: the mixture.  rng: numpy Generator or int seed.
      components: int array of any shape, values in ``[0, K)``.

    Returns:
      float64 array of shape ``components.shape + (D,)``.
    """
    _check_mixture(mixture)
    c = np.asarray(components)
    k = mixture.num_components
    if not np.issubdtype(c.dtype, np.integer):
        raise ValueError(f"components must be integers, got dtype {c.dtype}")
    if c.size and (c.min() < 0 or c.max() >= k):
        raise ValueError(f"components must lie in [0, {k}), got [{c.min()}, {c.max()}]")
    z = _rng(rng).standard_normal(c.shape + (mixture.dim,))
    means = np.asarray(mixture.means, np.float64)
    return means[c] + np.einsum("...ij,...j->...i", _cholesky(mixture)[c], z)


def sample_points(mixture: GaussianMixture, rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``n`` points with their component (generative metadata).

    ``c_i ~ Categorical(w)``, ``x_i ~ N(mu_{c_i}, Sigma_{c_i})``.

    Returns:
      ``(x, component)``: ``(n, D)`` float64 points and ``(n,)`` int components.

    Example:
      >>> x, c = sample_points(appendix_h_mixture(), 0, 4)
      >>> x.shape, c.shape
      ((4, 2), (4,))
    """
    gen = _rng(rng)
    comp = sample_components(mixture, gen, n)
    return sample_given(mixture, gen, comp), comp


def sample_triplets(mixture: GaussianMixture, rng, n: int) -> dict[str, np.ndarray]:
    """Sample ``n`` triplets by the Monte-Carlo scheme of paper Eq. A3.

    ``theta+, theta- ~ p(theta)`` independently (the mixture weights); ``x, x+ ~ p(x | theta+)``;
    ``x- ~ p(x | theta-)``.  The negative's component equals the anchor's with probability
    ``sum_k w_k^2`` (not a "hard negative" scheme).

    Returns:
      dict with ``"anchor"``, ``"positive"``, ``"negative"``: ``(n, D)`` float64 points;
      ``"positive_component"`` (of anchor and positive) and ``"negative_component"``: ``(n,)`` int.

    Example:
      >>> t = sample_triplets(appendix_h_mixture(), 0, 3)
      >>> t["anchor"].shape, t["negative_component"].shape
      ((3, 2), (3,))
    """
    gen = _rng(rng)
    n = _count(n)
    pos_c = sample_components(mixture, gen, n)
    neg_c = sample_components(mixture, gen, n)
    pts = sample_given(mixture, gen, np.stack([pos_c, pos_c, neg_c], axis=-1))  # (n, 3, D)
    return {
        "anchor": pts[:, 0],
        "positive": pts[:, 1],
        "negative": pts[:, 2],
        "positive_component": pos_c,
        "negative_component": neg_c,
    }
