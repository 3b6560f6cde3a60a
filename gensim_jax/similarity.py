"""Embedding similarities and distances, elementwise and pairwise.

Every function here is pure and safe under ``jax.jit``, ``jax.vmap`` and
``jax.grad``.  Two forms exist for each measure:

* the **elementwise** form ``f(x, y)`` reduces over the last axis and broadcasts
  the leading axes (``x: (..., D)``, ``y: (..., D)`` -> ``(...)``);
* the **pairwise** form ``pairwise_f(x, y=None)`` returns the ``N x M`` matrix
  for ``x: (N, D)`` and ``y: (M, D)`` (``y=None`` means ``y = x``).  Wherever
  the algebra allows, the matrix is computed through matrix products and never
  materialises an ``N x M x D`` array (cosine, dot, (squared) Euclidean).  The
  L1 distances have no matrix-product form; there the broadcasted difference
  is reduced inside one XLA fusion.

Similarities take an optional ``temperature`` and return ``s / temperature``
(note 004, "Similarity Functions").  Distances take none.

Numerical guards (DESIGN.md, "Conventions"): the value AND the gradient are
finite at zero vectors (cosine uses ``max(||x||, eps)``), at ``x == y`` (the
square root of the Euclidean distance has gradient 0 there, a valid
subgradient, instead of ``inf``), and at ``cos = +-1`` (the derivative of
``arccos`` is evaluated with ``1 - c^2`` floored at ``eps``).

Names used by the losses (see :data:`SIMILARITIES`, :data:`DISTANCES`):
``"cosine"``, ``"neg_arc_length"``, ``"neg_euclidean"``, ``"dot"``,
``"exp_neg_euclidean"`` and ``"euclidean"``, ``"squared_euclidean"``, ``"l1"``,
``"normalized_l1"``.  :func:`as_distance` turns any of them into a distance,
reading a similarity ``s`` as the distance ``-s`` (paper Appendix D:
``d(x, y) -> s0 - s(x, y)``; the constant ``s0`` cancels in every triplet
difference).
"""

from __future__ import annotations

from typing import Callable, Optional

import jax
import jax.numpy as jnp
from jax import lax

Array = jax.Array

#: Floor of vector norms in the cosine similarity (value and gradient stay finite at 0).
NORM_EPS = 1e-8
#: Floor of ``1 - c^2`` in the derivative of ``arccos`` (finite gradient at ``cos = +-1``).
ARCCOS_EPS = 1e-12

_HIGHEST = lax.Precision.HIGHEST


# --------------------------------------------------------------------------- checks


def _as_float(x, name: str) -> Array:
    x = jnp.asarray(x)
    if x.ndim < 1:
        raise ValueError(f"{name} must have at least one axis (the feature axis), got a scalar")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.float32)
    return x


def _check_pair(x, y, xname: str = "x", yname: str = "y") -> tuple[Array, Array]:
    x = _as_float(x, xname)
    y = _as_float(y, yname)
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(
            f"{xname} and {yname} must have the same feature size (last axis), "
            f"got {xname}.shape={x.shape} and {yname}.shape={y.shape}"
        )
    try:
        jnp.broadcast_shapes(x.shape[:-1], y.shape[:-1])
    except ValueError as err:
        raise ValueError(
            f"the leading axes of {xname} {x.shape[:-1]} and {yname} {y.shape[:-1]} do not broadcast"
        ) from err
    return x, y


def _check_matrices(x, y, xname: str = "x", yname: str = "y") -> tuple[Array, Array, bool]:
    """Validate the pairwise form; ``y=None`` means ``y = x`` (returns same=True)."""
    x = _as_float(x, xname)
    if x.ndim != 2:
        raise ValueError(f"{xname} must be a matrix (N, D) for a pairwise measure, got shape {x.shape}")
    if y is None:
        return x, x, True
    y = _as_float(y, yname)
    if y.ndim != 2:
        raise ValueError(f"{yname} must be a matrix (M, D) for a pairwise measure, got shape {y.shape}")
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            f"{xname} and {yname} must have the same feature size, got {xname}.shape={x.shape} "
            f"and {yname}.shape={y.shape}"
        )
    return x, y, False


def check_temperature(temperature) -> None:
    """Raise ``ValueError`` if a concrete temperature is not positive."""
    if isinstance(temperature, (int, float)) and not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")


def _scale(s: Array, temperature) -> Array:
    check_temperature(temperature)
    if isinstance(temperature, (int, float)) and temperature == 1:
        return s
    return s / temperature


# --------------------------------------------------------------------------- safe primitives


def safe_norm(x: Array, axis: int = -1, keepdims: bool = False, eps: float = NORM_EPS) -> Array:
    """``max(||x||_2, eps)`` with a finite gradient at ``x = 0``."""
    sq = jnp.sum(x * x, axis=axis, keepdims=keepdims)
    return jnp.sqrt(jnp.maximum(sq, eps * eps))


def safe_sqrt(x: Array) -> Array:
    """``sqrt(max(x, 0))`` whose gradient at ``x <= 0`` is 0 instead of ``inf``."""
    positive = x > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1.0)), 0.0)


@jax.custom_jvp
def safe_arccos(c: Array) -> Array:
    """``arccos(clip(c, -1, 1))`` with the derivative ``-1/sqrt(max(1 - c^2, ARCCOS_EPS))``."""
    return jnp.arccos(jnp.clip(c, -1.0, 1.0))


@safe_arccos.defjvp
def _safe_arccos_jvp(primals, tangents):
    (c,), (dc,) = primals, tangents
    cc = jnp.clip(c, -1.0, 1.0)
    slope = -lax.rsqrt(jnp.maximum(1.0 - cc * cc, ARCCOS_EPS))
    return jnp.arccos(cc), slope * dc


#: Largest ``N`` for which :func:`_self_gram` uses its symmetric derivative rule (see there).
SYMMETRIC_GRAM_MAX_N = 512


@jax.custom_jvp
def _symmetric_gram(x: Array) -> Array:
    return jnp.matmul(x, x.T, precision=_HIGHEST)


@_symmetric_gram.defjvp
def _symmetric_gram_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    t = jnp.matmul(dx, x.T, precision=_HIGHEST)
    return _symmetric_gram(x), t + t.T


def _self_gram(x: Array) -> Array:
    """The Gram matrix ``x @ x.T`` (``(N, D) -> (N, N)``); same value either way.

    For ``N <= SYMMETRIC_GRAM_MAX_N`` the derivative is written symmetric: tangent ``t + t.T`` with
    ``t = dx @ x.T``, which reverse mode transposes to ``(g + g.T) @ x``, ONE ``N x N x D`` matrix
    product, where autodiff through both operands of ``x @ x.T`` gives ``g @ x + g.T @ x``, two
    (XLA does not merge them).  Measured on the 2-core CPU (bench/, docs/PERFORMANCE.md) this makes
    loss + gradient 20-40 % faster for N = 128-512, but 15-35 % slower for N >= 1024, where the
    strided transpose of the ``N x N`` cotangent (4 MB at N = 1024) no longer stays in cache; so
    larger ``N`` keeps plain autodiff.  ``N`` is a static shape, so this is a trace-time choice.
    Forward mode, ``vmap`` and higher derivatives work in both branches.
    """
    if x.shape[0] <= SYMMETRIC_GRAM_MAX_N:
        return _symmetric_gram(x)
    return jnp.matmul(x, x.T, precision=_HIGHEST)


def normalize(x: Array, axis: int = -1, eps: float = NORM_EPS) -> Array:
    """``x / max(||x||, eps)``: unit vectors, and 0 for a zero vector."""
    return x / safe_norm(x, axis=axis, keepdims=True, eps=eps)


# --------------------------------------------------------------------------- distances


def squared_euclidean_distance(x, y) -> Array:
    """``||x - y||_2^2`` over the last axis.  Shapes ``(..., D), (..., D) -> (...)``."""
    x, y = _check_pair(x, y)
    diff = x - y
    return jnp.sum(diff * diff, axis=-1)


def euclidean_distance(x, y) -> Array:
    """``||x - y||_2`` over the last axis; gradient 0 (not ``inf``) at ``x == y``."""
    return safe_sqrt(squared_euclidean_distance(x, y))


def l1_distance(x, y) -> Array:
    """``sum_i |x_i - y_i|`` over the last axis.  ``(..., D), (..., D) -> (...)``."""
    x, y = _check_pair(x, y)
    return jnp.sum(jnp.abs(x - y), axis=-1)


def normalized_l1_distance(x, y) -> Array:
    """Mean absolute difference ``(1/D) sum_i |x_i - y_i|`` (the L1 distance divided by D).

    Used by the Geoclidean few-shot protocol (paper Sec. 3.2: "normalized l1 distance" of a test
    embedding to the concept prototype); dividing by ``D`` makes distances of encoders with different
    embedding sizes comparable.
    """
    x, y = _check_pair(x, y)
    return jnp.mean(jnp.abs(x - y), axis=-1)


def pairwise_squared_euclidean_distance(x, y=None) -> Array:
    """``N x M`` matrix of ``||x_i - y_j||^2 = |x_i|^2 + |y_j|^2 - 2 x_i.y_j`` (one matmul).

    Clamped at 0 against cancellation; when ``y`` is None the diagonal is exactly 0.  Like
    ``torch.cdist``'s matmul path, near-identical rows of different arrays keep an absolute error of
    about ``eps * (|x|^2 + |y|^2)`` (float32: ~1e-6 for unit-scale rows, i.e. ~1e-3 after the sqrt).
    """
    x, y, same = _check_matrices(x, y)
    xx = jnp.sum(x * x, axis=-1)
    yy = xx if same else jnp.sum(y * y, axis=-1)
    xy = _self_gram(x) if same else jnp.matmul(x, y.T, precision=_HIGHEST)
    sq = jnp.maximum(xx[:, None] + yy[None, :] - 2.0 * xy, 0.0)
    if same:
        sq = jnp.where(jnp.eye(x.shape[0], dtype=bool), 0.0, sq)
    return sq


def pairwise_euclidean_distance(x, y=None) -> Array:
    """``N x M`` matrix of ``||x_i - y_j||_2`` via one matmul; gradient finite on the diagonal."""
    return safe_sqrt(pairwise_squared_euclidean_distance(x, y))


def pairwise_l1_distance(x, y=None) -> Array:
    """``N x M`` matrix of ``sum_k |x_ik - y_jk|`` (a broadcast reduced in one XLA fusion)."""
    x, y, _ = _check_matrices(x, y)
    return jnp.sum(jnp.abs(x[:, None, :] - y[None, :, :]), axis=-1)


def pairwise_normalized_l1_distance(x, y=None) -> Array:
    """``N x M`` matrix of the mean absolute difference, see :func:`normalized_l1_distance`."""
    x, y, _ = _check_matrices(x, y)
    return jnp.mean(jnp.abs(x[:, None, :] - y[None, :, :]), axis=-1)


# --------------------------------------------------------------------------- similarities


def cosine_similarity(x, y, temperature=1.0, eps: float = NORM_EPS) -> Array:
    """Cosine similarity ``x.y / (max(|x|,eps) max(|y|,eps))`` / temperature (note 004).

    Range ``[-1, 1] / temperature``; 0 when either vector is zero (value and gradient finite).
    Shapes ``(..., D), (..., D) -> (...)``.

    >>> import jax.numpy as jnp
    >>> float(cosine_similarity(jnp.array([1.0, 0.0]), jnp.array([1.0, 1.0])))  # doctest: +ELLIPSIS
    0.7071...
    """
    x, y = _check_pair(x, y)
    s = jnp.sum(normalize(x, eps=eps) * normalize(y, eps=eps), axis=-1)
    return _scale(s, temperature)


def pairwise_cosine_similarity(x, y=None, temperature=1.0, eps: float = NORM_EPS) -> Array:
    """``N x M`` cosine similarity matrix: normalise the rows, then one matmul."""
    x, y, same = _check_matrices(x, y)
    xn = normalize(x, eps=eps)
    yn = xn if same else normalize(y, eps=eps)
    c = _self_gram(xn) if same else jnp.matmul(xn, yn.T, precision=_HIGHEST)
    if same:  # exact self-similarity: 1 for a non-zero row, 0 for a zero row
        self_c = (jnp.sum(x * x, axis=-1) > eps * eps).astype(c.dtype)
        c = jnp.where(jnp.eye(x.shape[0], dtype=bool), self_c[:, None], c)
    return _scale(c, temperature)


def neg_arc_length(x, y, temperature=1.0, eps: float = NORM_EPS) -> Array:
    """Negative arc length ``1 - arccos(cos(x, y)) / pi`` (note 004; Koishekenov et al. 2023).

    The geodesic distance on the unit sphere turned into a similarity in ``[0, 1]``.  The note assumes
    unit vectors; here the inputs are normalised first, so any non-zero vectors work (a zero vector is
    at angle pi/2 from everything, like its cosine of 0).  The angle is computed as
    ``2 atan2(|u - v|, |u + v|)`` of the unit vectors ``u, v``, which is exact near 0 and pi where
    ``arccos`` of a rounded cosine loses half the digits.
    """
    x, y = _check_pair(x, y)
    u, v = normalize(x, eps=eps), normalize(y, eps=eps)
    zero = (jnp.sum(x * x, -1) <= eps * eps) | (jnp.sum(y * y, -1) <= eps * eps)
    d = u - v
    a = u + v
    angle = 2.0 * jnp.arctan2(safe_sqrt(jnp.sum(d * d, -1)), safe_sqrt(jnp.sum(a * a, -1)))
    angle = jnp.where(zero, jnp.pi / 2, angle)
    return _scale(1.0 - angle / jnp.pi, temperature)


def pairwise_neg_arc_length(x, y=None, temperature=1.0, eps: float = NORM_EPS) -> Array:
    """``N x M`` matrix of :func:`neg_arc_length` via ``arccos`` of the cosine matrix (one matmul).

    Away from the diagonal, angles below ~3e-4 rad are rounded by float32 cosines; the diagonal of
    ``y=None`` is exact.
    """
    c = pairwise_cosine_similarity(x, y, eps=eps)
    return _scale(1.0 - safe_arccos(c) / jnp.pi, temperature)


def neg_euclidean(x, y, temperature=1.0) -> Array:
    """Negative Euclidean distance ``-||x - y||_2`` (note 004), range ``(-inf, 0]``."""
    return _scale(-euclidean_distance(x, y), temperature)


def pairwise_neg_euclidean(x, y=None, temperature=1.0) -> Array:
    """``N x M`` matrix of :func:`neg_euclidean`."""
    return _scale(-pairwise_euclidean_distance(x, y), temperature)


def dot_product(x, y, temperature=1.0) -> Array:
    """Dot product ``x.y`` (Sohn 2016; paper Appendix F uses it for 1-D embeddings)."""
    x, y = _check_pair(x, y)
    return _scale(jnp.sum(x * y, axis=-1), temperature)


def pairwise_dot_product(x, y=None, temperature=1.0) -> Array:
    """``N x M`` matrix of dot products (one matmul)."""
    x, y, same = _check_matrices(x, y)
    return _scale(_self_gram(x) if same else jnp.matmul(x, y.T, precision=_HIGHEST), temperature)


def exp_neg_distance(d, s0=1.0, temperature=1.0) -> Array:
    """``s_emb = s0 * exp(-d)`` for any distance values ``d`` (paper, text after Eq. 2).

    ``d`` is an array of distances (from any function here); returns the same shape.
    """
    return _scale(s0 * jnp.exp(-jnp.asarray(d)), temperature)


def exp_neg_euclidean(x, y, s0=1.0, temperature=1.0) -> Array:
    """``s0 * exp(-||x - y||_2)``: :func:`exp_neg_distance` of the Euclidean distance."""
    return exp_neg_distance(euclidean_distance(x, y), s0=s0, temperature=temperature)


def pairwise_exp_neg_euclidean(x, y=None, s0=1.0, temperature=1.0) -> Array:
    """``N x M`` matrix of :func:`exp_neg_euclidean`."""
    return exp_neg_distance(pairwise_euclidean_distance(x, y), s0=s0, temperature=temperature)


# --------------------------------------------------------------------------- registry

#: name -> (elementwise, pairwise) for similarities (larger means more similar).
SIMILARITIES: dict[str, tuple[Callable, Callable]] = {
    "cosine": (cosine_similarity, pairwise_cosine_similarity),
    "neg_arc_length": (neg_arc_length, pairwise_neg_arc_length),
    "neg_euclidean": (neg_euclidean, pairwise_neg_euclidean),
    "dot": (dot_product, pairwise_dot_product),
    "exp_neg_euclidean": (exp_neg_euclidean, pairwise_exp_neg_euclidean),
}

#: name -> (elementwise, pairwise) for distances (smaller means more similar).
DISTANCES: dict[str, tuple[Callable, Callable]] = {
    "euclidean": (euclidean_distance, pairwise_euclidean_distance),
    "squared_euclidean": (squared_euclidean_distance, pairwise_squared_euclidean_distance),
    "l1": (l1_distance, pairwise_l1_distance),
    "normalized_l1": (normalized_l1_distance, pairwise_normalized_l1_distance),
}


def _lookup(name: str) -> tuple[str, tuple[Callable, Callable]]:
    if name in SIMILARITIES:
        return "similarity", SIMILARITIES[name]
    if name in DISTANCES:
        return "distance", DISTANCES[name]
    raise ValueError(
        f"unknown similarity or distance {name!r}; known: "
        f"{sorted(SIMILARITIES)} (similarities) and {sorted(DISTANCES)} (distances)"
    )


def similarity_fn(name_or_fn, pairwise: bool = False) -> Callable:
    """The similarity called ``name`` (a distance ``d`` is read as the similarity ``-d``).

    A callable is returned unchanged (it must already be a similarity of the requested form).
    """
    if callable(name_or_fn):
        return name_or_fn
    kind, fns = _lookup(name_or_fn)
    fn = fns[1] if pairwise else fns[0]
    if kind == "similarity":
        return fn
    return lambda *args, **kw: -fn(*args, **kw)


def distance_fn(name_or_fn, pairwise: bool = False) -> Callable:
    """The distance called ``name``; a similarity ``s`` is read as the distance ``-s``.

    Paper Appendix D recasts distances as similarities with ``d -> s0 - s``; ``s0`` cancels in every
    difference of distances (triplet losses), so ``-s`` is used.  A callable is returned unchanged.
    """
    if callable(name_or_fn):
        return name_or_fn
    kind, fns = _lookup(name_or_fn)
    fn = fns[1] if pairwise else fns[0]
    if kind == "distance":
        return fn
    return lambda *args, **kw: -fn(*args, **kw)


def as_distance(name: str) -> Callable:
    """Elementwise distance for ``name`` (see :func:`distance_fn`)."""
    return distance_fn(name, pairwise=False)


def pairwise(name: str) -> Callable:
    """Pairwise form of the similarity or distance called ``name``."""
    return _lookup(name)[1][1]


def similarity_matrix(x, y: Optional[Array] = None, kind: str = "cosine", temperature=1.0) -> Array:
    """``N x M`` matrix of the similarity ``kind`` (a distance name gives ``-distance``)."""
    s = similarity_fn(kind, pairwise=True)(x, y)
    return _scale(s, temperature)
