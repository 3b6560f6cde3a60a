"""The Geoclidean few-shot evaluator (paper Sec. 3.2, Fig. 3C, Appendix M): episodes embedded, scored, tabulated.

What :mod:`gensim_jax.experiments.geoclidean` records for every run and baseline: the support and
test images of every held-out concept embedded by one call (:func:`embed_episodes`), scored by
:func:`~gensim_jax.evaluation.fewshot.fewshot_evaluate` under a threshold rule
(:func:`evaluate_embedding`), the results over runs (:func:`summarize_runs`) and their Markdown
table (:func:`format_table`); the figure is :func:`gensim_jax.evaluation.figures.plot_geoclidean_summary`.
"""

from __future__ import annotations

import numpy as np

from gensim_jax.evaluation import fewshot
from gensim_jax.evaluation.statistics import mean_std

__all__ = ["METRICS", "embed_episodes", "evaluate_embedding", "format_table", "summarize_runs"]


METRICS = ("acc_close", "acc_far", "auc_close", "auc_far")


def summarize_runs(per_run: list) -> dict:
    """Mean and standard deviation over runs of the close/far accuracies and AUCs (``<metric>_std``), and ``runs``."""
    out = {}
    for m in METRICS:
        out[m], out[m + "_std"] = mean_std([r[m] for r in per_run])
    out["runs"] = len(per_run)
    return out


def embed_episodes(embed, episodes: dict) -> dict:
    """``{name: (support (5, D), test (15, D), kind)}``: ``embed(images) -> (N, D)`` called once on all images."""
    names = list(episodes)
    images = np.concatenate([np.concatenate([episodes[n][0], episodes[n][1]]) for n in names])
    e = embed(images)  # one call: the embedding function is compiled once per model
    embedded, start = {}, 0
    for name in names:
        support, test, kind = episodes[name]
        embedded[name] = (
            e[start : start + len(support)],
            e[start + len(support) : start + len(support) + len(test)],
            kind,
        )
        start += len(support) + len(test)
    return embedded


def evaluate_embedding(embed, episodes: dict, threshold: str) -> dict:
    """``fewshot_evaluate`` of ``embed(images) -> (N, D)`` on ``episodes``; returns the mean dict."""
    res = fewshot.fewshot_evaluate(embed_episodes(embed, episodes), threshold=threshold)
    return {k: float(v) for k, v in res.mean.items()}


def format_table(results: dict) -> str:
    """Objective x held-out accuracy (close, far) and AUC, mean +- std over runs, as Markdown."""
    lines = []
    for suite, rows in results["summary"].items():
        images, _, rule = suite.partition("/")
        rule = rule or results["config"]["eval"]["threshold"]
        lines.append(f"Held-out concepts ({images} images), {rule} threshold:")
        lines.append("| objective | runs | acc close | acc far | AUC close | AUC far |")
        lines.append("|---|---|---|---|---|---|")
        for name, s in rows.items():
            cells = [f"{s[m]:.3f} +- {s[m + '_std']:.3f}" if s["runs"] > 1 else f"{s[m]:.3f}" for m in METRICS]
            lines.append(f"| {name} | {s['runs']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines).rstrip()
