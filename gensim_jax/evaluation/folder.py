"""The folder protocol: an encoder's similarity against log s_gen on the held-out images of a user's folder.

The stimuli are the held-out rows of a metadata table (:mod:`gensim_jax.data.folder`: a hash of
``file`` below ``data.holdout``, at most ``max_images`` of them in hash order), decoded as in
training, with the ``(M, M)`` ``log s`` of the table's generative model between them. The evaluator
(:func:`evaluate`) embeds them and reports

* ``heldout_spearman``: Spearman's rank correlation between the cosine similarity of the embeddings
  and ``log s`` over the ``M (M - 1) / 2`` held-out pairs (ties take average ranks);
* ``bins``: the pairs grouped by their value of ``log s`` when it takes at most ``num_bins`` values,
  else by its ``num_bins`` quantiles (equal values always in one group); the mean ``log s`` and the
  mean similarity of each group (the figure, :func:`plot`);
* ``knn``: leave-one-out k-nearest-neighbour accuracy (cosine, majority vote, ties to the nearest)
  at every level of the ``class_path`` tree, or of ``label``, with the majority-class ``chance``.

:func:`summarize` gives the mean and s.e.m. over runs of each arm and reference row (the untrained
encoder ``initial``, the ``pixels``); :func:`format_table` and :func:`plot` present them. Nothing here
imports TensorFlow: :func:`make_stimuli` reads the images through :func:`gensim_jax.data.folder.load_images`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from gensim_jax.evaluation.plotting import COLORS, figure, save_figure
from gensim_jax.evaluation.statistics import mean_sem
from gensim_jax.ranks import spearman_r

__all__ = [
    "NAME",
    "FolderStimuli",
    "evaluate",
    "evaluate_embedding",
    "format_table",
    "heldout_rows",
    "knn_accuracy",
    "make_stimuli",
    "plot",
    "summarize",
]

NAME = "folder"


@dataclass(frozen=True)
class FolderStimuli:
    """Held-out ``images`` ``(M, S, S, 3)`` uint8, their ``log_s`` ``(M, M)``, ``levels`` ``(M, L)`` (or None)
    with ``level_names``, and the table ``rows`` they come from."""

    images: np.ndarray
    log_s: np.ndarray
    levels: Optional[np.ndarray]
    level_names: tuple
    rows: np.ndarray


def heldout_rows(table, max_images: int) -> np.ndarray:
    """The held-out rows evaluated: the first ``max_images`` in the order of their ``file`` hash, in table order.

    Stable when rows are added to the table, as long as ``max_images`` of them are not exceeded."""
    from gensim_jax.data.folder import heldout_fraction_of

    rows = table.rows(True)
    order = np.argsort(heldout_fraction_of(table.files[rows]), kind="stable")
    return np.sort(rows[order[: int(max_images)]])


def make_stimuli(table, image_size: int, color: str = "rgb", max_images: int = 1000) -> FolderStimuli:
    """The held-out stimuli of a :class:`~gensim_jax.data.folder.FolderTable` (see the module docstring)."""
    from gensim_jax.data.folder import load_images

    rows = heldout_rows(table, max_images)
    levels = None if table.levels is None else np.asarray(table.levels)[rows]
    images = load_images(table, rows, image_size, color)
    return FolderStimuli(images, table.log_similarity(rows), levels, tuple(table.level_names), rows)


def _cosine(z: np.ndarray) -> np.ndarray:
    z = np.asarray(z, np.float64).reshape(len(z), -1)
    norm = np.linalg.norm(z, axis=1, keepdims=True)
    z = z / np.where(norm > 0, norm, 1.0)  # a zero vector has similarity 0 to everything
    return z @ z.T


def knn_accuracy(similarity: np.ndarray, labels: np.ndarray, k: int = 5) -> float:
    """Leave-one-out k-NN accuracy: each item takes the majority label of its ``k`` most similar others
    (a tie goes to the label of the nearest among the tied)."""
    s = np.array(similarity, np.float64)
    m = len(s)
    np.fill_diagonal(s, -np.inf)
    k = min(int(k), m - 1)
    nearest = np.argsort(-s, axis=1, kind="stable")[:, :k]
    correct = 0
    for i in range(m):
        votes = labels[nearest[i]]
        values, counts = np.unique(votes, return_counts=True)
        best = values[counts == counts.max()]
        choice = next(v for v in votes if v in best)
        correct += int(choice == labels[i])
    return correct / m


def evaluate_embedding(embeddings: np.ndarray, stimuli: FolderStimuli, k: int = 5, num_bins: int = 20) -> dict:
    """The results dict of the module docstring for ``(M, D)`` embeddings of ``stimuli.images``."""
    sim = _cosine(embeddings)
    m = len(sim)
    iu = np.triu_indices(m, 1)
    s, t = sim[iu], np.asarray(stimuli.log_s, np.float64)[iu]
    rho = spearman_r(s, t) if np.ptp(s) > 0 and np.ptp(t) > 0 else 0.0
    values = np.unique(t)
    if len(values) <= int(num_bins):  # one bin per value of log s
        which = np.searchsorted(values, t)
    else:  # quantile bins; equal log s always share one
        which = np.searchsorted(np.unique(np.quantile(t, np.linspace(0.0, 1.0, int(num_bins) + 1)))[1:-1], t, "right")
    groups = [g for g in (np.flatnonzero(which == b) for b in range(int(which.max()) + 1)) if g.size]
    out = {
        "heldout_spearman": float(rho),
        "pairs": int(len(t)),
        "images": int(m),
        "bins": {
            "log_s": [float(t[g].mean()) for g in groups],
            "similarity": [float(s[g].mean()) for g in groups],
        },
    }
    if stimuli.levels is not None:
        knn = {}
        for j, name in enumerate(stimuli.level_names):
            y = stimuli.levels[:, j]
            chance = float(np.bincount(np.unique(y, return_inverse=True)[1]).max() / m)
            knn[name] = {"accuracy": knn_accuracy(sim, y, k), "chance": chance, "classes": int(len(np.unique(y)))}
        out["knn"] = knn
    return out


def evaluate(embed: Callable[[np.ndarray], np.ndarray], stimuli: FolderStimuli, k: int = 5, num_bins: int = 20) -> dict:
    """:func:`evaluate_embedding` of ``embed(stimuli.images)`` (``embed``: ``uint8 (M, S, S, 3) -> (M, D)``)."""
    return evaluate_embedding(np.asarray(embed(stimuli.images)), stimuli, k, num_bins)


def summarize(evaluations: dict) -> dict:
    """Mean and s.e.m. over runs of ``heldout_spearman`` and every k-NN accuracy, per arm or reference row.

    ``evaluations``: ``{name: [per-run evaluate() dict]}``. Returns ``{"heldout_spearman": {name: {"mean",
    "sem", "runs"}}, "knn": {name: {level: {"mean", "sem", "chance"}}}}``."""
    out: dict = {"heldout_spearman": {}, "knn": {}}
    for name, runs in evaluations.items():
        runs = [r for r in runs if r]
        if not runs:
            continue
        m, s = mean_sem([r["heldout_spearman"] for r in runs])
        out["heldout_spearman"][name] = {"mean": float(m), "sem": float(s), "runs": len(runs)}
        if "knn" in runs[0]:
            out["knn"][name] = {}
            for level, first in runs[0]["knn"].items():
                m, s = mean_sem([r["knn"][level]["accuracy"] for r in runs])
                out["knn"][name][level] = {"mean": float(m), "sem": float(s), "chance": first["chance"]}
    if not out["knn"]:
        del out["knn"]
    return out


def format_table(results: dict) -> str:
    """Markdown: held-out Spearman (mean +- s.e.m. over runs) and k-NN accuracy per level, one row per name."""
    rho = results["heldout_spearman"]
    knn = results.get("knn", {})
    levels = list(next(iter(knn.values()))) if knn else []
    head = ["model", "runs", "held-out Spearman"] + [f"k-NN {lv}" for lv in levels]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in rho.items():
        cells = [name, str(r["runs"]), f"{r['mean']:.3f} +- {r['sem']:.3f}"]
        cells += [f"{knn[name][lv]['mean']:.3f}" if name in knn else "" for lv in levels]
        lines.append("| " + " | ".join(cells) + " |")
    if levels:
        first = next(iter(knn.values()))
        lines.append(
            "| chance (majority class) | | | " + " | ".join(f"{first[lv]['chance']:.3f}" for lv in levels) + " |"
        )
    return "\n".join(lines)


def plot(results: dict, path, title: str = "") -> str:
    """Model similarity (cosine) against ``log s_gen`` over the held-out pairs, one line per arm and reference row
    (run 0's pairs in :func:`evaluate_embedding`'s quantile bins), its Spearman in the legend."""
    fig, (ax,) = figure(6.0, 4.2)
    for i, (name, runs) in enumerate(results["evaluations"].items()):
        if not runs or not runs[0]:
            continue
        bins = runs[0]["bins"]
        rho = results["heldout_spearman"][name]["mean"]
        dashed = "--" if name in ("initial", "pixels") else "-"
        ax.plot(bins["log_s"], bins["similarity"], dashed, marker="o", ms=3, color=COLORS[i % len(COLORS)],
                label=f"{name} (rho {rho:.2f})")  # fmt: skip
    ax.set_xlabel("log s_gen of the pair (generative model of the table)")
    ax.set_ylabel("cosine similarity of the embeddings")
    ax.set_title(title or "Held-out pairs: model similarity vs generative similarity", fontsize=9)
    ax.legend(fontsize=8)
    return save_figure(fig, path)
