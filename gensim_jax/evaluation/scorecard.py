"""The human-alignment report card of any vision encoder (``gensim-jax score``; issue 34).

One call runs the paper's behavioural protocols on an embedding function and puts the model beside
reference rows, every number with a bootstrap interval:

* ``oddball`` -- the quadrilateral oddball test (paper Sec. 3.1, Fig. 2B/2C) on the seeded test set
  of :func:`gensim_jax.evaluation.oddball.test_trials`, read out by
  :func:`~gensim_jax.evaluation.oddball.readout` (graded, the headline, and the paper's
  argmax rule) and summarised by :func:`~gensim_jax.evaluation.oddball.oddball_summary`: Spearman
  ``rho9`` with the irregularity rank, Pearson ``r_human`` (pooled five groups) and ``r_baboon``,
  ``r`` per population. Interval: percentile bootstrap over trials, resampled within each shape,
  the graded read-out's temperature held at its full-data value.
* ``hierarchy`` -- linear decoding of every level of a 2 x 3 x 3 class tree (paper Sec. 3.3, Fig. 4B,
  Appendix N) by :func:`~gensim_jax.evaluation.hierarchy.decode_levels` on the synthetic
  grating images of :func:`gensim_jax.stimuli.hierarchy.hierarchy_images`; ``score`` is
  ``sum_l log(a_l / c_l)`` with uniform chance. Interval: percentile bootstrap over the held-out
  images' cross-validated predictions (the classifiers fixed).
* ``geoclidean`` -- few-shot concept learning (paper Sec. 3.2, Fig. 3C) by
  :func:`~gensim_jax.evaluation.geoclidean.fewshot_evaluate` (prototype scores, per-concept thresholds):
  accuracy and ROC AUC against close and far negatives, on all 37 concepts of the official benchmark
  images (Hsu et al. 2022) when a directory is given, else on the product's own renders of the 37
  programs (:func:`gensim_jax.stimuli.geoclidean.dataset.benchmark_images`, labelled as such).
  Interval: percentile bootstrap over concepts.
* ``odd_one_out`` -- only with a trials CSV (and, to embed them, the images it names): the model's
  likelihood of human odd-one-out choices (paper Sec. 3.3, Fig. 4D) by
  :func:`~gensim_jax.evaluation.odd_one_out.odd_one_out_likelihood` (softmax over cosine
  similarities, ``alpha`` fitted per participant). Interval: percentile bootstrap over participants.

Entry points: :func:`score` (an embedding function ``uint8 images (N, S, S, 3) -> (N, D)``, e.g. in
a notebook), :func:`score_embeddings` (vectors by stimulus id, as :func:`write_stimuli` names them),
:func:`model_embedder` (a registry model, untrained or from a PyTorch checkpoint, read at a layer)
and :func:`~gensim_jax.evaluation.scorecard_exports.score_export` (in
:mod:`~gensim_jax.evaluation.scorecard_exports`, with :func:`~gensim_jax.evaluation.scorecard_exports.score_exports`
for several exports of one model) (an export of ``gensim-jax train``: the protocol its run evaluated is the
call ``gensim-jax eval export`` makes, :func:`gensim_jax.training.runner.evaluate_export`, so its
numbers are the run's exactly). :func:`format_markdown` and :func:`plot_scorecard` present a result.
The protocols' stimuli are built in :mod:`~gensim_jax.evaluation.scorecard_stimuli` (:func:`stimuli` and
:class:`ProtocolStimuli`, importable from here).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from gensim_jax.evaluation import oddball as ob
from gensim_jax.evaluation import sable_meyer as sm
from gensim_jax.evaluation.scorecard_models import file_sha256, model_embedder, model_layers
from gensim_jax.evaluation.scorecard_report import (
    ALL_PROTOCOLS,
    CONFIDENCE,
    GEOCLIDEAN_METRICS,
    OPTIONAL_PROTOCOLS,
    PROTOCOLS,
    format_markdown,
    plot_scorecard,
    scorecard_figure,
)
from gensim_jax.evaluation.scorecard_stimuli import (
    HIERARCHY_CONTENT_SIZE,
    HIERARCHY_NOISE,
    HIERARCHY_PER_CLASS,
    ProtocolStimuli,
    stimuli,
)
from gensim_jax.evaluation.statistics import intervals_overlap, percentile_interval

__all__ = [
    "ALL_PROTOCOLS",
    "DOCUMENTED_ODDBALL",
    "GEOCLIDEAN_METRICS",
    "OPTIONAL_PROTOCOLS",
    "PROTOCOLS",
    "ProtocolStimuli",
    "file_sha256",
    "format_markdown",
    "model_embedder",
    "model_layers",
    "oddball_from_evaluation",
    "plot_scorecard",
    "scorecard_figure",
    "read_embeddings",
    "score",
    "score_embeddings",
    "stimuli",
    "write_stimuli",
]

# ------------------------------------------------------------------------------------------------
# intervals
# ------------------------------------------------------------------------------------------------


def _percentile(values, confidence: float = CONFIDENCE) -> Optional[list]:
    return percentile_interval(values, confidence)


def _draws_array(values) -> np.ndarray:
    """Bootstrap draws as float64, None (an undefined correlation) as NaN."""
    return np.array([np.nan if v is None else float(v) for v in values], np.float64)


def _rate_stats(rates: np.ndarray, human: np.ndarray, baboon: np.ndarray) -> dict:
    """rho9 (Spearman with the irregularity rank) and Pearson r with the human / baboon rates; None if undefined."""
    if np.ptp(rates) == 0:
        return {"rho9": None, "r_human": None, "r_baboon": None}
    return {
        "rho9": ob.regularity_correlation(rates)[0],
        "r_human": ob.behaviour_correlation(rates, human)[0],
        "r_baboon": ob.behaviour_correlation(rates, baboon)[0],
    }


def _oddball_bootstrap(embeddings, trials, temperature: float, resamples: int, seed: int) -> tuple[dict, dict]:
    """Percentile intervals of rho9 / r_human / r_baboon / mean error over trials resampled within each shape, and
    the draws (``{rule: {metric: (resamples,)}}``, NaN where undefined)."""
    table = sm.packaged_error_rates()
    human = sm.pooled_error_rates(table, sm.HUMAN_POPULATIONS)
    baboon = np.asarray(table["baboons"]["error_rate"], np.float64)
    scores = ob.outlier_scores(embeddings)
    dev = np.asarray(trials[1])
    shapes = np.asarray(trials[2])
    groups = [np.flatnonzero(shapes == s) for s in sm.SHAPES]
    rng = np.random.default_rng([int(seed), 34_001])
    stats = {rule: {k: [] for k in ("rho9", "r_human", "r_baboon", "mean_error")} for rule in ("graded", "argmax")}
    for _ in range(int(resamples)):
        idx = np.concatenate([rng.choice(g, len(g), replace=True) for g in groups if len(g)])
        sh = list(shapes[idx])
        for rule, tau in (("graded", temperature), ("argmax", 0.0)):
            rates = ob.graded_error_rates(scores[idx], dev[idx], sh, tau)
            for k, v in {**_rate_stats(rates, human, baboon), "mean_error": float(np.mean(rates))}.items():
                stats[rule][k].append(v)
    draws = {rule: {k: _draws_array(v) for k, v in d.items()} for rule, d in stats.items()}
    return {rule: {k: _percentile(v) for k, v in d.items()} for rule, d in draws.items()}, draws


# ------------------------------------------------------------------------------------------------
# protocols on embeddings
# ------------------------------------------------------------------------------------------------


def _oddball_row(
    rates: dict,
    temperature: Optional[float] = None,
    lowest: Optional[tuple] = None,
    target_error: Optional[float] = None,
) -> dict:
    """The scorecard entry of per-shape error rates ``{"graded": (11,), "argmax": (11,)}``; ``lowest``: the
    ``(error, temperature)`` of :func:`~gensim_jax.evaluation.oddball.lowest_error` (default: the argmax error)."""
    table = sm.packaged_error_rates()
    row: dict = {}
    for rule in ("graded", "argmax"):
        if rule not in rates:
            continue
        s = ob.oddball_summary({"m": np.asarray(rates[rule], np.float64)[None]}, table)
        m = s["models"]["m"]
        entry = {
            "rho9": m["regularity"]["rho"] if m["regularity"] else None,
            "r_human": m["r_human_mean"],
            "r_baboon": m["r_baboon_mean"],
            "mean_error": float(np.mean(rates[rule])),
            "error_rate": [float(x) for x in rates[rule]],
            "r_population": {p: e["r_mean"] for p, e in m["populations"].items()},
        }
        if rule == "graded":
            row.update(entry)
        else:
            row["argmax"] = entry
    if temperature is not None:
        row["temperature"] = float(temperature)
        # temperature 0: the argmax error already exceeds the humans' mean error, which no softmax observer can
        # then match (noise only adds errors); the graded columns are the argmax ones, and the row says so
        row["level_matched"] = bool(temperature > 0)
        if not row["level_matched"] and "argmax" in row:
            target = ob.human_mean_error() if target_error is None else float(target_error)
            low, low_tau = lowest if lowest is not None else (row["argmax"]["mean_error"], 0.0)
            row["readout"] = {
                "target_error": target,
                "reached": False,
                "lowest_error": float(low),
                "lowest_error_temperature": float(low_tau),
            }
            row["readout_note"] = (
                f"the graded read-out cannot reach its target mean error {target:.3f}: the lowest error any "
                f"temperature gives this encoder is {low:.3f} (the argmax rule's: {row['argmax']['mean_error']:.3f}), "
                "so its graded columns are the argmax ones"
            )
        elif row["level_matched"]:
            target = ob.human_mean_error() if target_error is None else float(target_error)
            row["readout"] = {"target_error": target, "reached": True}
    return row


def oddball_from_evaluation(
    evaluation: Mapping, lowest: Optional[tuple] = None, target_error: Optional[float] = None
) -> dict:
    """The scorecard's oddball entry of an oddball evaluation (:func:`~gensim_jax.evaluation.oddball.evaluate`);
    ``lowest``, ``target_error``: see :func:`_oddball_row`."""
    return _oddball_row(
        {"graded": evaluation["graded"], "argmax": evaluation["argmax"]},
        evaluation.get("temperature"),
        lowest,
        target_error,
    )


def _score_oddball(embeddings: np.ndarray, stim: ProtocolStimuli, resamples: int, seed: int) -> dict:
    trials = stim.data
    t = len(trials.images)
    z = np.asarray(embeddings, np.float64).reshape(t, 6, -1)
    target = stim.settings.get("target_error")
    r = ob.readout(z, trials, target)
    lowest = ob.lowest_error(ob.outlier_scores(z), np.asarray(trials[1]))
    row = oddball_from_evaluation(r, lowest, target)
    row["regression_error"] = r["regression_error"]
    if resamples:
        row["interval"], row["_draws"] = _oddball_bootstrap(z, trials, r["temperature"], resamples, seed)
    return row


def _score_hierarchy(embeddings: np.ndarray, stim: ProtocolStimuli, resamples: int, seed: int) -> dict:
    from gensim_jax.evaluation.hierarchy import decode_levels

    labels, tree, nodes = stim.data
    folds, dseed = stim.settings["folds"], stim.settings.get("decode_seed", seed)
    res = decode_levels(embeddings, labels, tree, nodes, folds=folds, seed=dseed, chance="uniform")
    chances = np.array([lv.chance for lv in res.levels])
    row = {
        "score": res.score,
        "levels": [lv.level for lv in res.levels],
        "num_labels": [lv.num_labels for lv in res.levels],
        "accuracy": [lv.accuracy for lv in res.levels],
        "chance": chances.tolist(),
    }
    if resamples:
        correct = np.stack(res.held_out_correct)  # (L, N), NaN: no label at that level
        n = correct.shape[1]
        rng = np.random.default_rng([int(seed), 34_002])
        floor = 0.5 / n  # the floor decode_levels puts under a zero accuracy
        scores, accs = [], []
        for _ in range(int(resamples)):
            a = np.nanmean(correct[:, rng.integers(0, n, n)], axis=1)
            accs.append(a)
            scores.append(float(np.sum(np.log(np.maximum(a, floor) / chances))))
        accs = np.array(accs)
        row["interval"] = {
            "score": _percentile(scores),
            "accuracy": [_percentile(accs[:, i]) for i in range(accs.shape[1])],
        }
        row["_draws"] = {"score": np.array(scores), "accuracy": accs}
    return row


def _score_geoclidean(embeddings: np.ndarray, stim: ProtocolStimuli, resamples: int, seed: int) -> dict:
    from gensim_jax.evaluation.geoclidean import fewshot_evaluate, split_episodes

    res = fewshot_evaluate(split_episodes(embeddings, stim.data), threshold=stim.settings["threshold"])
    row = {k: float(res.mean[k]) for k in GEOCLIDEAN_METRICS}
    row["per_concept"] = {n: {k: float(v) for k, v in r.items()} for n, r in res.per_concept.items()}
    if resamples:
        names = list(res.per_concept)
        table = np.array([[res.per_concept[n][k] for k in GEOCLIDEAN_METRICS[1:]] for n in names])
        rng = np.random.default_rng([int(seed), 34_003])
        draws = table[rng.integers(0, len(names), (int(resamples), len(names)))].mean(axis=1)  # (R, 4)
        draws = np.concatenate([draws[:, :2].mean(axis=1, keepdims=True), draws], axis=1)  # acc first
        row["interval"] = {k: _percentile(draws[:, i]) for i, k in enumerate(GEOCLIDEAN_METRICS)}
        row["_draws"] = {k: draws[:, i] for i, k in enumerate(GEOCLIDEAN_METRICS)}
    return row


def _score_odd_one_out(embeddings: np.ndarray, stim: ProtocolStimuli, resamples: int, seed: int) -> dict:
    from gensim_jax.evaluation.odd_one_out import odd_one_out_likelihood

    res = odd_one_out_likelihood(embeddings, stim.data)
    fits = res["participants"]
    row = {
        "mean_likelihood": res["mean_likelihood"],
        "chance": res["chance"],
        "participants": {
            p: {"alpha": f.alpha, "mean_likelihood": f.mean_likelihood, "trials": f.num_trials} for p, f in fits.items()
        },
    }
    if resamples:
        ml = np.array([f.mean_likelihood for f in fits.values()])
        rng = np.random.default_rng([int(seed), 34_004])
        draws = ml[rng.integers(0, len(ml), (int(resamples), len(ml)))].mean(axis=1)
        row["interval"] = {"mean_likelihood": _percentile(draws)}
        row["_draws"] = {"mean_likelihood": draws}
    return row


_SCORERS = {
    "oddball": _score_oddball,
    "hierarchy": _score_hierarchy,
    "geoclidean": _score_geoclidean,
    "odd_one_out": _score_odd_one_out,
}
_INTERVAL_METHOD = {
    "oddball": "percentile bootstrap over trials, resampled within each shape; the graded read-out's "
    "temperature fixed at its full-data value",
    "hierarchy": "percentile bootstrap over the held-out images' cross-validated predictions (classifiers fixed)",
    "geoclidean": "percentile bootstrap over concepts",
    "odd_one_out": "percentile bootstrap over participants (each participant's alpha fixed)",
}


def _pixels(images: np.ndarray, size: int = 32) -> np.ndarray:
    """The model-free reference: images area-averaged to ``size x size``, ImageNet-normalised, flattened."""
    from gensim_jax.evaluation.hierarchy import pixel_embedding

    return pixel_embedding(images, min(int(size), images.shape[1]))


def _check_vectors(z, n: int, where: str) -> np.ndarray:
    z = np.asarray(z)
    if z.ndim != 2 or len(z) != n:
        raise ValueError(f"{where}: expected ({n}, D) embeddings, got shape {z.shape}")
    if not np.issubdtype(z.dtype, np.number):
        raise ValueError(f"{where}: embeddings must be numbers, got dtype {z.dtype}")
    bad = ~np.all(np.isfinite(z), axis=1)
    if bad.any():
        raise ValueError(f"{where}: {int(bad.sum())} embedding(s) contain NaN or inf (first row {int(np.argmax(bad))})")
    return z.astype(np.float32)


#: The number each protocol's separation test compares, ``(metric, interval key)``: the model's 95% interval
#: against each embedded reference row's (pixels, the untrained network).
HEADLINE = {
    "oddball": ("r_human", "graded"),
    "hierarchy": ("score", None),
    "geoclidean": ("acc", None),
    "odd_one_out": ("mean_likelihood", None),
}


def _headline(protocol: str, row: Mapping) -> tuple:
    """``(value, interval)`` of the protocol's headline metric in ``row`` (interval None without one)."""
    metric, sub = HEADLINE[protocol]
    iv = row.get("interval") or {}
    iv = iv.get(sub) or {} if sub else iv
    return row.get(metric), iv.get(metric)


def _separation(protocol: str, model: Mapping, refs: Mapping, names: Sequence[str]) -> dict:
    """Whether each embedded reference row's headline interval misses the model's (:data:`HEADLINE`).

    ``separated``: True when the two 95% intervals do not overlap, False when they do, None when either
    is missing (no resamples, an undefined correlation); ``model_above``: the model's value is the higher.
    """
    metric, _ = HEADLINE[protocol]
    value, interval = _headline(protocol, model)
    rows = {}
    for name in names:
        v, iv = _headline(protocol, refs[name])
        sep = None if not (interval and iv) else not intervals_overlap(interval, iv)
        above = None if value is None or v is None else bool(value > v)
        rows[name] = {"value": v, "interval": iv, "separated": sep, "model_above": above}
    flags = [r["separated"] for r in rows.values()]
    return {
        "metric": metric,
        "model": {"value": value, "interval": interval},
        "rows": rows,
        "all_separated": None if not flags or any(f is None for f in flags) else all(flags),
        "test": "the model's and the row's 95% intervals do not overlap",
    }


def _fraction(value, ceiling):
    return None if value is None or not ceiling else float(value) / float(ceiling)


def _oddball_ceiling_rows(refs: dict, model: dict, resamples: int, seed: int) -> dict:
    """The human noise ceilings of the oddball entry (:func:`~gensim_jax.evaluation.oddball.human_ceilings`),
    each row's r as a fraction of them, and the human / baboon rows' reliabilities in place of 1.00."""
    c = ob.human_ceilings(resamples=int(resamples), seed=int(seed))

    def public(e):
        bg = e["between_group"]
        return {
            "split_half": {k: v for k, v in e["split_half"].items() if k != "draws"},
            "between_group": None if bg is None else {k: v for k, v in bg.items() if k in ("r", "interval", "groups")},
            "populations": e["populations"],
        }

    ceilings = {
        "r_human": public(c["r_human"]),
        "r_baboon": public(c["r_baboon"]),
        "r_population": {p: public(e) for p, e in c["r_population"].items()},
        "method": "split-half over participants (halved within each population, 200 splits), Pearson r over the 11 "
        "shapes of the halves' pooled error rates, Spearman-Brown corrected: the reliability of the whole sample's "
        "rates; between-group: a human group against the other groups pooled (r_human: the mean over the five "
        "groups). Intervals: percentile bootstrap over participants, recentred in Fisher z",
        "source": "gensim_jax/assets/sable_meyer_participants.csv (scripts/sable_meyer_participants.py)",
    }
    ceil = {"r_human": c["r_human"]["split_half"], "r_baboon": c["r_baboon"]["split_half"]}
    between = c["r_human"]["between_group"]
    for name, row in [("model", model), *refs.items()]:
        if name in ("humans (pooled)", "baboons"):
            continue
        row["of_ceiling"] = {k: _fraction(row.get(k), ceil[k]["reliability"]) for k in ceil}
        row["of_ceiling"]["r_population"] = {
            p: _fraction(v, c["r_population"][p]["split_half"]["reliability"])
            for p, v in (row.get("r_population") or {}).items()
        }
        row["of_between_group"] = {"r_human": _fraction(row.get("r_human"), between["r"])}
        if "argmax" in row:
            row["argmax"]["of_ceiling"] = {k: _fraction(row["argmax"].get(k), ceil[k]["reliability"]) for k in ceil}
        draws = row.get("_draws")
        if draws:
            for rule in ("graded", "argmax"):
                for k in ceil:
                    cd = ceil[k]["draws"]
                    rd = draws[rule][k]
                    if len(cd) == len(rd) and len(rd):
                        row["interval"][rule][f"{k}_of_ceiling"] = _percentile(rd / cd)
    human, baboon = refs["humans (pooled)"], refs["baboons"]
    human["r_human"] = ceil["r_human"]["reliability"]
    human["r_human_is"] = (
        "split-half reliability of the pooled human rates (Spearman-Brown), not a correlation with itself"
    )
    human["interval"] = {"graded": {"r_human": ceil["r_human"]["interval"]}}
    baboon["r_baboon"] = ceil["r_baboon"]["reliability"]
    baboon["r_baboon_is"] = "split-half reliability of the baboon rates (Spearman-Brown, 11 baboons)"
    baboon["interval"] = {"graded": {"r_baboon": ceil["r_baboon"]["interval"]}}
    return ceilings


def _refresh(protocol: str, entry: dict, resamples: int, seed: int) -> None:
    """Recompute what derives from the model's numbers (separation, fractions of the ceilings) after an export's
    entry took the run's own numbers."""
    refs = entry["references"]
    entry["separation"] = _separation(protocol, entry, refs, list(entry["separation"]["rows"]))
    if protocol == "oddball":
        _oddball_ceiling_rows(refs, entry, resamples, seed)


def _strip_draws(card):
    """``card`` without the bootstrap draws (``_draws``) kept for the fractions and the mean over exports."""
    if isinstance(card, dict):
        return {k: _strip_draws(v) for k, v in card.items() if k != "_draws"}
    return card


def _protocol_entry(protocol, stim, rows: dict, resamples: int, seed: int) -> dict:
    """``rows``: ``{name: (N, D) embeddings}``, the first the model, the others references."""
    names = list(rows)
    model = _SCORERS[protocol](rows[names[0]], stim, resamples, seed)
    refs = {name: _SCORERS[protocol](rows[name], stim, resamples, seed) for name in names[1:]}
    separation = _separation(protocol, model, refs, names[1:])
    ceilings = None
    if protocol == "oddball":
        refs.update(_behaviour_rows())
        ceilings = _oddball_ceiling_rows(refs, model, resamples, seed)
    entry = {**model, "stimuli": stim.settings}
    if ceilings is not None:
        entry["ceilings"] = ceilings
    entry["separation"] = separation
    if resamples:
        entry["interval_method"] = {
            "method": _INTERVAL_METHOD[protocol],
            "confidence": CONFIDENCE,
            "resamples": int(resamples),
            "seed": int(seed),
        }
    entry["references"] = refs
    return entry


#: The product's documented oddball results, shown as reference rows (no interval: means over runs). Source:
#: docs/results/quadrilaterals.md, section "The demo's run (3 runs per objective)", its graded and argmax tables
#: (CORnet-Z from scratch at 48 x 48, 800 steps, 3 runs per objective; tests/evaluation/test_scorecard.py
#: checks these numbers against that page).
DOCUMENTED_ODDBALL = {
    "documented: GenSim CORnet-Z (make demo, 3 runs)": {
        "rho9": 0.88, "r_human": 0.83, "r_baboon": 0.56, "mean_error": 0.249,
        "argmax": {"rho9": 0.79, "r_human": 0.42, "r_baboon": 0.28, "mean_error": 0.028},
    },
    "documented: supervised CORnet-Z (make demo, 3 runs)": {
        "rho9": 0.09, "r_human": 0.00, "r_baboon": 0.69, "mean_error": 0.299,
        "argmax": {"rho9": 0.09, "r_human": 0.00, "r_baboon": 0.69, "mean_error": 0.299},
    },
}  # fmt: skip
DOCUMENTED_SOURCE = 'docs/results/quadrilaterals.md, section "The demo\'s run (3 runs per objective)"'


def _behaviour_rows() -> dict:
    """Humans (pooled five groups) and baboons as rows: their own rho9 and correlations with each other."""
    table = sm.packaged_error_rates()
    human = sm.pooled_error_rates(table, sm.HUMAN_POPULATIONS)
    baboon = np.asarray(table["baboons"]["error_rate"], np.float64)
    out = {}
    for name, rates in (("humans (pooled)", human), ("baboons", baboon)):
        row = _rate_stats(rates, human, baboon)
        row.update(mean_error=float(np.mean(rates)), error_rate=[float(x) for x in rates])
        out[name] = row
    for name, row in DOCUMENTED_ODDBALL.items():
        out[name] = {**row, "argmax": dict(row["argmax"]), "source": DOCUMENTED_SOURCE}
    return out


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # the 'train' extra brings tqdm; without it no bar
        return None
    return tqdm(total=total, desc=desc, unit="img", leave=False)


def _embed_all(embed_fn: Callable, images: np.ndarray, desc: str, chunk: int, progress: bool) -> np.ndarray:
    bar = _progress(len(images), desc, progress)
    out = []
    try:
        for start in range(0, len(images), chunk):
            out.append(np.asarray(embed_fn(images[start : start + chunk])))
            if bar is not None:
                bar.update(len(out[-1]))
    finally:
        if bar is not None:
            bar.close()
    return np.concatenate(out)


def score(
    embed_fn: Callable,
    protocols: Sequence[str] = PROTOCOLS,
    *,
    name: str = "model",
    image_size: int = 224,
    references: Optional[Mapping[str, Optional[Callable]]] = None,
    resamples: int = 1000,
    seed: int = 0,
    trials_per_condition: int = 10,
    per_class: int = HIERARCHY_PER_CLASS,
    geoclidean_dir: Optional[str] = None,
    odd_one_out_trials: Optional[str] = None,
    odd_one_out_images: Optional[str] = None,
    chunk: int = 256,
    progress: bool = False,
    info: Optional[Mapping] = None,
    keep_draws: bool = False,
    hierarchy_content_size: int = HIERARCHY_CONTENT_SIZE,
    hierarchy_noise: float = HIERARCHY_NOISE,
) -> dict:
    """The scorecard of ``embed_fn`` on every protocol of ``protocols`` (see the module docstring).

    Args:
      embed_fn: ``uint8 images (N, image_size, image_size, 3) -> (N, D)`` embeddings (called in
        chunks of ``chunk`` images).
      protocols: names from :data:`PROTOCOLS`.
      name: the model's row name.
      image_size: the side the stimuli are rendered at (the model's input size).
      references: more rows, ``{name: embed_fn}``; ``None`` (default) gives ``{"pixels": ...}``
        (:func:`_pixels`); pass ``{}`` for none. A value ``None`` means the pixels.
      resamples: bootstrap resamples of every interval (0: no intervals).
      seed: seeds the stimuli, the decoders' folds and the bootstrap.
      trials_per_condition, per_class: stimulus counts (440 oddball trials, 180 hierarchy images).
      geoclidean_dir: the official Geoclidean benchmark (default: the product's renders, labelled).
      progress: a progress bar on stderr while embedding.
      info: provenance of the model (``model``, ``weights``, ``layer``, ...), stored under ``"inputs"``.
      keep_draws: keep each row's bootstrap draws under ``_draws`` (for :func:`score_exports`).
      hierarchy_content_size, hierarchy_noise: the hierarchy protocol's calibration (see :func:`stimuli`).

    Returns:
      ``{"model", "inputs", "provenance", "protocols", PROTOCOL: {...metrics..., "interval",
      "interval_method", "stimuli", "references": {row: {...}}}}`` (docs/EVALUATION.md lists the keys).
    """
    refs = {"pixels": None} if references is None else dict(references)
    stims = stimuli(
        protocols,
        image_size,
        seed=seed,
        trials_per_condition=trials_per_condition,
        per_class=per_class,
        geoclidean_dir=geoclidean_dir,
        odd_one_out_trials=odd_one_out_trials,
        odd_one_out_images=odd_one_out_images,
        hierarchy_content_size=hierarchy_content_size,
        hierarchy_noise=hierarchy_noise,
    )
    out = _head(name, info, protocols)
    for p, stim in stims.items():
        if stim.images is None:
            raise ValueError(f"{p}: embedding a model needs the images (--odd-one-out-images DIR)")
        rows = {
            name: _check_vectors(
                _embed_all(embed_fn, stim.images, f"{p}: {name}", chunk, progress), len(stim.ids), f"{name} on {p}"
            )
        }
        for ref, fn in refs.items():
            z = _pixels(stim.images) if fn is None else _embed_all(fn, stim.images, f"{p}: {ref}", chunk, progress)
            rows[ref] = _check_vectors(z, len(stim.ids), f"{ref} on {p}")
        out[p] = _protocol_entry(p, stim, rows, resamples, seed)
    return out if keep_draws else _strip_draws(out)


def _head(name: str, info: Optional[Mapping], protocols: Sequence[str]) -> dict:
    from gensim_jax.provenance import command_line, git_state, library_versions, package_version

    return {
        "model": name,
        "inputs": dict(info or {}),
        "provenance": {
            "gensim_jax": package_version(),
            "git": git_state(),
            "versions": library_versions(),
            "command": command_line(),
        },
        "protocols": list(protocols),
    }


# ------------------------------------------------------------------------------------------------
# embeddings by id (other frameworks)
# ------------------------------------------------------------------------------------------------


def read_embeddings(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """An embeddings file: ``.npz`` with ``ids`` ``(N,)`` (str) and ``embeddings`` ``(N, D)`` -> ``{id: (D,)}``.

    Errors (``ValueError``/``FileNotFoundError`` naming the file): not an npz of those arrays,
    lengths that differ, repeated ids, NaN or inf vectors.
    """
    from gensim_jax.evaluation.embed import load_npz

    z = load_npz(str(path), ("ids", "embeddings"))
    ids, emb = z["ids"], z["embeddings"]
    if ids.ndim != 1 or emb.ndim != 2 or len(ids) != len(emb):
        raise ValueError(f"{path}: ids must be (N,) and embeddings (N, D), got {ids.shape} and {emb.shape}")
    keys = [i.decode() if isinstance(i, bytes) else str(i) for i in ids.tolist()]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{path}: ids repeat (each stimulus id once)")
    emb = _check_vectors(emb, len(keys), str(path))
    return dict(zip(keys, emb))


def score_embeddings(
    vectors: Mapping[str, np.ndarray],
    protocols: Sequence[str] = PROTOCOLS,
    *,
    name: str = "embeddings",
    image_size: int = 224,
    resamples: int = 1000,
    seed: int = 0,
    trials_per_condition: int = 10,
    per_class: int = HIERARCHY_PER_CLASS,
    geoclidean_dir: Optional[str] = None,
    odd_one_out_trials: Optional[str] = None,
    odd_one_out_images: Optional[str] = None,
    info: Optional[Mapping] = None,
) -> dict:
    """The scorecard of precomputed vectors ``{stimulus id: (D,)}`` (ids as :func:`write_stimuli` names them).

    The stimuli are made again with the same settings (ids must match, all of one dimensionality);
    the reference row is the pixels at ``image_size``. Scores equal :func:`score` of the function
    that made the vectors.
    """
    stims = stimuli(
        protocols,
        image_size,
        seed=seed,
        trials_per_condition=trials_per_condition,
        per_class=per_class,
        geoclidean_dir=geoclidean_dir,
        odd_one_out_trials=odd_one_out_trials,
        odd_one_out_images=odd_one_out_images,
    )
    dims = {np.shape(v) for v in vectors.values()}
    if len(dims) > 1:
        raise ValueError(f"embeddings have different dimensionalities {sorted(dims)}; every vector must be (D,)")
    out = _head(name, info, protocols)
    for p, stim in stims.items():
        missing = [i for i in stim.ids if i not in vectors]
        if missing:
            raise ValueError(
                f"the embeddings lack {len(missing)} of the {len(stim.ids)} {p} stimuli (e.g. {missing[0]}); embed "
                "every PNG of gensim-jax score stimuli made with the same --seed, --trials-per-condition and --per-class"
            )
        z = np.stack([np.asarray(vectors[i]) for i in stim.ids])
        rows = {name: _check_vectors(z, len(stim.ids), f"{name} on {p}")}
        if stim.images is not None:
            rows["pixels"] = _pixels(stim.images)
        out[p] = _protocol_entry(p, stim, rows, resamples, seed)
    return _strip_draws(out)


def write_stimuli(directory: str | os.PathLike, stims: Mapping[str, ProtocolStimuli], progress: bool = False) -> Path:
    """Every stimulus as ``DIR/<id>.png`` (RGB, lossless) and ``DIR/manifest.json``.

    The manifest: ``{"format": "gensim-jax score stimuli", "protocols": {protocol: settings},
    "stimuli": [{"id", "protocol", "file"}]}``; embed every file and save ``ids`` and ``embeddings``
    in an ``.npz`` for :func:`score_embeddings` (``gensim-jax score --embeddings FILE``).
    """
    from PIL import Image

    root = Path(directory)
    entries = []
    total = sum(len(s.ids) for s in stims.values())
    bar = _progress(total, "writing stimuli", progress)
    for p, stim in stims.items():
        if stim.images is None:
            raise ValueError(f"{p}: writing its stimuli needs the images (--odd-one-out-images DIR)")
        for i, img in zip(stim.ids, stim.images):
            rel = f"{i}.png"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(img, "RGB").save(root / rel)
            entries.append({"id": i, "protocol": p, "file": rel})
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    manifest = {
        "format": "gensim-jax score stimuli",
        "protocols": {p: s.settings for p, s in stims.items()},
        "stimuli": entries,
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return root / "manifest.json"
