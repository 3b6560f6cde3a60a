"""The statistics every evaluation reports over runs (seeds): one module for the library, the CLI and the scripts.

* :func:`mean_sem` -- mean and standard error of the mean ``s / sqrt(n)`` (the error bars of the
  paper's figures), ``s`` the sample standard deviation (``ddof = 1``).
* :func:`mean_std` -- mean and ``s`` of a list of per-run values (0 for one run), as a dict.
* :func:`t_interval` -- the two-sided Student-t interval of a mean.
* :func:`welch_test` / :func:`paired_test` -- two-sample t-tests of two sets of runs: Welch's (unequal
  variances) and the paired one (the same seeds under two conditions).
* :func:`percentile_interval` -- the percentile interval of bootstrap draws (every interval of the report card).
* :func:`intervals_overlap` -- whether two intervals share a point (the card's separation test).
* :func:`spearman_brown` -- the Spearman-Brown prophecy ``k r / (1 + (k - 1) r)``.
* :func:`pearson_rows` -- Pearson r of matching rows of two arrays (vectorised over leading axes).
* :func:`split_half_reliability` -- the split-half reliability of pooled proportions over participants,
  Spearman-Brown corrected, with a participant-bootstrap interval (the human noise ceiling).
* :func:`between_group_consistency` -- each group's pooled proportions against the other groups' pooled
  ones (how well one group of people predicts another), with the same bootstrap.

Spearman's rho with ties averaged is :func:`gensim_jax.ranks.spearman_r` (numpy, in the foundation layer:
a training run's similarity scatter reports it too).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

__all__ = [
    "between_group_consistency",
    "intervals_overlap",
    "mean_sem",
    "mean_sem_dict",
    "mean_std",
    "paired_test",
    "pearson_rows",
    "percentile_interval",
    "spearman_brown",
    "split_half_reliability",
    "t_interval",
    "welch_test",
]


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
    from scipy import stats  # here, not at the top: importing scipy.stats takes 1-3 s

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
    from scipy import stats

    r = stats.ttest_ind(x, y, equal_var=False)
    return {"t": float(r.statistic), "dof": float(r.df), "p": float(r.pvalue)}


def paired_test(a, b) -> dict:
    """Paired t-test of ``mean(a - b)`` (runs matched by seed): ``{"t", "dof", "p"}``, two-sided.

    Example:
      >>> paired_test([1.0, 2.0, 4.0], [0.0, 1.0, 2.0])["dof"]
      2.0
    """
    x, y = _two_samples(a, b, paired=True)
    from scipy import stats

    r = stats.ttest_rel(x, y)
    return {"t": float(r.statistic), "dof": float(r.df), "p": float(r.pvalue)}


def percentile_interval(values, confidence: float = 0.95) -> Optional[list]:
    """``[q_a, q_(1-a)]``, ``a = (1 - confidence) / 2``, of the finite entries of ``values`` (bootstrap draws);
    None when there are none (e.g. a correlation undefined in every resample).

    Example:
      >>> [round(q, 9) for q in percentile_interval(np.arange(101.0), 0.9)]
      [5.0, 95.0]
    """
    v = np.asarray([x for x in np.ravel(np.asarray(values, dtype=object)) if x is not None], np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    a = (1.0 - confidence) / 2.0
    return [float(np.quantile(v, a)), float(np.quantile(v, 1.0 - a))]


def intervals_overlap(a, b) -> bool:
    """Whether the closed intervals ``a = [lo, hi]`` and ``b`` share a point.

    Example:
      >>> intervals_overlap([0.0, 1.0], [1.0, 2.0]), intervals_overlap([0.0, 1.0], [1.5, 2.0])
      (True, False)
    """
    return bool(max(a[0], b[0]) <= min(a[1], b[1]))


def spearman_brown(r, factor: float = 2.0):
    """The Spearman-Brown prophecy: the reliability of a measure ``factor`` times as long, ``k r / (1 + (k - 1) r)``.

    With ``factor = 2`` it turns the correlation of two halves of the participants into the reliability
    of the whole sample (Spearman 1910, Brown 1910). Works elementwise on arrays.

    Example:
      >>> float(spearman_brown(0.5))   # 2 * 0.5 / 1.5
      0.6666666666666666
    """
    r = np.asarray(r, np.float64)
    return factor * r / (1.0 + (factor - 1.0) * r)


def pearson_rows(a, b) -> np.ndarray:
    """Pearson r of ``a[..., :]`` with ``b[..., :]`` along the last axis (NaN where either row is constant).

    Example:
      >>> float(pearson_rows([1.0, 2.0, 3.0], [2.0, 4.0, 7.0]).round(4))
      0.9934
    """
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    x = x - x.mean(axis=-1, keepdims=True)
    y = y - y.mean(axis=-1, keepdims=True)
    den = np.sqrt((x * x).sum(axis=-1) * (y * y).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (x * y).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def _check_counts(errors, trials, groups) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    e, n = np.asarray(errors, np.float64), np.asarray(trials, np.float64)
    if e.ndim != 2 or e.shape != n.shape or e.shape[0] < 2 or e.shape[1] < 3:
        raise ValueError(f"errors and trials must be equal (P>=2, K>=3) arrays, got {e.shape} and {n.shape}")
    if np.any(n < 0) or np.any(e < 0) or np.any(e > n):
        raise ValueError("counts must satisfy 0 <= errors <= trials")
    g = np.zeros(len(e), np.int64) if groups is None else np.unique(np.asarray(groups), return_inverse=True)[1]
    if g.shape != (len(e),):
        raise ValueError(f"groups must have one entry per participant ({len(e)}), got shape {np.shape(groups)}")
    if np.bincount(g).min() < 2:
        raise ValueError("every group needs at least 2 participants to be split in halves")
    return e, n, g.reshape(-1)


def _bootstrap_weights(rng, g: np.ndarray) -> np.ndarray:
    """Multiplicities ``(P,)`` of participants resampled with replacement within each group."""
    w = np.zeros(len(g))
    for k in np.unique(g):
        idx = np.flatnonzero(g == k)
        w += np.bincount(rng.choice(idx, len(idx), replace=True), minlength=len(g))
    return w


def _half_masks(rng, w: np.ndarray, g: np.ndarray, splits: int) -> np.ndarray:
    """``(splits, P)`` bool: half A of random splits of the participants with ``w > 0``, halved within each group."""
    keys = rng.random((splits, len(g)))
    a = np.zeros((splits, len(g)), bool)
    for k in np.unique(g):
        idx = np.flatnonzero((g == k) & (w > 0))
        order = np.argsort(keys[:, idx], axis=1)
        a[np.arange(splits)[:, None], idx[order[:, : len(idx) // 2]]] = True
    return a


def _recentre(draws: np.ndarray, point: float) -> np.ndarray:
    """Bootstrap draws of a correlation shifted in Fisher-z space so that their mean is the full-data ``point``.

    A resample with replacement holds about 63% distinct participants, several of them more than once,
    so its pooled rates are noisier than the sample's and a correlation between them is biased low;
    the shift removes that bias (in ``atanh`` space, so a shifted draw stays inside (-1, 1)) and keeps
    the spread, which is what the interval is for.
    """
    z = np.arctanh(np.clip(draws, -1 + 1e-12, 1 - 1e-12))
    ok = np.isfinite(z)
    if not ok.any():
        return draws
    shift = np.mean(z[ok]) - np.arctanh(np.clip(point, -1 + 1e-12, 1 - 1e-12))
    return np.tanh(z - shift)


def _pooled(w, errors, trials) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ errors) / (w @ trials)


def split_half_reliability(
    errors,
    trials,
    groups=None,
    *,
    splits: int = 200,
    resamples: int = 1000,
    splits_per_resample: int = 10,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """Split-half reliability of pooled proportions, Spearman-Brown corrected, with a bootstrap interval.

    The participants (stratified by ``groups``: each group halved) are split at random into two halves;
    each half's pooled proportion per condition is ``sum errors / sum trials`` over its participants; the
    halves' Pearson r over the ``K`` conditions is averaged over ``splits`` random splits and corrected
    to the whole sample by :func:`spearman_brown` (``2 r / (1 + r)``). That is the reliability of the
    whole sample's proportions (Brain-Score's behavioural ceiling; rsatoolbox's split-half estimate).
    Interval: percentile bootstrap over participants (resampled with replacement within each group,
    a resampled participant's copies kept in one half), ``splits_per_resample`` splits per resample,
    the draws recentred on the full-data estimate in Fisher-z space (:func:`_recentre`: a resample's
    repeated participants bias its reliability low; the shift keeps the spread and removes that bias).

    Args:
      errors, trials: ``(P, K)`` counts per participant and condition.
      groups: ``(P,)`` stratum of each participant (None: one group); each needs 2 or more.

    Returns:
      ``{"reliability", "split_half_r", "interval", "draws" (resamples,), "participants", "splits",
      "resamples", "confidence"}``.
    """
    e, n, g = _check_counts(errors, trials, groups)
    rng = np.random.default_rng([int(seed), 42_001])
    ones = np.ones(len(e))
    a = _half_masks(rng, ones, g, int(splits))
    r = pearson_rows(_pooled(a * ones, e, n), _pooled(~a * ones, e, n))
    r_mean = float(np.nanmean(r))
    draws = np.empty(int(resamples))
    for b in range(int(resamples)):
        w = _bootstrap_weights(rng, g)
        m = _half_masks(rng, w, g, int(splits_per_resample))
        draws[b] = spearman_brown(np.nanmean(pearson_rows(_pooled(m * w, e, n), _pooled(~m * w, e, n))))
    draws = _recentre(draws, float(spearman_brown(r_mean)))
    return {
        "reliability": float(spearman_brown(r_mean)),
        "split_half_r": r_mean,
        "interval": percentile_interval(draws, confidence) if resamples else None,
        "draws": draws,
        "participants": int(len(e)),
        "splits": int(splits),
        "resamples": int(resamples),
        "confidence": float(confidence),
    }


def between_group_consistency(
    errors, trials, groups, *, resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> dict:
    """How well one group of people predicts the others: Pearson r of each group's pooled proportions with the
    pooled proportions of all other groups, and their mean, with a participant-bootstrap interval
    (resampled within each group, draws recentred as in :func:`split_half_reliability`).

    Args:
      errors, trials: ``(P, K)`` counts; groups: ``(P,)`` group names (at least two groups).

    Returns:
      ``{"mean", "interval", "draws", "groups": {name: {"r", "interval"}}, "resamples", "confidence"}``.
    """
    e, n, g = _check_counts(errors, trials, groups)
    names = list(np.unique(np.asarray(groups)))
    if len(names) < 2:
        raise ValueError("between_group_consistency needs at least two groups")
    member = np.stack([g == k for k in range(len(names))]).astype(np.float64)  # (G, P)

    def per_group(w):
        own = _pooled(member * w, e, n)
        rest = _pooled((1.0 - member) * w, e, n)
        return pearson_rows(own, rest)  # (G,)

    point = per_group(np.ones(len(e)))
    rng = np.random.default_rng([int(seed), 42_002])
    draws = np.array([per_group(_bootstrap_weights(rng, g)) for _ in range(int(resamples))]).reshape(-1, len(names))
    draws = np.stack([_recentre(draws[:, i], float(point[i])) for i in range(len(names))], axis=1)
    return {
        "mean": float(np.mean(point)),
        "interval": percentile_interval(draws.mean(axis=1), confidence) if resamples else None,
        "draws": draws.mean(axis=1),
        "groups": {
            str(k): {
                "r": float(point[i]),
                "interval": percentile_interval(draws[:, i], confidence) if resamples else None,
            }
            for i, k in enumerate(names)
        },
        "resamples": int(resamples),
        "confidence": float(confidence),
    }
