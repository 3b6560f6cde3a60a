"""Drawing helpers the protocols' figures share (matplotlib's object-oriented API on the Agg canvas).

Each protocol draws its own figure in its own module (:func:`gensim_jax.evaluation.oddball.plot_oddball`,
:func:`gensim_jax.evaluation.geoclidean.plot_geoclidean`, ...); this module holds only what several of
them use: a figure without pyplot state (:func:`figure`), writing it as PNG (:func:`save_figure`),
the colour cycle and the check of per-run values. matplotlib is imported when a figure is made,
never at import time.
"""

from __future__ import annotations

import os
import textwrap

import numpy as np

from gensim_jax._extras import require

__all__ = ["COLORS", "HUMAN_COLOR", "figure", "per_run_values", "save_figure", "wrap"]

#: Colour of the i-th model of a figure (cycled).
COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C")
#: Colour of the human reference lines.
HUMAN_COLOR = "#2CA02C"


def figure(width: float, height: float, ncols: int = 1):
    """``(fig, axes)``: a constrained-layout ``matplotlib.figure.Figure`` on an Agg canvas with ``ncols`` axes
    in one row (no pyplot state, no display)."""
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


def per_run_values(x, name: str) -> np.ndarray:
    """``x`` as a non-empty 1-D float64 array of finite per-run values (``ValueError`` naming ``name`` otherwise)."""
    v = np.atleast_1d(np.asarray(x, np.float64))
    if v.ndim != 1 or len(v) == 0 or not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be a non-empty 1-D list of finite per-run values, got shape {v.shape}")
    return v


def wrap(text: str, width: int = 42) -> str:
    """``text`` broken into lines of at most ``width`` characters (axes titles)."""
    return "\n".join(textwrap.wrap(text, width))
