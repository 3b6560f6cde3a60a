"""Hierarchy decoding protocol (paper Sec. 3.3, Fig. 4B, Appendix N, Supplementary Fig. S3).

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

:func:`~gensim_jax.stimuli.hierarchy.synthetic_hierarchy_images` makes a small image set from a
balanced tree (:func:`~gensim_jax.stimuli.hierarchy.balanced_tree`) so that the protocol runs
offline, without ImageNet; both live in :mod:`gensim_jax.stimuli.hierarchy` and are re-exported
here.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np

from gensim_jax._extras import require
from gensim_jax.kernels.hierarchy import Tree, level_labels
from gensim_jax.stimuli.hierarchy import balanced_tree, synthetic_hierarchy_images

__all__ = [
    "LevelResult",
    "DecodingResult",
    "decode_levels",
    "aggregate_score",
    "balanced_tree",
    "synthetic_hierarchy_images",
]


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
