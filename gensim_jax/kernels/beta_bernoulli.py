r"""Generative similarity of the Beta-Bernoulli feature model (paper Eq. 3, Appendix I).

Generative process (paper Eq. 3): for each of ``F`` binary features, draw a Bernoulli rate
``theta_i ~ Beta(alpha, beta)``, then a feature value ``f_i ~ Bern(theta_i)`` (then an exemplar
uniformly among the stimuli with that feature vector; the exemplar-set sizes cancel in the ratio).
Integrating the rates out (Beta-Bernoulli conjugacy) gives the exact log similarity (paper Eq. I3)

.. math::

    \log s(f^{(1)}, f^{(2)}) = \sum_i \log
      \frac{B(f^{(1)}_i + f^{(2)}_i + \alpha,\ \bar f^{(1)}_i + \bar f^{(2)}_i + \beta)\, B(\alpha, \beta)}
           {B(f^{(1)}_i + \alpha,\ \bar f^{(1)}_i + \beta)\, B(f^{(2)}_i + \alpha,\ \bar f^{(2)}_i + \beta)},
    \qquad \bar f = 1 - f .

Each summand depends only on the pair ``(f1_i, f2_i)`` in ``{0,1}^2``, so the kernel is a sum over
features of a 2 x 2 table of constants (paper Eqs. I5-I7, simplified with Eq. I4):

* ``(1, 1)``: ``log((a+1)/a) - log((a+b+1)/(a+b)) = log1p(1/a) - log1p(1/(a+b))`` (Eq. I5)
* ``(1, 0)`` and ``(0, 1)``: ``-log((a+b+1)/(a+b)) = -log1p(1/(a+b))`` (Eq. I6)
* ``(0, 0)``: ``log1p(1/b) - log1p(1/(a+b))`` (Eq. I7)

with ``a = alpha``, ``b = beta``.

The ``log1p(1/.)`` forms are what this module evaluates: they are exact, have no cancellation for
tiny or huge ``alpha, beta`` and finite gradients for every ``alpha, beta > 0`` (the test suite
checks them against ``scipy.special.betaln`` in Eq. I3 and against numerical integration of Eq. 1).

Pairwise form. For ``N x F`` and ``M x F`` feature matrices the table turns the kernel into one
matrix product plus two rank-one terms (no loops, no ``N x M x F`` intermediate)::

    log s = (F1 * D) @ F2.T + (F1 @ E)[:, None] + (F2 @ E)[None, :] + sum(T00)
    D = T11 - 2 T10 + T00,  E = T10 - T00.

Non-binary features. The paper's features are binary. This module also accepts features in
``[0, 1]`` (validated when the inputs are concrete) and then returns the multilinear extension of
the table, which is the *expected* log similarity when every feature ``f_i`` is itself an
independent ``Bern(f_i)`` draw (e.g. features averaged over annotators). For binary inputs this is
exactly Eq. I3. Note that this is *not* Eq. I3 with fractional counts plugged into ``B(.,.)``.

Limit ``alpha = beta -> 0`` (paper Eqs. I8-I10). With ``alpha = beta = b`` the table gives, exactly
and for every ``b > 0``,
``log s = n log(2(b+1)/(2b+1)) - log((b+1)/b) * sum_i (f1_i - f2_i)^2``; as ``b -> 0`` the constant
tends to the paper's ``n log 2`` (Eq. I10), and the scale ``log((b+1)/b)`` diverges, so the
usable limit kernel is the squared feature distance. :func:`limit_log_similarity` exposes it
exactly as ``-sum_i (f1_i - f2_i)^2`` (scale 1, constant 0).

Example:
    >>> import jax.numpy as jnp
    >>> from gensim_jax.kernels import beta_bernoulli
    >>> f = jnp.array([[1, 0, 1], [1, 1, 0]])
    >>> beta_bernoulli.pairwise_log_similarity(f, f, alpha=1.0, beta=1.0).shape
    (2, 2)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from gensim_jax.kernels._numeric_checks import (
    check_in_unit_interval,
    check_min_ndim,
    check_ndim,
    check_positive,
    check_same_last_dim,
)

__all__ = [
    "log_feature_table",
    "log_similarity",
    "pairwise_log_similarity",
    "limit_log_similarity",
    "pairwise_limit_log_similarity",
    "limit_scale_and_offset",
]

_HIGHEST = jax.lax.Precision.HIGHEST


def _float_dtype(*xs) -> jnp.dtype:
    return jnp.result_type(float, *[jnp.asarray(x).dtype for x in xs])


def _check_params(alpha, beta, num_features: int | None = None) -> None:
    check_positive("alpha", alpha)
    check_positive("beta", beta)
    if num_features is not None:
        for name, p in (("alpha", alpha), ("beta", beta)):
            shape = jnp.shape(p)
            try:
                ok = np.broadcast_shapes(shape, (num_features,)) == (num_features,)
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(
                    f"{name} must be a scalar or have shape ({num_features},) (one value per feature); "
                    f"got shape {shape}"
                )


def _table_entries(alpha, beta, dtype):
    a = jnp.asarray(alpha, dtype)
    b = jnp.asarray(beta, dtype)
    shared = jnp.log1p(1.0 / (a + b))
    t11 = jnp.log1p(1.0 / a) - shared
    t10 = -shared
    t00 = jnp.log1p(1.0 / b) - shared
    return t11, t10, t00


def log_feature_table(alpha, beta) -> jax.Array:
    """Per-feature 2 x 2 table of log ratios of the Beta-Bernoulli kernel (paper Eqs. I5-I7).

    ``table[..., u, v]`` is the summand of paper Eq. I3 for ``f1_i = u`` and ``f2_i = v``.

    Args:
      alpha: Beta prior parameter ``alpha > 0``; scalar or array (one value per feature).
      beta: Beta prior parameter ``beta > 0``; broadcastable with ``alpha``.

    Returns:
      Array of shape ``broadcast(alpha, beta).shape + (2, 2)``; symmetric in the last two axes.

    Raises:
      ValueError: if a concrete ``alpha`` or ``beta`` is not finite and positive.

    Example:
      >>> import numpy as np
      >>> t = log_feature_table(1.0, 1.0)
      >>> bool(np.isclose(t[1, 1], np.log(4 / 3)))
      True
    """
    _check_params(alpha, beta)
    dtype = _float_dtype(alpha, beta)
    t11, t10, t00 = _table_entries(alpha, beta, dtype)
    t11, t10, t00 = jnp.broadcast_arrays(t11, t10, t00)
    row0 = jnp.stack([t00, t10], axis=-1)
    row1 = jnp.stack([t10, t11], axis=-1)
    return jnp.stack([row0, row1], axis=-2)


def log_similarity(f1, f2, alpha=1.0, beta=1.0) -> jax.Array:
    """Exact Beta-Bernoulli log generative similarity, elementwise (paper Eq. I3 / Eqs. I5-I7).

    Sums the per-feature table of :func:`log_feature_table` over the last axis; leading axes
    broadcast (NumPy rules).

    Args:
      f1: features, shape ``(..., F)``; binary (0/1, bool or float). Entries in ``[0, 1]`` give the
        expected log similarity under independent ``Bern(f)`` features (see module docstring).
      f2: features, shape ``(..., F)`` broadcastable with ``f1``; same ``F``.
      alpha: ``alpha > 0``, scalar or shape ``(F,)`` (per-feature prior).
      beta: ``beta > 0``, scalar or shape ``(F,)``.

    Returns:
      ``log s`` of shape ``broadcast(f1.shape[:-1], f2.shape[:-1])``.

    Raises:
      ValueError: ``alpha``/``beta`` not positive, feature widths differ, features outside
        ``[0, 1]`` (value checks run only on concrete, non-traced inputs).

    Example:
      >>> import jax.numpy as jnp
      >>> round(float(log_similarity(jnp.array([1, 0]), jnp.array([1, 0]), 1.0, 1.0)), 6)  # 2 log(4/3)
      0.575364
    """
    s1, s2 = jnp.shape(f1), jnp.shape(f2)
    check_min_ndim("f1", s1, 1)
    check_min_ndim("f2", s2, 1)
    check_same_last_dim("f1", s1, "f2", s2)
    _check_params(alpha, beta, s1[-1])
    check_in_unit_interval("f1", f1)
    check_in_unit_interval("f2", f2)
    return _log_similarity(f1, f2, alpha, beta)


@jax.jit
def _log_similarity(f1, f2, alpha, beta) -> jax.Array:
    dtype = _float_dtype(f1, f2, alpha, beta)
    x = jnp.asarray(f1, dtype)
    y = jnp.asarray(f2, dtype)
    t11, t10, t00 = _table_entries(alpha, beta, dtype)
    per_feature = x * y * t11 + (x * (1 - y) + (1 - x) * y) * t10 + (1 - x) * (1 - y) * t00
    return jnp.sum(per_feature, axis=-1)


def pairwise_log_similarity(f1, f2, alpha=1.0, beta=1.0) -> jax.Array:
    """Exact Beta-Bernoulli log similarity for all pairs of rows (paper Eq. I3 as matrix products).

    Computes ``out[n, m] = log_similarity(f1[n], f2[m])`` with one ``(N, F) @ (F, M)`` product
    and two rank-one corrections (see module docstring); matrix products run at HIGHEST precision
    so binary inputs give the same values as the elementwise form on GPU/TPU too.

    Args:
      f1: features, shape ``(N, F)``, binary (or in ``[0, 1]``, see module docstring).
      f2: features, shape ``(M, F)``.
      alpha: ``alpha > 0``, scalar or shape ``(F,)``.
      beta: ``beta > 0``, scalar or shape ``(F,)``.

    Returns:
      ``(N, M)`` matrix of log similarities.

    Raises:
      ValueError: not 2-D, feature widths differ, ``alpha``/``beta`` not positive, features outside
        ``[0, 1]``.

    Example:
      >>> import jax.numpy as jnp
      >>> f = jnp.eye(3)
      >>> pairwise_log_similarity(f, f, 0.5, 0.5).shape
      (3, 3)
    """
    s1, s2 = jnp.shape(f1), jnp.shape(f2)
    check_ndim("f1", s1, 2)
    check_ndim("f2", s2, 2)
    check_same_last_dim("f1", s1, "f2", s2)
    num_features = s1[-1]
    _check_params(alpha, beta, num_features)
    check_in_unit_interval("f1", f1)
    check_in_unit_interval("f2", f2)
    return _pairwise_log_similarity(f1, f2, alpha, beta)


@jax.jit
def _pairwise_log_similarity(f1, f2, alpha, beta) -> jax.Array:
    num_features = jnp.shape(f1)[-1]
    dtype = _float_dtype(f1, f2, alpha, beta)
    x = jnp.asarray(f1, dtype)
    y = jnp.asarray(f2, dtype)
    t11, t10, t00 = _table_entries(alpha, beta, dtype)
    ones = jnp.ones((num_features,), dtype)
    d = (t11 - 2.0 * t10 + t00) * ones
    e = (t10 - t00) * ones
    const = jnp.sum(t00 * ones)
    cross = jnp.matmul(x * d, y.T, precision=_HIGHEST)
    row = jnp.matmul(x, e, precision=_HIGHEST)
    col = jnp.matmul(y, e, precision=_HIGHEST)
    return cross + row[:, None] + col[None, :] + const


def limit_log_similarity(f1, f2) -> jax.Array:
    """The ``alpha = beta -> 0`` limit kernel, exactly ``-sum_i (f1_i - f2_i)^2`` (paper Eq. I10).

    Paper Eq. I10 reads ``log s = n log 2 - log((beta+1)/beta) * sum_i (f1_i - f2_i)^2``: a positive
    scale ``log((beta+1)/beta)`` (which diverges as ``beta -> 0``) times this function plus the
    constant ``n log 2``. Scale and constant are dropped here, so the value is finite and
    ``beta``-free; recover Eq. I10 with :func:`limit_scale_and_offset`. This is the kernel the paper
    uses for the quadrilateral experiment (Appendix L).

    Args:
      f1: features ``(..., F)``; f2: features ``(..., F)``, broadcastable.

    Returns:
      ``-sum_i (f1_i - f2_i)^2``, shape ``broadcast(f1.shape[:-1], f2.shape[:-1])``.

    Example:
      >>> import jax.numpy as jnp
      >>> float(limit_log_similarity(jnp.array([1, 0, 1]), jnp.array([0, 0, 1])))
      -1.0
    """
    s1, s2 = jnp.shape(f1), jnp.shape(f2)
    check_min_ndim("f1", s1, 1)
    check_min_ndim("f2", s2, 1)
    check_same_last_dim("f1", s1, "f2", s2)
    return _limit_log_similarity(f1, f2)


@jax.jit
def _limit_log_similarity(f1, f2) -> jax.Array:
    dtype = _float_dtype(f1, f2)
    diff = jnp.asarray(f1, dtype) - jnp.asarray(f2, dtype)
    return -jnp.sum(diff * diff, axis=-1)


def pairwise_limit_log_similarity(f1, f2) -> jax.Array:
    """Pairwise ``alpha = beta -> 0`` limit kernel: ``out[n, m] = -||f1[n] - f2[m]||^2`` (Eq. I10).

    Computed as ``2 f1 @ f2.T - |f1|^2 - |f2|^2`` (HIGHEST precision) and clipped at 0 from above
    so rounding cannot give a positive value.

    Args:
      f1: ``(N, F)`` features; f2: ``(M, F)`` features.

    Returns:
      ``(N, M)`` matrix ``-sum_i (f1[n, i] - f2[m, i])^2``.

    Example:
      >>> import jax.numpy as jnp
      >>> pairwise_limit_log_similarity(jnp.eye(2), jnp.eye(2)).tolist()
      [[0.0, -2.0], [-2.0, 0.0]]
    """
    s1, s2 = jnp.shape(f1), jnp.shape(f2)
    check_ndim("f1", s1, 2)
    check_ndim("f2", s2, 2)
    check_same_last_dim("f1", s1, "f2", s2)
    return _pairwise_limit_log_similarity(f1, f2)


@jax.jit
def _pairwise_limit_log_similarity(f1, f2) -> jax.Array:
    dtype = _float_dtype(f1, f2)
    x = jnp.asarray(f1, dtype)
    y = jnp.asarray(f2, dtype)
    sq = (
        jnp.sum(x * x, axis=-1)[:, None]
        + jnp.sum(y * y, axis=-1)[None, :]
        - 2.0 * jnp.matmul(x, y.T, precision=_HIGHEST)
    )
    return 0.0 - jnp.maximum(sq, 0.0)


def limit_scale_and_offset(beta, num_features: int) -> tuple[jax.Array, jax.Array]:
    """Scale and constant that turn :func:`limit_log_similarity` into paper Eq. I10.

    ``Eq. I10 = offset + scale * limit_log_similarity(f1, f2)`` with
    ``scale = log((beta + 1) / beta)`` and ``offset = n log 2``.

    For ``alpha = beta = b`` the *exact* kernel is ``n log(2(b+1)/(2b+1)) + scale * limit`` (same
    scale, a constant that tends to ``n log 2`` as ``b -> 0``).

    Args:
      beta: ``beta > 0`` (scalar).
      num_features: ``n``, the number of features (positive int).

    Returns:
      ``(scale, offset)`` scalars.

    Example:
      >>> scale, offset = limit_scale_and_offset(1.0, 2)
      >>> round(float(scale), 6), round(float(offset), 6)
      (0.693147, 1.386294)
    """
    check_positive("beta", beta)
    if int(num_features) != num_features or num_features < 1:
        raise ValueError(f"num_features must be a positive integer; got {num_features!r}")
    dtype = _float_dtype(beta)
    b = jnp.asarray(beta, dtype)
    return jnp.log1p(1.0 / b), jnp.asarray(num_features * np.log(2.0), dtype)
