"""Fast anti-aliased rendering of Geoclidean scenes: black strokes on white, numpy only.

Framing follows the official benchmark images (Hsu et al. 2022), which matplotlib drew on a
5 x 5 inch figure at 72 dpi (360 x 360 pixels) with the default axes box (left 0.125, right 0.9,
bottom 0.11, top 0.88 of the figure), ``axis('equal')`` autoscaling with 5 % data margins, and
3-point lines (3 px at 360 px) with projecting caps. :func:`view_transform` reproduces that
mapping for any output size: the bounding box of the visible objects, widened by 5 % on each
side, is scaled uniformly to fit the axes box and centred in it; the stroke width scales with the
image (``3 * size / 360`` px by default).

Each stroke is rasterised from its exact distance field, evaluated only inside the stroke's
pixel bounding box: a pixel centre at perpendicular distance ``d`` from the centre line gets
coverage ``clip(w/2 + 1/2 - d, 0, 1)`` (a one-pixel box-filter ramp), and for segments the same
ramp is applied along the segment (projecting caps extend ``w/2`` beyond each end; ``cap="butt"``
stops at the ends). Coverage of overlapping strokes combines with ``max``. Summed over pixels, a
segment's coverage equals its analytic area ``(L + 2c) * w`` (``c`` = cap extension), which the
tests check.
"""

from __future__ import annotations

import math

import numpy as np

from gensim_jax.stimuli.geoclidean.sampler import Scene

__all__ = [
    "MIN_SIZE",
    "REFERENCE_SIZE",
    "REFERENCE_LINE_WIDTH",
    "AXES_BOX",
    "DATA_MARGIN",
    "view_transform",
    "render_ink",
    "render",
]

#: Smallest accepted output size in pixels.
MIN_SIZE = 16
#: Size of the official benchmark images.
REFERENCE_SIZE = 360
#: Stroke width of the official images at :data:`REFERENCE_SIZE` (3 pt at 72 dpi).
REFERENCE_LINE_WIDTH = 3.0
#: matplotlib's default axes box (left, bottom, right, top) as fractions of the figure.
AXES_BOX = (0.125, 0.11, 0.9, 0.88)
#: matplotlib's default autoscale margin (fraction of the data range on each side).
DATA_MARGIN = 0.05


def _check_size(size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(f"size must be an int, got {type(size).__name__}")
    if size < MIN_SIZE:
        raise ValueError(f"size must be >= MIN_SIZE={MIN_SIZE} pixels, got {size}")
    return int(size)


def view_transform(bbox: tuple[float, float, float, float], size: int) -> tuple[float, float, float]:
    """Map canvas coordinates to pixels as the benchmark's matplotlib figures do.

    ``px = ox + s * x`` and ``py = oy - s * y`` (pixel rows grow downward; pixel ``(i, j)`` has
    its centre at ``(j + 0.5, i + 0.5)``).

    Args:
      bbox: ``(xmin, ymin, xmax, ymax)`` of the visible drawing (canvas units).
      size: output side in pixels.

    Returns:
      ``(s, ox, oy)``.

    Example:
      >>> s, ox, oy = view_transform((0.0, 0.0, 1.0, 1.0), 360)
      >>> round(s, 3), round(ox + s * 0.5, 3), round(oy - s * 0.5, 3)
      (252.0, 184.5, 181.8)
    """
    size = _check_size(size)
    xmin, ymin, xmax, ymax = (float(v) for v in bbox)
    wx, wy = (xmax - xmin) * (1 + 2 * DATA_MARGIN), (ymax - ymin) * (1 + 2 * DATA_MARGIN)
    left, bottom, right, top = AXES_BOX
    bw, bh = (right - left) * size, (top - bottom) * size
    cands = [bw / wx if wx > 0 else math.inf, bh / wy if wy > 0 else math.inf]
    s = min(cands)
    if not math.isfinite(s):
        raise ValueError(f"bbox {bbox} is a single point; nothing to frame")
    bx, by = (left + right) / 2 * size, (1 - (bottom + top) / 2) * size
    cx, cy = (xmin + xmax) / 2, (ymin + ymax) / 2
    return s, bx - s * cx, by + s * cy


def _stamp_segment(ink, x0, y0, x1, y1, w, c):
    h, wd = ink.shape
    L = math.hypot(x1 - x0, y1 - y0)
    if L == 0.0:
        return
    ux, uy = (x1 - x0) / L, (y1 - y0) / L
    pad = w / 2 + c + 1.0
    i0 = max(int(math.floor(min(y0, y1) - pad)), 0)
    i1 = min(int(math.ceil(max(y0, y1) + pad)), h)
    j0 = max(int(math.floor(min(x0, x1) - pad)), 0)
    j1 = min(int(math.ceil(max(x0, x1) + pad)), wd)
    if i0 >= i1 or j0 >= j1:
        return
    xs = (np.arange(j0, j1, dtype=np.float32) + np.float32(0.5 - x0))[None, :]
    ys = (np.arange(i0, i1, dtype=np.float32) + np.float32(0.5 - y0))[:, None]
    along = xs * np.float32(ux) + ys * np.float32(uy)
    cross = xs * np.float32(-uy) + ys * np.float32(ux)
    hw = np.float32(w / 2 + 0.5)
    cov = np.clip(hw - np.abs(cross), 0.0, 1.0)
    half = np.float32(L / 2)
    cov *= np.clip(np.float32(L / 2 + c + 0.5) - np.abs(along - half), 0.0, 1.0)
    region = ink[i0:i1, j0:j1]
    np.maximum(region, cov, out=region)


def _stamp_circle(ink, cx, cy, r, w):
    h, wd = ink.shape
    pad = r + w / 2 + 1.0
    i0, i1 = max(int(math.floor(cy - pad)), 0), min(int(math.ceil(cy + pad)), h)
    j0, j1 = max(int(math.floor(cx - pad)), 0), min(int(math.ceil(cx + pad)), wd)
    if i0 >= i1 or j0 >= j1:
        return
    xs = (np.arange(j0, j1, dtype=np.float32) + np.float32(0.5 - cx))[None, :]
    ys = (np.arange(i0, i1, dtype=np.float32) + np.float32(0.5 - cy))[:, None]
    rho = np.sqrt(xs * xs + ys * ys)
    rho -= np.float32(r)
    np.abs(rho, out=rho)
    cov = np.clip(np.float32(w / 2 + 0.5) - rho, 0.0, 1.0)
    region = ink[i0:i1, j0:j1]
    np.maximum(region, cov, out=region)


def render_ink(
    scene: Scene | None = None,
    size: int = 224,
    *,
    line_width: float | None = None,
    cap: str = "projecting",
    segments_px: np.ndarray | None = None,
    circles_px: np.ndarray | None = None,
) -> np.ndarray:
    """Ink coverage in ``[0, 1]`` of a scene (1 = black), framed like the benchmark images.

    Args:
      scene: a sampled :class:`~gensim_jax.stimuli.geoclidean.sampler.Scene`; or ``None`` with
        ``segments_px`` / ``circles_px`` already in pixel coordinates (no framing).
      size: output side in pixels (>= :data:`MIN_SIZE`).
      line_width: stroke width in pixels (default ``3 * size / 360``, the benchmark's).
      cap: ``"projecting"`` (matplotlib's default for lines, extends ``w/2`` past the ends) or
        ``"butt"``.
      segments_px: ``(S, 4)`` segments in pixel coordinates (x right, y down), with ``scene=None``.
      circles_px: ``(C, 3)`` circles ``[cx, cy, r]`` in pixels, with ``scene=None``.

    Returns:
      float32 ``(size, size)`` coverage.

    Example:
      >>> import numpy as np
      >>> ink = render_ink(None, 64, line_width=2.0, cap="butt",
      ...                  segments_px=np.array([[10.0, 32.0, 50.0, 32.0]]))
      >>> round(float(ink.sum()), 3)  # length 40 x width 2
      80.0
    """
    size = _check_size(size)
    if cap not in ("projecting", "butt"):
        raise ValueError(f"cap must be 'projecting' or 'butt', got {cap!r}")
    w = REFERENCE_LINE_WIDTH * size / REFERENCE_SIZE if line_width is None else float(line_width)
    if not w > 0:
        raise ValueError(f"line_width must be > 0, got {line_width}")
    c = w / 2 if cap == "projecting" else 0.0
    if scene is not None:
        s, ox, oy = view_transform(scene.extent, size)
        segs = np.asarray(scene.segments, np.float64).reshape(-1, 4)
        circs = np.asarray(scene.circles, np.float64).reshape(-1, 3)
        segs = np.stack([ox + s * segs[:, 0], oy - s * segs[:, 1], ox + s * segs[:, 2], oy - s * segs[:, 3]], -1)
        circs = np.stack([ox + s * circs[:, 0], oy - s * circs[:, 1], s * circs[:, 2]], -1)
    else:
        segs = np.zeros((0, 4)) if segments_px is None else np.asarray(segments_px, np.float64)
        circs = np.zeros((0, 3)) if circles_px is None else np.asarray(circles_px, np.float64)
        if segs.ndim != 2 or segs.shape[1] != 4:
            raise ValueError(f"segments_px must have shape (S, 4), got {segs.shape}")
        if circs.ndim != 2 or circs.shape[1] != 3:
            raise ValueError(f"circles_px must have shape (C, 3), got {circs.shape}")
    if not (np.all(np.isfinite(segs)) and np.all(np.isfinite(circs))):
        raise ValueError("scene coordinates must be finite")
    ink = np.zeros((size, size), np.float32)
    for x0, y0, x1, y1 in segs.tolist():
        _stamp_segment(ink, x0, y0, x1, y1, w, c)
    for cx, cy, r in circs.tolist():
        _stamp_circle(ink, cx, cy, r, w)
    return ink


def render(scene: Scene, size: int = 224, *, line_width: float | None = None, cap: str = "projecting") -> np.ndarray:
    """Grayscale image of a scene: black strokes on white, uint8 ``(size, size)``.

    ``255 * (1 - ink)`` of :func:`render_ink`, rounded; framing and stroke width as in the
    benchmark images (use ``size=360`` to compare with them, 224 for training).

    Args:
      scene: a :class:`~gensim_jax.stimuli.geoclidean.sampler.Scene`.
      size: output side in pixels (>= :data:`MIN_SIZE`).
      line_width: stroke width in pixels (default ``3 * size / 360``).
      cap: ``"projecting"`` or ``"butt"``.

    Returns:
      uint8 ``(size, size)``, 255 = white.

    Example:
      >>> import numpy as np
      >>> from gensim_jax.stimuli.geoclidean.sampler import sample_scene
      >>> img = render(sample_scene("l1 = line(p1(), p2())", np.random.default_rng(0)), 64)
      >>> img.shape, img.dtype, int(img.max())
      ((64, 64), dtype('uint8'), 255)
    """
    ink = render_ink(scene, size, line_width=line_width, cap=cap)
    return (255.0 - 255.0 * ink + 0.5).astype(np.uint8)
