"""Figures: the drawn bars/lines carry the numbers given (read back from the matplotlib objects), PNGs open."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from gensim_jax.evaluation import figures


def _png_ok(path):
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] > 0 and im.size[1] > 0


def test_mean_sem_by_hand():
    v = [0.2, 0.5, 0.9]
    m = sum(v) / 3
    sem = math.sqrt(sum((x - m) ** 2 for x in v) / 2) / math.sqrt(3)
    got = figures.mean_sem(v)
    assert float(got[0]) == pytest.approx(m) and float(got[1]) == pytest.approx(sem)
    assert figures.mean_sem([[1.0, 2.0]])[1].tolist() == [0.0, 0.0]  # one run: no spread
    with pytest.raises(ValueError, match="at least one"):
        figures.mean_sem([])


def test_plot_geoclidean_bars_are_run_means(tmp_path):
    models = {"gensim": {"close": [0.7, 0.8], "far": [0.9, 0.95]}, "simclr": {"close": [0.6], "far": [0.65]}}
    fig = figures.plot_geoclidean(models, tmp_path / "g.png", human={"close": 0.85, "far": 0.97})
    ax = fig.axes[0]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    assert heights == sorted([0.75, 0.925, 0.6, 0.65])
    human = [c for c in ax.collections if c.get_label() == "human"]
    assert len(human) == 1
    ys = sorted(
        {round(float(s[0][1]), 6) for c in ax.collections if c.get_color()[0][1] > 0.5 for s in c.get_segments()}
    )
    assert 0.85 in ys
    _png_ok(tmp_path / "g.png")
    with pytest.raises(ValueError, match="far"):
        figures.plot_geoclidean({"m": {"close": [0.5]}})


def test_plot_hierarchy_lines_and_scores(tmp_path):
    acc = np.array([[0.9, 0.5, 0.2], [0.8, 0.4, 0.3]])
    chance = np.array([0.5, 1 / 6, 1 / 18])
    score = np.log(acc / chance).sum(1)
    fig = figures.plot_hierarchy(
        {"m": {"levels": [1, 2, 3], "accuracy": acc, "chance": chance, "score": score}}, tmp_path / "h.png"
    )
    ax_l, ax_s = fig.axes[:2]
    bars = [c for c in ax_l.containers if c.get_label() == "m"][0]  # ErrorbarContainer
    np.testing.assert_allclose(bars.lines[0].get_ydata(), [0.85, 0.45, 0.25])
    assert ax_s.patches[0].get_height() == pytest.approx(score.mean())
    _png_ok(tmp_path / "h.png")
    with pytest.raises(ValueError, match="accuracy must be"):
        figures.plot_hierarchy({"m": {"levels": [1, 2], "accuracy": acc, "chance": chance[:2], "score": score}})


def test_plot_odd_one_out_mean_curve(tmp_path):
    a = np.logspace(-2, 1, 7)
    curves = {"p1": np.linspace(0.6, 0.34, 7), "p2": np.linspace(0.5, 0.33, 7)}
    fig = figures.plot_odd_one_out(a, curves, tmp_path / "o.png", fitted={"p1": a[0], "p2": a[0]})
    mean = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("mean over 2")][0]
    np.testing.assert_allclose(mean.get_ydata(), (curves["p1"] + curves["p2"]) / 2)
    assert fig.axes[0].get_xscale() == "log"
    _png_ok(tmp_path / "o.png")
    with pytest.raises(ValueError, match="shape"):
        figures.plot_odd_one_out(a, {"p": np.ones(3)})


def test_figures_leave_pyplot_alone():
    import sys

    figures.plot_odd_one_out([0.1, 1.0], {"p": [0.4, 0.35]})
    assert "matplotlib.pyplot" not in sys.modules or sys.modules["matplotlib.pyplot"].get_fignums() == []
