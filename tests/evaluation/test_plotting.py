"""The shared figure helpers: no pyplot state, PNGs written where asked, per-run values checked."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from PIL import Image

from gensim_jax.evaluation import plotting


def test_figure_leaves_pyplot_alone_and_save_figure_writes_a_png(tmp_path):
    fig, axes = plotting.figure(3.0, 2.0, ncols=2)
    assert len(axes) == 2 and len(fig.axes) == 2
    axes[0].plot([0, 1], [1, 0])
    path = plotting.save_figure(fig, tmp_path / "sub" / "f.png", dpi=50)
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size == (150, 100)  # 3 x 2 inches at 50 dpi
    assert "matplotlib.pyplot" not in sys.modules or sys.modules["matplotlib.pyplot"].get_fignums() == []


def test_figures_of_the_protocols_leave_pyplot_alone():
    from gensim_jax.evaluation.odd_one_out import plot_odd_one_out

    plot_odd_one_out([0.1, 1.0], {"p": [0.4, 0.35]})
    assert "matplotlib.pyplot" not in sys.modules or sys.modules["matplotlib.pyplot"].get_fignums() == []


def test_per_run_values():
    np.testing.assert_array_equal(plotting.per_run_values(0.5, "x"), [0.5])
    for bad in ([], [[1.0, 2.0]], [1.0, np.nan]):
        with pytest.raises(ValueError, match="runs\\[0\\] must be a non-empty 1-D list"):
            plotting.per_run_values(bad, "runs[0]")


def test_wrap_breaks_at_the_width():
    text = "Geoclidean few-shot, 37 concepts, per_concept threshold"
    lines = plotting.wrap(text, 20).splitlines()
    assert all(len(ln) <= 20 for ln in lines) and " ".join(lines) == text
