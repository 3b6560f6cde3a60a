"""The oddball observer: read-outs of trial embeddings ``(T, N, D)`` (paper Sec. 3.1), how the images were made aside.

* :func:`oddball_choices` -- the paper's argmax rule: the item farthest (Euclidean) from the trial's mean
  embedding (after Sable-Meyer et al. 2021); :func:`error_rates_by_shape` -- its error rate per
  reference shape (Fig. 2B).
* :func:`outlier_scores`, :func:`graded_error_rates`, :func:`fit_temperature`, :func:`graded_readout` -- a
  graded observer next to the argmax rule: choice probabilities ``softmax(score / tau)`` over the six
  items, ``tau`` set so that the model's mean error equals a target (the humans' 0.249); when no
  temperature reaches the target (the argmax error already exceeds it) the read-out says so
  (``level_matched`` False) and :func:`lowest_error` gives the error it could reach.

:mod:`gensim_jax.evaluation.oddball` (the protocol: test set, evaluator, tables, figure) re-exports every
name here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gensim_jax.evaluation.sable_meyer import SHAPES

__all__ = [
    "CHANCE_ERROR_RATE",
    "GradedReadout",
    "error_rates_by_shape",
    "fit_temperature",
    "graded_error_rates",
    "graded_readout",
    "lowest_error",
    "oddball_choices",
    "outlier_scores",
]

#: Error rate of a uniformly random choice among the 6 items of a trial (the red line of Fig. 2B).
CHANCE_ERROR_RATE = 5.0 / 6.0


def _check_trials(embeddings) -> np.ndarray:
    e = np.asarray(embeddings, np.float64)
    if e.ndim != 3 or e.shape[1] < 2 or e.shape[0] == 0:
        raise ValueError(f"embeddings must have shape (num_trials, num_items>=2, D), got {e.shape}")
    if not np.all(np.isfinite(e)):
        raise ValueError("embeddings contain NaN or inf")
    return e


def oddball_choices(embeddings) -> np.ndarray:
    """The model's oddball choice per trial: ``argmax_i ||e_i - mean_j e_j||_2`` (paper Sec. 3.1).

    Args:
      embeddings: ``(T, N, D)`` embeddings of the ``N`` (= 6) items of ``T`` trials.

    Returns:
      ``(T,)`` int64 index of the chosen item (ties: the lowest index).

    Example:
      >>> e = np.zeros((1, 6, 2)); e[0, 4] = 1.0
      >>> oddball_choices(e)
      array([4])
    """
    e = _check_trials(embeddings)
    d = np.linalg.norm(e - e.mean(axis=1, keepdims=True), axis=-1)
    return np.argmax(d, axis=1).astype(np.int64)


def _shape_indices(shapes: Sequence[str], n: int) -> np.ndarray:
    shapes = list(shapes)
    if len(shapes) != n:
        raise ValueError(f"shapes has {len(shapes)} entries but there are {n} trials")
    out = np.empty(n, np.int64)
    for t, s in enumerate(shapes):
        if s not in SHAPES:
            raise ValueError(f"shapes[{t}] = {s!r} is not one of {list(SHAPES)}")
        out[t] = SHAPES.index(s)
    return out


def error_rates_by_shape(embeddings, deviant, shapes: Sequence[str]) -> dict[str, np.ndarray]:
    """Error rate of the farthest-from-mean rule per reference shape (paper Fig. 2B).

    Args:
      embeddings: ``(T, N, D)`` trial embeddings.
      deviant: ``(T,)`` index in ``[0, N)`` of the deviant item of each trial.
      shapes: ``T`` reference-shape names (each one of :data:`~gensim_jax.evaluation.sable_meyer.SHAPES`).

    Returns:
      ``{"error_rate": (11,), "trials": (11,), "errors": (11,), "choices": (T,)}`` in ``SHAPES``
      order; shapes without trials get ``error_rate`` NaN and ``trials`` 0.
    """
    e = _check_trials(embeddings)
    t, n = e.shape[:2]
    dev = np.asarray(deviant)
    if dev.shape != (t,) or not np.issubdtype(dev.dtype, np.integer):
        raise ValueError(f"deviant must be an integer array of shape ({t},), got {dev.dtype} {dev.shape}")
    if np.any((dev < 0) | (dev >= n)):
        raise ValueError(f"deviant indices must lie in [0, {n}), got range [{dev.min()}, {dev.max()}]")
    idx = _shape_indices(shapes, t)
    choices = oddball_choices(e)
    wrong = (choices != dev).astype(np.int64)
    trials = np.bincount(idx, minlength=len(SHAPES))
    errors = np.bincount(idx, weights=wrong, minlength=len(SHAPES)).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(trials > 0, errors / np.maximum(trials, 1), np.nan)
    return {"error_rate": rate, "trials": trials, "errors": errors, "choices": choices}


def outlier_scores(embeddings) -> np.ndarray:
    """Outlier score of every item: ``d_i / sd(d)``, ``d_i = ||e_i - mean_j e_j||_2`` over the trial's items.

    ``d`` is the distance the argmax rule of Sec. 3.1 compares (:func:`oddball_choices` picks
    ``argmax_i d_i``); ``sd(d)`` is the standard deviation of ``d`` over every item of every trial
    of the test set, one scale per model, so that a temperature means the same for every model
    while the size of each trial's deviation is kept (a deviant far from its references scores
    higher than a near one; a per-trial scale would erase that). Constant ``d`` scores 0.

    Args:
      embeddings: ``(T, N, D)`` trial embeddings.

    Returns:
      ``(T, N)`` float64 scores.

    Example:
      >>> e = np.zeros((2, 3, 1)); e[0, 2] = 3.0   # d = (1, 1, 2) and (0, 0, 0); sd(d) = 0.745
      >>> np.round(outlier_scores(e), 3)
      array([[1.342, 1.342, 2.683],
             [0.   , 0.   , 0.   ]])
    """
    e = _check_trials(embeddings)
    d = np.linalg.norm(e - e.mean(axis=1, keepdims=True), axis=-1)
    sd = d.std()
    return d / sd if sd > 0 else np.zeros_like(d)


def _check_scores(scores, deviant) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, np.float64)
    if s.ndim != 2 or s.shape[1] < 2 or s.shape[0] == 0:
        raise ValueError(f"scores must have shape (num_trials, num_items>=2), got {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores contain NaN or inf")
    dev = np.asarray(deviant)
    if dev.shape != (s.shape[0],) or not np.issubdtype(dev.dtype, np.integer):
        raise ValueError(f"deviant must be an integer array of shape ({s.shape[0]},), got {dev.dtype} {dev.shape}")
    if np.any((dev < 0) | (dev >= s.shape[1])):
        raise ValueError(f"deviant indices must lie in [0, {s.shape[1]}), got range [{dev.min()}, {dev.max()}]")
    return s, dev


def _trial_errors(scores: np.ndarray, deviant: np.ndarray, temperature: float) -> np.ndarray:
    """``1 - p(deviant)`` per trial, ``p = softmax(scores / tau)``; ``tau = 0`` is the argmax rule."""
    if temperature == 0:
        return (np.argmax(scores, axis=1) != deviant).astype(np.float64)
    z = scores / temperature
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    return 1.0 - p[np.arange(len(deviant)), deviant]


def graded_error_rates(scores, deviant, shapes: Sequence[str], temperature: float) -> np.ndarray:
    """Expected error rate per shape of an observer choosing item ``i`` with ``softmax(scores / tau)_i``.

    ``error(trial) = 1 - exp(s_dev / tau) / sum_i exp(s_i / tau)``, averaged over each shape's
    trials. ``tau -> 0`` gives the argmax rule (``tau = 0`` is accepted and means exactly that);
    ``tau -> inf`` gives chance, 5/6 for six items.

    Args:
      scores: ``(T, N)`` outlier scores (:func:`outlier_scores`).
      deviant: ``(T,)`` index of each trial's deviant.
      shapes: ``T`` reference-shape names.
      temperature: ``tau >= 0``.

    Returns:
      ``(11,)`` expected error rates in ``SHAPES`` order (NaN for a shape without trials).
    """
    s, dev = _check_scores(scores, deviant)
    if not (np.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature}")
    idx = _shape_indices(shapes, s.shape[0])
    err = _trial_errors(s, dev, float(temperature))
    trials = np.bincount(idx, minlength=len(SHAPES))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            trials > 0, np.bincount(idx, weights=err, minlength=len(SHAPES)) / np.maximum(trials, 1), np.nan
        )


def fit_temperature(scores, deviant, target_error: float, *, bounds: tuple = (1e-3, 1e3)) -> float:
    """The temperature at which the softmax observer's mean error over trials equals ``target_error``.

    The mean error rises from the argmax error (``tau -> 0``) towards chance (``tau -> inf``), not
    always monotonically (a trial whose deviant is not the top score gains then loses probability),
    so the smallest crossing is taken: a log-spaced grid over ``bounds`` brackets the first ``tau``
    whose error reaches the target and Brent's method refines it. When the argmax error already
    reaches the target (the model errs more than the target even without noise) the answer is 0
    (the argmax rule); a target above the error at ``bounds[1]`` is an error.

    Args:
      scores: ``(T, N)`` outlier scores; deviant: ``(T,)``.
      target_error: in ``(0, 1 - 1/N)``, e.g. the humans' mean error 0.249.

    Returns:
      ``tau >= 0``.
    """
    from scipy.optimize import brentq

    s, dev = _check_scores(scores, deviant)
    chance = 1.0 - 1.0 / s.shape[1]
    if not 0.0 < target_error < chance:
        raise ValueError(f"target_error must lie in (0, {chance:.4f}) (chance), got {target_error}")
    if _trial_errors(s, dev, 0.0).mean() >= target_error:
        return 0.0
    lo, hi = bounds
    grid = np.geomspace(lo, hi, 241)
    errs = np.array([_trial_errors(s, dev, t).mean() for t in grid])
    above = np.nonzero(errs >= target_error)[0]
    if above.size == 0:
        raise ValueError(f"the mean error stays below {target_error} up to temperature {hi} (max {errs.max():.4f})")
    i = int(above[0])
    lo_t, hi_t = (0.0 if i == 0 else grid[i - 1]), grid[i]  # tau = 0 is the argmax rule
    f = lambda t: _trial_errors(s, dev, t).mean() - target_error  # noqa: E731
    return float(brentq(f, lo_t, hi_t, xtol=1e-10, rtol=1e-10))


@dataclass(frozen=True)
class GradedReadout:
    """Result of :func:`graded_readout`."""

    argmax_error_rate: np.ndarray  # (11,) the paper's rule
    graded_error_rate: np.ndarray  # (11,) the softmax observer at ``temperature``
    temperature: float  # 0 when the argmax error already reaches the target
    level_matched: bool  # the graded mean error equals the target (False: the argmax error exceeds it)


def graded_readout(embeddings, deviant, shapes: Sequence[str], target_error: float) -> GradedReadout:
    """Argmax and level-matched softmax error rates per shape of one model (see :func:`fit_temperature`)."""
    scores = outlier_scores(embeddings)
    tau = fit_temperature(scores, deviant, target_error)
    argmax = graded_error_rates(scores, deviant, shapes, 0.0)
    graded = graded_error_rates(scores, deviant, shapes, tau)
    return GradedReadout(argmax, graded, tau, bool(tau > 0))


def lowest_error(scores, deviant, *, bounds: tuple = (1e-3, 1e3)) -> tuple[float, float]:
    """The lowest mean error the softmax observer reaches at any temperature: ``(error, tau)``.

    The minimum of the mean of ``1 - softmax(scores / tau)_deviant`` over ``tau = 0`` (the argmax rule) and
    the log-spaced grid of :func:`fit_temperature` over ``bounds``. A graded read-out asked for a
    lower error than this cannot reach it (:func:`fit_temperature` then returns 0, the argmax rule):
    this is the error it could reach, which the report card states beside the target.

    Example:
      >>> s = np.array([[0.0, 1.0], [1.0, 0.0]])   # the deviant (item 0) wins one trial of two
      >>> error, tau = lowest_error(s, np.array([0, 0]))  # every tau gives 0.5 here, to rounding
      >>> round(error, 9)
      0.5
    """
    s, dev = _check_scores(scores, deviant)
    lo, hi = bounds
    taus = np.concatenate([[0.0], np.geomspace(lo, hi, 241)])
    errs = np.array([_trial_errors(s, dev, float(t)).mean() for t in taus])
    i = int(np.argmin(errs))
    return float(errs[i]), float(taus[i])
