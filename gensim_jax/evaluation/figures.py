"""Figures of the evaluation protocols in the style of the paper's panels (PNG via matplotlib Agg).

* :func:`plot_oddball` -- Fig. 2B (error rate per quadrilateral, most to least regular, per model
  with s.e.m. over runs, human and baboon rates, the chance line) and Fig. 2C (per-run correlation
  of the model's error rates with human and with baboon rates), from
  :func:`gensim_jax.evaluation.oddball.oddball_summary`.
* :func:`plot_geoclidean` -- Fig. 3C: few-shot accuracy on the *close* and *far* tasks per model,
  mean and s.e.m. over training runs, chance 0.5, and the human accuracy when one is given.
* :func:`plot_hierarchy` -- Fig. 4B (with the per-level accuracies of Fig. S3): decoding accuracy
  per tree level against chance, and the aggregate ``sum_l log(a_l / c_l)`` per model.
* :func:`plot_odd_one_out` -- the odd-one-out likelihood of the human choices as a function of the
  temperature factor ``alpha`` (``tau = alpha * rt``), per participant and on average, with each
  participant's fitted ``alpha`` (the quantity behind Fig. 4D).

matplotlib is imported when a figure is drawn (Agg backend), never at import time.
:func:`plot_geoclidean`, :func:`plot_hierarchy` and :func:`plot_odd_one_out` use only the
object-oriented API with the Agg canvas (``matplotlib.figure.Figure``: no pyplot state, no
display), return the ``Figure`` and write it when ``path`` is given; :func:`plot_oddball` writes
``path`` and returns it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from gensim_jax._extras import require
from gensim_jax.evaluation.statistics import mean_sem

__all__ = [
    "mean_sem",
    "plot_accuracy_vs_lambda",
    "plot_gaussian_mixture",
    "plot_geoclidean",
    "plot_geoclidean_summary",
    "plot_hierarchy",
    "plot_hierarchy_summary",
    "plot_odd_one_out",
    "plot_oddball",
    "save_figure",
]

_COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C")
_HUMAN = "#2CA02C"


def _figure(width: float, height: float, ncols: int = 1):
    require("matplotlib", "eval")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def save_figure(fig, path: str | os.PathLike, dpi: int = 150) -> str:
    """Write ``fig`` as PNG to ``path`` (parent directories created); returns the path."""
    path = os.fspath(path)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    fig.savefig(path, dpi=dpi, format="png")
    return path


def _runs(x, name: str) -> np.ndarray:
    v = np.atleast_1d(np.asarray(x, np.float64))
    if v.ndim != 1 or len(v) == 0 or not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be a non-empty 1-D list of finite per-run values, got shape {v.shape}")
    return v


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
    fig, (ax,) = _figure(max(3.6, 1.6 + 1.1 * len(models)), 3.4)
    width = 0.8 / len(models)
    for i, (label, acc) in enumerate(models.items()):
        missing = [t for t in tasks if t not in acc]
        if missing:
            raise ValueError(f"model {label!r} lacks accuracies for {missing}; it has {sorted(acc)}")
        runs = [_runs(acc[t], f"models[{label!r}][{t!r}]") for t in tasks]
        means = [mean_sem(r)[0] for r in runs]
        sems = [mean_sem(r)[1] for r in runs]
        x = np.arange(len(tasks)) - 0.4 + width * (i + 0.5)
        color = _COLORS[i % len(_COLORS)]
        multi = min(len(r) for r in runs) > 1
        ax.bar(x, means, width * 0.9, yerr=sems if multi else None, capsize=3, color=color, label=label)
        for xi, r in zip(x, runs):
            if len(r) > 1:
                ax.plot(np.full(len(r), xi), r, "o", ms=2.5, color="black", alpha=0.6)
    ax.axhline(chance, ls="--", color="grey", lw=1, label="chance")
    if human is not None:
        for j, t in enumerate(tasks):
            if t in human:
                ax.hlines(float(human[t]), j - 0.45, j + 0.45, color=_HUMAN, lw=2.5, label="human" if j == 0 else None)
    ax.set_xticks(np.arange(len(tasks)), ["close", "far"])
    ax.set_ylabel("classification accuracy")
    ax.set_ylim(0.0, 1.0)
    ax.set_title(_wrap(title), fontsize=8)
    ax.legend(fontsize=7, loc="lower right")
    if path is not None:
        save_figure(fig, path)
    return fig


def _wrap(text: str, width: int = 42) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


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

    fig, (ax_l, ax_s) = _figure(7.5, 3.2, ncols=2)
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
        color = _COLORS[i % len(_COLORS)]
        mu, se = mean_sem(acc)
        ax_l.errorbar(
            levels, mu, yerr=se if len(acc) > 1 else None, marker="o", ms=3.5, capsize=2, color=color, label=label
        )
        ax_l.plot(levels, chance, ls=":", marker="_", color="grey", label="chance" if i == 0 else None)
        s_mu, s_se = mean_sem(_runs(m["score"], f"models[{label!r}]['score']"))
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
        color=[_COLORS[i % len(_COLORS)] for i in range(len(labels))],
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


def plot_odd_one_out(
    alphas,
    curves: Mapping[str, Sequence[float]],
    path: Optional[str | os.PathLike] = None,
    *,
    fitted: Optional[Mapping[str, float]] = None,
    chance: float = 1.0 / 3.0,
    ylabel: str = "mean likelihood of the human choices",
    title: str = "Odd-one-out likelihood vs temperature factor",
):
    """Likelihood of the human odd-one-out choices as a function of ``alpha`` (``tau = alpha * rt``).

    One thin line per participant, their mean in black, each participant's fitted ``alpha`` as a
    dot on its curve (the grid search of paper Sec. 3.3; Fig. 4D reports the value at that dot,
    averaged over participants), chance ``1/3`` dashed. The x axis is logarithmic.

    Args:
      alphas: ``(A,)`` positive grid.
      curves: ``{participant: (A,) objective over the grid}`` (e.g. mean likelihood).
      path: write the PNG here when given.
      fitted: optional ``{participant: alpha}``; the value must lie on the grid's range.
      chance: horizontal reference line (``None`` for none; e.g. for log-likelihood curves pass
        ``log(1/3)``).
      ylabel, title: labels.

    Returns:
      the matplotlib ``Figure``.
    """
    a = np.asarray(alphas, np.float64)
    if a.ndim != 1 or len(a) < 2 or np.any(a <= 0):
        raise ValueError(f"alphas must be a 1-D grid of >= 2 positive values, got shape {a.shape}")
    if not curves:
        raise ValueError("curves is empty")
    ys = {}
    for p, c in curves.items():
        c = np.asarray(c, np.float64)
        if c.shape != a.shape:
            raise ValueError(f"curve of participant {p!r} has shape {c.shape}, alphas has {a.shape}")
        ys[p] = c
    fig, (ax,) = _figure(5.0, 3.4)
    for p, c in ys.items():
        ax.plot(a, c, lw=0.7, alpha=0.5, color=_COLORS[0])
        if fitted is not None and p in fitted:
            ax.plot([fitted[p]], [np.interp(np.log(fitted[p]), np.log(a), c)], "o", ms=3, color=_COLORS[1])
    ax.plot(
        a,
        np.mean(np.stack(list(ys.values())), axis=0),
        lw=2,
        color="black",
        label=f"mean over {len(ys)} participant{'s' if len(ys) != 1 else ''}",
    )
    if fitted:
        ax.plot([], [], "o", ms=3, color=_COLORS[1], label=r"fitted $\alpha$")
    if chance is not None:
        ax.axhline(chance, ls="--", color="grey", lw=1, label="chance")
    ax.set_xscale("log")
    ax.set_xlabel(r"$\alpha$ ($\tau = \alpha \cdot rt$)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    if path is not None:
        save_figure(fig, path)
    return fig


_MODEL_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive")


def plot_oddball(summary: Mapping, path, title: str | None = None) -> Path:
    """Write paper Fig. 2B + 2C for ``summary`` (:func:`~gensim_jax.evaluation.oddball.oddball_summary`).

    Left: mean error rate per shape (x: most to least regular, as Fig. 2B) for every model with
    s.e.m. error bars over runs, the pooled human and the baboon rates (dashed), and the chance
    error rate 5/6 (red). The legend gives each model's Spearman rho(9) with regularity. Right:
    mean over runs of the correlation with human and with baboon error rates, s.e.m. bars and each
    run's value as a dot (Fig. 2C). Returns the path.
    """
    require("matplotlib", "eval")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    shapes = list(summary["shapes"])
    models = summary["models"]
    x = np.arange(len(shapes))
    fig = Figure(figsize=(13, 4.6))
    FigureCanvasAgg(fig)
    ax, bx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2.3, 1]})
    for k, (name, m) in enumerate(models.items()):
        reg = m.get("regularity")
        label = f"{name} (rho(9)={reg['rho']:.2f}, p={reg['p']:.3g})" if reg else f"{name} (rho undefined)"
        ax.errorbar(
            x,
            m["error_rate_mean"],
            yerr=m["error_rate_sem"],
            marker="o",
            ms=4,
            capsize=2,
            lw=1.5,
            color=_MODEL_COLOURS[k % len(_MODEL_COLOURS)],
            label=label,
        )
    ax.plot(x, summary["human_error_rate"], "k--", marker="s", ms=3, lw=1, label="humans (pooled)")
    ax.plot(x, summary["baboon_error_rate"], color="grey", ls=":", marker="^", ms=3, lw=1, label="baboons")
    ax.axhline(summary["chance_error_rate"], color="red", lw=1, label="chance (5/6)")
    ax.set_xticks(x, shapes, rotation=40, ha="right")
    ax.set_ylim(0, 1)
    ax.set(
        ylabel="error rate",
        xlabel="reference shape (most to least regular)",
        title=title or "Oddball error rate per quadrilateral (Fig. 2B)",
    )
    ax.legend(fontsize=7, loc="upper left")

    names = list(models)
    width = 0.38
    for j, (who, colour) in enumerate((("human", "black"), ("baboon", "grey"))):
        means = [models[n][f"r_{who}_mean"] for n in names]
        sems = [models[n][f"r_{who}_sem"] for n in names]
        pos = np.arange(len(names)) + (j - 0.5) * width
        bx.bar(
            pos,
            [0.0 if v is None else v for v in means],
            width,
            yerr=sems,
            color=colour,
            alpha=0.55,
            capsize=3,
            label=who,
        )
        for p_, n in zip(pos, names):
            vals = [v for v in models[n][f"r_{who}"] if v is not None]
            bx.plot(np.full(len(vals), p_), vals, ".", color=colour, ms=4)
    bx.axhline(0, color="k", lw=0.6)
    bx.set_xticks(np.arange(len(names)), names, rotation=20)
    bx.set_ylim(-1, 1)
    bx.set(ylabel="correlation with error rates", title="Human vs baboon likeness (Fig. 2C)")
    bx.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def plot_hierarchy_summary(results: Mapping, path) -> Path:
    """A hierarchy run's figure: Fig. 4B style, the aggregate ``sum_l log(a_l / c_l)`` per row (bars, std over
    runs), and Fig. S3, the accuracy per tree level; ``results`` as
    :mod:`gensim_jax.experiments.imagenet_hierarchy` writes them (``summary``, ``config``)."""
    summary = results["summary"]
    names = list(summary)
    fig, ax = _figure(12, 4.2, ncols=2)
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


def plot_geoclidean_summary(results: Mapping, path) -> Path:
    """A Geoclidean run's figure: close/far accuracy and AUC of every row on the held-out concepts (our
    sampler's images; std over runs) and each objective's training loss; ``results`` as
    :mod:`gensim_jax.experiments.geoclidean` writes them."""
    from gensim_jax.evaluation.geoclidean_evaluator import METRICS

    key = next(k for k in results["summary"] if k in ("sampler", "sampler/per_concept"))
    summary = results["summary"][key]
    names = list(summary)
    training = results["training"]
    fig, ax = _figure(6 + 3.2 * len(training), 4, ncols=1 + len(training))
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


def plot_gaussian_mixture(arrays: Mapping, history, num_bins: int, path) -> Path:
    """Fig. S1 of a Gaussian-mixture run: the points coloured by their 1-D embedding, the embedding per
    generating component, and ``s_gen`` (Eq. H2) against the embedding distance per quantile bin with the
    training loss inset; ``arrays`` from :func:`gensim_jax.experiments.gaussian_mixture.evaluate`."""
    x, comp, emb = arrays["x"], arrays["component"], arrays["embedding"]
    dist, s_gen = arrays["distance"], arrays["s_gen"]
    fig, ax = _figure(13, 3.8, ncols=3)
    sc = ax[0].scatter(x[:, 0], x[:, 1], c=emb[:, 0], s=4, cmap="coolwarm")
    fig.colorbar(sc, ax=ax[0], label="embedding phi(x)")
    ax[0].set(title="Points coloured by their learned 1-D embedding", xlabel="x1", ylabel="x2")
    for c, colour in zip(np.unique(comp), ("tab:blue", "tab:orange")):
        ax[1].hist(emb[comp == c, 0], bins=60, alpha=0.6, color=colour, label=f"component {c}")
    ax[1].set(title="Embedding per generating component", xlabel="phi(x)")
    ax[1].legend()
    order = np.argsort(dist)
    bins = np.array_split(order, num_bins)
    ax[2].plot([dist[b].mean() for b in bins], [s_gen[b].mean() for b in bins], ".", ms=3)
    ax[2].set(
        title="s_gen (Eq. H2) vs embedding distance", xlabel="|phi(x1) - phi(x2)|", ylabel="mean s_gen per quantile bin"
    )
    inset = ax[2].inset_axes([0.55, 0.55, 0.4, 0.4])
    inset.plot(history)
    inset.set_title("train loss", fontsize=8)
    inset.tick_params(labelsize=6)
    return Path(save_figure(fig, path, dpi=110))


def plot_accuracy_vs_lambda(
    rows: Sequence[Mapping], path, *, title: str = "", confidence: float = 0.95, chance: float | None = 0.1
) -> None:
    """Plot ID and OOD accuracy (mean line, CI band) against lambda; symmetric-log x axis.

    The axis is linear on ``[0, 1]`` and logarithmic beyond, so the thesis's grid
    ``0, 0.25, 0.5, 0.75, 10, 100`` is legible. Writes ``path`` (PNG by extension).
    """
    if not rows:
        raise ValueError("rows is empty")
    fig, (ax,) = _figure(6.4, 4.2)
    import matplotlib.ticker

    lam = np.array([r["lambda"] for r in rows], float)
    for m, label, colour in (
        ("id_accuracy", "in distribution (own pool)", "tab:blue"),
        ("ood_accuracy", "out of distribution (swapped pools)", "tab:red"),
    ):
        mean = np.array([r[f"{m}_mean"] for r in rows], float)
        ax.plot(lam, mean, "o-", color=colour, label=label)
        if all(r[f"{m}_low"] is not None for r in rows):
            lo = np.array([r[f"{m}_low"] for r in rows], float)
            hi = np.array([r[f"{m}_high"] for r in rows], float)
            ax.fill_between(
                lam,
                np.clip(lo, 0, 1),
                np.clip(hi, 0, 1),
                color=colour,
                alpha=0.2,
                label=f"{100 * confidence:g}% CI over seeds",
            )
    if chance is not None:
        ax.axhline(chance, color="grey", lw=0.8, ls="--", label="chance")
    ax.set_xscale("symlog", linthresh=1.0, linscale=2.0)
    ax.set_xlim(-0.05 * max(1.0, lam.max()) ** 0.1, max(1.0, lam.max()) * 1.4)
    ax.set_xticks(lam, [f"{v:g}" for v in lam])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_ylim(0, 1.02)
    ax.set(xlabel="lambda (weight of the class-centre loss, Eq. 12)", ylabel="test accuracy")
    ax.set_title(title or "Spurious digits: accuracy against lambda", fontsize=9)
    ax.legend(fontsize=8, loc="best")
    save_figure(fig, path, dpi=110)
