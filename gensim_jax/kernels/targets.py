"""Turn log generative similarities into regression targets on the scale of an embedding similarity (Eq. 2).

Paper Eq. 2 regresses an embedding similarity onto the generative similarity. The kernels in this
package return ``log s``, whose range depends on the model (``log C`` for classes, ``n log 2`` minus a
divergent scale for Beta-Bernoulli features, unbounded for Gaussian mixtures), while a cosine
similarity lives in ``[-1, 1]``. Three documented choices, all pure and jit-able:

* ``raw``: the target is ``log s`` itself.
* ``affine``: ``2 (log s - lo) / (hi - lo) - 1`` with ``lo, hi`` the min and max of ``log s`` over
  a reference table (e.g. all pairs of the training classes/feature vectors), so the table maps
  exactly onto ``[-1, 1]``; values outside the table's range map outside ``[-1, 1]`` (no clipping).
* ``standardized``: ``(log s - mean) / std`` with the mean and standard deviation over a table.

What the paper used: raw targets -- cosine similarity regressed onto ``log s`` for the ImageNet
hierarchy (Sec. 3.3: "the mean squared error between the cosine similarity and log[s(x_i, x_j)]";
Appendix N instead says onto "their generative similarity measure as defined in Equation 4", i.e.
``s`` itself: the table transform ``exp`` of :func:`transform_table`) and onto the log tree kernel
for Geoclidean (Appendix M); for the quadrilaterals (Appendix L) the Euclidean embedding distance
regressed onto the Euclidean distance between feature vectors. ``affine`` and ``standardized`` are
our additions for matching ranges.

Tables must be finite: replace the ``-inf`` of the exact class-identity kernel first (see
``categorical.log_similarity_table(..., log_floor=...)``).

Example:
    >>> import jax.numpy as jnp
    >>> from gensim_jax.kernels import targets
    >>> table = jnp.array([[2.0, -1.0], [-1.0, 2.0]])
    >>> targets.regression_target(table, "affine", table).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from gensim_jax.kernels._numeric_checks import concrete_value

__all__ = [
    "METHODS",
    "raw",
    "table_range",
    "affine",
    "table_moments",
    "standardized",
    "regression_target",
    "TABLE_TRANSFORMS",
    "transform_table",
]

METHODS = ("raw", "affine", "standardized")
#: The transforms of :func:`transform_table`: :data:`METHODS` plus ``unit`` (onto ``[0, 1]``) and ``exp``
#: (``s`` itself).
TABLE_TRANSFORMS = ("unit", "raw", "exp", "affine", "standardized")


def _check_finite_table(table) -> None:
    if jnp.size(table) == 0:
        raise ValueError(f"table must be non-empty; got shape {jnp.shape(table)}")
    v = concrete_value(table)
    if v is not None and not np.all(np.isfinite(v)):
        raise ValueError(
            f"table must be finite (got {int(np.sum(~np.isfinite(v)))} non-finite of {v.size} entries); "
            "replace -inf by a floor first"
        )


def raw(log_s) -> jax.Array:
    """Raw target: ``log s`` unchanged (what the paper regresses onto, Appendices M, N).

    Args:
      log_s: any shape.

    Returns:
      ``log_s`` as a floating array of the same shape.
    """
    x = jnp.asarray(log_s)
    return x.astype(jnp.result_type(x.dtype, float))


def table_range(table) -> tuple[jax.Array, jax.Array]:
    """Minimum and maximum of a finite table of ``log s`` values (for :func:`affine`).

    Args:
      table: any shape, finite, non-empty (e.g. a ``C x C`` or ``B x B`` matrix).

    Returns:
      ``(lo, hi)`` scalars.
    """
    _check_finite_table(table)
    t = raw(table)
    return jnp.min(t), jnp.max(t)


def affine(log_s, table_min, table_max) -> jax.Array:
    """Affine map of ``log s`` onto ``[-1, 1]`` over a table: ``2 (log s - lo) / (hi - lo) - 1``.

    Args:
      log_s: any shape.
      table_min: ``lo``, the table minimum (scalar). table_max: ``hi > lo`` (scalar).

    Returns:
      Array shaped like ``log_s``; ``lo -> -1``, ``hi -> 1``; not clipped.

    Raises:
      ValueError: ``table_max <= table_min`` or non-finite bounds (concrete inputs).

    Example:
      >>> affine(jnp.array([0.0, 1.0, 2.0]), 0.0, 2.0).tolist()
      [-1.0, 0.0, 1.0]
    """
    lo, hi = concrete_value(table_min), concrete_value(table_max)
    if lo is not None and hi is not None:
        if lo.shape != () or hi.shape != ():
            raise ValueError(f"table_min and table_max must be scalars; got shapes {lo.shape} and {hi.shape}")
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            raise ValueError(f"need finite table_min < table_max; got table_min={float(lo)!r}, table_max={float(hi)!r}")
    x = raw(log_s)
    lo_ = jnp.asarray(table_min, x.dtype)
    hi_ = jnp.asarray(table_max, x.dtype)
    return 2.0 * (x - lo_) / (hi_ - lo_) - 1.0


def table_moments(table) -> tuple[jax.Array, jax.Array]:
    """Mean and (population) standard deviation of a finite table of ``log s`` values (for :func:`standardized`).

    Args:
      table: any shape, finite, non-empty.

    Returns:
      ``(mean, std)`` scalars.
    """
    _check_finite_table(table)
    t = raw(table)
    return jnp.mean(t), jnp.std(t)


def standardized(log_s, table_mean, table_std) -> jax.Array:
    """z-score of ``log s`` against table statistics: ``(log s - mean) / std``.

    Args:
      log_s: any shape. table_mean: scalar. table_std: scalar ``> 0``.

    Returns:
      Array shaped like ``log_s``.

    Raises:
      ValueError: ``table_std <= 0`` or non-finite statistics (concrete inputs).

    Example:
      >>> standardized(jnp.array([1.0, 3.0]), 2.0, 1.0).tolist()
      [-1.0, 1.0]
    """
    m, s = concrete_value(table_mean), concrete_value(table_std)
    if m is not None and s is not None:
        if m.shape != () or s.shape != ():
            raise ValueError(f"table_mean and table_std must be scalars; got shapes {m.shape} and {s.shape}")
        if not (np.isfinite(m) and np.isfinite(s) and s > 0):
            raise ValueError(f"need finite table_mean and table_std > 0; got {float(m)!r}, {float(s)!r}")
    x = raw(log_s)
    return (x - jnp.asarray(table_mean, x.dtype)) / jnp.asarray(table_std, x.dtype)


def regression_target(log_s, method: str = "raw", table=None) -> jax.Array:
    """Regression target for paper Eq. 2 from ``log s``, by name: ``"raw"``, ``"affine"`` or ``"standardized"``.

    Args:
      log_s: log similarities, any shape (e.g. the ``B x B`` batch matrix).
      method: one of :data:`METHODS` (a static Python string).
      table: reference table of ``log s`` values whose statistics define ``affine``/``standardized``
        (e.g. the full ``C x C`` class table); defaults to ``log_s`` itself (batch statistics).

    Returns:
      Array shaped like ``log_s``.

    Raises:
      ValueError: unknown ``method``; non-finite or constant table.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if method == "raw":
        return raw(log_s)
    ref = log_s if table is None else table
    if method == "affine":
        lo, hi = table_range(ref)
        return affine(log_s, lo, hi)
    mean, std = table_moments(ref)
    return standardized(log_s, mean, std)


def transform_table(log_table, transform: str = "unit", reference=None) -> np.ndarray:
    """The regression-target table of a precomputed ``(C, C)`` table of ``log s`` (host side, numpy).

    The table-valued targets of the experiments (the hierarchy kernel over class labels, paper
    Eq. 4; the log tree kernel over Geoclidean programs, Appendix M) are transformed once, here,
    and then gathered by id inside the step. The maps, with ``L`` the log similarity and the
    constants taken from ``reference`` (default: the table itself), never from a batch:

    * ``unit``: ``(L - lo) / (hi - lo)``, ``lo, hi`` the minimum and maximum of the reference: the
      reference maps exactly onto ``[0, 1]`` (the most similar pair -> 1, the least -> 0), the
      range of a cosine between non-negative (post-ReLU) embeddings. Our choice; not clipped.
    * ``raw``: ``L`` unchanged (the paper's literal target, Appendices M, N).
    * ``exp``: ``exp(L) = s``, the similarity itself: what Appendix N's text literally regresses the
      cosine onto for the hierarchy ("their generative similarity measure as defined in Equation 4",
      ``s`` of Eq. 4, ``>= 1`` everywhere), where Sec. 3.3 says ``log s``. No constants; ``reference``
      is not used. A table whose ``exp`` overflows the dtype raises.
    * ``affine``: ``2 (L - lo) / (hi - lo) - 1``, onto ``[-1, 1]`` (as :func:`affine`).
    * ``standardized``: ``(L - mean) / std`` (population std of the reference, as :func:`standardized`).

    ``unit``, ``raw`` and ``exp`` are computed with numpy in the table's floating dtype (constants as Python
    floats). ``affine`` and ``standardized`` are :func:`affine` and :func:`standardized` in float32
    with the statistics of :func:`table_range` / :func:`table_moments` of the float32 reference:
    the maps :meth:`gensim_jax.training.objectives.Target.with_transform` applies inside the step,
    so a table transformed here holds the values the step computed from the raw table.

    Args:
      log_table: ``(C, C)`` finite table of ``log s`` (any floating dtype; integers become float64).
      transform: one of :data:`TABLE_TRANSFORMS`.
      reference: finite array of ``log s`` whose statistics define the map (e.g. the block of the
        training classes or programs); default ``log_table``.

    Returns:
      ``(C, C)`` numpy array of targets (the table's floating dtype; float32 for ``affine`` and
      ``standardized``).

    Raises:
      ValueError: unknown ``transform``; a non-square, empty or non-finite table or reference; a
        constant reference for ``unit``/``affine``/``standardized``; ``exp`` overflowing the dtype.

    Example:
      >>> table = np.array([[0.0, -2.0], [-2.0, 0.0]], np.float32)
      >>> transform_table(table, "unit").tolist()
      [[1.0, 0.0], [0.0, 1.0]]
      >>> transform_table(table, "affine").tolist()
      [[1.0, -1.0], [-1.0, 1.0]]
      >>> transform_table(np.log(np.array([[4.0, 1.0], [1.0, 2.0]])), "exp").round(6).tolist()
      [[4.0, 1.0], [1.0, 2.0]]
    """
    if transform not in TABLE_TRANSFORMS:
        raise ValueError(f"transform must be one of {TABLE_TRANSFORMS}; got {transform!r}")
    t = np.asarray(log_table)
    if not np.issubdtype(t.dtype, np.floating):
        t = t.astype(np.float64)
    if t.ndim != 2 or t.shape[0] != t.shape[1] or t.size == 0:
        raise ValueError(f"log_table must be a non-empty square (C, C) table; got shape {t.shape}")
    ref = t if reference is None else np.asarray(reference)
    for name, v in (("log_table", t), ("reference", ref)):
        if v.size == 0 or not np.all(np.isfinite(v)):
            raise ValueError(f"{name} must be non-empty and finite; replace -inf by a floor first")
    if transform == "raw":
        return t.copy()
    if transform == "exp":
        with np.errstate(over="ignore"):
            out = np.exp(t)
        if not np.all(np.isfinite(out)):
            raise ValueError(
                f"exp of log_table overflows {t.dtype} (max log s = {float(t.max())!r}); use another transform"
            )
        return out
    if transform == "unit":
        lo, hi = float(ref.min()), float(ref.max())
        if not hi > lo:
            raise ValueError(f"the reference table is constant ({lo}); no {transform} transform")
        return (t - lo) / (hi - lo)
    t32, ref32 = t.astype(np.float32), np.asarray(ref, np.float32)
    a, b = table_range(ref32) if transform == "affine" else table_moments(ref32)
    a, b = float(a), float(b)
    if not (b > a if transform == "affine" else b > 0):
        raise ValueError(f"the reference table is constant ({a}); no {transform} transform")
    fn = affine if transform == "affine" else standardized
    return np.asarray(fn(t32, a, b))
