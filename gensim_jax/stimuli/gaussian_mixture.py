"""Gaussian-mixture stimuli: points with their mixture component, and Eq. A3 triplets.

The GenSim paper's sanity check (Appendix F-H) trains a two-layer perceptron on a mixture of two
2-D Gaussians with means (5, 5) and (1, 1) and unit variance (Appendix H), using triplets sampled
by the Monte-Carlo scheme of Eq. A3:

    theta+, theta- ~ p(theta)      (two components drawn independently from the prior)
    x, x+ ~ p(x | theta+)          (anchor and positive from the same component)
    x-    ~ p(x | theta-)          (negative from an independently drawn component)

so the negative may come from the anchor's own component (with probability sum_k w_k^2), which
is what makes the triplet loss an unbiased estimate of the generative-similarity objective.

:class:`GaussianMixture` holds any K-component mixture (weights, means, full covariances);
:func:`appendix_h_mixture` builds the paper's. Sampling takes a ``numpy.random.Generator`` (or an
int seed) and returns the component of every point as metadata. Pure numpy; the closed-form
log generative similarity of a mixture lives in ``gensim_jax.kernels``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["GaussianMixture", "appendix_h_mixture", "sample_points", "sample_triplets"]


def _rng(rng) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise ValueError(f"rng must be a numpy Generator or an int seed, got {type(rng).__name__}")


def _count(n, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {n!r}")
    return int(n)


@dataclasses.dataclass(frozen=True)
class GaussianMixture:
    """A K-component Gaussian mixture in D dimensions, p(x) = sum_k w_k N(x; mu_k, Sigma_k).

    Build it with :meth:`create` (validates and normalises) or :func:`appendix_h_mixture`.

    Attributes:
      weights: ``(K,)`` mixture weights, positive, summing to 1.
      means: ``(K, D)`` component means.
      covariances: ``(K, D, D)`` symmetric positive-definite covariances.
      cholesky: ``(K, D, D)`` lower Cholesky factors of the covariances.
    """

    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    cholesky: np.ndarray

    @classmethod
    def create(cls, weights=None, means=None, covariances=None) -> "GaussianMixture":
        """Validate and build a mixture.

        Args:
          weights: ``(K,)`` non-negative, positive sum (normalised here); default uniform.
          means: ``(K, D)`` required.
          covariances: ``(K, D, D)``, ``(K, D)`` (diagonals), ``(K,)`` (isotropic variances) or a
            scalar variance shared by all components; default identity.

        Returns:
          :class:`GaussianMixture`.

        Raises:
          ValueError: shapes that disagree (the message names them), non-finite values, weights
            that are negative or sum to 0, covariances that are not symmetric positive definite.

        Example:
          >>> gm = GaussianMixture.create([0.3, 0.7], [[0.0], [4.0]], [1.0, 0.25])
          >>> gm.covariances[:, 0, 0].tolist()
          [1.0, 0.25]
        """
        if means is None:
            raise ValueError("means is required, shape (K, D)")
        mu = np.asarray(means, dtype=np.float64)
        if mu.ndim != 2 or mu.shape[0] < 1 or mu.shape[1] < 1:
            raise ValueError(f"means must have shape (K, D) with K, D >= 1, got {mu.shape}")
        k, d = mu.shape
        if weights is None:
            w = np.full(k, 1.0 / k)
        else:
            w = np.asarray(weights, dtype=np.float64)
            if w.shape != (k,):
                raise ValueError(f"weights must have shape (K,) = ({k},) to match means {mu.shape}, got {w.shape}")
            if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
                raise ValueError(f"weights must be finite, non-negative and not all 0, got {w}")
            w = w / w.sum()
        if covariances is None:
            cov = np.broadcast_to(np.eye(d), (k, d, d)).copy()
        else:
            c = np.asarray(covariances, dtype=np.float64)
            if c.ndim == 0:
                cov = c * np.broadcast_to(np.eye(d), (k, d, d))
            elif c.shape == (k,):
                cov = c[:, None, None] * np.eye(d)
            elif c.shape == (k, d):
                cov = c[:, :, None] * np.eye(d)
            elif c.shape == (k, d, d):
                cov = c.copy()
            else:
                raise ValueError(
                    f"covariances must have shape (K, D, D) = ({k}, {d}, {d}), (K, D), (K,) or (), "
                    f"got {c.shape}"
                )
        if not np.all(np.isfinite(mu)) or not np.all(np.isfinite(cov)):
            raise ValueError("means and covariances must be finite")
        if not np.allclose(cov, np.swapaxes(cov, -1, -2), rtol=1e-10, atol=1e-12):
            raise ValueError("covariances must be symmetric")
        cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
        try:
            chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError as err:
            raise ValueError("covariances must be positive definite") from err
        if not np.all(np.isfinite(chol)) or np.any(np.diagonal(chol, axis1=-2, axis2=-1) <= 0):
            raise ValueError("covariances must be positive definite")
        return cls(w, mu, np.ascontiguousarray(cov), chol)

    @property
    def num_components(self) -> int:
        """K."""
        return int(self.means.shape[0])

    @property
    def dim(self) -> int:
        """D."""
        return int(self.means.shape[1])

    def sample_components(self, rng, n: int) -> np.ndarray:
        """``(n,)`` int components drawn from the prior ``weights`` (theta ~ p(theta))."""
        gen = _rng(rng)
        return gen.choice(self.num_components, size=_count(n), p=self.weights)

    def sample_given(self, rng, components) -> np.ndarray:
        """Draw one point from each given component: ``x_i ~ N(mu_{c_i}, Sigma_{c_i})``.

        Args:
          rng: numpy Generator or int seed.
          components: int array of any shape, values in ``[0, K)``.

        Returns:
          float64 array of shape ``components.shape + (D,)``.
        """
        gen = _rng(rng)
        c = np.asarray(components)
        if not np.issubdtype(c.dtype, np.integer):
            raise ValueError(f"components must be integers, got dtype {c.dtype}")
        if c.size and (c.min() < 0 or c.max() >= self.num_components):
            raise ValueError(f"components must lie in [0, {self.num_components}), got [{c.min()}, {c.max()}]")
        z = gen.standard_normal(c.shape + (self.dim,))
        return self.means[c] + np.einsum("...ij,...j->...i", self.cholesky[c], z)

    def log_density(self, x) -> np.ndarray:
        """Log mixture density ``log sum_k w_k N(x; mu_k, Sigma_k)`` (log-sum-exp), ``(..., D) -> (...)``."""
        return _logsumexp(self.component_log_densities(x) + np.log(self.weights), axis=-1)

    def component_log_densities(self, x) -> np.ndarray:
        """``log N(x; mu_k, Sigma_k)`` for every component: ``(..., D) -> (..., K)``."""
        xv = np.asarray(x, dtype=np.float64)
        if xv.shape[-1:] != (self.dim,):
            raise ValueError(f"x must have last dimension D={self.dim}, got shape {xv.shape}")
        diff = xv[..., None, :] - self.means  # (..., K, D)
        sol = np.linalg.solve(self.cholesky, diff[..., None])[..., 0]  # L^-1 (x - mu)
        logdet = 2.0 * np.log(np.diagonal(self.cholesky, axis1=-2, axis2=-1)).sum(-1)
        return -0.5 * ((sol**2).sum(-1) + logdet + self.dim * np.log(2.0 * np.pi))


def _logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(a - m), axis=axis))


def appendix_h_mixture() -> GaussianMixture:
    """The paper's Appendix H mixture: means (5, 5) and (1, 1), unit (identity) covariance, equal weights.

    Example:
      >>> appendix_h_mixture().means.tolist()
      [[5.0, 5.0], [1.0, 1.0]]
    """
    return GaussianMixture.create([0.5, 0.5], [[5.0, 5.0], [1.0, 1.0]], 1.0)


def sample_points(mixture: GaussianMixture, rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``n`` points from the mixture with their component (generative metadata).

    ``c_i ~ Categorical(weights)``, ``x_i ~ N(mu_{c_i}, Sigma_{c_i})``.

    Args:
      mixture: :class:`GaussianMixture`.
      rng: numpy Generator or int seed.
      n: number of points, >= 0.

    Returns:
      ``(x, component)``: ``(n, D)`` float64 points and ``(n,)`` int components.

    Example:
      >>> x, c = sample_points(appendix_h_mixture(), 0, 4)
      >>> x.shape, c.shape
      ((4, 2), (4,))
    """
    if not isinstance(mixture, GaussianMixture):
        raise ValueError(f"mixture must be a GaussianMixture, got {type(mixture).__name__}")
    gen = _rng(rng)
    comp = mixture.sample_components(gen, _count(n))
    return mixture.sample_given(gen, comp), comp


def sample_triplets(mixture: GaussianMixture, rng, n: int) -> dict[str, np.ndarray]:
    """Sample ``n`` triplets by the Monte-Carlo scheme of paper Eq. A3.

    ``theta+, theta- ~ p(theta)`` independently (the mixture weights); ``x, x+ ~ p(x | theta+)``;
    ``x- ~ p(x | theta-)``. The negative's component is drawn independently of the anchor's and
    equals it with probability ``sum_k w_k^2`` (not a "hard negative" scheme).

    Args:
      mixture: :class:`GaussianMixture`.
      rng: numpy Generator or int seed.
      n: number of triplets, >= 0.

    Returns:
      dict with ``"anchor"``, ``"positive"``, ``"negative"``: ``(n, D)`` float64 points;
      ``"positive_component"`` (of anchor and positive) and ``"negative_component"``: ``(n,)`` int.

    Example:
      >>> t = sample_triplets(appendix_h_mixture(), 0, 3)
      >>> t["anchor"].shape, t["negative_component"].shape
      ((3, 2), (3,))
    """
    if not isinstance(mixture, GaussianMixture):
        raise ValueError(f"mixture must be a GaussianMixture, got {type(mixture).__name__}")
    gen = _rng(rng)
    n = _count(n)
    pos_c = mixture.sample_components(gen, n)
    neg_c = mixture.sample_components(gen, n)
    comps = np.stack([pos_c, pos_c, neg_c], axis=-1)  # (n, 3)
    pts = mixture.sample_given(gen, comps)  # (n, 3, D)
    return {
        "anchor": pts[:, 0],
        "positive": pts[:, 1],
        "negative": pts[:, 2],
        "positive_component": pos_c,
        "negative_component": neg_c,
    }
