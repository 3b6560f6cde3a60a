"""The oddball protocol's statistics against behaviour (paper Sec. 3.1, Fig. 2B/2C/2D, Appendix Q).

The reference data are :mod:`gensim_jax.evaluation.sable_meyer`'s; every function takes per-shape
error rates ``(11,)`` in :data:`~gensim_jax.evaluation.sable_meyer.SHAPES` order (or ``(R, 11)`` over runs).

* :func:`regularity_correlation` -- Spearman rho between error rate and irregularity rank (the
  paper's rho(9) = 0.88 for GenSim).
* :func:`behaviour_correlation` / :func:`subject_correlations` / :func:`shape_statistics` --
  correlation of a model's error rates with a population's (Fig. 2C) or each subject's (Fig. S2).
* :func:`compare_across_runs` -- the t-test across training runs that the paper reports as t(18).
* :func:`oddball_summary` -- all of the above for several models x runs at once (Fig. 2B/2C).
* :func:`human_ceilings` -- the human noise ceiling of every behavioural comparison (split-half over
  participants, Spearman-Brown corrected, and between groups), with bootstrap intervals.
* :func:`read_similarity_judgements` / :func:`similarity_judgement_correlation` -- the model's
  pairwise cosine similarity against human similarity ratings (Fig. 2D, Appendix J).

:mod:`gensim_jax.evaluation.oddball` re-exports every name here.
"""

from __future__ import annotations

import csv
import functools
import os
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from gensim_jax.evaluation.oddball_observer import CHANCE_ERROR_RATE
from gensim_jax.evaluation.sable_meyer import (
    HUMAN_POPULATIONS,
    SHAPES,
    packaged_error_rates,
    pooled_error_rates,
    regularity_rank,
    subject_error_rates,
)

__all__ = [
    "RunComparison",
    "behaviour_correlation",
    "compare_across_runs",
    "human_ceilings",
    "human_mean_error",
    "oddball_summary",
    "population_correlations",
    "read_similarity_judgements",
    "regularity_correlation",
    "shape_statistics",
    "similarity_judgement_correlation",
    "subject_correlations",
]


def human_mean_error() -> float:
    """The pooled humans' mean error over the 11 shapes (0.249): the level the graded read-out matches."""
    return float(np.mean(pooled_error_rates(packaged_error_rates(), HUMAN_POPULATIONS)))


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
    from scipy import stats  # here, not at the top: importing scipy.stats takes 1-3 s

    res = stats.spearmanr(r, regularity_rank())
    return float(res.statistic), float(res.pvalue), len(SHAPES) - 2


def _corr(a: np.ndarray, b: np.ndarray, method: str) -> tuple[float, float]:
    from scipy import stats

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
    from scipy import stats

    res = stats.ttest_ind(rh, rb)
    return RunComparison(rh, rb, float(res.statistic), float(res.pvalue), 2 * len(runs) - 2)


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
    from scipy import stats

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


@functools.lru_cache(maxsize=8)
def _ceilings(resamples: int, seed: int, splits: int) -> dict:
    from gensim_jax.evaluation.sable_meyer import packaged_participants
    from gensim_jax.evaluation.statistics import between_group_consistency, split_half_reliability

    table = packaged_participants()
    kw = dict(resamples=resamples, seed=seed)

    def stack(pops):
        groups = np.concatenate([[p] * len(table[p]["participants"]) for p in pops])
        return (
            np.concatenate([table[p]["errors"] for p in pops]),
            np.concatenate([table[p]["trials"] for p in pops]),
            groups,
        )

    def entry(pops, between=None) -> dict:
        e, n, g = stack(pops)
        sh = split_half_reliability(e, n, g, splits=splits, **kw)
        out = {
            "split_half": {k: sh[k] for k in ("reliability", "split_half_r", "interval", "participants", "draws")},
            "between_group": None,
            "populations": list(pops),
        }
        if between is not None:
            out["between_group"] = {k: between[k] for k in ("r", "interval", "draws", "groups") if k in between}
        return out

    e, n, g = stack(HUMAN_POPULATIONS)
    bg = between_group_consistency(e, n, g, **kw)
    groups = bg.pop("groups")
    human = entry(
        HUMAN_POPULATIONS, {"r": bg["mean"], "interval": bg["interval"], "draws": bg["draws"], "groups": groups}
    )
    populations = {}
    for p in HUMAN_POPULATIONS:
        populations[p] = entry((p,), {"r": groups[p]["r"], "interval": groups[p]["interval"]})
    populations["baboons"] = entry(("baboons",))
    return {"r_human": human, "r_baboon": populations["baboons"], "r_population": populations}


def human_ceilings(resamples: int = 1000, seed: int = 0, splits: int = 200) -> dict:
    """The human noise ceiling of each behavioural comparison of the oddball protocol (issue 42).

    For the pooled humans (``r_human``, five groups, split within each group), the baboons
    (``r_baboon``) and each population (``r_population``), from the packaged per-participant counts
    (:func:`~gensim_jax.evaluation.sable_meyer.packaged_participants`):

    * ``split_half``: :func:`~gensim_jax.evaluation.statistics.split_half_reliability` -- the Pearson r
      over the 11 shapes between the pooled error rates of two random halves of the participants,
      mean over ``splits`` splits, Spearman-Brown corrected (``2 r / (1 + r)``): the reliability of
      the whole sample's rates, the ceiling a model's r is divided by (Brain-Score's convention);
    * ``between_group`` (human groups only): :func:`~gensim_jax.evaluation.statistics.between_group_consistency`
      -- a group's rates against the other four groups' pooled rates (for ``r_human``, the mean over
      the five groups): the r a model as human as another human group would reach. None for baboons.

    Each with a ``resamples``-draw percentile bootstrap over participants (``interval``; the ``draws``
    are kept so that a ratio can carry both sources). Cached per arguments.
    """
    return _ceilings(int(resamples), int(seed), int(splits))
