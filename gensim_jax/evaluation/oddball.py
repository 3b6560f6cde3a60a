"""The quadrilateral oddball protocol (paper Sec. 3.1, Fig. 2, App. J, L, Q): test set, read-outs, table, figure.

One code path for every evaluation of a quadrilaterals encoder: the run's final and periodic
evaluations (:mod:`gensim_jax.experiments.quadrilaterals`) and ``gensim-jax eval oddball --export``
render the same seeded test set (:func:`test_trials`, ``uint8``), embed it with the same encoder
object (:class:`~gensim_jax.evaluation.embed.ExportedEncoder`) and read it out with the same
:func:`evaluate`, so a re-evaluated export reproduces the run's numbers exactly.

Test set and evaluator:

* :func:`test_trials` -- the seeded trials rendered at an image size (``uint8``) with their features;
  :func:`trial_embeddings` embeds them with ``embed(images (N, S, S, 3) uint8) -> (N, D)``.
* :func:`evaluate` -- both read-outs of one embedding function (:func:`readout`): the paper's argmax
  rule and the graded softmax observer at the humans' mean error (:func:`graded_readout`), with the
  GenSim regression error on reference and deviant pairs (:func:`regression_error`).

Read-outs of trial embeddings ``(T, 6, D)`` (how the images were made is not their business):

* :func:`oddball_choices` -- the model's choice: the item farthest (Euclidean) from the trial's
  mean embedding (paper Sec. 3.1, after Sable-Meyer et al. 2021); :func:`error_rates_by_shape` --
  error rate per reference shape (Fig. 2B).
* :func:`outlier_scores`, :func:`graded_error_rates`, :func:`fit_temperature` -- a graded read-out
  next to the paper's argmax rule: choice probabilities ``softmax(score / tau)`` over the six items,
  ``tau`` set so that the model's mean error equals the humans' (the level is fixed, the shape of the
  curve across shapes stays the model's).

Statistics against behaviour (the reference data are :mod:`gensim_jax.evaluation.sable_meyer`'s):

* :func:`regularity_correlation` -- Spearman rho between error rate and irregularity rank (the
  paper's rho(9) = 0.88 for GenSim).
* :func:`behaviour_correlation` / :func:`subject_correlations` / :func:`shape_statistics` --
  correlation of a model's error rates with a population's (Fig. 2C) or each subject's (Fig. S2).
* :func:`compare_across_runs` -- the t-test across training runs that the paper reports as t(18).
* :func:`oddball_summary` -- all of the above for several models x runs at once (Fig. 2B/2C).
* :func:`read_similarity_judgements` / :func:`similarity_judgement_correlation` -- the model's
  pairwise cosine similarity against human similarity ratings (Fig. 2D, Appendix J).

Over runs: :func:`summarize` (graded and argmax summaries, temperatures, regression errors),
:func:`format_table` (Markdown) and :func:`plot_oddball` (Fig. 2B + 2C).
"""

from __future__ import annotations

import csv
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, NamedTuple, Optional, Sequence

import numpy as np
from scipy import stats

from gensim_jax._extras import require
from gensim_jax.evaluation.sable_meyer import (
    HUMAN_POPULATIONS,
    SHAPES,
    packaged_error_rates,
    pooled_error_rates,
    regularity_rank,
    subject_error_rates,
)
from gensim_jax.stimuli import quadrilaterals as quads

__all__ = [
    "EvalConfig",
    "check_eval_config",
    "CHANCE_ERROR_RATE",
    "NAME",
    "GradedReadout",
    "OddballTrials",
    "RunComparison",
    "behaviour_correlation",
    "compare_across_runs",
    "curve_metrics",
    "embed_test_set",
    "error_rates_by_shape",
    "evaluate",
    "fit_temperature",
    "format_table",
    "graded_error_rates",
    "graded_readout",
    "human_mean_error",
    "make_stimuli",
    "oddball_choices",
    "oddball_summary",
    "outlier_scores",
    "pixel_embedding",
    "plot",
    "plot_oddball",
    "population_correlations",
    "read_similarity_judgements",
    "readout",
    "readout_rates",
    "regression_error",
    "regularity_correlation",
    "shape_statistics",
    "similarity_judgement_correlation",
    "subject_correlations",
    "summarize",
    "test_trials",
    "trial_embeddings",
    "trial_images",
]

#: The protocol's name in :data:`gensim_jax.evaluation.registry.PROTOCOLS`.
NAME = "oddball"

# ------------------------------------------------------------------------------------------------
# the test set
# ------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """``eval`` of the quadrilaterals experiment: the seeded oddball test (:func:`test_trials`) and its read-outs."""

    seed: int = 0
    trials_per_condition: int = 10  # 11 shapes x 4 deviants x 10 = 440 trials
    batch_size: int = 128
    every: int = 0  # ours: > 0 evaluates both read-outs every so many steps (the learning curve)
    readout_target_error: Optional[float] = None  # graded read-out's mean error; None: the humans' 0.249


def check_eval_config(ev: EvalConfig) -> None:
    """``ValueError`` naming the ``eval.`` field when the section is out of range."""
    if ev.every < 0:
        raise ValueError(f"eval.every must be >= 0 (0: no evaluation during training), got {ev.every}")
    t = ev.readout_target_error
    if t is not None and not 0 < t < CHANCE_ERROR_RATE:
        raise ValueError(f"eval.readout_target_error must lie in (0, 5/6) or be null (the humans' mean), got {t}")
    if ev.trials_per_condition < 1:
        raise ValueError(f"eval.trials_per_condition must be >= 1, got {ev.trials_per_condition}")


class OddballTrials(NamedTuple):
    """The seeded oddball test set as the evaluation sees it (index it like a tuple, too)."""

    images: np.ndarray  #: ``(T, 6, S, S)`` uint8 grey renders
    deviant: np.ndarray  #: ``(T,)`` int64 position of the deviant
    shapes: list  #: ``(T,)`` reference-shape names
    features: np.ndarray  #: ``(T, 6, 22)`` float32 geometric features of every item


def trial_images(test_set, image_size: int) -> np.ndarray:
    """``(T, 6, S, S)`` uint8: the items of an :func:`~gensim_jax.stimuli.quadrilaterals.oddball_test_set` rendered
    at ``image_size`` and rounded to the 256 grey levels (as the training images are)."""
    return np.round(test_set.images(image_size) * 255.0).astype(np.uint8)


def test_trials(seed: int = 0, trials_per_condition: int = 10, image_size: int = 64) -> OddballTrials:
    """The seeded oddball test set (:func:`~gensim_jax.stimuli.quadrilaterals.oddball_test_set`) rendered at
    ``image_size`` and rounded to ``uint8``: the one set a run and ``gensim-jax eval oddball --export`` embed."""
    trials = quads.oddball_test_set(seed=seed, trials_per_condition=trials_per_condition)
    images = trial_images(trials, image_size)
    names = [quads.SHAPE_NAMES[s] for s in trials.shape]
    return OddballTrials(images, trials.deviant_position.astype(np.int64), names, trials.features().astype(np.float32))


def trial_embeddings(embed, trials) -> np.ndarray:
    """``(T, 6, D)`` embeddings of every trial item by ``embed(images (N, S, S, 3) uint8) -> (N, D)``."""
    images = trials[0]
    t, n, s = images.shape[:3]
    flat = np.repeat(images.reshape(t * n, s, s)[..., None], 3, axis=-1)
    return np.asarray(embed(flat)).reshape(t, n, -1)


def pixel_embedding(images: np.ndarray) -> np.ndarray:
    """The model-free baseline: the grey pixels of ``uint8`` images ``(N, S, S, 3)`` in ``[0, 1]``, flattened."""
    return images[..., 0].reshape(len(images), -1).astype(np.float32) / 255.0


def embed_test_set(trials, encoder, batch_size: int, cache: dict) -> np.ndarray:
    """``(T, 6, D)`` embeddings of the test set's items with ``encoder`` (renders cached per size)."""
    s = encoder.image_size
    if s not in cache:  # uint8, as a run renders them (test_trials): the same numbers
        cache[s] = trial_images(trials, s)
    img = cache[s]
    t = img.shape[0]
    return encoder(img.reshape(t * 6, s, s), batch_size).reshape(t, 6, -1)


# ------------------------------------------------------------------------------------------------
# read-outs of trial embeddings
# ------------------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------------------
# the evaluator
# ------------------------------------------------------------------------------------------------


def human_mean_error() -> float:
    """The pooled humans' mean error over the 11 shapes (0.249): the level the graded read-out matches."""
    return float(np.mean(pooled_error_rates(packaged_error_rates(), HUMAN_POPULATIONS)))


def readout(embeddings: np.ndarray, trials, target_error: Optional[float] = None) -> dict:
    """Both read-outs of one model's trial embeddings (:func:`graded_readout`).

    ``argmax``: the paper's rule (the item farthest from the trial mean); ``graded``: a softmax over
    the standardised outlier scores with the temperature that makes the mean error equal
    ``target_error`` (default: the humans' 0.249), so the level is the humans' and the shape across
    shapes stays the model's. ``temperature`` 0 means the argmax error already exceeds the target.
    """
    target = human_mean_error() if target_error is None else float(target_error)
    g = graded_readout(embeddings, trials[1], trials[2], target)
    return {
        "argmax": g.argmax_error_rate,
        "graded": g.graded_error_rate,
        "temperature": g.temperature,
        "regression_error": regression_error(embeddings, trials),
    }


def regression_error(embeddings: np.ndarray, trials) -> dict:
    """How well a model's distances match the GenSim target on the test items, pairs within trials.

    ``mean (||z_i - z_j||_2 - ||f_i - f_j||_2)^2`` (the Appendix L regression loss) over the pairs of
    reference items (the shapes training saw) and over the (reference, deviant) pairs (shapes it
    never saw), with ``f`` the 22 features; ``embeddings`` ``(T, 6, D)`` and ``trials`` from
    :func:`test_trials`. Meaningful for the GenSim arm (the others are not trained on this scale).
    """
    z = np.asarray(embeddings, np.float64)
    f = np.asarray(trials[3], np.float64)
    dev = np.asarray(trials[1])
    dz = np.linalg.norm(z[:, :, None] - z[:, None, :], axis=-1)
    df = np.linalg.norm(f[:, :, None] - f[:, None, :], axis=-1)
    sq = (dz - df) ** 2
    n = z.shape[1]
    is_dev = np.arange(n)[None, :] == dev[:, None]  # (T, N)
    upper = np.triu(np.ones((n, n), bool), 1)[None]
    ref_pair = upper & ~is_dev[:, :, None] & ~is_dev[:, None, :]
    dev_pair = upper & (is_dev[:, :, None] ^ is_dev[:, None, :])
    return {"reference_pairs": float(sq[ref_pair].mean()), "deviant_pairs": float(sq[dev_pair].mean())}


def evaluate(embed, trials: OddballTrials, target_error: Optional[float] = None) -> dict:
    """The oddball evaluation of one embedding function: :func:`readout` of :func:`trial_embeddings`.

    What a quadrilaterals run records for each model and what ``gensim-jax eval oddball --export``
    computes for its export (``embed``: e.g. an :class:`~gensim_jax.evaluation.embed.ExportedEncoder`).
    """
    return readout(trial_embeddings(embed, trials), trials, target_error)


def curve_metrics(evaluation: dict) -> dict:
    """The scalars a periodic evaluation logs: temperature, regression errors, mean and per-shape errors of both read-outs."""
    logged = {"temperature": evaluation["temperature"]}
    logged.update({f"regression_error/{k}": v for k, v in evaluation["regression_error"].items()})
    for rule in ("argmax", "graded"):
        logged[f"{rule}/mean_error"] = float(np.mean(evaluation[rule]))
        logged.update({f"{rule}/{shape}": float(v) for shape, v in zip(quads.SHAPE_NAMES, evaluation[rule])})
    return logged


# ------------------------------------------------------------------------------------------------
# statistics against behaviour
# ------------------------------------------------------------------------------------------------


def _check_rates(x, name: str) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if x.shape != (len(SHAPES),):
        raise ValueError(f"{name} must have shape ({len(SHAPES)},) in SHAPES order, got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN (a shape without trials?) or inf")
    return x


def regularity_correlation(error_rate) -> tuple[float, float, int]:
    """Spearman's rho between error rate and irregularity rank (paper Sec. 3.1: rho(9) = 0.88).

    Args:
      error_rate: ``(11,)`` error rates in ``SHAPES`` order (most to least regular).

    Returns:
      ``(rho, p_value, dof)`` with ``dof = 11 - 2 = 9``; positive rho = errors rise as shapes get
      less regular (the human effect).
    """
    r = _check_rates(error_rate, "error_rate")
    res = stats.spearmanr(r, regularity_rank())
    return float(res.statistic), float(res.pvalue), len(SHAPES) - 2


def _corr(a: np.ndarray, b: np.ndarray, method: str) -> tuple[float, float]:
    if method == "pearson":
        res = stats.pearsonr(a, b)
    elif method == "spearman":
        res = stats.spearmanr(a, b)
    else:
        raise ValueError(f"method must be 'pearson' or 'spearman', got {method!r}")
    return float(res.statistic), float(res.pvalue)


def behaviour_correlation(model_error_rate, behaviour_error_rate, method: str = "pearson") -> tuple[float, float]:
    """Correlation of a model's per-shape error rates with a population's (paper Fig. 2C).

    Args:
      model_error_rate: ``(11,)`` in ``SHAPES`` order.
      behaviour_error_rate: ``(11,)`` (e.g. ``packaged_error_rates()["baboons"]["error_rate"]``).
      method: ``"pearson"`` (default) or ``"spearman"``.

    Returns:
      ``(r, p_value)``.
    """
    return _corr(
        _check_rates(model_error_rate, "model_error_rate"),
        _check_rates(behaviour_error_rate, "behaviour_error_rate"),
        method,
    )


def subject_correlations(
    model_error_rate, subjects: Mapping[str, Mapping[str, object]], method: str = "pearson"
) -> dict[str, dict[str, float | str]]:
    """Correlation of a model's error rates with each subject's (paper Appendix Q, Fig. S2).

    Args:
      model_error_rate: ``(11,)`` in ``SHAPES`` order.
      subjects: output of :func:`gensim_jax.evaluation.sable_meyer.subject_error_rates`.
      method: ``"pearson"`` or ``"spearman"``.

    Returns:
      ``{subject: {"population", "r", "p"}}``; subjects whose rates are constant over shapes
      (correlation undefined) are left out.
    """
    m = _check_rates(model_error_rate, "model_error_rate")
    out = {}
    for subject, d in subjects.items():
        rate = _check_rates(d["error_rate"], f"error_rate of subject {subject!r}")
        if np.ptp(rate) == 0:
            continue
        r, p = _corr(m, rate, method)
        out[subject] = {"population": str(d.get("population", "")), "r": r, "p": p}
    return out


@dataclass(frozen=True)
class RunComparison:
    """Result of :func:`compare_across_runs`."""

    r_human: np.ndarray  # (R,) correlation of each run's error rates with the human rates
    r_baboon: np.ndarray  # (R,) ... with the baboon rates
    t: float  # t statistic of r_human vs r_baboon (positive: more human-like)
    p: float  # two-sided p-value
    dof: int  # 2 R - 2 (paper: t(18) for 10 runs)


def compare_across_runs(run_error_rates, human_error_rate, baboon_error_rate, method: str = "pearson") -> RunComparison:
    """Is a model more human-like than baboon-like across training runs? (paper Sec. 3.1, t(18)).

    For each run ``r``, correlate its error rates with the human and with the baboon rates, then
    compare the two sets of ``R`` correlations with Student's two-sample t-test (equal variances,
    ``dof = 2R - 2``; the paper's t(18) is 10 runs per model).

    Args:
      run_error_rates: ``(R, 11)`` error rates of ``R >= 2`` runs, ``SHAPES`` order.
      human_error_rate, baboon_error_rate: ``(11,)``.
      method: correlation, ``"pearson"`` or ``"spearman"``.
    """
    runs = np.asarray(run_error_rates, np.float64)
    if runs.ndim != 2 or runs.shape[1] != len(SHAPES) or runs.shape[0] < 2:
        raise ValueError(f"run_error_rates must have shape (R>=2, {len(SHAPES)}), got {runs.shape}")
    h = _check_rates(human_error_rate, "human_error_rate")
    b = _check_rates(baboon_error_rate, "baboon_error_rate")
    rh = np.array([_corr(_check_rates(x, "run_error_rates row"), h, method)[0] for x in runs])
    rb = np.array([_corr(x, b, method)[0] for x in runs])
    res = stats.ttest_ind(rh, rb)
    return RunComparison(rh, rb, float(res.statistic), float(res.pvalue), 2 * len(runs) - 2)


#: Error rate of a uniformly random choice among the 6 items of a trial (the red line of Fig. 2B).
CHANCE_ERROR_RATE = 5.0 / 6.0


def _maybe_corr(a: np.ndarray, b: np.ndarray, method: str = "pearson") -> dict | None:
    """``{"r", "p"}``, or None when either vector is constant (the correlation is undefined)."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    r, p = _corr(a, b, method)
    return {"r": r, "p": p}


def _run_correlations(runs: np.ndarray, ref: np.ndarray, method: str) -> dict:
    """Each run's r with ``ref`` (None where undefined) and the mean, s.e.m. and count of the defined ones."""
    per_run = [_maybe_corr(x, ref, method) for x in runs]
    vals = np.array([c["r"] for c in per_run if c is not None])
    return {
        "r": [None if c is None else c["r"] for c in per_run],
        "r_mean": float(vals.mean()) if vals.size else None,
        "r_sem": float(vals.std(ddof=1) / np.sqrt(vals.size)) if vals.size > 1 else 0.0,
        "n_defined": int(vals.size),
    }


def _comparison(runs: np.ndarray, ref: np.ndarray, baboon: np.ndarray, method: str) -> dict | None:
    """:func:`compare_across_runs` of ``ref`` vs ``baboon`` as ``{"t", "p", "dof"}``; None for fewer than 2 runs,
    a run with constant rates, or an undefined t (identical correlations in every run)."""
    if runs.shape[0] < 2 or not all(np.ptp(x) > 0 for x in runs):
        return None
    c = compare_across_runs(runs, ref, baboon, method)
    return {"t": c.t, "p": c.p, "dof": c.dof} if np.isfinite(c.t) else None


def population_correlations(
    run_error_rates,
    behaviour: Mapping[str, Mapping[str, np.ndarray]] | None = None,
    baboon_population: str = "baboons",
    method: str = "pearson",
) -> dict[str, dict]:
    """Each population's correlation with a model, per run, and each human group's t-test against baboons.

    The pooled "human" rate of :func:`oddball_summary` mixes five groups that differ from each other
    (pooled humans vs baboons r = 0.43 across shapes, French adults 0.27 and 0.48), so the contrast
    that :func:`compare_across_runs` measures depends on the group; this reports every group.

    Args:
      run_error_rates: ``(R, 11)`` error rates of one model's runs.
      behaviour: per-population rates (default: the packaged counts).

    Returns:
      ``{population: {"r": [R], "r_mean", "r_sem", "r_with_baboons", "comparison"}}`` where
      ``r_with_baboons`` is the population's own correlation with the baboons and ``comparison``
      the t-test of the runs' r with this population vs with the baboons (None for the baboons,
      for fewer than 2 runs, or for a run with constant rates).
    """
    table = packaged_error_rates() if behaviour is None else behaviour
    runs = np.asarray(run_error_rates, np.float64)
    runs = runs[None] if runs.ndim == 1 else runs
    baboon = _check_rates(table[baboon_population]["error_rate"], "baboon error rate")
    out = {}
    for pop in table:
        ref = _check_rates(table[pop]["error_rate"], f"{pop} error rate")
        rc = _run_correlations(runs, ref, method)
        out[pop] = {
            "r": rc["r"],
            "r_mean": rc["r_mean"],
            "r_sem": rc["r_sem"],
            "r_with_baboons": _corr(ref, baboon, method)[0],
            "comparison": None if pop == baboon_population else _comparison(runs, ref, baboon, method),
        }
    return out


def oddball_summary(
    run_error_rates: Mapping[str, object],
    behaviour: Mapping[str, Mapping[str, np.ndarray]] | None = None,
    human_populations: Sequence[str] = HUMAN_POPULATIONS,
    baboon_population: str = "baboons",
    method: str = "pearson",
) -> dict:
    """The numbers of paper Fig. 2B and 2C for several models, each trained ``R`` times.

    For every model (``name -> (R, 11)`` error rates in ``SHAPES`` order, one row per run):

    * ``error_rate_mean``, ``error_rate_sem`` over runs (Fig. 2B; s.e.m. ``std(ddof=1)/sqrt(R)``,
      0 for one run);
    * ``regularity``: Spearman ``rho(9)`` and ``p`` of the mean error rate against the irregularity
      rank (:func:`regularity_correlation`; paper: GenSim 0.88, supervised 0.472), and
      ``regularity_per_run`` (rho of each run);
    * ``r_human`` / ``r_baboon``: the ``R`` per-run correlations with the human rate (trial-weighted
      pool of ``human_populations``) and the baboon rate, their means and s.e.m. (Fig. 2C);
    * ``comparison``: :func:`compare_across_runs` (``t``, ``p``, ``dof = 2R - 2``) when ``R >= 2``;
    * ``populations``: the same correlations and t-test for every population of the table
      (:func:`population_correlations`).

    A correlation is undefined when a vector is constant (e.g. a run that never errs): it is
    reported as None and left out of the means (``n_defined`` says how many remain), never NaN.

    Args:
      run_error_rates: ``{model name: (R, 11) or (11,)}``.
      behaviour: per-population rates as :func:`~gensim_jax.evaluation.sable_meyer.read_error_rates`
        returns them (default: the packaged counts).
      human_populations: populations pooled into "human" (default: all five human groups).
      baboon_population: the non-human reference.
      method: ``"pearson"`` (default) or ``"spearman"`` for the behaviour correlations.

    Returns:
      ``{"shapes", "human_error_rate", "baboon_error_rate", "chance_error_rate", "models": {...}}``.
    """
    table = packaged_error_rates() if behaviour is None else behaviour
    if baboon_population not in table:
        raise ValueError(f"baboon_population {baboon_population!r} is not in the behaviour table {sorted(table)}")
    human = pooled_error_rates(table, human_populations)
    baboon = _check_rates(table[baboon_population]["error_rate"], "baboon error rate")
    if not run_error_rates:
        raise ValueError("run_error_rates is empty: give at least one model")
    models = {}
    for name, rates in run_error_rates.items():
        runs = np.asarray(rates, np.float64)
        runs = runs[None] if runs.ndim == 1 else runs
        if runs.ndim != 2 or runs.shape[1] != len(SHAPES) or runs.shape[0] == 0:
            raise ValueError(f"error rates of {name!r} must have shape (R, {len(SHAPES)}), got {np.shape(rates)}")
        for row in runs:
            _check_rates(row, f"error rates of {name!r}")
        r = runs.shape[0]
        mean = runs.mean(axis=0)
        sem = runs.std(axis=0, ddof=1) / np.sqrt(r) if r > 1 else np.zeros(len(SHAPES))
        entry: dict = {"runs": r, "error_rate_mean": mean, "error_rate_sem": sem, "error_rate_runs": runs}
        if np.ptp(mean) > 0:
            rho, p, dof = regularity_correlation(mean)
            entry["regularity"] = {"rho": rho, "p": p, "dof": dof}
        else:
            entry["regularity"] = None
        entry["regularity_per_run"] = [regularity_correlation(x)[0] if np.ptp(x) > 0 else None for x in runs]
        for who, ref in (("human", human), ("baboon", baboon)):
            rc = _run_correlations(runs, ref, method)
            entry[f"r_{who}"], entry[f"r_{who}_mean"] = rc["r"], rc["r_mean"]
            entry[f"r_{who}_sem"], entry[f"r_{who}_n_defined"] = rc["r_sem"], rc["n_defined"]
            entry[f"{who}_correlation_of_mean"] = _maybe_corr(mean, ref, method)
        entry["populations"] = population_correlations(runs, table, baboon_population, method)
        entry["comparison"] = _comparison(runs, human, baboon, method)
        models[name] = entry
    return {
        "shapes": list(SHAPES),
        "human_error_rate": human,
        "baboon_error_rate": baboon,
        "human_populations": list(human_populations),
        "chance_error_rate": CHANCE_ERROR_RATE,
        "models": models,
    }


def read_similarity_judgements(path: str | os.PathLike) -> dict[tuple[str, str], float]:
    """Read human pairwise similarity judgements (paper Appendix J) and average them per pair.

    Format: a CSV with a header containing ``stimulus_a``, ``stimulus_b`` and ``rating`` (one row
    per judgement, e.g. the 0 ('completely dissimilar') to 6 ('completely similar') scale of
    Appendix J; any other columns are ignored). The pair is unordered: ``(a, b)`` and ``(b, a)``
    are pooled. Stimulus ids are free strings that name rows of the embedding table.

    Returns:
      ``{(a, b): mean rating}`` with ``a < b``.
    """
    sums: dict[tuple[str, str], list[float]] = {}
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        need = {"stimulus_a", "stimulus_b", "rating"}
        if reader.fieldnames is None or not need <= set(reader.fieldnames):
            raise ValueError(f"{path}: judgement CSV needs columns {sorted(need)}, got {reader.fieldnames}")
        for line, row in enumerate(reader, start=2):
            a, b = row["stimulus_a"], row["stimulus_b"]
            if a == b:
                raise ValueError(f"{path}:{line}: a pair needs two different stimuli, got {a!r} twice")
            try:
                rating = float(row["rating"])
            except ValueError:
                raise ValueError(f"{path}:{line}: rating {row['rating']!r} is not a number") from None
            key = (a, b) if a < b else (b, a)
            acc = sums.setdefault(key, [0.0, 0])
            acc[0] += rating
            acc[1] += 1
    if not sums:
        raise ValueError(f"{path}: no judgements")
    return {k: s / n for k, (s, n) in sums.items()}


def similarity_judgement_correlation(
    judgements: Mapping[tuple[str, str], float], embeddings: Mapping[str, np.ndarray]
) -> tuple[float, float, int]:
    """Spearman rho between mean human ratings and the model's cosine similarity (paper Fig. 2D).

    Args:
      judgements: ``{(a, b): mean rating}`` (:func:`read_similarity_judgements`).
      embeddings: ``{stimulus id: (D,) embedding}``; every id in ``judgements`` must be present.

    Returns:
      ``(rho, p_value, num_pairs)``.
    """
    pairs = list(judgements)
    missing = sorted({s for p in pairs for s in p if s not in embeddings})
    if missing:
        raise ValueError(f"embeddings lack {len(missing)} stimuli named in judgements, e.g. {missing[:3]}")
    if len(pairs) < 3:
        raise ValueError(f"need at least 3 judged pairs, got {len(pairs)}")
    a = np.stack([np.asarray(embeddings[p[0]], np.float64) for p in pairs])
    b = np.stack([np.asarray(embeddings[p[1]], np.float64) for p in pairs])
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    if np.any(na == 0) or np.any(nb == 0):
        raise ValueError("cosine similarity is undefined for a zero embedding")
    cos = np.sum(a * b, axis=1) / (na * nb)
    res = stats.spearmanr([judgements[p] for p in pairs], cos)
    return float(res.statistic), float(res.pvalue), len(pairs)


def shape_statistics(model, table, behavior_trials=None) -> dict:
    """Spearman with regularity and correlations with every population (and subject) of ``model`` ``(11,)``.

    Nothing is computed when a shape has no trials (NaN rate); a constant rate vector (e.g. no
    errors at all) has no correlation with anything and gets ``None``.
    """
    out = {}
    if not np.all(np.isfinite(model)):
        return out
    if np.ptp(model) == 0:
        return {"regularity_spearman": None, "population_correlation": None}
    rho, pval, dof = regularity_correlation(model)
    out["regularity_spearman"] = {"rho": rho, "p": pval, "dof": dof}
    out["population_correlation"] = {
        pop: dict(zip(("r", "p"), behaviour_correlation(model, d["error_rate"]))) for pop, d in table.items()
    }
    if behavior_trials:
        subj = subject_correlations(model, subject_error_rates(behavior_trials))
        by_pop: dict[str, list[float]] = {}
        for d in subj.values():
            by_pop.setdefault(d["population"], []).append(d["r"])
        out["subject_correlation"] = {pop: {"mean_r": float(np.mean(r)), "n": len(r)} for pop, r in by_pop.items()}
    return out


def readout_rates(embeddings, deviant, shapes: Sequence[str], rule: str, target_error: float) -> dict:
    """Error rates per shape of trial embeddings under one read-out ``rule`` (what ``eval oddball`` reports).

    ``"argmax"``: :func:`error_rates_by_shape` (``error_rate``, ``trials``, ``errors``, ``choices``);
    ``"graded"``: the same with ``error_rate`` replaced by the level-matched softmax observer's
    (:func:`graded_readout` at ``target_error``), its ``temperature`` added and ``errors`` dropped.
    """
    rates = error_rates_by_shape(embeddings, deviant, shapes)
    if rule == "graded":
        g = graded_readout(embeddings, deviant, shapes, target_error)
        rates = {**rates, "error_rate": g.graded_error_rate, "temperature": g.temperature}
        rates.pop("errors")
    elif rule != "argmax":
        raise ValueError(f"rule must be 'graded' or 'argmax', got {rule!r}")
    return rates


# ------------------------------------------------------------------------------------------------
# over runs: summary, table, figure
# ------------------------------------------------------------------------------------------------


def summarize(evaluations: dict, num_trials: int, target_error: Optional[float] = None) -> dict:
    """The results of several models x runs: ``summary`` (graded, the headline) and ``summary_argmax``
    (:func:`oddball_summary`), ``temperatures`` and ``regression_error``
    per model and run; ``evaluations = {model: [evaluate(...) per run]}``."""
    return {
        "num_trials": int(num_trials),
        "readout": {
            "headline": "graded",
            "target_error": human_mean_error() if target_error is None else target_error,
            "humans": "pooled (five groups); per population in summary.models.*.populations",
        },
        "summary": oddball_summary({n: np.stack([e["graded"] for e in v]) for n, v in evaluations.items()}),
        "summary_argmax": oddball_summary({n: np.stack([e["argmax"] for e in v]) for n, v in evaluations.items()}),
        "temperatures": {n: [e["temperature"] for e in v] for n, v in evaluations.items()},
        "regression_error": {n: [e["regression_error"] for e in v] for n, v in evaluations.items()},
    }


def _fmt(v, spec=".3f") -> str:
    return "n/a" if v is None else format(v, spec)


def _stats_rows(summary: dict, temperatures: Optional[dict] = None) -> list[str]:
    rows = []
    for name, m in summary["models"].items():
        reg, cmp_ = m["regularity"], m["comparison"]
        taus = (temperatures or {}).get(name)
        tau = "" if taus is None else f" {np.mean(taus):.3g} |"
        rows.append(
            f"| {name} | {m['runs']} | {np.mean(m['error_rate_mean']):.3f} |{tau} "
            f"{_fmt(reg and reg['rho'], '.2f')} | {_fmt(reg and reg['p'], '.3g')} | "
            f"{_fmt(m['r_human_mean'], '.2f')} | {_fmt(m['r_baboon_mean'], '.2f')} | "
            + (f"{cmp_['t']:.2f} ({cmp_['dof']}) | {cmp_['p']:.3g} |" if cmp_ else "n/a | n/a |")
        )
    return rows


def format_table(results: dict, note: Optional[str] = None) -> str:
    """Markdown tables: the headline (graded) and argmax statistics per model (Fig. 2C), the
    correlation with every population, and the error rate per shape (Fig. 2B)."""
    s = results["summary"]
    models = s["models"]
    head = "| model | runs | mean error |{} rho(9) | p | r human | r baboon | t (dof) | p(t) |"
    target = results.get("readout", {}).get("target_error")
    lines = [
        f"Oddball test: {results['num_trials']} trials (chance error {s['chance_error_rate']:.3f}). "
        "rho = Spearman with the irregularity rank (paper: GenSim 0.88, supervised 0.472); "
        "r = Pearson with the pooled human (five groups) / baboon error rates, mean over runs; "
        "t = human vs baboon likeness across runs (paper: t(18) = 12.45 GenSim, -17.43 supervised).",
        "",
        f"Graded read-out (headline): softmax over the six items' standardised outlier scores, temperature "
        f"tau set per run so the mean error is the humans' {_fmt(target)} (tau 0: the argmax error is "
        "already higher).",
        "",
        head.format(" tau |"),
        "|---|---|---|---|---|---|---|---|---|---|",
        *_stats_rows(s, results.get("temperatures")),
    ]
    if "summary_argmax" in results:
        lines += [
            "",
            "Argmax read-out (the paper's rule: the item farthest from the trial mean):",
            "",
            head.format(""),
            "|---|---|---|---|---|---|---|---|---|",
            *_stats_rows(results["summary_argmax"]),
        ]
    pops = next(iter(models.values())).get("populations")
    if pops:
        lines += [
            "",
            "Graded read-out, mean r over runs with each population (t vs baboons in brackets; "
            "the populations' own r with the baboons in the header):",
            "",
            "| model | " + " | ".join(f"{p} ({pops[p]['r_with_baboons']:.2f})" for p in pops) + " |",
            "|---|" + "---|" * len(pops),
        ]
        for name, m in models.items():
            cells = []
            for p in pops:
                e = m["populations"][p]
                c = e["comparison"]
                cells.append(_fmt(e["r_mean"], ".2f") + (f" (t {c['t']:.2f})" if c else ""))
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Error rate per shape, graded read-out (most to least regular):",
        "",
        "| shape | humans | baboons | " + " | ".join(models) + " |",
        "|---|---|---|" + "---|" * len(models),
    ]
    if note:
        lines.insert(1, "\n" + note + "\n")
    for i, shape in enumerate(s["shapes"]):
        cells = [f"{models[n]['error_rate_mean'][i]:.3f}" for n in models]
        lines.append(
            f"| {shape} | {s['human_error_rate'][i]:.3f} | {s['baboon_error_rate'][i]:.3f} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines)


_MODEL_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive")


def plot_oddball(summary: Mapping, path, title: str | None = None) -> Path:
    """Write paper Fig. 2B + 2C for ``summary`` (:func:`~gensim_jax.evaluation.oddball.oddball_summary`).

    Left: mean error rate per shape (x: most to least regular, as Fig. 2B) for every model with
    s.e.m. error bars over runs, the pooled human and the baboon rates (dashed), and the chance
    error rate 5/6 (red). The legend gives each model's Spearman rho(9) with regularity. Right:
    mean over runs of the correlation with human and with baboon error rates, s.e.m. bars and each
    run's value as a dot (Fig. 2C). Returns the path.
    """
    require("matplotlib", "eval")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    shapes = list(summary["shapes"])
    models = summary["models"]
    x = np.arange(len(shapes))
    fig = Figure(figsize=(13, 4.6))
    FigureCanvasAgg(fig)
    ax, bx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2.3, 1]})
    for k, (name, m) in enumerate(models.items()):
        reg = m.get("regularity")
        label = f"{name} (rho(9)={reg['rho']:.2f}, p={reg['p']:.3g})" if reg else f"{name} (rho undefined)"
        ax.errorbar(
            x,
            m["error_rate_mean"],
            yerr=m["error_rate_sem"],
            marker="o",
            ms=4,
            capsize=2,
            lw=1.5,
            color=_MODEL_COLOURS[k % len(_MODEL_COLOURS)],
            label=label,
        )
    ax.plot(x, summary["human_error_rate"], "k--", marker="s", ms=3, lw=1, label="humans (pooled)")
    ax.plot(x, summary["baboon_error_rate"], color="grey", ls=":", marker="^", ms=3, lw=1, label="baboons")
    ax.axhline(summary["chance_error_rate"], color="red", lw=1, label="chance (5/6)")
    ax.set_xticks(x, shapes, rotation=40, ha="right")
    ax.set_ylim(0, 1)
    ax.set(
        ylabel="error rate",
        xlabel="reference shape (most to least regular)",
        title=title or "Oddball error rate per quadrilateral (Fig. 2B)",
    )
    ax.legend(fontsize=7, loc="upper left")

    names = list(models)
    width = 0.38
    for j, (who, colour) in enumerate((("human", "black"), ("baboon", "grey"))):
        means = [models[n][f"r_{who}_mean"] for n in names]
        sems = [models[n][f"r_{who}_sem"] for n in names]
        pos = np.arange(len(names)) + (j - 0.5) * width
        bx.bar(
            pos,
            [0.0 if v is None else v for v in means],
            width,
            yerr=sems,
            color=colour,
            alpha=0.55,
            capsize=3,
            label=who,
        )
        for p_, n in zip(pos, names):
            vals = [v for v in models[n][f"r_{who}"] if v is not None]
            bx.plot(np.full(len(vals), p_), vals, ".", color=colour, ms=4)
    bx.axhline(0, color="k", lw=0.6)
    bx.set_xticks(np.arange(len(names)), names, rotation=20)
    bx.set_ylim(-1, 1)
    bx.set(ylabel="correlation with error rates", title="Human vs baboon likeness (Fig. 2C)")
    bx.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def plot(results: Mapping, path, title: str | None = None) -> Path:
    """The figure of :func:`summarize`'s ``results``: :func:`plot_oddball` of its headline (graded) ``summary``."""
    return plot_oddball(results["summary"], path, title)


#: The registry's face (:mod:`gensim_jax.evaluation.registry`): the seeded stimuli of :func:`evaluate`.
make_stimuli = test_trials
