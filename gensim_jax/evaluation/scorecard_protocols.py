"""Each protocol's entry of the report card, from embeddings: the scores, their intervals, and the rows beside them.

scorecard's :func:`~gensim_jax.evaluation.scorecard.score` embeds the stimuli and calls ``_protocol_entry`` once per
protocol with the model's embeddings and the reference rows' (pixels, an untrained network). Here:

* the scorers on embeddings, one per protocol (the metrics of the scorecard module's docstring), each with
  its percentile bootstrap: over trials resampled within each shape (oddball, the graded read-out's
  temperature held at its full-data value), over held-out images (hierarchy), over concepts
  (Geoclidean), over participants (odd-one-out);
* ``_separation``: whether each reference row's 95% interval of the protocol's headline metric
  (:data:`HEADLINE`) misses the model's;
* the oddball entry's human and baboon rows, the documented ``make demo`` rows (:data:`DOCUMENTED_ODDBALL`),
  and the human noise ceilings with every row's ``r`` as a fraction of them
  (:func:`~gensim_jax.evaluation.oddball.human_ceilings`);
* :func:`oddball_from_evaluation`: the oddball entry of a run's own evaluation, so that an export's card
  carries the run's numbers (:mod:`~gensim_jax.evaluation.scorecard_exports`).
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from gensim_jax.evaluation import oddball as ob
from gensim_jax.evaluation import sable_meyer as sm
from gensim_jax.evaluation.scorecard_report import CONFIDENCE, GEOCLIDEAN_METRICS
from gensim_jax.evaluation.scorecard_stimuli import ProtocolStimuli
from gensim_jax.evaluation.statistics import intervals_overlap, percentile_interval

__all__ = [
    "DOCUMENTED_ODDBALL",
    "HEADLINE",
    "oddball_from_evaluation",
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
