r"""Generative similarity of a Gaussian mixture (paper Eq. H2, Appendices F-H).

Generative process: a component ``k ~ Categorical(w)`` is drawn, then a point
``x ~ N(mu_k, Sigma_k)``. Under the "same" hypothesis both points share the component, under
"different" each has its own, so paper Eq. 1 becomes (paper Eq. H2, for any number ``K`` of
components and any covariances)

.. math::

    \log s(x_1, x_2) = \log \sum_k w_k\, N(x_1 | k)\, N(x_2 | k) - \log p(x_1) - \log p(x_2),
    \qquad p(x) = \sum_k w_k N(x | k).

Everything is evaluated from the per-point component log-densities ``log N(x | k)`` with
``logsumexp``, so points far from every component (``|x| ~ 1e3`` and beyond) stay finite.
Only the component log-likelihoods enter the formula: :func:`mixture_log_similarity` and
:func:`pairwise_mixture_log_similarity` work for *any* mixture (pass your own ``N x K`` tables),
the Gaussian functions are thin wrappers over them.

Parameters are held in a :class:`GaussianMixture` (a ``NamedTuple``, hence a JAX pytree: it can be
passed through ``jax.jit`` and differentiated). Build it with :func:`make_mixture`, which validates
the weights and checks every covariance is positive definite (Cholesky).

Example:
    >>> import jax.numpy as jnp
    >>> from gensim_jax.kernels import gaussian_mixture as gm
    >>> mix = gm.appendix_h_mixture()          # means (5, 5) and (1, 1), unit variance
    >>> x = jnp.array([[5.0, 5.0], [1.0, 1.0]])
    >>> gm.pairwise_log_similarity(x, x, mix).shape
    (2, 2)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from gensim_jax.kernels._numeric_checks import (
    check_min_ndim,
    check_ndim,
    check_positive,
    check_same_last_dim,
    concrete_value,
)

__all__ = [
    "GaussianMixture",
    "make_mixture",
    "appendix_h_mixture",
    "component_log_densities",
    "log_marginal",
    "mixture_log_similarity",
    "pairwise_mixture_log_similarity",
    "log_similarity",
    "pairwise_log_similarity",
]


class GaussianMixture(NamedTuple):
    """Parameters of a ``K``-component Gaussian mixture in ``D`` dimensions (a JAX pytree).

    Attributes:
      log_weights: ``(K,)`` log mixing weights ``log w_k`` (``logsumexp == 0``).
      means: ``(K, D)`` component means ``mu_k``.
      scale: either ``(K, D)`` per-dimension standard deviations (diagonal covariances) or
        ``(K, D, D)`` lower-triangular Cholesky factors ``L_k`` with ``Sigma_k = L_k L_k^T``.
        Which one is used is decided by ``scale.ndim`` (static under ``jit``).
    """

    log_weights: jax.Array
    means: jax.Array
    scale: jax.Array

    @property
    def num_components(self) -> int:
        return self.means.shape[0]

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    @property
    def is_diagonal(self) -> bool:
        return self.scale.ndim == 2


def make_mixture(weights, means, covariances=1.0, *, normalize: bool = False, atol: float = 1e-5) -> GaussianMixture:
    """Validate Gaussian-mixture parameters and return a :class:`GaussianMixture` (Appendix F/H).

    Args:
      weights: ``(K,)`` positive mixing weights. They must sum to 1 within ``atol`` unless
        ``normalize=True``, in which case they are divided by their sum.
      means: ``(K, D)`` component means.
      covariances: a positive scalar (the same isotropic variance for every component), ``(K, D)``
        positive diagonal variances, or ``(K, D, D)`` symmetric positive-definite covariances.
      normalize: rescale ``weights`` to sum to one instead of raising.
      atol: tolerance on ``|sum(weights) - 1|`` and on covariance symmetry.

    Returns:
      A :class:`GaussianMixture` with diagonal ``scale`` (standard deviations) for scalar/diagonal
      input and Cholesky factors for full covariances.

    Raises:
      ValueError: weights not positive or not summing to one, shapes inconsistent (naming the sizes),
        a covariance not symmetric positive definite (naming the component). Value checks run when
        the inputs are concrete; under ``jit`` an invalid covariance gives NaN Cholesky factors, so
        build mixtures outside traced code.

    Example:
      >>> mix = make_mixture([0.3, 0.7], [[0.0], [4.0]], [[1.0], [2.0]])
      >>> mix.scale.shape
      (2, 1)
    """
    means = jnp.asarray(means)
    dtype = jnp.result_type(float, means.dtype)
    means = means.astype(dtype)
    check_ndim("means", means.shape, 2)
    k, d = means.shape
    if k < 1 or d < 1:
        raise ValueError(f"means must have shape (K, D) with K, D >= 1; got {means.shape}")
    m = concrete_value(means)
    if m is not None and not np.all(np.isfinite(m)):
        raise ValueError(f"means must be finite; got non-finite entries in an array of shape {m.shape}")
    weights = jnp.asarray(weights, dtype)
    if weights.shape != (k,):
        raise ValueError(f"weights must have shape (K,) = ({k},) to match means {means.shape}; got {weights.shape}")
    check_positive("weights", weights)
    w = concrete_value(weights)
    if normalize:
        weights = weights / jnp.sum(weights)
    elif w is not None and abs(float(w.sum()) - 1.0) > atol:
        raise ValueError(
            f"weights must sum to 1 (within atol={atol}); got sum {float(w.sum())!r}. "
            "Pass normalize=True to rescale them."
        )
    log_weights = jnp.log(weights)

    cov = jnp.asarray(covariances, dtype)
    if cov.ndim == 0:
        check_positive("covariances", cov)
        scale = jnp.broadcast_to(jnp.sqrt(cov), (k, d))
    elif cov.shape == (k, d):
        check_positive("covariances", cov)
        scale = jnp.sqrt(cov)
    elif cov.shape == (k, d, d):
        c = concrete_value(cov)
        if c is not None:
            for i in range(k):
                if not np.all(np.isfinite(c[i])):
                    raise ValueError(f"covariances[{i}] has non-finite entries")
                if not np.allclose(c[i], c[i].T, atol=atol, rtol=0.0):
                    raise ValueError(f"covariances[{i}] is not symmetric (atol={atol})")
                try:
                    np.linalg.cholesky(c[i].astype(np.float64))
                except np.linalg.LinAlgError:
                    raise ValueError(
                        f"covariances[{i}] is not positive definite (Cholesky failed); "
                        f"eigenvalues {np.linalg.eigvalsh(c[i]).tolist()}"
                    ) from None
        scale = jnp.linalg.cholesky(0.5 * (cov + jnp.swapaxes(cov, -1, -2)))
        if c is not None and not np.all(np.isfinite(np.asarray(scale))):
            bad = int(np.argmax(~np.all(np.isfinite(np.asarray(scale)), axis=(1, 2))))
            raise ValueError(f"covariances[{bad}] is too close to singular for {dtype} Cholesky")
    else:
        raise ValueError(
            f"covariances must be a scalar, ({k}, {d}) diagonal variances or ({k}, {d}, {d}) full matrices "
            f"to match means {means.shape}; got shape {cov.shape}"
        )
    return GaussianMixture(log_weights=log_weights, means=means, scale=scale)


def appendix_h_mixture(dtype=jnp.float32) -> GaussianMixture:
    """The two-component mixture of paper Appendix H.

    Means ``(5, 5)`` and ``(1, 1)``, ``Sigma = I``, ``w = (1/2, 1/2)``.

    Example:
      >>> appendix_h_mixture().means.tolist()
      [[5.0, 5.0], [1.0, 1.0]]
    """
    return make_mixture(
        jnp.array([0.5, 0.5], dtype), jnp.array([[5.0, 5.0], [1.0, 1.0]], dtype), jnp.asarray(1.0, dtype)
    )


def _check_points(name: str, x, mixture: GaussianMixture) -> None:
    shape = jnp.shape(x)
    check_min_ndim(name, shape, 1)
    check_same_last_dim(name, shape, "mixture.means", mixture.means.shape)


@jax.jit
def _component_log_densities(x, mixture: GaussianMixture) -> jax.Array:
    dtype = jnp.result_type(mixture.means.dtype, jnp.asarray(x).dtype, float)
    x = jnp.asarray(x, dtype)
    means = mixture.means.astype(dtype)
    scale = mixture.scale.astype(dtype)
    d = means.shape[-1]
    diff = x[..., None, :] - means  # (..., K, D)
    if scale.ndim == 2:
        z = diff / scale
        log_det = jnp.sum(jnp.log(scale), axis=-1)  # (K,)
    else:
        batch = diff.shape[:-2]
        flat = diff.reshape((-1,) + diff.shape[-2:])  # (P, K, D)
        rhs = jnp.moveaxis(flat, 0, -1)  # (K, D, P)
        z = jax.lax.linalg.triangular_solve(scale, rhs, left_side=True, lower=True)
        z = jnp.moveaxis(z, -1, 0).reshape(batch + diff.shape[-2:])
        log_det = jnp.sum(jnp.log(jnp.diagonal(scale, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * jnp.sum(z * z, axis=-1) - log_det - 0.5 * d * math.log(2.0 * math.pi)


def component_log_densities(x, mixture: GaussianMixture) -> jax.Array:
    """Per-component Gaussian log-densities ``log N(x | mu_k, Sigma_k)`` (the ``theta = k`` likelihoods of Eq. H2).

    Args:
      x: points, shape ``(..., D)``.
      mixture: a :class:`GaussianMixture` with ``K`` components in ``D`` dimensions.

    Returns:
      ``(..., K)`` array of log-densities.

    Example:
      >>> import jax.numpy as jnp
      >>> mix = make_mixture([1.0], [[0.0]], 1.0)
      >>> round(float(component_log_densities(jnp.array([0.0]), mix)[0]), 6)  # -log(2 pi)/2
      -0.918939
    """
    _check_points("x", x, mixture)
    return _component_log_densities(x, mixture)


def log_marginal(x, mixture: GaussianMixture) -> jax.Array:
    """Log marginal density ``log p(x) = logsumexp_k (log w_k + log N(x | k))`` (denominator factors of Eq. H2).

    Args:
      x: points ``(..., D)``; mixture: a :class:`GaussianMixture`.

    Returns:
      ``(...,)`` log-densities.
    """
    _check_points("x", x, mixture)
    return _log_marginal(x, mixture)


@jax.jit
def _log_marginal(x, mixture: GaussianMixture) -> jax.Array:
    comp = _component_log_densities(x, mixture)
    return logsumexp(comp + mixture.log_weights.astype(comp.dtype), axis=-1)


def _check_tables(name1, l1, name2, l2, log_weights) -> None:
    check_min_ndim(name1, jnp.shape(l1), 1)
    check_min_ndim(name2, jnp.shape(l2), 1)
    check_same_last_dim(name1, jnp.shape(l1), name2, jnp.shape(l2))
    check_ndim("log_weights", jnp.shape(log_weights), 1)
    check_same_last_dim(name1, jnp.shape(l1), "log_weights", jnp.shape(log_weights))


def mixture_log_similarity(log_lik1, log_lik2, log_weights) -> jax.Array:
    """Log generative similarity of any finite mixture from component log-likelihoods (paper Eq. 1 / H2).

    ``log s = logsumexp_k(lw_k + l1_k + l2_k) - logsumexp_k(lw_k + l1_k) - logsumexp_k(lw_k + l2_k)``.

    Args:
      log_lik1: ``(..., K)`` values ``log p(x1 | k)``.
      log_lik2: ``(..., K)`` values ``log p(x2 | k)``, broadcastable with ``log_lik1``.
      log_weights: ``(K,)`` log prior of the components (``logsumexp == 0``).

    Returns:
      ``(...)`` log similarities.

    Example:
      >>> import jax.numpy as jnp
      >>> lw = jnp.log(jnp.array([0.5, 0.5]))
      >>> round(float(mixture_log_similarity(jnp.array([0.0, -50.0]), jnp.array([0.0, -50.0]), lw)), 4)
      0.6931
    """
    _check_tables("log_lik1", log_lik1, "log_lik2", log_lik2, log_weights)
    return _mixture_log_similarity(log_lik1, log_lik2, log_weights)


@jax.jit
def _mixture_log_similarity(log_lik1, log_lik2, log_weights) -> jax.Array:
    l1 = jnp.asarray(log_lik1)
    l2 = jnp.asarray(log_lik2)
    lw = jnp.asarray(log_weights, jnp.result_type(l1.dtype, l2.dtype))
    joint = logsumexp(lw + l1 + l2, axis=-1)
    return joint - logsumexp(lw + l1, axis=-1) - logsumexp(lw + l2, axis=-1)


def pairwise_mixture_log_similarity(log_lik1, log_lik2, log_weights) -> jax.Array:
    """All-pairs version of :func:`mixture_log_similarity` (paper Eq. H2 for ``N x M`` pairs).

    The per-point tables are computed once by the caller; the joint term is a ``logsumexp`` over
    ``K`` of ``lw + l1[:, None, :] + l2[None, :, :]`` (an ``N x M x K`` intermediate).

    Args:
      log_lik1: ``(N, K)``; log_lik2: ``(M, K)``; log_weights: ``(K,)``.

    Returns:
      ``(N, M)`` log similarities.
    """
    check_ndim("log_lik1", jnp.shape(log_lik1), 2)
    check_ndim("log_lik2", jnp.shape(log_lik2), 2)
    _check_tables("log_lik1", log_lik1, "log_lik2", log_lik2, log_weights)
    return _pairwise_mixture_log_similarity(log_lik1, log_lik2, log_weights)


@jax.jit
def _pairwise_mixture_log_similarity(log_lik1, log_lik2, log_weights) -> jax.Array:
    l1 = jnp.asarray(log_lik1)
    l2 = jnp.asarray(log_lik2)
    lw = jnp.asarray(log_weights, jnp.result_type(l1.dtype, l2.dtype))
    a = lw + l1  # (N, K)
    b = lw + l2  # (M, K)
    joint = logsumexp(a[:, None, :] + l2[None, :, :], axis=-1)  # (N, M)
    return joint - logsumexp(a, axis=-1)[:, None] - logsumexp(b, axis=-1)[None, :]


def log_similarity(x1, x2, mixture: GaussianMixture) -> jax.Array:
    """Gaussian-mixture log generative similarity, elementwise (paper Eq. H2, any ``K``, full or diagonal covariances).

    Args:
      x1: points ``(..., D)``.
      x2: points ``(..., D)``, leading axes broadcastable with ``x1``.
      mixture: a :class:`GaussianMixture` (see :func:`make_mixture`).

    Returns:
      ``log s(x1, x2)`` of shape ``broadcast(x1.shape[:-1], x2.shape[:-1])``.

    Raises:
      ValueError: the last axis of ``x1``/``x2`` differs from the mixture dimension ``D``.

    Example:
      >>> import jax.numpy as jnp
      >>> mix = appendix_h_mixture()
      >>> bool(log_similarity(jnp.array([5.0, 5.0]), jnp.array([5.2, 4.9]), mix) > 0)
      True
    """
    _check_points("x1", x1, mixture)
    _check_points("x2", x2, mixture)
    return _log_similarity(x1, x2, mixture)


@jax.jit
def _log_similarity(x1, x2, mixture: GaussianMixture) -> jax.Array:
    l1 = _component_log_densities(x1, mixture)
    l2 = _component_log_densities(x2, mixture)
    return _mixture_log_similarity(l1, l2, mixture.log_weights.astype(l1.dtype))


def pairwise_log_similarity(x1, x2, mixture: GaussianMixture) -> jax.Array:
    """Gaussian-mixture log generative similarity for all pairs (paper Eq. H2): ``(N, D), (M, D) -> (N, M)``.

    Component log-densities are computed once per point (``N x K`` and ``M x K``), then combined by
    :func:`pairwise_mixture_log_similarity`.

    Args:
      x1: ``(N, D)`` points; x2: ``(M, D)`` points; mixture: a :class:`GaussianMixture`.

    Returns:
      ``(N, M)`` matrix with ``out[n, m] = log_similarity(x1[n], x2[m])``.
    """
    check_ndim("x1", jnp.shape(x1), 2)
    check_ndim("x2", jnp.shape(x2), 2)
    _check_points("x1", x1, mixture)
    _check_points("x2", x2, mixture)
    return _pairwise_log_similarity(x1, x2, mixture)


@jax.jit
def _pairwise_log_similarity(x1, x2, mixture: GaussianMixture) -> jax.Array:
    l1 = _component_log_densities(x1, mixture)
    l2 = _component_log_densities(x2, mixture)
    return _pairwise_mixture_log_similarity(l1, l2, mixture.log_weights.astype(l1.dtype))
