"""The Geoclidean few-shot protocol (paper Sec. 3.2, Fig. 3C; Hsu et al. 2022): episodes, scores, table, figures.

For each concept: the prototype is the mean embedding of its 5 train images; a test image's score
is its normalized L1 distance (mean absolute difference,
:func:`gensim_jax.similarity.normalized_l1_distance`) to the prototype; an image is classified "in
concept" when its score is at most a threshold. The 15 test images of a concept are 5 in-concept,
5 close negatives and 5 far negatives.

Each concept gives two binary tasks: *close* (5 in + 5 close negatives) and *far* (5 in + 5 far).
Three threshold rules (:data:`THRESHOLD_RULES`):

* ``"per_concept"`` (the GenSim paper's choice): for each concept and task, the threshold that
  maximises that task's accuracy;
* ``"global"``: scores are min-max normalised within each task, then one threshold per task type
  (close / far) maximises the accuracy pooled over all concepts;
* ``"benchmark"`` (the original benchmark's evaluation code, Hsu et al. 2022): scores min-max
  normalised within each task, then ONE threshold for all tasks, close and far together,
  maximises the mean task accuracy (every task has 10 images, so the pooled accuracy).

Reported per concept and task: accuracy, and the ROC AUC of in-concept against the negatives
(score = -distance; threshold-free).

Episodes ``{name: (support (5, S, S, 3), test (15, S, S, 3), kind (15,))}`` come from our sampler
(:func:`sampler_episodes`, the held-out concepts a run records) or from the official benchmark
images (:func:`load_geoclidean` reads ``<root>/{elements,constraints}/concept_<name>/{train,test}/*.png``;
:func:`official_episodes`, :func:`concept_episodes`). :func:`embed_episodes` embeds them by one call
of an embedding function, :func:`fewshot_evaluate` scores embedded concepts under one threshold
rule, :func:`evaluate_embedding` / :func:`evaluate_suites` / :func:`evaluate_rules` do both;
:func:`summarize_runs`, :func:`format_table`, :func:`plot_geoclidean_summary` (a run's figure) and
:func:`plot_geoclidean` (Fig. 3C) present results over runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

import jax.numpy as jnp
import numpy as np

from gensim_jax._extras import require
from gensim_jax.evaluation.plotting import COLORS, HUMAN_COLOR, figure, per_run_values, save_figure, wrap
from gensim_jax.evaluation.statistics import mean_sem, mean_std
from gensim_jax.similarity import normalized_l1_distance

__all__ = [
    "METRICS",
    "NAME",
    "TEST_LABELS",
    "THRESHOLD_RULES",
    "ConceptImages",
    "FewShotResult",
    "best_threshold",
    "concept_episodes",
    "embed_concepts",
    "embed_episodes",
    "evaluate",
    "evaluate_embedding",
    "evaluate_rules",
    "evaluate_suites",
    "fewshot_evaluate",
    "format_table",
    "load_geoclidean",
    "make_stimuli",
    "official_episodes",
    "pixel_embedding",
    "plot",
    "plot_geoclidean",
    "plot_geoclidean_summary",
    "prototype_scores",
    "result_key",
    "roc_auc",
    "sampler_episodes",
    "split_episodes",
    "summarize",
    "summarize_runs",
]

#: The protocol's name in :data:`gensim_jax.evaluation.registry.PROTOCOLS`.
NAME = "geoclidean"

#: Test-image kinds in the order the loader returns them.
TEST_LABELS: tuple[str, ...] = ("in", "close", "far")

#: The threshold rules of :func:`fewshot_evaluate`.
THRESHOLD_RULES: tuple[str, ...] = ("per_concept", "global", "benchmark")


def prototype_scores(train_embeddings, test_embeddings) -> np.ndarray:
    """Normalized L1 distance of each test embedding to the prototype (paper Sec. 3.2).

    ``score_j = (1/D) sum_d |t_jd - p_d|`` with the prototype ``p = mean_i train_i``.

    Args:
      train_embeddings: ``(S, D)`` embeddings of the ``S`` (= 5) train images of one concept.
      test_embeddings: ``(M, D)``.

    Returns:
      ``(M,)`` float64 distances (small = more like the concept).
    """
    tr, te = np.asarray(train_embeddings), np.asarray(test_embeddings)
    if tr.ndim != 2 or te.ndim != 2 or tr.shape[1] != te.shape[1] or len(tr) == 0:
        raise ValueError(
            f"train_embeddings (S, D) and test_embeddings (M, D) must share D, got {tr.shape} and {te.shape}"
        )
    proto = tr.astype(np.float64).mean(axis=0)
    return np.asarray(
        normalized_l1_distance(jnp.asarray(te, jnp.float32), jnp.asarray(proto, jnp.float32)[None]), np.float64
    )


def best_threshold(scores, positive) -> tuple[float, float]:
    """Threshold ``t`` maximising the accuracy of "positive iff score <= t".

    Candidates are ``-inf`` and the midpoints between consecutive distinct scores and ``+inf``
    (every distinct classification is reachable); ties in accuracy go to the smallest threshold.

    Args:
      scores: ``(M,)`` distances.
      positive: ``(M,)`` bool, True for in-concept images.

    Returns:
      ``(threshold, accuracy)``.
    """
    s = np.asarray(scores, np.float64)
    y = np.asarray(positive, bool)
    if s.ndim != 1 or s.shape != y.shape or len(s) == 0:
        raise ValueError(f"scores and positive must be equal non-empty 1-D shapes, got {s.shape}, {y.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores contain NaN or inf")
    u = np.unique(s)
    cands = np.concatenate([[-np.inf], (u[:-1] + u[1:]) / 2, [np.inf]])
    acc = ((s[None, :] <= cands[:, None]) == y[None, :]).mean(axis=1)
    k = int(np.argmax(acc))
    return float(cands[k]), float(acc[k])


def roc_auc(scores_pos, scores_neg) -> float:
    """ROC AUC of ranking positives above negatives by ``-score``: ``P(s_pos < s_neg) + P(tie)/2``.

    This is the Mann-Whitney U statistic divided by ``n_pos * n_neg``.
    """
    p, n = np.asarray(scores_pos, np.float64), np.asarray(scores_neg, np.float64)
    if p.ndim != 1 or n.ndim != 1 or len(p) == 0 or len(n) == 0:
        raise ValueError(f"scores_pos and scores_neg must be non-empty 1-D, got {p.shape}, {n.shape}")
    diff = n[None, :] - p[:, None]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


@dataclass
class ConceptImages:
    """Images of one Geoclidean concept, float32 in ``[0, 1]``, ``(count, H, W, 3)``."""

    name: str
    family: str
    train: np.ndarray
    test: np.ndarray
    test_kind: np.ndarray  # (15,) strings from TEST_LABELS


def _read_png(path: Path, image_size: int | None) -> np.ndarray:
    Image = require("PIL.Image", "eval")

    with Image.open(path) as im:
        im = im.convert("RGB")
        if image_size is not None:
            im = im.resize((image_size, image_size), Image.BILINEAR)
        return np.asarray(im, np.float32) / 255.0


def _concept_dirs(root: Path) -> dict[str, tuple[str, Path]]:
    out = {}
    for family in ("elements", "constraints"):
        fam = root / family
        if not fam.is_dir():
            continue
        for d in sorted(fam.iterdir()):
            if d.is_dir() and d.name.startswith("concept_"):
                out[d.name[len("concept_") :]] = (family, d)
    return out


def load_geoclidean(
    root: str | os.PathLike, concepts: Sequence[str] | None = None, image_size: int | None = None
) -> dict[str, ConceptImages]:
    """Read the official Geoclidean benchmark images (Hsu et al. 2022).

    Layout: ``<root>/{elements,constraints}/concept_<name>/train/{1..5}_fin.png`` and
    ``test/{in,out_close,out_far}_{1..5}_fin.png``.

    Args:
      root: benchmark directory.
      concepts: names to load (default: all found, 37 in the official release); names as in
        :data:`gensim_jax.stimuli.geoclidean.concepts.CONCEPT_NAMES` (e.g. ``"perp_bisector"``).
      image_size: resize to ``image_size x image_size`` (bilinear); default keeps 360 x 360.

    Returns:
      ``{name: ConceptImages}`` in the order of ``concepts`` (or sorted by family and name).
    """
    root = Path(root)
    found = _concept_dirs(root)
    if not found:
        raise ValueError(f"no concept_* directories under {root}/elements or {root}/constraints")
    names = list(found) if concepts is None else list(concepts)
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(f"concepts {missing} not found under {root} (found {len(found)} concepts)")
    out = {}
    for name in names:
        family, d = found[name]
        train_files = sorted((d / "train").glob("*_fin.png"), key=lambda p: p.name)
        test_files, kinds = [], []
        for kind, prefix in zip(TEST_LABELS, ("in_", "out_close_", "out_far_")):
            files = sorted((d / "test").glob(f"{prefix}*_fin.png"), key=lambda p: p.name)
            test_files += files
            kinds += [kind] * len(files)
        if not train_files or kinds.count("in") == 0 or len(kinds) == kinds.count("in"):
            raise ValueError(f"{d}: needs train/*_fin.png and test/in_*, out_close_*/out_far_* images")
        out[name] = ConceptImages(
            name=name,
            family=family,
            train=np.stack([_read_png(p, image_size) for p in train_files]),
            test=np.stack([_read_png(p, image_size) for p in test_files]),
            test_kind=np.array(kinds),
        )
    return out


@dataclass
class FewShotResult:
    """Output of :func:`fewshot_evaluate`; per-concept dicts and their means."""

    threshold: str
    per_concept: dict[str, dict[str, float]] = field(default_factory=dict)
    mean: dict[str, float] = field(default_factory=dict)


def _minmax(s: np.ndarray) -> np.ndarray:
    lo, hi = s.min(), s.max()
    return np.zeros_like(s) if hi == lo else (s - lo) / (hi - lo)


def fewshot_evaluate(
    embedded: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]], threshold: str = "per_concept"
) -> FewShotResult:
    """Run the few-shot protocol on embedded concepts (paper Sec. 3.2, Fig. 3C).

    Each concept gives two binary tasks, *close* (its in-concept test images against its close
    negatives) and *far* (against its far negatives). The score of a test image is
    :func:`prototype_scores`; an image is called "in" when its score is at most a threshold.

    Args:
      embedded: ``{concept: (train_emb (S, D), test_emb (M, D), test_kind (M,))}`` with
        ``test_kind`` entries from :data:`TEST_LABELS` (both ``"close"`` and ``"far"`` present).
      threshold: ``"per_concept"`` (paper: for each concept and task, the threshold that maximises
        that task's accuracy, :func:`best_threshold`), ``"global"`` (scores min-max normalised
        within each task, then one threshold per task type fitted on all the concepts' tasks
        pooled) or ``"benchmark"`` (the benchmark's code: min-max within each task, then one
        threshold fitted on all tasks of both types pooled; ties go to the smallest threshold).

    Returns:
      :class:`FewShotResult`; each concept has ``acc_close``, ``acc_far``, ``auc_close``,
      ``auc_far`` (ROC AUC, threshold-free), ``threshold_close`` and ``threshold_far``; ``mean``
      averages over concepts and adds ``acc`` = mean of ``acc_close`` and ``acc_far``.
    """
    if threshold not in THRESHOLD_RULES:
        raise ValueError(f"threshold must be one of {THRESHOLD_RULES}, got {threshold!r}")
    if not embedded:
        raise ValueError("embedded is empty")
    tasks: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    for name, (tr, te, kind) in embedded.items():
        kind = np.asarray(kind)
        if kind.shape != (len(te),) or not set(kind.tolist()) <= set(TEST_LABELS):
            raise ValueError(f"{name}: test_kind must be ({len(te)},) with entries in {TEST_LABELS}")
        if not all(np.any(kind == k) for k in TEST_LABELS):
            raise ValueError(f"{name}: needs in-concept, close and far test images, got {sorted(set(kind.tolist()))}")
        s = prototype_scores(tr, te)
        for task in ("close", "far"):
            m = (kind == "in") | (kind == task)
            tasks[(name, task)] = (s[m], kind[m] == "in")
    if threshold in ("global", "benchmark"):
        tasks = {k: (_minmax(s), y) for k, (s, y) in tasks.items()}
        groups = {"close": ("close",), "far": ("far",)} if threshold == "global" else {"all": ("close", "far")}
        fitted = {
            group: best_threshold(
                np.concatenate([s for (n, t), (s, _) in tasks.items() if t in types]),
                np.concatenate([y for (n, t), (_, y) in tasks.items() if t in types]),
            )[0]
            for group, types in groups.items()
        }
        pooled = {task: fitted[task if threshold == "global" else "all"] for task in ("close", "far")}
    result = FewShotResult(threshold=threshold)
    for (name, task), (s, y) in tasks.items():
        t = best_threshold(s, y)[0] if threshold == "per_concept" else pooled[task]
        row = result.per_concept.setdefault(name, {})
        row[f"threshold_{task}"] = t
        row[f"acc_{task}"] = float(np.mean((s <= t) == y))
        row[f"auc_{task}"] = roc_auc(s[y], s[~y])
    for key in ("acc_close", "acc_far", "auc_close", "auc_far"):
        result.mean[key] = float(np.mean([r[key] for r in result.per_concept.values()]))
    result.mean["acc"] = (result.mean["acc_close"] + result.mean["acc_far"]) / 2
    return result


def pixel_embedding(images, size: int = 32) -> np.ndarray:
    """A model-free baseline embedding: grey-scale images average-pooled to ``size x size``, flattened.

    Args:
      images: ``(B, H, W, C)``; pooling windows are ``(H // size) x (W // size)`` and the bottom and
        right remainder rows/columns are dropped (360 -> 32 pools 11 x 11 windows of 352 x 352).

    Returns:
      ``(B, size * size)`` float32.
    """
    x = np.asarray(images, np.float32)
    if x.ndim != 4:
        raise ValueError(f"images must be (B, H, W, C), got {x.shape}")
    g = x.mean(axis=-1)
    b, h, w = g.shape
    fh, fw = h // size, w // size
    if fh < 1 or fw < 1:
        raise ValueError(f"size={size} exceeds the image size {h}x{w}")
    g = g[:, : fh * size, : fw * size].reshape(b, size, fh, size, fw).mean(axis=(2, 4))
    return g.reshape(b, -1)


def embed_concepts(
    concepts: Mapping[str, ConceptImages], embed: Callable[[np.ndarray], np.ndarray]
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Apply ``embed`` ``(B, H, W, 3) -> (B, D)`` to every concept's train and test images."""
    return {n: (np.asarray(embed(c.train)), np.asarray(embed(c.test)), c.test_kind) for n, c in concepts.items()}


# ------------------------------------------------------------------------------------------------
# episodes of the held-out concepts, embedded and scored
# ------------------------------------------------------------------------------------------------

METRICS = ("acc_close", "acc_far", "auc_close", "auc_far")


def sampler_episodes(image_size: int, seed: int, concepts: Optional[Sequence[str]] = None) -> dict:
    """Few-shot episodes of ``concepts`` (default: the 7 held-out ones) rendered by our sampler.

    Returns ``{name: (support (5, S, S, 3), test (15, S, S, 3), kind (15,))}``, uint8 RGB; support
    and in-concept test images are the first and last 5 of 10 concept images, negatives 5 close and
    5 far images (:func:`~gensim_jax.stimuli.geoclidean.dataset.benchmark_images` streams of ``seed``).
    """
    from gensim_jax.stimuli.geoclidean import dataset as geo
    from gensim_jax.stimuli.geoclidean.concepts import TEST_CONCEPTS

    out = {}
    for name in TEST_CONCEPTS if concepts is None else concepts:
        pos = geo.benchmark_images(name, "concept", n=10, seed=seed, size=image_size)
        close = geo.benchmark_images(name, "close", n=5, seed=seed, size=image_size)
        far = geo.benchmark_images(name, "far", n=5, seed=seed, size=image_size)
        test = np.concatenate([pos[5:], close, far])
        kind = np.array(["in"] * 5 + ["close"] * 5 + ["far"] * 5)
        out[name] = (np.repeat(pos[:5, ..., None], 3, -1), np.repeat(test[..., None], 3, -1), kind)
    return out


def concept_episodes(concepts: Mapping[str, ConceptImages]) -> dict:
    """Loaded concepts (:func:`load_geoclidean`) as episodes ``{name: (train, test, kind)}``, as :func:`sampler_episodes`."""
    return {n: (c.train, c.test, np.asarray(c.test_kind)) for n, c in concepts.items()}


def official_episodes(benchmark_dir, image_size: int) -> dict:
    """The official benchmark images of the held-out concepts in ``benchmark_dir``, as :func:`sampler_episodes`."""
    from gensim_jax.stimuli.geoclidean.concepts import TEST_CONCEPTS

    return concept_episodes(load_geoclidean(benchmark_dir, concepts=list(TEST_CONCEPTS), image_size=image_size))


def result_key(suite: str, rule: str, rules: tuple) -> str:
    """The key of a suite's result: the suite's name with one rule, ``"<suite>/<rule>"`` with several."""
    return suite if len(rules) == 1 else f"{suite}/{rule}"


def evaluate_rules(embedded: Mapping, rules: Sequence[str]) -> dict:
    """``{rule: {"mean", "per_concept"}}``: :func:`fewshot_evaluate` of embedded concepts under every threshold rule."""
    out = {}
    for rule in rules:
        r = fewshot_evaluate(embedded, rule)
        out[rule] = {"mean": r.mean, "per_concept": r.per_concept}
    return out


def evaluate_suites(embed, suites: dict, rules: tuple) -> dict:
    """``{result_key: means}`` of ``embed(images) -> (N, D)`` on every suite of episodes under every threshold rule
    (one embedding call per suite)."""
    out = {}
    for suite, episodes in suites.items():
        for rule, res in evaluate_rules(embed_episodes(embed, episodes), rules).items():
            out[result_key(suite, rule, rules)] = {k: float(v) for k, v in res["mean"].items()}
    return out


def summarize_runs(per_run: list) -> dict:
    """Mean and standard deviation over runs of the close/far accuracies and AUCs (``<metric>_std``), and ``runs``."""
    out = {}
    for m in METRICS:
        out[m], out[m + "_std"] = mean_std([r[m] for r in per_run])
    out["runs"] = len(per_run)
    return out


def split_episodes(embeddings, layout: Mapping[str, tuple]) -> dict:
    """``{name: (support (S, D), test (M, D), kind)}`` of the rows of ``embeddings`` ``(N, D)``, concept after concept
    (support images first); ``layout = {name: (S, kind (M,))}`` in that order."""
    embedded, start = {}, 0
    for name, (n_support, kind) in layout.items():
        n_test = len(kind)
        embedded[name] = (
            embeddings[start : start + n_support],
            embeddings[start + n_support : start + n_support + n_test],
            kind,
        )
        start += n_support + n_test
    return embedded


def embed_episodes(embed, episodes: dict) -> dict:
    """``{name: (support (5, D), test (15, D), kind)}``: ``embed(images) -> (N, D)`` called once on all images."""
    names = list(episodes)
    images = np.concatenate([np.concatenate([episodes[n][0], episodes[n][1]]) for n in names])
    e = np.asarray(embed(images))  # one call: the embedding function is compiled once per model
    return split_episodes(e, {n: (len(episodes[n][0]), episodes[n][2]) for n in names})


def evaluate_embedding(embed, episodes: dict, threshold: str = "per_concept") -> dict:
    """``fewshot_evaluate`` of ``embed(images) -> (N, D)`` on ``episodes``; returns the mean dict."""
    res = fewshot_evaluate(embed_episodes(embed, episodes), threshold=threshold)
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


# ------------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------------


def plot_geoclidean(
    models: Mapping[str, Mapping[str, Sequence[float]]],
    path: Optional[str | os.PathLike] = None,
    *,
    human: Optional[Mapping[str, float]] = None,
    chance: float = 0.5,
    title: str = "Geoclidean few-shot (held-out concepts)",
):
    """Fig. 3C: few-shot accuracy on the close and far tasks, one bar per model (paper Sec. 3.2).

    Bars are the mean over training runs, error bars the s.e.m. over runs (none for one run), dots
    the single runs; a dashed line marks chance and, when ``human`` is given, a green line per task
    marks the mean human accuracy (the paper draws it but does not print its value, so none is
    built in).

    Args:
      models: ``{label: {"close": (R,) accuracies, "far": (R,) accuracies}}`` (``R`` runs, any
        ``R >= 1`` per model), e.g. the mean over concepts of each run's ``acc_close``/``acc_far``.
      path: write the PNG here when given.
      human: optional ``{"close": a, "far": b}`` human accuracies.
      chance: chance accuracy (0.5: balanced binary tasks).
      title: axes title.

    Returns:
      the matplotlib ``Figure``.
    """
    if not models:
        raise ValueError("models is empty")
    tasks = ("close", "far")
    fig, (ax,) = figure(max(3.6, 1.6 + 1.1 * len(models)), 3.4)
    width = 0.8 / len(models)
    for i, (label, acc) in enumerate(models.items()):
        missing = [t for t in tasks if t not in acc]
        if missing:
            raise ValueError(f"model {label!r} lacks accuracies for {missing}; it has {sorted(acc)}")
        runs = [per_run_values(acc[t], f"models[{label!r}][{t!r}]") for t in tasks]
        means = [mean_sem(r)[0] for r in runs]
        sems = [mean_sem(r)[1] for r in runs]
        x = np.arange(len(tasks)) - 0.4 + width * (i + 0.5)
        color = COLORS[i % len(COLORS)]
        multi = min(len(r) for r in runs) > 1
        ax.bar(x, means, width * 0.9, yerr=sems if multi else None, capsize=3, color=color, label=label)
        for xi, r in zip(x, runs):
            if len(r) > 1:
                ax.plot(np.full(len(r), xi), r, "o", ms=2.5, color="black", alpha=0.6)
    ax.axhline(chance, ls="--", color="grey", lw=1, label="chance")
    if human is not None:
        for j, t in enumerate(tasks):
            if t in human:
                ax.hlines(
                    float(human[t]), j - 0.45, j + 0.45, color=HUMAN_COLOR, lw=2.5, label="human" if j == 0 else None
                )
    ax.set_xticks(np.arange(len(tasks)), ["close", "far"])
    ax.set_ylabel("classification accuracy")
    ax.set_ylim(0.0, 1.0)
    ax.set_title(wrap(title), fontsize=8)
    ax.legend(fontsize=7, loc="lower right")
    if path is not None:
        save_figure(fig, path)
    return fig


def plot_geoclidean_summary(results: Mapping, path) -> Path:
    """A Geoclidean run's figure: close/far accuracy and AUC of every row on the held-out concepts (our
    sampler's images; std over runs) and each objective's training loss; ``results`` as
    :mod:`gensim_jax.experiments.geoclidean` writes them."""

    key = next(k for k in results["summary"] if k in ("sampler", "sampler/per_concept"))
    summary = results["summary"][key]
    names = list(summary)
    training = results["training"]
    fig, ax = figure(6 + 3.2 * len(training), 4, ncols=1 + len(training))
    width = 0.2
    x = np.arange(len(names))
    for k, m in enumerate(METRICS):
        ax[0].bar(
            x + (k - 1.5) * width,
            [summary[n][m] for n in names],
            width,
            yerr=[summary[n][m + "_std"] for n in names],
            label=m,
        )
    ax[0].axhline(0.5, color="grey", lw=0.8, ls="--")
    ax[0].set_xticks(x, names)
    ax[0].set_ylim(0, 1.05)
    ax[0].set(title="Held-out Geoclidean concepts (few-shot, our sampler)", ylabel="accuracy / AUC")
    ax[0].legend(fontsize=8, ncol=2)
    for a, (name, runs) in zip(ax[1:], training.items()):
        for i, run in enumerate(runs):
            a.plot(run["losses"], lw=1, label=f"run {i}")
        a.set(title=f"{name}: training loss", xlabel="step")
    ax[1].set_ylabel("loss")
    return Path(save_figure(fig, path, dpi=110))


# the registry's face (gensim_jax.evaluation.registry): stimuli, evaluator, summary over runs, figure
make_stimuli = sampler_episodes
evaluate = evaluate_embedding
summarize = summarize_runs
plot = plot_geoclidean_summary
