"""The statistics every evaluation reports over runs (seeds): one module for the library, the CLI and the scripts.

* :func:`mean_sem` -- mean and standard error of the mean ``s / sqrt(n)`` (the error bars of the
  paper's figures), ``s`` the sample standard deviation (``ddof = 1``).
* :func:`mean_std` -- mean and ``s`` of a list of per-run values (0 for one run), as a dict.
* :func:`t_interval` -- the two-sided Student-t interval of a mean.
* :func:`welch_test` / :func:`paired_test` -- two-sample t-tests of two sets of runs: Welch's (unequal
  variances) and the paired one (the same seeds under two conditions).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["mean_sem", "mean_sem_dict", "mean_std", "paired_test", "t_interval", "welch_test"]


def mean_sem(values, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of the mean ``std(ddof=1) / sqrt(n)`` along ``axis``.

    With a single value along ``axis`` the s.e.m. is 0 (one run has no spread to show).

    Args:
      values: array with ``n >= 1`` entries along ``axis``.

    Returns:
      ``(mean, sem)`` with ``axis`` removed.

    Example:
      >>> m, s = mean_sem([1.0, 3.0])
      >>> float(m), float(s)
      (2.0, 1.0)
    """
    v = np.asarray(values, np.float64)
    if v.ndim == 0 or v.shape[axis] == 0:
        raise ValueError(f"values need at least one entry along axis {axis}, got shape {v.shape}")
    n = v.shape[axis]
    sem = v.std(axis=axis, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(v.mean(axis=axis))
    return v.mean(axis=axis), sem


def mean_sem_dict(values) -> dict:
    """``{"mean", "sem", "runs"}`` over runs (axis 0) of :func:`mean_sem`; s.e.m. 0 for one run."""
    m, s = mean_sem(values)
    return {"mean": m, "sem": s, "runs": len(np.asarray(values))}


def mean_std(values) -> tuple[float, float]:
    """``(mean, sample standard deviation)`` of per-run values; the deviation is 0 for a single run.

    Example:
      >>> mean_std([1.0, 3.0])
      (2.0, 1.4142135623730951)
    """
    v = np.asarray(values, np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"values must be a non-empty 1-d list of per-run numbers, got shape {v.shape}")
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def t_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """Two-sided Student-t interval of the mean of ``values``: ``(mean, low, high)``.

    ``mean +- t_{(1 + confidence) / 2}(n - 1) * s / sqrt(n)``, ``s`` the sample standard deviation
    (``ddof = 1``), ``t_q(k)`` the ``q`` quantile of Student's t with ``k`` degrees of freedom.

    Args:
      values: ``(n,)`` finite numbers, ``n >= 2`` (one run has no spread to estimate).
      confidence: in ``(0, 1)``.

    Example:
      >>> m, lo, hi = t_interval([0.0, 1.0])   # t_0.975(1) = 12.706, s / sqrt(2) = 0.5
      >>> round(hi - m, 3)
      6.353
    """
    v = np.asarray(values, np.float64)
    if v.ndim != 1 or v.size < 2:
        raise ValueError(f"values must be a 1-d array of at least 2 numbers, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    n = v.size
    mean = float(v.mean())
    half = float(stats.t.ppf(0.5 + confidence / 2.0, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half


def _two_samples(a, b, paired: bool) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.ndim != 1 or y.ndim != 1 or x.size < 2 or y.size < 2:
        raise ValueError(f"each sample needs at least 2 runs, got {x.shape} and {y.shape}")
    if paired and x.size != y.size:
        raise ValueError(f"a paired test needs samples of one length, got {x.size} and {y.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("samples must be finite")
    return x, y


def welch_test(a, b) -> dict:
    """Welch's two-sample t-test of ``mean(a) - mean(b)`` (unequal variances): ``{"t", "dof", "p"}``, two-sided.

    ``t = (mean_a - mean_b) / sqrt(s_a^2 / n_a + s_b^2 / n_b)`` with Welch-Satterthwaite degrees of freedom.

    Example:
      >>> round(welch_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])["t"], 3)
      -3.674
    """
    x, y = _two_samples(a, b, paired=False)
    r = stats.ttest_ind(x, y, equal_var=False)
    return {"t": float(r.statistic), "dof": float(r.df), "p": float(r.pvalue)}


def paired_test(a, b) -> dict:
    """Paired t-test of ``mean(a - b)`` (runs matched by seed): ``{"t", "dof", "p"}``, two-sided.

    Example:
      >>> paired_test([1.0, 2.0, 4.0], [0.0, 1.0, 2.0])["dof"]
      2.0
    """
    x, y = _two_samples(a, b, paired=True)
    r = stats.ttest_rel(x, y)
    return {"t": float(r.statistic), "dof": float(r.df), "p": float(r.pvalue)}
