"""The hierarchy-decoding evaluator (paper Sec. 3.3, Fig. 4B, Supplementary Fig. S3, Appendix N).

What :mod:`gensim_jax.experiments.imagenet_hierarchy` records for every run and baseline: the
held-out images embedded (or pixel-pooled, :func:`pixel_embedding`), every level of the class tree
decoded by a linear SVM (:func:`evaluate_embedding`), the results over runs
(:func:`summarize_runs`) and their Markdown table (:func:`format_table`); the figure is
:func:`gensim_jax.evaluation.figures.plot_hierarchy_summary`.
"""

from __future__ import annotations

import numpy as np

from gensim_jax.evaluation.hierarchy_decoding import aggregate_score, decode_levels
from gensim_jax.evaluation.statistics import mean_std
from gensim_jax.preprocessing import normalize_uint8

__all__ = ["as_model_input", "evaluate_embedding", "format_table", "pixel_embedding", "summarize_runs"]


def as_model_input(images: np.ndarray) -> np.ndarray:
    """``uint8`` images ImageNet-normalised as the training step does; float (already normalised) ones as float32."""
    return normalize_uint8(images, "imagenet") if images.dtype == np.uint8 else images.astype(np.float32)


def pixel_embedding(images: np.ndarray, size: int) -> np.ndarray:
    """Model-free baseline: the (normalised) images area-averaged to ``size x size``, flattened ``(N, size*size*3)``."""
    x = np.asarray(images)
    n, s = x.shape[0], x.shape[1]
    out = []
    for start in range(0, n, 500):
        chunk = as_model_input(x[start : start + 500])
        edges = np.linspace(0, s, size + 1).round().astype(int)
        rows = np.add.reduceat(chunk, edges[:-1], axis=1) / np.diff(edges)[None, :, None, None]
        cells = np.add.reduceat(rows, edges[:-1], axis=2) / np.diff(edges)[None, None, :, None]
        out.append(cells.reshape(len(chunk), -1))
    return np.concatenate(out)


def evaluate_embedding(
    embeddings: np.ndarray, labels: np.ndarray, tree, nodes, *, folds: int, seed: int, n_jobs: int = 1
) -> dict:
    """Per-level decoding of ``embeddings`` ``(N, D)`` (:func:`~gensim_jax.evaluation.hierarchy_decoding.decode_levels`,
    linear SVM, ``folds``-fold CV, uniform chance) and both aggregates ``sum_l log(a_l / c_l)`` (Appendix N).

    Returns ``{"levels": [{level, num_labels, accuracy, chance_uniform, chance_majority,
    fold_accuracies}], "score_uniform", "score_majority"}``.
    """
    res = decode_levels(embeddings, labels, tree, nodes, folds=folds, seed=seed, chance="uniform", n_jobs=n_jobs)
    levels = [
        {
            "level": r.level,
            "num_labels": r.num_labels,
            "accuracy": r.accuracy,
            "chance_uniform": r.chance,
            "chance_majority": r.majority,
            "fold_accuracies": list(r.fold_accuracies),
        }
        for r in res.levels
    ]
    acc = np.array([r["accuracy"] for r in levels])
    acc = np.maximum(acc, 0.5 / len(labels))  # the floor decode_levels applies (log of a zero accuracy)
    score_majority = aggregate_score(acc, [r["chance_majority"] for r in levels])
    return {"levels": levels, "score_uniform": float(res.score), "score_majority": float(score_majority)}


def summarize_runs(per_run: list) -> dict:
    """Mean and standard deviation over runs of the per-level accuracies and the two aggregates."""
    first = per_run[0]["levels"]
    acc = np.array([[lv["accuracy"] for lv in run["levels"]] for run in per_run], float)
    out = {
        "levels": [lv["level"] for lv in first],
        "num_labels": [lv["num_labels"] for lv in first],
        "chance_uniform": [lv["chance_uniform"] for lv in first],
        "chance_majority": [lv["chance_majority"] for lv in first],
        "accuracy": acc.mean(axis=0).tolist(),
        "accuracy_std": (acc.std(axis=0, ddof=1) if len(acc) > 1 else np.zeros(acc.shape[1])).tolist(),
        "runs": len(per_run),
    }
    for key in ("score_uniform", "score_majority"):
        out[key], out[key + "_std"] = mean_std([run[key] for run in per_run])
    return out


def format_table(results: dict) -> str:
    """Row x per-level accuracy and the two aggregates (mean +- std over runs), as Markdown."""
    summary = results["summary"]
    first = next(iter(summary.values()))
    levels = first["levels"]

    def cell(mean, std, runs, fmt="{:.3f}"):
        return (fmt + " +- " + fmt).format(mean, std) if runs > 1 else fmt.format(mean)

    head = " | ".join(f"L{lv} ({n})" for lv, n in zip(levels, first["num_labels"]))
    lines = [
        f"Hierarchy decoding ({results['config']['data']['dataset']}, {results['num_eval_images']} held-out images; "
        f"level (labels): accuracy):",
        f"| row | runs | {head} | sum log(a/c), uniform | sum log(a/c), majority |",
        "|---|---|" + "---|" * len(levels) + "---|---|",
        "| chance (uniform) | | " + " | ".join(f"{c:.3f}" for c in first["chance_uniform"]) + " | 0 | |",
        "| chance (majority) | | " + " | ".join(f"{c:.3f}" for c in first["chance_majority"]) + " | | 0 |",
    ]
    for name, s in summary.items():
        accs = [cell(m, sd, s["runs"]) for m, sd in zip(s["accuracy"], s["accuracy_std"])]
        lines.append(
            f"| {name} | {s['runs']} | "
            + " | ".join(accs)
            + " | "
            + cell(s["score_uniform"], s["score_uniform_std"], s["runs"], "{:.2f}")
            + " | "
            + cell(s["score_majority"], s["score_majority_std"], s["runs"], "{:.2f}")
            + " |"
        )
    return "\n".join(lines)
