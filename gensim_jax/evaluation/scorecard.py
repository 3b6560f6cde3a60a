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
and :func:`score_export` (an export of ``gensim-jax train``: the protocol its run evaluated is the
call ``gensim-jax eval export`` makes, :func:`gensim_jax.training.runner.evaluate_export`, so its
numbers are the run's exactly). :func:`format_markdown` and :func:`plot_scorecard` present a result.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from gensim_jax.evaluation import oddball as ob
from gensim_jax.evaluation import sable_meyer as sm

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
    "score_export",
    "stimuli",
    "write_stimuli",
]

#: The protocols a scorecard can hold, in report order.
PROTOCOLS = ("oddball", "hierarchy", "geoclidean")
#: Protocols that need the user's data (a trials CSV): run only when asked for.
OPTIONAL_PROTOCOLS = ("odd_one_out",)
ALL_PROTOCOLS = PROTOCOLS + OPTIONAL_PROTOCOLS
#: The synthetic class tree of the ``hierarchy`` protocol (children per level): 18 leaf classes.
HIERARCHY_BRANCHING = (2, 3, 3)
CONFIDENCE = 0.95


@dataclass(frozen=True)
class ProtocolStimuli:
    """One protocol's stimuli: ``ids`` ``(N,)`` and ``images`` ``(N, S, S, 3)`` uint8, in the order scored.

    ``data`` is what the protocol needs besides the embeddings (the oddball trials, the class labels
    and tree), ``settings`` how they were made (recorded in the scorecard and the manifest).
    """

    protocol: str
    ids: tuple
    images: np.ndarray
    data: object
    settings: dict


def _oddball_stimuli(image_size: int, seed: int, trials_per_condition: int) -> ProtocolStimuli:
    trials = ob.test_trials(seed, trials_per_condition, image_size)
    t, n = trials.images.shape[:2]
    ids = tuple(f"oddball/{i:05d}_{j}" for i in range(t) for j in range(n))
    images = np.repeat(trials.images.reshape(t * n, image_size, image_size)[..., None], 3, axis=-1)
    settings = {"seed": seed, "trials_per_condition": trials_per_condition, "trials": t, "image_size": image_size}
    return ProtocolStimuli("oddball", ids, images, trials, settings)


def _hierarchy_stimuli(image_size: int, seed: int, per_class: int) -> ProtocolStimuli:
    from gensim_jax.evaluation.hierarchy import synthetic_stimuli

    images, labels, tree, nodes = synthetic_stimuli(seed, per_class, image_size, HIERARCHY_BRANCHING, noise=0.1)
    ids = tuple(f"hierarchy/{i:05d}" for i in range(len(labels)))
    settings = {
        "seed": seed,
        "per_class": per_class,
        "branching": list(HIERARCHY_BRANCHING),
        "images": len(labels),
        "image_size": image_size,
        "folds": 3,
    }
    return ProtocolStimuli("hierarchy", ids, images, (labels, tree, nodes), settings)


def _geoclidean_stimuli(image_size: int, seed: int, geoclidean_dir=None) -> ProtocolStimuli:
    from gensim_jax.evaluation.geoclidean import load_geoclidean, sampler_episodes
    from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_NAMES

    episodes = {}
    if geoclidean_dir is not None:
        if not Path(geoclidean_dir).is_dir():
            raise FileNotFoundError(f"--geoclidean-dir {geoclidean_dir}: no such directory (the official benchmark)")
        for name, c in load_geoclidean(geoclidean_dir, image_size=image_size).items():
            to_uint8 = lambda x: np.round(np.asarray(x) * 255.0).astype(np.uint8)  # noqa: E731 - PIL's values back
            episodes[name] = (to_uint8(c.train), to_uint8(c.test), np.asarray(c.test_kind))
        source = f"official benchmark images ({geoclidean_dir})"
    else:
        episodes = sampler_episodes(image_size, seed, CONCEPT_NAMES)
        source = "the product's own renders of the 37 concept programs (not the official images)"
    ids, images = [], []
    for name, (train, test, kind) in episodes.items():
        ids += [f"geoclidean/{name}/train_{k}" for k in range(len(train))]
        ids += [f"geoclidean/{name}/test_{kd}_{k}" for k, kd in enumerate(kind)]
        images += [train, test]
    layout = {n: (len(e[0]), np.asarray(e[2])) for n, e in episodes.items()}
    settings = {
        "seed": seed,
        "source": source,
        "concepts": len(episodes),
        "images": len(ids),
        "image_size": image_size,
        "threshold": "per_concept",
    }
    return ProtocolStimuli("geoclidean", tuple(ids), np.concatenate(images), layout, settings)


def _odd_one_out_stimuli(image_size: int, trials_csv, images_dir) -> ProtocolStimuli:
    import csv

    from gensim_jax.evaluation.odd_one_out import read_trials

    if trials_csv is None:
        raise ValueError(
            "the odd_one_out protocol needs a trials CSV (--odd-one-out-trials FILE: image_1, image_2, image_3, "
            "choice, rt, participant) and, to embed them, its images (--odd-one-out-images DIR)"
        )
    if not Path(trials_csv).is_file():
        raise FileNotFoundError(f"--odd-one-out-trials {trials_csv}: no such file")
    with open(trials_csv, newline="") as f:
        names = list(dict.fromkeys(r.get(k) for r in csv.DictReader(f) for k in ("image_1", "image_2", "image_3")))
    names = [n for n in names if n is not None]
    trials = read_trials(trials_csv, names)  # checks the columns and the choices, naming the line
    images = None
    if images_dir is not None:
        from PIL import Image

        root = Path(images_dir)
        if not root.is_dir():
            raise FileNotFoundError(f"--odd-one-out-images {images_dir}: no such directory")
        files = []
        for n in names:
            found = [c for c in (root / n, root / f"{n}.png", root / f"{n}.jpg") if c.is_file()]
            if not found:
                raise FileNotFoundError(f"--odd-one-out-images {images_dir}: no image {n!r} (nor {n}.png, {n}.jpg)")
            files.append(found[0])
        images = np.stack(
            [
                np.asarray(Image.open(f).convert("RGB").resize((image_size, image_size), Image.BILINEAR), np.uint8)
                for f in files
            ]
        )
    ids = tuple(f"odd_one_out/{n}" for n in names)
    settings = {
        "trials_csv": str(trials_csv),
        "images": None if images_dir is None else str(images_dir),
        "stimuli": len(names),
        "trials": len(trials.choice),
        "participants": len(np.unique(trials.participant)),
        "image_size": image_size,
        "objective": "mean_likelihood",
    }
    return ProtocolStimuli("odd_one_out", ids, images, trials, settings)


def stimuli(
    protocols: Sequence[str] = PROTOCOLS,
    image_size: int = 224,
    *,
    seed: int = 0,
    trials_per_condition: int = 10,
    per_class: int = 12,
    geoclidean_dir: Optional[str] = None,
    odd_one_out_trials: Optional[str] = None,
    odd_one_out_images: Optional[str] = None,
) -> dict[str, ProtocolStimuli]:
    """Every selected protocol's seeded stimuli rendered at ``image_size`` (uint8 RGB), with their ids.

    Oddball: 11 shapes x 4 deviant positions x ``trials_per_condition`` trials of 6 items (id
    ``oddball/TTTTT_I``: trial ``T``, item ``I``); hierarchy: ``per_class`` images of each of the 18
    classes (id ``hierarchy/NNNNN``); geoclidean: per concept 5 support and 15 test images (id
    ``geoclidean/CONCEPT/train_K`` and ``geoclidean/CONCEPT/test_KIND_K``), read from the official
    benchmark in ``geoclidean_dir`` (resized bilinearly) or rendered by the product's sampler.
    """
    _check_protocols(protocols)
    from gensim_jax.stimuli.quadrilaterals import MIN_IMAGE_SIZE

    if int(image_size) < MIN_IMAGE_SIZE:
        raise ValueError(f"image_size must be >= {MIN_IMAGE_SIZE}, got {image_size}")
    s, seed = int(image_size), int(seed)
    build = {
        "oddball": lambda: _oddball_stimuli(s, seed, int(trials_per_condition)),
        "hierarchy": lambda: _hierarchy_stimuli(s, seed, int(per_class)),
        "geoclidean": lambda: _geoclidean_stimuli(s, seed, geoclidean_dir),
        "odd_one_out": lambda: _odd_one_out_stimuli(s, odd_one_out_trials, odd_one_out_images),
    }
    return {p: build[p]() for p in protocols}


def _check_protocols(protocols: Sequence[str]) -> None:
    if isinstance(protocols, str):
        raise TypeError(f"protocols must be a sequence of names, got the string {protocols!r}")
    unknown = [p for p in protocols if p not in ALL_PROTOCOLS]
    if unknown or not protocols:
        raise ValueError(f"unknown protocols {unknown}; choose from {', '.join(ALL_PROTOCOLS)}")


# ------------------------------------------------------------------------------------------------
# intervals
# ------------------------------------------------------------------------------------------------


def _percentile(values, confidence: float = CONFIDENCE) -> Optional[list]:
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], np.float64)
    if v.size == 0:
        return None
    a = (1.0 - confidence) / 2.0
    return [float(np.quantile(v, a)), float(np.quantile(v, 1.0 - a))]


def _rate_stats(rates: np.ndarray, human: np.ndarray, baboon: np.ndarray) -> dict:
    """rho9 (Spearman with the irregularity rank) and Pearson r with the human / baboon rates; None if undefined."""
    if np.ptp(rates) == 0:
        return {"rho9": None, "r_human": None, "r_baboon": None}
    return {
        "rho9": ob.regularity_correlation(rates)[0],
        "r_human": ob.behaviour_correlation(rates, human)[0],
        "r_baboon": ob.behaviour_correlation(rates, baboon)[0],
    }


def _oddball_bootstrap(embeddings, trials, temperature: float, resamples: int, seed: int) -> dict:
    """Percentile intervals of rho9 / r_human / r_baboon / mean error over trials resampled within each shape."""
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
    return {rule: {k: _percentile(v) for k, v in d.items()} for rule, d in stats.items()}


# ------------------------------------------------------------------------------------------------
# protocols on embeddings
# ------------------------------------------------------------------------------------------------


def _oddball_row(rates: dict, temperature: Optional[float] = None) -> dict:
    """The scorecard entry of per-shape error rates ``{"graded": (11,), "argmax": (11,)}``."""
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
            row["readout_note"] = (
                f"the graded read-out cannot reach the humans' mean error {ob.human_mean_error():.3f}: without noise "
                f"this encoder already errs at {row['argmax']['mean_error']:.3f}, so its graded columns are the argmax ones"
            )
    return row


def oddball_from_evaluation(evaluation: Mapping) -> dict:
    """The scorecard's oddball entry of an oddball evaluation (:func:`~gensim_jax.evaluation.oddball.evaluate`)."""
    return _oddball_row({"graded": evaluation["graded"], "argmax": evaluation["argmax"]}, evaluation.get("temperature"))


def _score_oddball(embeddings: np.ndarray, stim: ProtocolStimuli, resamples: int, seed: int) -> dict:
    trials = stim.data
    t = len(trials.images)
    z = np.asarray(embeddings, np.float64).reshape(t, 6, -1)
    r = ob.readout(z, trials, stim.settings.get("target_error"))
    row = oddball_from_evaluation(r)
    row["regression_error"] = r["regression_error"]
    if resamples:
        row["interval"] = _oddball_bootstrap(z, trials, r["temperature"], resamples, seed)
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
    return row


GEOCLIDEAN_METRICS = ("acc", "acc_close", "acc_far", "auc_close", "auc_far")


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


def _protocol_entry(protocol, stim, rows: dict, resamples: int, seed: int) -> dict:
    """``rows``: ``{name: (N, D) embeddings}``, the first the model, the others references."""
    names = list(rows)
    model = _SCORERS[protocol](rows[names[0]], stim, resamples, seed)
    refs = {name: _SCORERS[protocol](rows[name], stim, resamples, seed) for name in names[1:]}
    if protocol == "oddball":
        refs.update(_behaviour_rows())
    entry = {**model, "stimuli": stim.settings}
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
        "rho9": 0.88, "r_human": 0.80, "r_baboon": 0.63, "mean_error": 0.249,
        "argmax": {"rho9": 0.73, "r_human": 0.39, "r_baboon": 0.42, "mean_error": 0.045},
    },
    "documented: supervised CORnet-Z (make demo, 3 runs)": {
        "rho9": 0.04, "r_human": 0.03, "r_baboon": 0.65, "mean_error": 0.275,
        "argmax": {"rho9": 0.04, "r_human": 0.03, "r_baboon": 0.65, "mean_error": 0.275},
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
    per_class: int = 12,
    geoclidean_dir: Optional[str] = None,
    odd_one_out_trials: Optional[str] = None,
    odd_one_out_images: Optional[str] = None,
    chunk: int = 256,
    progress: bool = False,
    info: Optional[Mapping] = None,
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
      trials_per_condition, per_class: stimulus counts (440 oddball trials, 216 hierarchy images).
      geoclidean_dir: the official Geoclidean benchmark (default: the product's renders, labelled).
      progress: a progress bar on stderr while embedding.
      info: provenance of the model (``model``, ``weights``, ``layer``, ...), stored under ``"inputs"``.

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
    return out


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
    per_class: int = 12,
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
    return out


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


# ------------------------------------------------------------------------------------------------
# models and exports
# ------------------------------------------------------------------------------------------------


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 hex digest of a file (a checkpoint's or an embeddings file's provenance), read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _layer_fn(model, layer: Optional[str]):
    """``(variables, x) -> (B, D)``: the model's embedding, its ``logits``, or a top-level submodule's output
    (feature maps averaged over space)."""
    import jax.numpy as jnp

    if layer in (None, "embedding"):
        return lambda v, x: model.apply(v, x, method="embed")
    if layer == "logits":
        return lambda v, x: model.apply(v, x)["logits"]

    def fn(v, x):
        _, state = model.apply(
            v,
            x,
            capture_intermediates=lambda mdl, method: method == "__call__" and mdl.name == layer,
            mutable=["intermediates"],
        )
        feats = state["intermediates"][layer]["__call__"][0]
        feats = feats.astype(jnp.float32)
        return feats.mean(axis=tuple(range(1, feats.ndim - 1))) if feats.ndim > 2 else feats

    return fn


def model_layers(variables) -> list:
    """The names ``--layer`` accepts for a model with ``variables``."""
    return ["embedding", "logits", *sorted(k for k in variables.get("params", {}) if k not in ("classifier",))]


def model_embedder(
    name: str,
    weights: Optional[str] = None,
    *,
    layer: Optional[str] = None,
    image_size: Optional[int] = None,
    seed: int = 0,
    batch_size: int = 64,
    variables=None,
    model=None,
) -> tuple[Callable, dict]:
    """``(embed_fn, info)`` of a registry model: untrained (``seed``) or with a PyTorch checkpoint ``weights``.

    ``embed_fn(uint8 (N, S, S, 3)) -> (N, D)`` ImageNet-normalises the images inside the jitted call
    (as training does) and reads ``layer``: ``"embedding"`` (default, the pooled penultimate
    features), ``"logits"``, or a top-level submodule (``V1`` ... ``IT`` of a CORnet, the blocks ``layer1_0`` ...
    ``layer4_1`` of a ResNet-18; an unknown name lists them), its feature maps averaged over space. A checkpoint that does not fit
    the architecture is :class:`~gensim_jax.models.torch_import.CheckpointMismatchError` (a ValueError).
    """
    import jax

    from gensim_jax.models import get_model, list_models
    from gensim_jax.training.step import normalize_inputs

    if model is None:
        if name not in list_models():
            raise ValueError(f"unknown model {name!r}; registered: {', '.join(list_models())}")
        if weights is not None:
            from gensim_jax.models.torch_import import load_pretrained

            if not Path(weights).is_file():
                raise FileNotFoundError(f"--weights {weights}: no such file (a PyTorch .pth/.pt or .safetensors)")
            model, variables = load_pretrained(name, weights)
        else:
            model = get_model(name)
    if len(getattr(model, "input_shape", ())) != 3:
        raise ValueError(f"model {name!r} does not take images (input shape {getattr(model, 'input_shape', None)})")
    if variables is None:
        variables = jax.jit(model.init)(jax.random.key(int(seed)), model.example_input(minimal=True))
    s = int(image_size or model.input_shape[0])
    if layer not in (None, "embedding", "logits") and layer not in variables.get("params", {}):
        raise ValueError(
            f"--layer {layer!r} is not a layer of {name}; choose from {', '.join(model_layers(variables))}"
        )
    if layer == "logits" and getattr(model, "num_classes", None) is None:
        raise ValueError(f"--layer logits: {name} has no classifier")
    read = _layer_fn(model, layer)
    apply = jax.jit(lambda v, b: read(v, normalize_inputs({"x": b}, "imagenet")["x"]))
    from gensim_jax.evaluation.embed import _embed_batches

    def embed_fn(images):
        x = np.asarray(images)
        if x.dtype != np.uint8 or x.shape[1:] != (s, s, 3):
            raise ValueError(f"expected uint8 images (N, {s}, {s}, 3), got {x.dtype} {x.shape}")
        # every batch padded to batch_size: one compiled shape, so an image's vector does not depend on how
        # the images were split into calls (scoring PNGs read back equals scoring the renders)
        return _embed_batches(apply, variables, x, int(batch_size), lambda b: b)

    info = {
        "model": name,
        "weights": None if weights is None else str(weights),
        "weights_sha256": None if weights is None else file_sha256(weights),
        "init_seed": None if weights is not None else int(seed),
        "layer": layer or "embedding",
        "image_size": s,
        "preprocess": "imagenet",
    }
    return embed_fn, info


def _run_hierarchy_entry(ih, enc, untrained, meta, evaluation, label, resamples, seed) -> dict:
    """The hierarchy entry of an ``imagenet_hierarchy`` run's export: the run's held-out images, embedded and
    decoded as the run does (``model_embedding``, ``eval.folds``, ``eval.seed``), its numbers from ``evaluation``;
    ``ih`` is the ``imagenet_hierarchy`` experiment module."""
    from gensim_jax.data.hierarchy import class_tree
    from gensim_jax.evaluation.hierarchy import model_embedding

    config = ih.EXPERIMENT.config_from_dict(meta["run_config"])
    data = ih.EXPERIMENT.prepare(config, training=False)
    tree, nodes = class_tree(config.data)
    settings = {
        "source": f"the run's held-out images ({config.data.dataset})",
        "images": len(data.labels),
        "image_size": config.data.image_size,
        "folds": config.eval.folds,
        "decode_seed": config.eval.seed,
    }
    if config.data.dataset == "synthetic":
        settings["branching"] = list(config.data.branching)
    ids = tuple(f"hierarchy/{i:05d}" for i in range(len(data.labels)))
    stim = ProtocolStimuli("hierarchy", ids, data.images, (np.asarray(data.labels, np.int64), tree, nodes), settings)
    rows = {
        label: model_embedding(enc.model, enc.variables, data.images, config.eval.batch_size),
        "pixels": _pixels(data.images),
        f"{meta['model']} (untrained)": untrained(data.images),
    }
    entry = _protocol_entry("hierarchy", stim, rows, resamples, seed)
    levels = evaluation["levels"]
    entry.update(  # the run's numbers, as eval export gives them
        score=evaluation["score_uniform"],
        levels=[lv["level"] for lv in levels],
        num_labels=[lv["num_labels"] for lv in levels],
        accuracy=[lv["accuracy"] for lv in levels],
        chance=[lv["chance_uniform"] for lv in levels],
        source="gensim-jax eval export (the run's own evaluation)",
    )
    return entry


def _run_geoclidean_entry(gx, enc, untrained, meta, evaluation, label, resamples, seed) -> dict:
    """The geoclidean entry of a ``geoclidean`` run's export: its 7 held-out concepts (the official images when the
    run had them, else its renders), embedded as the run does, its numbers from ``evaluation``; ``gx`` is the
    ``geoclidean`` experiment module."""
    from gensim_jax.evaluation import geoclidean as ge
    from gensim_jax.evaluation.embed import embed_images
    from gensim_jax.preprocessing import normalize_images

    config = gx.EXPERIMENT.config_from_dict(meta["run_config"])
    data = gx.EXPERIMENT.prepare(config, training=False)
    suite = "official" if "official" in data.suites else "sampler"
    rules = gx.eval_rules(config)
    rule = "per_concept" if "per_concept" in rules else rules[0]
    episodes = data.suites[suite]
    names = list(episodes)
    ids = [
        f"geoclidean/{n}/{part}_{k}"
        for n in names
        for part in ("train", "test")
        for k in range(len(episodes[n][0 if part == "train" else 1]))
    ]
    images = np.concatenate([np.concatenate([episodes[n][0], episodes[n][1]]) for n in names])
    settings = {
        "source": f"the run's held-out concepts ({suite} images)",
        "concepts": len(names),
        "images": len(images),
        "image_size": config.data.image_size,
        "threshold": rule,
    }
    layout = {n: (len(episodes[n][0]), np.asarray(episodes[n][2])) for n in names}
    stim = ProtocolStimuli("geoclidean", tuple(ids), images, layout, settings)
    b = config.eval.batch_size
    rows = {  # the run's embedding of the episodes (the geoclidean arm's evaluate), one call as ge.embed_episodes makes it
        label: embed_images(enc.model, enc.variables, normalize_images(images), batch_size=b),
        "pixels": _pixels(images),
        f"{meta['model']} (untrained)": embed_images(
            untrained.model, untrained.variables, normalize_images(images), batch_size=b
        ),
    }
    entry = _protocol_entry("geoclidean", stim, rows, resamples, seed)
    exact = evaluation[ge.result_key(suite, rule, rules)]
    entry.update({k: exact[k] for k in GEOCLIDEAN_METRICS})
    entry["source"] = "gensim-jax eval export (the run's own evaluation)"
    return entry


def score_export(
    directory: str | os.PathLike,
    protocols: Sequence[str] = PROTOCOLS,
    *,
    resamples: int = 1000,
    seed: int = 0,
    progress: bool = False,
    chunk: int = 256,
    geoclidean_dir: Optional[str] = None,
    odd_one_out_trials: Optional[str] = None,
    odd_one_out_images: Optional[str] = None,
    trials_per_condition: int = 10,
    per_class: int = 12,
    evaluate_export: Optional[Callable[[str], dict]] = None,
    experiment_module: Optional[Callable[[str], Any]] = None,
) -> dict:
    """The scorecard of an export of ``gensim-jax train`` (``WORKDIR/<arm>/run<r>/export``).

    An export of a run needs the experiments, which live above this module: ``evaluate_export(directory)``
    re-evaluates it as its experiment did (``gensim_jax.experiments.evaluate_export``) and
    ``experiment_module(name)`` gives the module of the experiment ``name`` (``gensim_jax.experiments.<name>``);
    ``gensim-jax score --export`` (:mod:`gensim_jax.commands.score`) passes both.

    For an export of a run (metadata ``run_config``), :func:`gensim_jax.training.runner.evaluate_export`
    (what ``gensim-jax eval export`` calls) re-evaluates it, and the protocol its experiment
    evaluates (``oddball`` for ``quadrilaterals``, ``hierarchy`` for ``imagenet_hierarchy``,
    ``geoclidean`` for ``geoclidean``) takes its numbers from that evaluation, on the run's own test
    set; the interval comes from the same encoder's embeddings of that test set, embedded as the run does.
    The other protocols, and every protocol of an export without ``run_config``, are scored on the
    scorecard's stimuli at the export's ``image_size``; every run's export keeps its experiment's
    whole evaluation (``eval export``'s entry) under ``export_evaluation``. Reference rows: pixels and the untrained
    network of the export's architecture (seed 0).
    """
    import jax

    from gensim_jax.evaluation.embed import load_encoders
    from gensim_jax.models import get_model

    _check_protocols(protocols)
    enc = load_encoders([directory])[0]
    meta = dict(enc.metadata)
    s = enc.image_size
    label = f"{meta.get('model')} ({meta.get('experiment', 'export')}/{meta.get('objective', '?')})"
    info = {
        "export": str(directory),
        "model": meta.get("model"),
        "experiment": meta.get("experiment"),
        "arm": meta.get("objective"),
        "seed": meta.get("seed"),
        "weights_sha256": file_sha256(Path(directory) / "variables.msgpack")
        if (Path(directory) / "variables.msgpack").is_file()
        else None,
        "layer": "embedding",
        "image_size": s,
        "preprocess": enc.preprocess,
    }
    untrained_model = get_model(meta["model"], **dict(meta.get("model_kwargs") or {}))
    untrained_vars = jax.jit(untrained_model.init)(jax.random.key(0), untrained_model.example_input(minimal=True))
    from gensim_jax.evaluation.embed import ExportedEncoder

    untrained = ExportedEncoder("", untrained_model, untrained_vars, meta)  # read as the export is

    def run_fn(e):
        return lambda images: e(images)

    own = set()
    out = {}
    if "run_config" in meta:  # a run's export: its experiment's own evaluation, as gensim-jax eval export gives it
        if evaluate_export is None or experiment_module is None:
            raise ValueError(
                f"{directory} is the export of a run of {meta.get('experiment')!r}: score_export needs its experiment "
                "(evaluate_export=gensim_jax.experiments.evaluate_export and experiment_module; gensim-jax score "
                "--export passes them)"
            )
        run = evaluate_export(directory)
        out["export_evaluation"] = run
    if "run_config" in meta and meta.get("experiment") == "quadrilaterals" and "oddball" in protocols:
        quad = experiment_module("quadrilaterals")
        config = quad.EXPERIMENT.config_from_dict(meta["run_config"])
        # the run's test set (quadrilaterals.test_trials: eval.seed, eval.trials_per_condition, data.image_size)
        stim = _oddball_stimuli(config.data.image_size, config.eval.seed, config.eval.trials_per_condition)
        stim.settings["target_error"] = config.eval.readout_target_error
        rows = {
            label: _embed_all(lambda x: enc(x, config.eval.batch_size), stim.images, "oddball", chunk, progress),
            "pixels": _pixels(stim.images),
            f"{meta['model']} (untrained)": _embed_all(
                run_fn(untrained), stim.images, "oddball: untrained", chunk, progress
            ),
        }
        entry = _protocol_entry("oddball", stim, rows, resamples, seed)
        exact = oddball_from_evaluation(run["evaluation"])  # the run's numbers, as eval export gives them
        entry.update(exact)
        entry["source"] = "gensim-jax eval export (the run's own evaluation)"
        out["oddball"] = entry
        own.add("oddball")
    if "run_config" in meta and meta.get("experiment") == "imagenet_hierarchy" and "hierarchy" in protocols:
        out["hierarchy"] = _run_hierarchy_entry(
            experiment_module("imagenet_hierarchy"), enc, untrained, meta, run["evaluation"], label, resamples, seed
        )
        own.add("hierarchy")
    if "run_config" in meta and meta.get("experiment") == "geoclidean" and "geoclidean" in protocols:
        out["geoclidean"] = _run_geoclidean_entry(
            experiment_module("geoclidean"), enc, untrained, meta, run["evaluation"], label, resamples, seed
        )
        own.add("geoclidean")
    rest = [p for p in protocols if p not in own]
    card = (
        score(
            run_fn(enc),
            rest,
            name=label,
            image_size=s,
            references={"pixels": None, f"{meta['model']} (untrained)": run_fn(untrained)},
            resamples=resamples,
            seed=seed,
            chunk=chunk,
            progress=progress,
            info=info,
            geoclidean_dir=geoclidean_dir,
            odd_one_out_trials=odd_one_out_trials,
            odd_one_out_images=odd_one_out_images,
            trials_per_condition=trials_per_condition,
            per_class=per_class,
        )
        if rest
        else _head(label, info, protocols)
    )
    card["protocols"] = list(protocols)
    card.update(out)
    keys = ["model", "inputs", "provenance", "protocols", *protocols, *(["export_evaluation"] if out else [])]
    return {k: card[k] for k in keys}


# ------------------------------------------------------------------------------------------------
# presentation
# ------------------------------------------------------------------------------------------------


def _cell(value, interval=None, spec=".2f") -> str:
    if value is None:
        return "n/a"
    text = format(value, spec)
    if interval:
        text += f" [{format(interval[0], spec)}, {format(interval[1], spec)}]"
    return text


def _rows(card: Mapping, entry: Mapping) -> dict:
    """The model's row, then the reference rows, of one protocol's entry."""
    return {card["model"]: entry, **entry["references"]}


def _oddball_markdown(card: Mapping) -> list:
    e = card["oddball"]
    iv = e.get("interval", {})
    lines = [
        f"## Oddball ({e['stimuli']['trials']} trials; graded read-out at the humans' mean error, and the "
        f"paper's argmax rule; {int(CONFIDENCE * 100)}% interval: "
        f"{e.get('interval_method', {}).get('method', 'none')})",
        "",
        "| row | rho9 | r human | r baboon | mean error | argmax rho9 | argmax r human | argmax r baboon |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in _rows(card, e).items():
        gi = iv if r is e else r.get("interval", {})
        a = r.get("argmax", {})
        ai = gi.get("argmax", {})
        gg = gi.get("graded", {})
        mark = " (argmax, see below)" if r.get("readout_note") else ""
        lines.append(
            f"| {name} | {_cell(r['rho9'], gg.get('rho9'))} | {_cell(r['r_human'], gg.get('r_human'))} | "
            f"{_cell(r['r_baboon'], gg.get('r_baboon'))} | {_cell(r['mean_error'], gg.get('mean_error'), '.3f')}{mark} | "
            f"{_cell(a.get('rho9'), ai.get('rho9'))} | {_cell(a.get('r_human'), ai.get('r_human'))} | "
            f"{_cell(a.get('r_baboon'), ai.get('r_baboon'))} |"
        )
    notes = [f"{name}: {r['readout_note']}." for name, r in _rows(card, e).items() if r.get("readout_note")]
    return lines + ["", *notes, *([""] if notes else []), "Paper (Fig. 2C): GenSim rho9 0.88, supervised 0.47.", ""]


def _hierarchy_markdown(card: Mapping) -> list:
    e = card["hierarchy"]
    head = " | ".join(f"L{lv} ({n})" for lv, n in zip(e["levels"], e["num_labels"]))
    st = e["stimuli"]
    tree = f", tree {'x'.join(map(str, st['branching']))}" if "branching" in st else ""
    lines = [
        f"## Hierarchy decoding ({st['images']} images: {st.get('source', 'synthetic gratings')}{tree}; "
        "score = sum_l log(a_l / c_l), uniform chance; "
        f"interval: {e.get('interval_method', {}).get('method', 'none')})",
        "",
        f"| row | score | {head} |",
        "|---|---|" + "---|" * len(e["levels"]),
        "| chance | 0 | " + " | ".join(f"{c:.3f}" for c in e["chance"]) + " |",
    ]
    for name, r in _rows(card, e).items():
        ri = r.get("interval", {})
        accs = [
            _cell(a, (ri.get("accuracy") or [None] * len(r["accuracy"]))[i], ".3f") for i, a in enumerate(r["accuracy"])
        ]
        lines.append(f"| {name} | {_cell(r['score'], ri.get('score'))} | " + " | ".join(accs) + " |")
    return lines + [""]


def _geoclidean_markdown(card: Mapping) -> list:
    e = card["geoclidean"]
    lines = [
        f"## Geoclidean few-shot ({e['stimuli']['concepts']} concepts, {e['stimuli']['source']}; prototype "
        f"scores, per-concept thresholds; interval: {e.get('interval_method', {}).get('method', 'none')})",
        "",
        "| row | acc | acc close | acc far | AUC close | AUC far |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in _rows(card, e).items():
        ri = r.get("interval", {})
        lines.append(f"| {name} | " + " | ".join(_cell(r[k], ri.get(k)) for k in GEOCLIDEAN_METRICS) + " |")
    return lines + [
        "",
        "Chance: AUC 0.5; the per-concept thresholds are fitted on the test images, so an accuracy "
        "without information is above 0.5 (docs/EVALUATION.md, section 2).",
        "",
    ]


def _odd_one_out_markdown(card: Mapping) -> list:
    e = card["odd_one_out"]
    st = e["stimuli"]
    lines = [
        f"## Odd-one-out ({st['trials']} trials of {st['participants']} participants, {st['trials_csv']}; mean "
        f"likelihood of the human choices, alpha fitted per participant; interval: "
        f"{e.get('interval_method', {}).get('method', 'none')})",
        "",
        "| row | mean likelihood |",
        "|---|---|",
        f"| chance | {e['chance']:.3f} |",
    ]
    for name, r in _rows(card, e).items():
        lines.append(f"| {name} | {_cell(r['mean_likelihood'], r.get('interval', {}).get('mean_likelihood'), '.3f')} |")
    return lines + [""]


_MARKDOWN = {
    "oddball": _oddball_markdown,
    "hierarchy": _hierarchy_markdown,
    "geoclidean": _geoclidean_markdown,
    "odd_one_out": _odd_one_out_markdown,
}


def format_markdown(card: Mapping) -> str:
    """Markdown tables of a scorecard: one per protocol (in :data:`ALL_PROTOCOLS` order), the model first, then
    the reference rows."""
    lines = [f"# Scorecard: {card['model']}", ""]
    for p in ALL_PROTOCOLS:
        if p in card:
            lines += _MARKDOWN[p](card)
    return "\n".join(lines)


def _oddball_panel(ax, card: Mapping) -> None:
    e = card["oddball"]
    rows = _rows(card, e)
    metrics = ("rho9", "r_human", "r_baboon")
    width = 0.8 / len(rows)
    for k, (name, r) in enumerate(rows.items()):
        iv = (e if r is e else r).get("interval", {}).get("graded", {})
        vals = [np.nan if r.get(m) is None else r[m] for m in metrics]
        err = np.array(
            [[v - iv[m][0], iv[m][1] - v] if iv.get(m) and np.isfinite(v) else [0, 0] for m, v in zip(metrics, vals)]
        ).T
        err = err if err.any() else None  # the behaviour rows have no interval
        ax.bar(np.arange(3) + k * width, vals, width, yerr=err, label=name, capsize=2)
    ax.set_xticks(np.arange(3) + 0.4 - width / 2, ["rho(9) regularity", "r humans", "r baboons"])
    ax.axhline(0, color="k", lw=0.5)
    ax.set_ylim(-1, 1)
    ax.set_title("Oddball (graded read-out)")


def _geoclidean_panel(ax, card: Mapping) -> None:
    rows = _rows(card, card["geoclidean"])
    metrics = GEOCLIDEAN_METRICS[1:]
    width = 0.8 / len(rows)
    for k, (name, r) in enumerate(rows.items()):
        iv = r.get("interval", {})
        vals = np.array([r[m] for m in metrics])
        err = np.array([[v - iv[m][0], iv[m][1] - v] if iv.get(m) else [0, 0] for m, v in zip(metrics, vals)]).T
        ax.bar(np.arange(len(metrics)) + k * width, vals, width, yerr=err, label=name, capsize=2)
    ax.set_xticks(np.arange(len(metrics)) + 0.4 - width / 2, ["acc close", "acc far", "AUC close", "AUC far"])
    ax.axhline(0.5, color="r", ls="--", lw=0.8)
    ax.set_ylim(0, 1.05)
    ax.set_title("Geoclidean few-shot")


def _odd_one_out_panel(ax, card: Mapping) -> None:
    e = card["odd_one_out"]
    rows = _rows(card, e)
    for k, (name, r) in enumerate(rows.items()):
        iv = r.get("interval", {}).get("mean_likelihood")
        v = r["mean_likelihood"]
        ax.bar(k, v, 0.7, yerr=None if not iv else [[v - iv[0]], [iv[1] - v]], label=name, capsize=2)
    ax.axhline(e["chance"], color="r", ls="--", lw=0.8, label="chance")
    ax.set_xticks(range(len(rows)), list(rows), fontsize=7)
    ax.set_ylabel("mean likelihood of the human choices")
    ax.set_ylim(0, 1)
    ax.set_title("Odd-one-out")


def _hierarchy_panel(ax, card: Mapping) -> None:
    e = card["hierarchy"]
    for name, r in _rows(card, e).items():
        ax.plot(r["levels"], r["accuracy"], marker="o", label=f"{name} (score {r['score']:.2f})")
    ax.plot(e["levels"], e["chance"], "r--", label="chance")
    ax.set_xticks(e["levels"])
    ax.set_xlabel("tree level")
    ax.set_ylabel("decoding accuracy")
    ax.set_ylim(0, 1.05)
    ax.set_title("Hierarchy decoding")


_PANELS = {
    "oddball": _oddball_panel,
    "hierarchy": _hierarchy_panel,
    "geoclidean": _geoclidean_panel,
    "odd_one_out": _odd_one_out_panel,
}


def scorecard_figure(card: Mapping):
    """The figure of :func:`plot_scorecard` (a ``matplotlib.figure.Figure``), one panel per protocol with its
    legend below the panel, so that no legend covers a bar or an error bar."""
    from gensim_jax.evaluation.plotting import figure

    protocols = [p for p in card["protocols"] if p in card]
    fig, axes = figure(5.5 * len(protocols), 5.0, ncols=len(protocols))  # constrained layout makes room below
    for ax, p in zip(np.atleast_1d(axes), protocols):
        _PANELS[p](ax, card)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    return fig


def plot_scorecard(card: Mapping, path: str | os.PathLike) -> Path:
    """One figure, a panel per protocol: the model beside the reference rows (bars with their intervals)."""
    from gensim_jax.evaluation.plotting import save_figure

    return save_figure(scorecard_figure(card), path)
