r"""Class-identity generative similarity: the model behind class triplets and SupCon (paper Appendix A).

Generative model (end of paper Appendix A): a class ``c ~ Categorical(pi)`` is drawn, then an
example ``x ~ p(x | c)``. Labelled data means every example carries exactly one label ``y(x)``:
``p(x | c) = 0`` unless ``c = y(x)`` (disjoint supports).

Derivation (paper Eq. 1 with ``theta = c``)::

    p_same(x1, x2) = sum_c pi_c p(x1 | c) p(x2 | c)
                   = [y1 == y2] * pi_{y1} p(x1 | y1) p(x2 | y1)      (only c = y1 = y2 survives)
    p_diff(x1, x2) = (sum_c pi_c p(x1 | c)) (sum_c pi_c p(x2 | c))
                   = pi_{y1} p(x1 | y1) * pi_{y2} p(x2 | y2)
    s(x1, x2)      = p_same / p_diff = [y1 == y2] / pi_{y1}

so ``log s = log(1 / pi_c) = -log pi_c`` for two examples of the same class ``c`` and ``-inf`` for
examples of different classes; the within-class likelihoods cancel. With uniform classes
``log s = log C`` on the diagonal. Sampling triplets from this model (``x, x+`` from one class,
``x-`` from an independently drawn class; paper Eq. A3) gives the class-triplet / SupCon baselines.

Finite conventions. ``-inf`` cannot be regressed onto. Two options are provided:

* ``log_floor``: replace the ``-inf`` of different-class pairs by a finite constant (a modelling
  choice, not part of Eq. 1; e.g. ``-log C`` mirrors the same-class value ``log C`` of a uniform
  prior, which suits an affine map onto ``[-1, 1]``). ``log_floor=None`` keeps the exact ``-inf``.
* :func:`noisy_label_log_similarity_table`: the exact kernel of a slightly richer generative model
  in which an observed label equals the true class with probability ``1 - eps`` and is uniform over
  the ``C`` classes otherwise. It is finite for ``eps > 0``, equals the exact kernel as
  ``eps -> 0``, and is identically 0 (labels carry no information) at ``eps = 1``.

Tables are ``C x C``; :func:`pairwise_log_similarity` and :func:`table_lookup` turn labels into
``N x M`` (or elementwise) targets by gathering from a table.

Example:
    >>> import jax.numpy as jnp, numpy as np
    >>> from gensim_jax.kernels import categorical
    >>> pi = jnp.full(4, 0.25)
    >>> s = categorical.pairwise_log_similarity(jnp.array([0, 1]), jnp.array([0, 2]), pi, log_floor=-1.0)
    >>> np.asarray(s, dtype=float).round(4).tolist()
    [[1.3863, -1.0], [-1.0, -1.0]]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from gensim_jax.kernels._numeric_checks import check_ndim, concrete_value

__all__ = [
    "check_class_probs",
    "uniform_class_probs",
    "log_similarity_table",
    "noisy_label_log_similarity_table",
    "log_similarity",
    "pairwise_log_similarity",
    "table_lookup",
    "pairwise_table_lookup",
]


def check_class_probs(class_probs, atol: float = 1e-5) -> None:
    """Check class probabilities ``pi`` of shape ``(C,)``: ``C >= 1``, floating, each in ``(0, 1]``, summing to 1.

    The prior of the class-identity model (paper Appendix A, ``c ~ Categorical(pi)``); every
    function here, :mod:`~gensim_jax.kernels.monte_carlo`'s class samplers and
    :func:`gensim_jax.testing.categorical_model` call it. Under ``jit`` (a traced ``class_probs``)
    only the shape is checked.

    Raises:
      ValueError: wrong rank, no class, a value outside ``(0, 1]``, or a sum off 1 by more than ``atol``.
      TypeError: a non-floating array.

    Example:
      >>> check_class_probs(uniform_class_probs(4))
      >>> check_class_probs(jnp.array([0.5, 0.6]))
      Traceback (most recent call last):
      ...
      ValueError: class_probs must sum to 1 (atol=1e-05); got sum 1.1... over 2 classes
    """
    check_ndim("class_probs", jnp.shape(class_probs), 1)
    if jnp.shape(class_probs)[0] < 1:
        raise ValueError("class_probs must have at least one class; got shape (0,)")
    v = concrete_value(class_probs)
    if v is None:
        return
    if not np.issubdtype(v.dtype, np.floating):
        raise TypeError(f"class_probs must be a floating array; got dtype {v.dtype}")
    bad = ~(np.isfinite(v) & (v > 0) & (v <= 1))
    if np.any(bad):
        raise ValueError(
            f"class_probs must lie in (0, 1]; got {v[np.argmax(bad)]!r} at index {int(np.argmax(bad))} "
            f"(shape {v.shape})"
        )
    if abs(float(v.sum()) - 1.0) > atol:
        raise ValueError(f"class_probs must sum to 1 (atol={atol}); got sum {float(v.sum())!r} over {v.size} classes")


def _check_log_floor(log_floor) -> None:
    if log_floor is None:
        return
    v = concrete_value(log_floor)
    if v is not None and (v.shape != () or not np.isfinite(v)):
        raise ValueError(f"log_floor must be a finite scalar or None; got {log_floor!r}")


def _check_labels(name: str, labels, num_classes: int) -> None:
    arr = jnp.asarray(labels) if concrete_value(labels) is not None else labels
    if not jnp.issubdtype(arr.dtype, jnp.integer):
        raise TypeError(f"{name} must be integer class labels; got dtype {arr.dtype}")
    v = concrete_value(labels)
    if v is None or v.size == 0:
        return
    if v.min() < 0 or v.max() >= num_classes:
        raise ValueError(
            f"{name} must lie in [0, {num_classes}) for {num_classes} classes; got range [{v.min()}, {v.max()}]"
        )


def uniform_class_probs(num_classes: int, dtype=jnp.float32) -> jax.Array:
    """Uniform class prior ``pi_c = 1 / C`` (the prior of the paper's class-triplet baselines).

    Example:
      >>> uniform_class_probs(4).tolist()
      [0.25, 0.25, 0.25, 0.25]
    """
    if int(num_classes) != num_classes or num_classes < 1:
        raise ValueError(f"num_classes must be a positive integer; got {num_classes!r}")
    return jnp.full((int(num_classes),), 1.0 / num_classes, dtype)


def _floor_value(log_floor, dtype):
    return jnp.asarray(-jnp.inf if log_floor is None else log_floor, dtype)


def log_similarity_table(class_probs, log_floor=None) -> jax.Array:
    """``C x C`` table of the class-identity log similarity (paper Appendix A; derivation in module docstring).

    ``table[c, c] = -log pi_c`` and ``table[c, c'] = log_floor`` (``-inf`` if ``None``) for ``c != c'``.

    Args:
      class_probs: ``(C,)`` class prior, entries in ``(0, 1]`` summing to one.
      log_floor: finite value used for different-class pairs, or ``None`` for the exact ``-inf``.

    Returns:
      ``(C, C)`` table.

    Raises:
      ValueError: ``class_probs`` not a probability vector; ``log_floor`` not a finite scalar.

    Example:
      >>> import jax.numpy as jnp, numpy as np
      >>> np.asarray(log_similarity_table(jnp.array([0.5, 0.5]), log_floor=0.0), dtype=float).round(4).tolist()
      [[0.6931, 0.0], [0.0, 0.6931]]
    """
    check_class_probs(class_probs)
    _check_log_floor(log_floor)
    pi = jnp.asarray(class_probs)
    c = pi.shape[0]
    return jnp.where(jnp.eye(c, dtype=bool), -jnp.log(pi)[:, None], _floor_value(log_floor, pi.dtype))


def noisy_label_log_similarity_table(class_probs, label_noise) -> jax.Array:
    r"""Exact ``C x C`` log similarity when labels are flipped to a uniform class with probability ``eps``.

    Model: ``c ~ pi``; the observed label is ``y = c`` with probability ``1 - eps`` and uniform over
    the ``C`` classes with probability ``eps``, i.e. ``p(y | c) = (1 - eps) [y = c] + eps / C``.
    Then (paper Eq. 1 with ``theta = c``, summing over ``c`` in closed form, ``sum_c pi_c = 1``)::

        p_same(y1, y2) = (1-eps)^2 pi_{y1} [y1 = y2] + (1-eps)(eps/C)(pi_{y1} + pi_{y2}) + (eps/C)^2
        q(y)           = (1-eps) pi_y + eps / C
        log s(y1, y2)  = log p_same(y1, y2) - log q(y1) - log q(y2).

    A finite, generative-model-consistent replacement for the ``-inf`` of
    :func:`log_similarity_table` (which it recovers as ``eps -> 0``).

    Args:
      class_probs: ``(C,)`` class prior in ``(0, 1]`` summing to one.
      label_noise: ``eps`` in ``(0, 1]`` (scalar).

    Returns:
      ``(C, C)`` finite table.

    Raises:
      ValueError: ``class_probs`` invalid or ``label_noise`` outside ``(0, 1]``.

    Example:
      >>> import jax.numpy as jnp
      >>> t = noisy_label_log_similarity_table(jnp.full(3, 1 / 3), 1e-3)
      >>> bool(t[0, 1] < 0 < t[0, 0])
      True
    """
    check_class_probs(class_probs)
    eps_val = concrete_value(label_noise)
    if eps_val is not None and (eps_val.shape != () or not (0.0 < float(eps_val) <= 1.0)):
        raise ValueError(f"label_noise must be a scalar in (0, 1]; got {label_noise!r}")
    return _noisy_table(jnp.asarray(class_probs), label_noise)


@jax.jit
def _noisy_table(pi, label_noise):
    dtype = jnp.result_type(pi.dtype, float)
    pi = pi.astype(dtype)
    eps = jnp.asarray(label_noise, dtype)
    c = pi.shape[0]
    u = eps / c
    keep = 1.0 - eps
    same = keep * keep * jnp.diag(pi) + keep * u * (pi[:, None] + pi[None, :]) + u * u
    log_q = jnp.log(keep * pi + u)
    return jnp.log(same) - log_q[:, None] - log_q[None, :]


def table_lookup(table, y1, y2) -> jax.Array:
    """Elementwise lookup ``table[y1, y2]`` with broadcasting of the label arrays.

    Use it with any ``C x C`` table (e.g. :func:`noisy_label_log_similarity_table`).

    Args:
      table: ``(C, C)`` log similarities; y1, y2: integer labels, broadcastable shapes.

    Returns:
      ``table[y1, y2]`` with shape ``broadcast(y1.shape, y2.shape)``.
    """
    check_ndim("table", jnp.shape(table), 2)
    c = jnp.shape(table)[0]
    _check_labels("y1", y1, c)
    _check_labels("y2", y2, jnp.shape(table)[1])
    return jnp.asarray(table)[y1, y2]


def pairwise_table_lookup(table, y1, y2) -> jax.Array:
    """All-pairs lookup ``out[n, m] = table[y1[n], y2[m]]``.

    Args:
      table: ``(C, C)``; y1: ``(N,)`` integer labels; y2: ``(M,)`` integer labels.

    Returns:
      ``(N, M)`` array.
    """
    check_ndim("y1", jnp.shape(y1), 1)
    check_ndim("y2", jnp.shape(y2), 1)
    return table_lookup(table, jnp.asarray(y1)[:, None], jnp.asarray(y2)[None, :])


def log_similarity(y1, y2, class_probs, log_floor=None) -> jax.Array:
    """Class-identity log similarity from labels, elementwise (paper Appendix A; module docstring).

    ``-log pi_{y1}`` where ``y1 == y2``, else ``log_floor`` (``-inf`` when ``None``).

    Args:
      y1: integer labels, any shape; y2: integer labels broadcastable with ``y1``.
      class_probs: ``(C,)`` class prior.
      log_floor: finite value for different-class pairs, or ``None`` for the exact ``-inf``.

    Returns:
      Array of shape ``broadcast(y1.shape, y2.shape)``.

    Raises:
      ValueError: labels outside ``[0, C)`` (concrete inputs), invalid ``class_probs``/``log_floor``.
      TypeError: labels not integers.

    Example:
      >>> import jax.numpy as jnp, numpy as np
      >>> s = log_similarity(jnp.array([0, 1]), jnp.array([0, 0]), jnp.array([0.25, 0.75]), log_floor=-2.0)
      >>> np.asarray(s, dtype=float).round(4).tolist()
      [1.3863, -2.0]
    """
    check_class_probs(class_probs)
    _check_log_floor(log_floor)
    c = jnp.shape(class_probs)[0]
    _check_labels("y1", y1, c)
    _check_labels("y2", y2, c)
    pi = jnp.asarray(class_probs)
    y1 = jnp.asarray(y1)
    y2 = jnp.asarray(y2)
    return jnp.where(y1 == y2, -jnp.log(pi)[y1], _floor_value(log_floor, pi.dtype))


def pairwise_log_similarity(y1, y2, class_probs, log_floor=None) -> jax.Array:
    """Class-identity log similarity for all pairs of labels: ``(N,), (M,) -> (N, M)`` (paper Appendix A).

    Args:
      y1: ``(N,)`` integer labels; y2: ``(M,)`` integer labels; class_probs: ``(C,)``;
      log_floor: finite value for different-class pairs, or ``None`` for ``-inf``.

    Returns:
      ``(N, M)`` matrix; equals ``log_similarity_table(class_probs, log_floor)[y1[:, None], y2[None, :]]``.
    """
    check_ndim("y1", jnp.shape(y1), 1)
    check_ndim("y2", jnp.shape(y2), 1)
    return log_similarity(jnp.asarray(y1)[:, None], jnp.asarray(y2)[None, :], class_probs, log_floor)
