"""Quadrilateral oddball protocol (paper Sec. 3.1, Fig. 2, Appendices J, L and Q).

Input is the embedding of every item of every trial, ``(T, 6, D)``, with the position of the
deviant and the reference shape of each trial; how the images were made and embedded is not this
module's business (see :func:`gensim_jax.evaluation.embed.embed_images`).

* :func:`oddball_choices` -- the model's choice: the item farthest (Euclidean) from the trial's
  mean embedding (paper Sec. 3.1, after Sable-Meyer et al. 2021).
* :func:`error_rates_by_shape` -- error rate per reference shape (Fig. 2B).
* :func:`outlier_scores`, :func:`graded_error_rates`, :func:`fit_temperature` -- a graded read-out
  next to the paper's argmax rule: choice probabilities ``softmax(score / tau)`` over the six items,
  ``tau`` set so that the model's mean error equals the humans' (the level is fixed, the shape of the
  curve across shapes stays the model's).
* :func:`regularity_correlation` -- Spearman rho between error rate and irregularity rank (the
  paper's rho(9) = 0.88 for GenSim).
* :func:`behaviour_correlation` / :func:`subject_correlations` -- correlation of a model's error
  rates with a population's (Fig. 2C) or each subject's (Fig. S2) error rates.
* :func:`compare_across_runs` -- the t-test across training runs that the paper reports as t(18).
* :func:`oddball_summary` -- all of the above for several models x runs at once (the numbers of
  Fig. 2B/2C; :func:`gensim_jax.evaluation.figures.plot_oddball` draws them).
* :func:`read_similarity_judgements` / :func:`similarity_judgement_correlation` -- the model's
  pairwise cosine similarity against human similarity ratings (Fig. 2D, Appendix J).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy import stats

from gensim_jax.evaluation.sable_meyer import (
    HUMAN_POPULATIONS,
    SHAPES,
    packaged_error_rates,
    pooled_error_rates,
    regularity_rank,
)

__all__ = [
    "oddball_choices",
    "error_rates_by_shape",
    "outlier_scores",
    "graded_error_rates",
    "fit_temperature",
    "GradedReadout",
    "graded_readout",
    "population_correlations",
    "regularity_correlation",
    "behaviour_correlation",
    "subject_correlations",
    "compare_across_runs",
    "RunComparison",
    "oddball_summary",
    "CHANCE_ERROR_RATE",
    "read_similarity_judgements",
    "similarity_judgement_correlation",
]


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
        per_run = [_maybe_corr(x, ref, method) for x in runs]
        vals = np.array([c["r"] for c in per_run if c is not None])
        comparison = None
        if pop != baboon_population and runs.shape[0] >= 2 and all(np.ptp(x) > 0 for x in runs):
            c = compare_across_runs(runs, ref, baboon, method)
            if np.isfinite(c.t):
                comparison = {"t": c.t, "p": c.p, "dof": c.dof}
        out[pop] = {
            "r": [None if c is None else c["r"] for c in per_run],
            "r_mean": float(vals.mean()) if vals.size else None,
            "r_sem": float(vals.std(ddof=1) / np.sqrt(vals.size)) if vals.size > 1 else 0.0,
            "r_with_baboons": _corr(ref, baboon, method)[0],
            "comparison": comparison,
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
            per_run = [_maybe_corr(x, ref, method) for x in runs]
            vals = np.array([c["r"] for c in per_run if c is not None])
            entry[f"r_{who}"] = [None if c is None else c["r"] for c in per_run]
            entry[f"r_{who}_mean"] = float(vals.mean()) if vals.size else None
            entry[f"r_{who}_sem"] = float(vals.std(ddof=1) / np.sqrt(vals.size)) if vals.size > 1 else 0.0
            entry[f"r_{who}_n_defined"] = int(vals.size)
            entry[f"{who}_correlation_of_mean"] = _maybe_corr(mean, ref, method)
        entry["populations"] = population_correlations(runs, table, baboon_population, method)
        entry["comparison"] = None
        if r >= 2 and all(np.ptp(x) > 0 for x in runs):
            c = compare_across_runs(runs, human, baboon, method)
            if np.isfinite(c.t):  # identical correlations in every run leave t undefined
                entry["comparison"] = {"t": c.t, "p": c.p, "dof": c.dof}
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
