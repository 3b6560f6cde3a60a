"""Rank statistics in numpy: average ranks with ties, and Spearman's rho.

* :func:`average_ranks` -- ranks ``1..n``, a run of equal values sharing the mean of the ranks it spans.
* :func:`spearman_r` -- Spearman's rho, Pearson r of those ranks (``scipy.stats.spearmanr``'s value).

Here and not in :mod:`gensim_jax.evaluation.statistics` because a training run reports rho too (the title
of its similarity scatter, :func:`gensim_jax.training.records.similarity_scatter_image`), and the training
layer may not import evaluation; and in numpy, because importing ``scipy.stats`` costs 1-3 s, which every
training process paid for one number.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["average_ranks", "spearman_r"]


def average_ranks(values) -> np.ndarray:
    """Ranks ``1..n`` of a 1-d array, each run of equal values sharing the mean of the ranks it spans.

    The ranks of Spearman's rho with ties (``scipy.stats.rankdata``'s ``"average"`` rule): a value with
    ``k`` smaller values and ``m`` equal ones (itself included) gets ``k + (m + 1) / 2``. Infinities rank
    as the largest and smallest values; NaN is refused (it has no place in an order).

    Example:
      >>> average_ranks([10.0, 30.0, 20.0, 20.0]).tolist()
      [1.0, 4.0, 2.5, 2.5]
    """
    x = np.asarray(values, np.float64)
    if x.ndim != 1:
        raise ValueError(f"values must be a 1-d array, got shape {x.shape}")
    if np.isnan(x).any():
        raise ValueError("values must not be NaN")
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # first position of each run of ties
    ends = np.r_[starts[1:], x.size]  # one past its last
    ranks = np.empty(x.size)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)  # mean of ranks start+1 .. end
    return ranks


def spearman_r(a, b) -> float:
    """Spearman's rho of two equal-length 1-d arrays: Pearson r of their :func:`average_ranks`.

    ``rho = cov(R(a), R(b)) / (sd(R(a)) sd(R(b)))`` with ties averaged, the value
    ``scipy.stats.spearmanr(a, b).statistic`` gives; NaN when either array is constant, or holds a NaN
    (scipy's default ``nan_policy``).

    Example:
      >>> spearman_r([1.0, 2.0, 3.0, 4.0], [1.0, 4.0, 9.0, 16.0])
      1.0
    """
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.ndim != 1 or x.shape != y.shape or x.size < 2:
        raise ValueError(f"a and b must be 1-d arrays of the same length >= 2, got shapes {x.shape} and {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        return math.nan
    rx, ry = average_ranks(x), average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float((rx * rx).sum() * (ry * ry).sum()))
    return float((rx * ry).sum() / den) if den > 0 else math.nan
