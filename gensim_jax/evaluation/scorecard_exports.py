"""The report card of exports of ``gensim-jax train`` (``gensim-jax score --export DIR [DIR ...]``).

* :func:`score_export` -- one export: the protocol its run evaluated takes the run's own numbers (the call
  ``gensim-jax eval export`` makes, :func:`gensim_jax.training.runner.evaluate_export`, on the run's own
  test set), the other protocols are scored on the card's stimuli at the export's input size; reference
  rows: pixels and the export's architecture untrained (seed 0).
* :func:`score_exports` -- several exports of one model (e.g. the three seeds of ``make demo``): one row,
  their mean, with the bootstrap interval of the mean over the stimuli (``interval``) and the Student-t
  interval over the exports (``interval_seeds``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from gensim_jax.evaluation.scorecard import _embed_all, _head, _pixels, file_sha256, score
from gensim_jax.evaluation.scorecard_protocols import (
    HEADLINE,
    _percentile,
    _protocol_entry,
    _refresh,
    _strip_draws,
    oddball_from_evaluation,
)
from gensim_jax.evaluation.scorecard_report import CONFIDENCE, GEOCLIDEAN_METRICS, PROTOCOLS
from gensim_jax.evaluation.scorecard_stimuli import (
    HIERARCHY_PER_CLASS,
    ProtocolStimuli,
    _check_protocols,
    _oddball_stimuli,
)
from gensim_jax.evaluation.statistics import t_interval

__all__ = ["score_export", "score_exports"]


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
    _refresh("hierarchy", entry, resamples, seed)
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
    _refresh("geoclidean", entry, resamples, seed)
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
    per_class: int = HIERARCHY_PER_CLASS,
    evaluate_export: Optional[Callable[[str], dict]] = None,
    experiment_module: Optional[Callable[[str], Any]] = None,
    keep_draws: bool = False,
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
        low = entry.get("readout", {})
        lowest = (low["lowest_error"], low["lowest_error_temperature"]) if "lowest_error" in low else None
        # the run's numbers, as eval export gives them
        exact = oddball_from_evaluation(run["evaluation"], lowest, config.eval.readout_target_error)
        entry.update(exact)
        _refresh("oddball", entry, resamples, seed)
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
            keep_draws=True,
        )
        if rest
        else _head(label, info, protocols)
    )
    card["protocols"] = list(protocols)
    card.update(out)
    keys = ["model", "inputs", "provenance", "protocols", *protocols, *(["export_evaluation"] if out else [])]
    card = {k: card[k] for k in keys}
    return card if keep_draws else _strip_draws(card)


# ------------------------------------------------------------------------------------------------
# several exports: the mean over models, with intervals over trials and over seeds
# ------------------------------------------------------------------------------------------------

#: Keys of a protocol entry that are not the model's numbers (kept from the first export, or summarised apart).
_NOT_AVERAGED = {
    "interval", "interval_method", "references", "stimuli", "separation", "ceilings", "per_concept", "participants",
    "_draws", "source", "levels", "num_labels", "chance", "readout", "readout_note", "level_matched", "temperature",
    "regression_error", "r_human_is", "r_baboon_is",
}  # fmt: skip


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool)


def _over_models(values: list, reduce: Callable):
    """``reduce`` applied leaf by leaf over the same structure in every export (numbers, lists, dicts)."""
    first = values[0]
    if isinstance(first, dict):
        return {
            k: _over_models([v[k] for v in values], reduce)
            for k in first
            if k not in _NOT_AVERAGED and all(isinstance(v, dict) and k in v for v in values)
        }
    if isinstance(first, list) and first and all(_is_number(x) or x is None for x in first):
        return [reduce([v[i] for v in values]) for i in range(len(first))]
    if _is_number(first) or first is None:
        return reduce(values)
    return None


def _mean_defined(values: list):
    v = [float(x) for x in values if x is not None and np.isfinite(x)]
    return float(np.mean(v)) if v else None


def _seed_interval(values: list):
    v = [float(x) for x in values if x is not None and np.isfinite(x)]
    if len(v) < 2 or len(v) < len(values):  # one run, or a run where the number is undefined
        return None
    _, lo, hi = t_interval(v, CONFIDENCE)
    return [lo, hi]


def _mean_draws(draws: list):
    """The mean over exports of index-aligned bootstrap draws (the same resampled trials for every export)."""
    first = draws[0]
    if isinstance(first, dict):
        return {k: _mean_draws([d[k] for d in draws]) for k in first if all(k in d for d in draws)}
    return np.mean(np.stack([np.asarray(d, np.float64) for d in draws]), axis=0)


def _intervals_of(draws):
    """Percentile intervals of a draws tree: 1-d arrays -> ``[lo, hi]``, ``(R, L)`` -> one per column."""
    if isinstance(draws, dict):
        return {k: _intervals_of(v) for k, v in draws.items()}
    d = np.asarray(draws)
    return _percentile(d) if d.ndim == 1 else [_percentile(d[:, i]) for i in range(d.shape[1])]


def _mean_entry(protocol: str, entries: list, runs: list, resamples: int, seed: int) -> dict:
    """One protocol's entry for the mean over several exports' models (``entries``, each with its ``_draws``)."""
    entry = {k: v for k, v in entries[0].items() if k in _NOT_AVERAGED}
    entry.pop("_draws", None)
    entry.pop("readout_note", None)
    entry.update(_over_models(entries, _mean_defined))
    n = len(entries)
    entry["interval_seeds"] = _over_models(entries, _seed_interval)
    entry["interval_seeds_method"] = {
        "method": f"Student t interval of the mean over the {n} exports' own values (t_0.975({n - 1}))",
        "confidence": CONFIDENCE,
        "exports": n,
    }
    if all("_draws" in e for e in entries):
        entry["_draws"] = _mean_draws([e["_draws"] for e in entries])
        entry["interval"] = _intervals_of(entry["_draws"])
        entry["interval_method"] = dict(entry.get("interval_method") or {})
        entry["interval_method"]["method"] = (
            f"{entry['interval_method'].get('method', 'bootstrap')}; for the mean over the {n} exports: the mean of "
            "their draws on the same resampled stimuli (the models fixed)"
        )
    else:
        entry.pop("interval", None)
    if protocol == "oddball":
        taus = [e.get("temperature") for e in entries]
        entry["temperature"] = taus
        entry["level_matched"] = all(e.get("level_matched", True) for e in entries)
        missed = [r for e, r in zip(entries, runs) if e.get("readout", {}).get("reached") is False]
        entry["readout"] = {
            "target_error": entries[0].get("readout", {}).get("target_error"),
            "reached": not missed,
            "exports_not_reached": len(missed),
            "lowest_error": [e.get("readout", {}).get("lowest_error") for e in entries],
        }
        if missed:
            entry["readout_note"] = (
                f"the graded read-out could not reach its target error in {len(missed)} of the {n} exports "
                f"(lowest errors {', '.join(f'{x:.3f}' for x in entry['readout']['lowest_error'] if x is not None)})"
            )
    entry["runs"] = runs
    _refresh(protocol, entry, resamples, seed)
    return entry


def score_exports(
    directories: Sequence[str | os.PathLike],
    protocols: Sequence[str] = PROTOCOLS,
    *,
    resamples: int = 1000,
    seed: int = 0,
    progress: bool = False,
    **kwargs,
) -> dict:
    """The scorecard of several exports of one model (e.g. the three seeds of ``make demo``): one row, their mean.

    Each export is scored by :func:`score_export` (a run's own evaluation where it has one). The model's
    row is the mean over the exports of each number; ``interval`` is the percentile bootstrap of that
    mean over the stimuli (each resample the same trials, images or concepts for every export, so the
    draws of the mean are the means of the exports' draws: the models fixed), ``interval_seeds`` the
    Student-t interval over the exports (the spread between training seeds), ``runs`` each export's own
    numbers. Reference rows (pixels, the untrained network, behaviour) are the first export's; the
    exports must share the architecture, experiment and arm. One directory gives :func:`score_export`'s card.
    """
    dirs = [str(d) for d in directories]
    if not dirs:
        raise ValueError("score_exports needs at least one export directory")
    if len(dirs) == 1:
        return score_export(dirs[0], protocols, resamples=resamples, seed=seed, progress=progress, **kwargs)
    cards = [
        score_export(d, protocols, resamples=resamples, seed=seed, progress=progress, keep_draws=True, **kwargs)
        for d in dirs
    ]
    labels = {c["model"] for c in cards}
    if len(labels) > 1:
        raise ValueError(f"the exports are of different models {sorted(labels)}; score them one at a time")
    out = {
        "model": f"{cards[0]['model']}, mean of {len(cards)} exports",
        "inputs": {"exports": [c["inputs"] for c in cards]},
        "provenance": cards[0]["provenance"],
        "protocols": list(protocols),
    }
    for p in protocols:
        runs = []
        for d, c in zip(dirs, cards):
            e = c[p]
            metric, sub = HEADLINE[p]
            runs.append({"export": d, "seed": c["inputs"].get("seed"), metric: e.get(metric)})
            if p == "oddball":
                runs[-1].update({k: e.get(k) for k in ("rho9", "r_baboon", "mean_error", "temperature")})
        out[p] = _mean_entry(p, [c[p] for c in cards], runs, resamples, seed)
    if any("export_evaluation" in c for c in cards):
        out["export_evaluation"] = [c.get("export_evaluation") for c in cards]
    return _strip_draws(out)
