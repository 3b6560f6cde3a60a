"""The hierarchy-decoding protocol (paper Sec. 3.3, Fig. 4B, Fig. S3, Appendix N): stimuli, decoder, table, figures.

Embeddings of held-out images are decoded at every level of a class tree with one linear SVM per
level: hinge loss by SGD (``sklearn.linear_model.SGDClassifier(loss="hinge")``), up to 100 epochs,
stopping when the training loss fails to decrease by more than 1e-4 for 5 epochs (Appendix N),
inside a 3-fold cross-validation loop (mean held-out accuracy over the folds). The aggregate is

    score = sum_l log(a_l / c_l)                                     (paper Sec. 3.3)

with ``a_l`` the accuracy and ``c_l = 1 / n_l`` the chance accuracy at level ``l`` (``n_l`` labels at
that level among the images; ``chance="majority"`` uses the most frequent label's share instead).
Levels with a single label (the root) are trivial and contribute 0.

Level labels come from :func:`gensim_jax.kernels.hierarchy.level_labels` (any
:class:`~gensim_jax.kernels.hierarchy.Tree`, e.g. the WordNet tree of
:func:`~gensim_jax.kernels.hierarchy.imagenet1k_hierarchy`).

* :func:`synthetic_stimuli` -- the offline stand-in for ImageNet: the grating images of
  :func:`gensim_jax.stimuli.hierarchy.hierarchy_images` on a balanced tree (the generator the
  ``imagenet_hierarchy`` experiment trains on; ``gensim-jax score`` and ``eval hierarchy`` use it).
* :func:`decode_levels` / :func:`aggregate_score` -- the decoder and its score.
* :func:`evaluate_embedding` -- what :mod:`gensim_jax.experiments.imagenet_hierarchy` records for
  every run and baseline (both chances); :func:`evaluate` the same from an embedding function;
  :func:`pixel_embedding` the model-free baseline.
* :func:`summarize_runs`, :func:`format_table`, :func:`plot_hierarchy_summary` (a run's figure) and
  :func:`plot_hierarchy` (Fig. 4B with Fig. S3) -- results over runs.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, NamedTuple, Optional, Sequence

import numpy as np

from gensim_jax._extras import require
from gensim_jax.evaluation.plotting import COLORS, figure, per_run_values, save_figure
from gensim_jax.evaluation.statistics import mean_sem, mean_std
from gensim_jax.kernels.hierarchy import Tree, level_labels
from gensim_jax.preprocessing import normalize_uint8
from gensim_jax.stimuli.hierarchy import balanced_tree, hierarchy_images

__all__ = [
    "experiment_results",
    "model_embedding",
    "NAME",
    "DecodingResult",
    "HierarchyStimuli",
    "LevelResult",
    "aggregate_score",
    "as_model_input",
    "balanced_tree",
    "decode_levels",
    "evaluate",
    "evaluate_embedding",
    "format_table",
    "make_stimuli",
    "pixel_embedding",
    "plot",
    "plot_hierarchy",
    "plot_hierarchy_summary",
    "summarize",
    "summarize_runs",
    "synthetic_stimuli",
]

#: The protocol's name in :data:`gensim_jax.evaluation.registry.PROTOCOLS`.
NAME = "hierarchy"


class HierarchyStimuli(NamedTuple):
    """Labelled images of a class tree, as the decoder sees them."""

    images: np.ndarray  #: ``(N, S, S, 3)`` uint8
    labels: np.ndarray  #: ``(N,)`` int64 class index into ``nodes``
    tree: Tree
    nodes: np.ndarray  #: ``(C,)`` node id of each class


def synthetic_stimuli(
    seed: int = 0, per_class: int = 12, image_size: int = 16, branching: Sequence[int] = (2, 3, 3), noise: float = 0.1
) -> HierarchyStimuli:
    """``per_class`` grating images of each leaf class of the balanced tree ``branching`` (default 2 x 3 x 3 = 18
    classes): :func:`~gensim_jax.stimuli.hierarchy.hierarchy_images` with class appearance seed ``seed``, image
    seed ``seed + 1`` and pixel noise ``noise`` (on the ``[0, 1]`` scale)."""
    tree = balanced_tree(branching)
    nodes = tree.leaves
    images, labels = hierarchy_images(
        tree, nodes, per_class, image_size, attribute_seed=seed, image_seed=seed + 1, noise=noise
    )
    return HierarchyStimuli(images, labels.astype(np.int64), tree, nodes)


@dataclass(frozen=True)
class LevelResult:
    level: int
    num_labels: int
    accuracy: float  # mean over the CV folds
    chance: float  # the chance used in the score: 1 / num_labels or the majority rate
    majority: float  # share of the most frequent label (accuracy of always guessing it)
    fold_accuracies: tuple[float, ...]


@dataclass(frozen=True)
class DecodingResult:
    levels: tuple[LevelResult, ...]
    score: float  # sum_l log(a_l / c_l) over the decoded levels
    #: per decoded level, ``(N,)`` float: 1.0 / 0.0 where image ``i``'s held-out prediction (from the fold that
    #: tested it) was right / wrong, NaN where the image has no label at that level; for intervals by
    #: bootstrapping the held-out images (:mod:`gensim_jax.evaluation.scorecard`). Not part of equality.
    held_out_correct: tuple = dataclasses.field(default=(), compare=False, repr=False)


def aggregate_score(accuracies, chances) -> float:
    """``sum_i log(a_i / c_i)`` (paper Sec. 3.3, Fig. 4B).

    Args:
      accuracies, chances: ``(L,)`` in ``(0, 1]``.
    """
    a, c = np.asarray(accuracies, np.float64), np.asarray(chances, np.float64)
    if a.shape != c.shape or a.ndim != 1:
        raise ValueError(f"accuracies {a.shape} and chances {c.shape} must be equal 1-D shapes")
    if np.any(a <= 0) or np.any(c <= 0):
        raise ValueError("accuracies and chances must be > 0 (log of 0); got a zero accuracy or chance")
    return float(np.sum(np.log(a / c)))


def _svm(seed: int, standardize: bool, n_jobs: int | None):
    require("sklearn", "eval")
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = SGDClassifier(
        loss="hinge", max_iter=100, tol=1e-4, n_iter_no_change=5, early_stopping=False, random_state=seed, n_jobs=n_jobs
    )
    return make_pipeline(StandardScaler(), clf) if standardize else clf


def decode_levels(
    embeddings,
    classes,
    tree: Tree,
    class_nodes=None,
    *,
    folds: int = 3,
    seed: int = 0,
    standardize: bool = True,
    fill: str = "self",
    chance: str = "uniform",
    n_jobs: int | None = None,
) -> DecodingResult:
    """Decode the class-tree level of every image from its embedding (paper Appendix N).

    Args:
      embeddings: ``(N, D)`` embeddings of held-out images.
      classes: ``(N,)`` class index of each image, an index into ``class_nodes``.
      tree: the class tree.
      class_nodes: ``(C,)`` node id of each class (default: the tree's leaves in node order).
      folds: cross-validation folds (paper: 3); stratification is by the level's labels when every
        label has at least ``folds`` images, otherwise plain shuffled K-fold.
      seed: seeds the fold split and the SGD.
      standardize: z-score the features inside each fold (fitted on the training part) before the
        SVM; SGD on unscaled features converges poorly. The paper does not say; default True.
      fill: passed to :func:`~gensim_jax.kernels.hierarchy.level_labels` (``"self"``: a class
        shallower than a level keeps its own label there).
      chance: ``"uniform"`` (``c_l = 1 / n_l``, the paper's red lines in Fig. S3) or ``"majority"``
        (``c_l`` = share of the most frequent label). The WordNet levels of ImageNet are very
        unbalanced (level 1: almost every class is a physical entity), so with ``"uniform"`` even
        random embeddings score far above 0; ``"majority"`` is the stricter baseline.
      n_jobs: parallel one-vs-all fits (sklearn ``n_jobs``); ImageNet's deep levels have ~1000 labels.

    Returns:
      :class:`DecodingResult` with one :class:`LevelResult` per level that has at least 2 labels
      among the images, and the aggregate :func:`aggregate_score`.
    """
    require("sklearn", "eval")
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import KFold, StratifiedKFold

    x = np.asarray(embeddings, np.float64)
    y = np.asarray(classes)
    if x.ndim != 2 or y.shape != (len(x),):
        raise ValueError(f"embeddings (N, D) and classes (N,) must agree, got {x.shape} and {y.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("embeddings contain NaN or inf")
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"classes must be integer, got {y.dtype}")
    nodes = tree.leaves if class_nodes is None else np.asarray(class_nodes)
    if y.size and (y.min() < 0 or y.max() >= len(nodes)):
        raise ValueError(f"classes must lie in [0, {len(nodes)}), got [{y.min()}, {y.max()}]")
    if chance not in ("uniform", "majority"):
        raise ValueError(f"chance must be 'uniform' or 'majority', got {chance!r}")
    if folds < 2 or len(x) < 2 * folds:
        raise ValueError(f"folds must be >= 2 with at least 2*folds images, got folds={folds}, N={len(x)}")
    labels, _ = level_labels(tree, nodes, fill=fill)
    results, correct = [], []
    for level in range(labels.shape[1]):
        yl = labels[y, level]
        keep = yl >= 0
        xl, yl = x[keep], yl[keep]
        uniq, counts = np.unique(yl, return_counts=True)
        if len(uniq) < 2:
            continue
        if counts.min() >= folds:
            split = StratifiedKFold(folds, shuffle=True, random_state=seed).split(xl, yl)
        else:
            split = KFold(folds, shuffle=True, random_state=seed).split(xl)
        accs = []
        right = np.zeros(len(yl))
        for tr, te in split:
            if len(np.unique(yl[tr])) < 2:  # a fold with one training label: predict it
                right[te] = yl[te] == yl[tr][0]
                accs.append(float(np.mean(yl[te] == yl[tr][0])))
                continue
            with warnings.catch_warnings():  # hitting the paper's 100-epoch cap is expected
                warnings.simplefilter("ignore", ConvergenceWarning)
                clf = _svm(seed, standardize, n_jobs).fit(xl[tr], yl[tr])
            hit = clf.predict(xl[te]) == yl[te]
            right[te] = hit
            accs.append(float(np.mean(hit)))
        full = np.full(len(x), np.nan)
        full[np.flatnonzero(keep)] = right
        correct.append(full)
        majority = float(counts.max() / counts.sum())
        c = 1.0 / len(uniq) if chance == "uniform" else majority
        results.append(LevelResult(level, len(uniq), float(np.mean(accs)), c, majority, tuple(accs)))
    if not results:
        raise ValueError("no tree level has two or more labels among the images")
    acc = [r.accuracy for r in results]
    # An accuracy of exactly 0 would make the log undefined: floor it at half an image per level.
    floor = [0.5 / len(x)] * len(acc)
    score = aggregate_score(np.maximum(acc, floor), [r.chance for r in results])
    return DecodingResult(tuple(results), score, tuple(correct))


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
    """Per-level decoding of ``embeddings`` ``(N, D)`` (:func:`decode_levels`,
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


def evaluate(embed, stimuli: HierarchyStimuli, *, folds: int = 3, seed: int = 0, n_jobs: int = 1) -> dict:
    """:func:`evaluate_embedding` of ``embed(images (N, S, S, 3) uint8) -> (N, D)`` on ``stimuli``."""
    x = np.asarray(embed(stimuli.images))
    return evaluate_embedding(x, stimuli.labels, stimuli.tree, stimuli.nodes, folds=folds, seed=seed, n_jobs=n_jobs)


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


def experiment_results(evaluations: Mapping[str, list], labels: np.ndarray, num_classes: int) -> dict:
    """The results of a run of ``imagenet_hierarchy``: ``summary`` (:func:`summarize_runs` per row: baselines
    and arms), ``per_run`` (``evaluations``) and the held-out set's size and label counts."""
    labels = np.asarray(labels)
    return {
        "num_classes": int(num_classes),
        "num_eval_images": int(len(labels)),
        "eval_label_counts": np.bincount(labels, minlength=int(num_classes)).tolist(),
        "summary": {name: summarize_runs(per_run) for name, per_run in evaluations.items()},
        "per_run": dict(evaluations),
    }


def model_embedding(model, variables, images: np.ndarray, batch_size: int) -> np.ndarray:
    """``(N, D)``: :func:`~gensim_jax.evaluation.embed.embed_images` (penultimate layer) of uint8 ``images``
    (:func:`as_model_input`), in chunks of at most 2,000 images."""
    from gensim_jax.evaluation.embed import embed_images

    out = []
    for start in range(0, len(images), 2000):
        out.append(embed_images(model, variables, as_model_input(images[start : start + 2000]), batch_size=batch_size))
    return np.concatenate(out)


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


def plot_hierarchy(
    models: Mapping[str, Mapping[str, Sequence]],
    path: Optional[str | os.PathLike] = None,
    *,
    title: str = "Hierarchy decoding",
):
    """Fig. 4B with Fig. S3: decoding accuracy per tree level and the aggregate score per model.

    Left panel: accuracy of the linear decoder at each level (mean +- s.e.m. over runs) and the
    chance used in the score (grey). Right panel: ``sum_l log(a_l / c_l)`` (paper Sec. 3.3), mean
    +- s.e.m. over runs, one bar per model.

    Args:
      models: ``{label: {"levels": (L,) level numbers, "accuracy": (R, L) per run and level,
        "chance": (L,), "score": (R,)}}``.
      path: write the PNG here when given.
      title: figure title.

    Returns:
      the matplotlib ``Figure``.
    """
    if not models:
        raise ValueError("models is empty")
    from matplotlib.ticker import MaxNLocator

    fig, (ax_l, ax_s) = figure(7.5, 3.2, ncols=2)
    labels, score_means, score_sems = [], [], []
    for i, (label, m) in enumerate(models.items()):
        missing = [k for k in ("levels", "accuracy", "chance", "score") if k not in m]
        if missing:
            raise ValueError(f"model {label!r} lacks {missing}")
        levels = np.asarray(m["levels"])
        acc = np.asarray(m["accuracy"], np.float64)
        acc = acc[None] if acc.ndim == 1 else acc
        chance = np.asarray(m["chance"], np.float64)
        if acc.ndim != 2 or acc.shape[1] != len(levels) or chance.shape != levels.shape:
            raise ValueError(
                f"model {label!r}: accuracy must be (R, {len(levels)}) and chance ({len(levels)},), "
                f"got {acc.shape} and {chance.shape}"
            )
        color = COLORS[i % len(COLORS)]
        mu, se = mean_sem(acc)
        ax_l.errorbar(
            levels, mu, yerr=se if len(acc) > 1 else None, marker="o", ms=3.5, capsize=2, color=color, label=label
        )
        ax_l.plot(levels, chance, ls=":", marker="_", color="grey", label="chance" if i == 0 else None)
        s_mu, s_se = mean_sem(per_run_values(m["score"], f"models[{label!r}]['score']"))
        labels.append(label)
        score_means.append(float(s_mu))
        score_sems.append(float(s_se))
    ax_l.set_xlabel("tree level")
    ax_l.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_l.set_ylabel("decoding accuracy")
    ax_l.set_ylim(0.0, 1.02)
    ax_l.legend(fontsize=7, loc="best")
    x = np.arange(len(labels))
    ax_s.bar(
        x,
        score_means,
        0.6 if len(labels) > 1 else 0.35,
        yerr=score_sems,
        capsize=3,
        color=[COLORS[i % len(COLORS)] for i in range(len(labels))],
    )
    ax_s.axhline(0.0, color="black", lw=0.8)
    ax_s.set_xticks(x, labels, rotation=20, fontsize=8)
    ax_s.set_ylabel("Σ over levels of log(accuracy / chance)", fontsize=8)
    ax_s.set_xlim(-0.75, len(labels) - 0.25)
    ax_s.set_title("accuracy over chance, all levels", fontsize=9)
    fig.suptitle(title, fontsize=10)
    if path is not None:
        save_figure(fig, path)
    return fig


def plot_hierarchy_summary(results: Mapping, path) -> Path:
    """A hierarchy run's figure: Fig. 4B style, the aggregate ``sum_l log(a_l / c_l)`` per row (bars, std over
    runs), and Fig. S3, the accuracy per tree level; ``results`` as
    :mod:`gensim_jax.experiments.imagenet_hierarchy` writes them (``summary``, ``config``)."""
    summary = results["summary"]
    names = list(summary)
    fig, ax = figure(12, 4.2, ncols=2)
    x = np.arange(len(names))
    w = 0.38
    for k, (key, label) in enumerate((("score_uniform", "chance 1/n_l"), ("score_majority", "chance = majority"))):
        ax[0].bar(
            x + (k - 0.5) * w,
            [summary[n][key] for n in names],
            w,
            yerr=[summary[n][key + "_std"] for n in names],
            label=label,
        )
    ax[0].axhline(0, color="grey", lw=0.8)
    ax[0].set_xticks(x, names, rotation=20)
    ax[0].set(title="Accuracy over chance across tree levels", ylabel="sum_l log(a_l / c_l)")
    ax[0].legend(fontsize=8)
    first = summary[names[0]]
    levels = np.array(first["levels"])
    for n in names:
        s = summary[n]
        ax[1].errorbar(levels, s["accuracy"], yerr=s["accuracy_std"], marker="o", ms=3, lw=1, capsize=2, label=n)
    ax[1].plot(levels, first["chance_uniform"], "r--", lw=1, label="chance 1/n_l")
    ax[1].plot(levels, first["chance_majority"], "r:", lw=1, label="majority")
    ax[1].set(
        title=f"Decoding accuracy per tree level ({results['config']['data']['dataset']}, linear SVM, "
        f"{results['config']['eval']['folds']}-fold CV)",
        xlabel="tree level (depth)",
        ylabel="accuracy",
        ylim=(0, 1.02),
    )
    ax[1].set_xticks(levels)
    ax[1].legend(fontsize=7, ncol=2)
    return Path(save_figure(fig, path, dpi=110))


# the registry's face (gensim_jax.evaluation.registry): stimuli, evaluator, summary over runs, figure
make_stimuli = synthetic_stimuli
summarize = summarize_runs
plot = plot_hierarchy_summary
