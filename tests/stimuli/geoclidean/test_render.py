"""Tests for the Geoclidean renderer: analytic stroke areas, framing against matplotlib (the
benchmark's renderer), pixel statistics against the official benchmark images, every benchmark
program renders, and size validation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_FAMILY, CONCEPT_NAMES, concept_program
from gensim_jax.stimuli.geoclidean.grammar import parse_program
from gensim_jax.stimuli.geoclidean.render import MIN_SIZE, render, render_ink, view_transform
from gensim_jax.stimuli.geoclidean.sampler import sample_scene

GEOCLIDEAN = Path(__file__).resolve().parents[3] / ".." / "shared" / "reference" / "geoclidean"
needs_ref = pytest.mark.skipif(not GEOCLIDEAN.is_dir(), reason="shared/reference/geoclidean not present")


@pytest.mark.parametrize("w", [1.0, 1.87, 3.0, 5.5])
def test_segment_ink_matches_analytic_area(w):
    rng = np.random.default_rng(int(w * 100))
    for _ in range(10):
        cx, cy = rng.uniform(50, 78, 2)  # the segment stays inside the 128 x 128 image
        th = rng.uniform(0, 2 * np.pi)
        L = rng.uniform(20, 60)
        dx, dy = L / 2 * np.cos(th), L / 2 * np.sin(th)
        seg = np.array([[cx - dx, cy - dy, cx + dx, cy + dy]])
        butt = render_ink(None, 128, line_width=w, cap="butt", segments_px=seg).sum()
        proj = render_ink(None, 128, line_width=w, cap="projecting", segments_px=seg).sum()
        assert abs(butt - L * w) <= 0.02 * L * w  # length x width
        assert abs(proj - (L + w) * w) <= 0.02 * (L + w) * w  # caps add w/2 at both ends


@pytest.mark.parametrize("w", [1.5, 3.0])
def test_circle_ink_matches_annulus_area(w):
    for r in (8.3, 20.0, 41.7):
        ink = render_ink(None, 128, line_width=w, circles_px=np.array([[64.2, 63.7, r]]))
        area = math.pi * ((r + w / 2) ** 2 - (r - w / 2) ** 2)  # = 2 pi r w
        assert abs(ink.sum() - area) <= 0.02 * area


def test_ink_is_supported_on_the_stroke_only():
    # pixels farther than w/2 + 1 from the segment carry no ink; pixels on the centre line are
    # fully inked (explicit loop over pixels, independent of the vectorised code)
    w = 3.0
    seg = (10.0, 20.0, 50.0, 41.0)
    ink = render_ink(None, 64, line_width=w, cap="butt", segments_px=np.array([seg]))
    x0, y0, x1, y1 = seg
    L2 = (x1 - x0) ** 2 + (y1 - y0) ** 2
    for i in range(64):
        for j in range(64):
            px, py = j + 0.5, i + 0.5
            t = max(0.0, min(1.0, ((px - x0) * (x1 - x0) + (py - y0) * (y1 - y0)) / L2))
            d = math.hypot(px - x0 - t * (x1 - x0), py - y0 - t * (y1 - y0))
            if d > w / 2 + 1.0:
                assert ink[i, j] == 0.0
            if d < w / 2 - 0.5 and 0.05 < t < 0.95:
                assert ink[i, j] == 1.0
    assert ink.min() >= 0.0 and ink.max() <= 1.0


def matplotlib_ink(scene, size):
    """The benchmark's own way of drawing: matplotlib axis('equal') with 3-pt lines."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(size / 72, size / 72), dpi=72)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot(111)
    ax.axis("equal")
    ax.axis("off")
    th = np.linspace(0, 2 * np.pi, 257)
    for x0, y0, x1, y1 in scene.segments:
        ax.plot([x0, x1], [y0, y1], color="black", linewidth=3 * size / 360)
    for cx, cy, r in scene.circles:
        ax.plot(cx + r * np.cos(th), cy + r * np.sin(th), color="black", linewidth=3 * size / 360)
    canvas.draw()
    return 1.0 - np.asarray(canvas.buffer_rgba())[..., :3].mean(-1) / 255.0


@pytest.mark.parametrize("concept", ["square", "radii", "llt", "cccl"])
def test_framing_matches_matplotlib(concept):
    scene = sample_scene(concept_program(concept), np.random.default_rng(3))
    ours = render_ink(scene, 360)
    ref = matplotlib_ink(scene, 360)
    for a in (ours, ref):
        assert a.shape == (360, 360)
    # ink mass, centroid and bounding box agree to about a pixel
    assert abs(ours.sum() - ref.sum()) <= 0.06 * ref.sum()
    ii, jj = np.mgrid[:360, :360]
    for g in (ii, jj):
        assert abs((ours * g).sum() / ours.sum() - (ref * g).sum() / ref.sum()) < 1.0
    for a, b in ((ours, ref),):
        ya, xa = np.nonzero(a > 0.5)
        yb, xb = np.nonzero(b > 0.5)
        for u, v in ((ya.min(), yb.min()), (ya.max(), yb.max()), (xa.min(), xb.min()), (xa.max(), xb.max())):
            assert abs(int(u) - int(v)) <= 2


def test_view_transform_fits_box_with_margins():
    # a 2 x 1 drawing at 360 px: width is the binding side, 279 px box / 1.1
    s, ox, oy = view_transform((1.0, 3.0, 3.0, 4.0), 360)
    assert math.isclose(s * 2.0 * 1.1, 0.775 * 360)
    assert math.isclose(ox + s * 2.0, 0.5125 * 360)  # centre x of the axes box
    assert math.isclose(oy - s * 3.5, (1 - 0.495) * 360)  # centre y (image rows grow down)


def load_official(path):
    from PIL import Image

    a = np.asarray(Image.open(path).convert("RGBA"), dtype=np.float64) / 255.0
    return a[..., 3] * (1.0 - a[..., :3].mean(-1))


@needs_ref
@pytest.mark.slow
def test_pixel_statistics_match_official_images():
    ours, theirs = [], []
    for cid, name in enumerate(CONCEPT_NAMES):
        d = GEOCLIDEAN / CONCEPT_FAMILY[name] / f"concept_{name}"
        theirs += [load_official(p) for p in sorted(d.glob("train/*.png"))[:3]]
        prog = concept_program(name)
        ours += [render_ink(sample_scene(prog, np.random.default_rng([cid, k])), 360) for k in range(4)]
    ink_o = np.mean([a.mean() for a in ours])
    ink_t = np.mean([a.mean() for a in theirs])
    assert abs(ink_o - ink_t) <= 0.1 * ink_t

    def extent(a):
        ys, xs = np.nonzero(a > 0.5)
        return max(xs.max() - xs.min(), ys.max() - ys.min())

    assert abs(np.median([extent(a) for a in ours]) - np.median([extent(a) for a in theirs])) <= 4


@needs_ref
def test_every_benchmark_program_renders():
    for name in CONCEPT_NAMES:
        d = GEOCLIDEAN / CONCEPT_FAMILY[name] / f"concept_{name}"
        for f in ("concept.txt", "close_concept.txt", "far_concept.txt"):
            scene = sample_scene(
                parse_program((d / f).read_text()), np.random.default_rng(len(name)), name=f"{name}/{f}"
            )
            img = render(scene, 64)
            assert img.shape == (64, 64) and img.dtype == np.uint8
            assert img.min() < 128 and img.max() == 255


def test_render_is_white_background_and_scales_line_width():
    scene = sample_scene(concept_program("segment"), np.random.default_rng(1))
    small, big = render_ink(scene, 224), render_ink(scene, 448)
    # the same drawing at twice the size has 4x the ink (lengths and widths both double)
    assert abs(big.sum() / small.sum() - 4.0) < 0.1
    img = render(scene, 224)
    assert (img[0] == 255).all() and (img[:, 0] == 255).all()
    np.testing.assert_array_equal(img, np.round(255 * (1 - small)).astype(np.uint8))


def test_size_validation():
    scene = sample_scene(concept_program("angle"), np.random.default_rng(0))
    with pytest.raises(ValueError, match=f"MIN_SIZE={MIN_SIZE}"):
        render(scene, MIN_SIZE - 1)
    with pytest.raises(TypeError, match="size must be an int"):
        render(scene, 224.0)
    with pytest.raises(ValueError, match="line_width"):
        render(scene, 64, line_width=0.0)
    with pytest.raises(ValueError, match="cap"):
        render(scene, 64, cap="round")
    with pytest.raises(ValueError, match=r"shape \(S, 4\)"):
        render_ink(None, 64, segments_px=np.zeros((2, 3)))
