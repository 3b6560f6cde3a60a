"""Figures in the style of the GenSim paper's, drawn from the protocols' result dicts.

* :func:`plot_oddball` -- Fig. 2B (error rate per quadrilateral, most to least regular, per model
  with s.e.m. over runs, human and baboon rates, the chance line) and Fig. 2C (per-run correlation
  of the model's error rates with human and with baboon rates), from
  :func:`gensim_jax.evaluation.oddball.oddball_summary`.

matplotlib is imported when a figure is drawn (Agg backend), never at import time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

__all__ = ["plot_oddball"]

_MODEL_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_oddball(summary: Mapping, path, title: str | None = None) -> Path:
    """Write paper Fig. 2B + 2C for ``summary`` (:func:`~gensim_jax.evaluation.oddball.oddball_summary`).

    Left: mean error rate per shape (x: most to least regular, as Fig. 2B) for every model with
    s.e.m. error bars over runs, the pooled human and the baboon rates (dashed), and the chance
    error rate 5/6 (red). The legend gives each model's Spearman rho(9) with regularity. Right:
    mean over runs of the correlation with human and with baboon error rates, s.e.m. bars and each
    run's value as a dot (Fig. 2C). Returns the path.
    """
    plt = _pyplot()
    shapes = list(summary["shapes"])
    models = summary["models"]
    x = np.arange(len(shapes))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 4.6), gridspec_kw={"width_ratios": [2.3, 1]})
    for k, (name, m) in enumerate(models.items()):
        reg = m.get("regularity")
        label = f"{name} (rho(9)={reg['rho']:.2f}, p={reg['p']:.3g})" if reg else f"{name} (rho undefined)"
        ax.errorbar(x, m["error_rate_mean"], yerr=m["error_rate_sem"], marker="o", ms=4, capsize=2, lw=1.5,
                    color=_MODEL_COLOURS[k % len(_MODEL_COLOURS)], label=label)
    ax.plot(x, summary["human_error_rate"], "k--", marker="s", ms=3, lw=1, label="humans (pooled)")
    ax.plot(x, summary["baboon_error_rate"], color="grey", ls=":", marker="^", ms=3, lw=1, label="baboons")
    ax.axhline(summary["chance_error_rate"], color="red", lw=1, label="chance (5/6)")
    ax.set_xticks(x, shapes, rotation=40, ha="right")
    ax.set_ylim(0, 1)
    ax.set(ylabel="error rate", xlabel="reference shape (most to least regular)",
           title=title or "Oddball error rate per quadrilateral (Fig. 2B)")
    ax.legend(fontsize=7, loc="upper left")

    names = list(models)
    width = 0.38
    for j, (who, colour) in enumerate((("human", "black"), ("baboon", "grey"))):
        means = [models[n][f"r_{who}_mean"] for n in names]
        sems = [models[n][f"r_{who}_sem"] for n in names]
        pos = np.arange(len(names)) + (j - 0.5) * width
        bx.bar(pos, [0.0 if v is None else v for v in means], width, yerr=sems, color=colour, alpha=0.55,
               capsize=3, label=who)
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
    plt.close(fig)
    return path
