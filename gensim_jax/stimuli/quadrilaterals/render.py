"""Rendering quadrilaterals: an exact-area anti-aliased polygon rasteriser in numpy, and the stimuli.

:func:`rasterize_polygons` gives each pixel the area of the pixel square covered by the polygon
(exact, by clipping the polygon's edges to pixel rows and columns); :func:`render_quadrilaterals`
places shapes on the canvas as the human task did (rotation clockwise on screen, scaling, centred at
the vertex mean, :data:`CANVAS_UNITS` shape units across) and reproduces the authors' 224 x 224 PNGs.
"""

from __future__ import annotations

import numpy as np

from gensim_jax.stimuli.quadrilaterals.shapes import _as_quads, variant_vertices

__all__ = [
    "CANVAS_UNITS",
    "DEFAULT_IMAGE_SIZE",
    "MIN_IMAGE_SIZE",
    "rasterize_polygons",
    "render_quadrilaterals",
    "render_shape",
    "transform_vertices",
]

#: At scale 1 the square canvas spans this many shape units (224 / 3 px per unit at size 224).
CANVAS_UNITS = 3.0
DEFAULT_IMAGE_SIZE = 224
#: Smallest image side accepted by the renderers (below it the shapes are a few pixels wide).
MIN_IMAGE_SIZE = 16


# ----------------------------------------------------------------------------------------------
# Rendering
# ----------------------------------------------------------------------------------------------


def transform_vertices(vertices, rotation_deg=0.0, scale=1.0) -> np.ndarray:
    """Centre quadrilaterals at their vertex mean, rotate, then scale (the trials' variation).

    ``q = scale * R(rotation) (v - mean(v))`` with ``R`` the standard rotation matrix applied in
    the y-down shape coordinates, i.e. a positive angle turns the shape clockwise on screen.

    Args:
      vertices: ``(..., V, 2)`` polygons.
      rotation_deg: degrees, broadcastable to the batch shape ``vertices.shape[:-2]``.
      scale: > 0, broadcastable to the batch shape.

    Returns:
      ``(..., V, 2)`` float64 polygons centred at the origin.
    """
    v = np.asarray(vertices, dtype=np.float64)
    if v.ndim < 2 or v.shape[-1] != 2:
        raise ValueError(f"vertices must have shape (..., V, 2), got {v.shape}")
    theta = np.deg2rad(np.asarray(rotation_deg, dtype=np.float64))[..., None]
    s = np.asarray(scale, dtype=np.float64)[..., None]
    if np.any(~(s > 0)):
        raise ValueError("scale must be > 0 and finite")
    q = v - v.mean(axis=-2, keepdims=True)
    c, sn = np.cos(theta), np.sin(theta)
    x = s * (c * q[..., 0] - sn * q[..., 1])
    y = s * (sn * q[..., 0] + c * q[..., 1])
    return np.stack([x, y], axis=-1)


def _check_size(size, name: str = "size") -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {size!r}")
    if size < MIN_IMAGE_SIZE:
        raise ValueError(f"{name} must be >= MIN_IMAGE_SIZE={MIN_IMAGE_SIZE}, got {size}")
    return int(size)


_COVERAGE_EPS = 1e-9


def _split_segments(a: np.ndarray, b: np.ndarray, axis: int, limit: int):
    """Split segments ``a -> b`` (P, 2) where they cross the lines ``coord[axis] = k``, k in [0, limit].

    Returns the pieces' start and end points and, for every piece, the index of its segment.
    All done with ragged index arithmetic: no Python loop, no sort.
    """
    n = a.shape[0]
    c0, c1 = a[:, axis], b[:, axis]
    delta = c1 - c0
    first = np.maximum(np.floor(np.minimum(c0, c1)) + 1.0, 0.0)
    last = np.minimum(np.ceil(np.maximum(c0, c1)) - 1.0, float(limit))
    count = np.maximum(last - first + 1.0, 0.0).astype(np.int64)  # crossings strictly inside
    npts = count + 2
    seg = np.repeat(np.arange(n), npts)
    local = np.arange(seg.size) - (np.cumsum(npts) - npts)[seg]
    cnt = count[seg]
    # the j-th crossing met when travelling from a to b (j = local - 1)
    k = np.where(delta[seg] > 0, first[seg] + (local - 1), last[seg] - (local - 1))
    safe = np.where(delta == 0.0, 1.0, delta)  # count > 0 implies delta != 0
    t = (k - c0[seg]) / safe[seg]
    t = np.where(local == 0, 0.0, np.where(local == cnt + 1, 1.0, t))
    pts = a[seg] + t[:, None] * (b - a)[seg]
    inner = (local >= 1) & (local <= cnt)
    pts[inner, axis] = k[inner]  # exact grid coordinates at the crossings
    valid = (local <= cnt)[:-1]  # consecutive points of the same segment
    return pts[:-1][valid], pts[1:][valid], seg[:-1][valid]


def _rasterize_chunk(polygons: np.ndarray, height: int, width: int, out: np.ndarray) -> None:
    n, nv, _ = polygons.shape
    a = polygons.reshape(n * nv, 2)
    b = np.roll(polygons, -1, axis=1).reshape(n * nv, 2)
    poly = np.repeat(np.arange(n), nv)
    # 1) split the edges at the vertical grid lines; keep the pieces over canvas columns
    a, b, seg = _split_segments(a, b, 0, width)
    col = np.floor(0.5 * (a[:, 0] + b[:, 0])).astype(np.int64)
    keep = (col >= 0) & (col < width)
    a, b, col, poly = a[keep], b[keep], col[keep], poly[seg[keep]]
    # 2) split at the horizontal grid lines: every piece now lies in one pixel cell
    a, b, seg = _split_segments(a, b, 1, height)
    col, poly = col[seg], poly[seg]
    # A piece in cell (row, col) with horizontal extent dx covers, with sign, the part of its
    # cell below it, dx * (1 - frac), and the full width dx of every cell further down.
    # Pieces above / below the canvas are clamped onto its top / bottom border.
    ya = np.clip(a[:, 1], 0.0, height)
    yb = np.clip(b[:, 1], 0.0, height)
    my = 0.5 * (ya + yb)
    row = np.minimum(np.floor(my), height).astype(np.int64)
    frac = my - row
    dx = b[:, 0] - a[:, 0]
    out[...] = 0.0
    if row.size == 0:
        return
    r0, r1 = int(row.min()), int(row.max())  # bounding box of the chunk's pieces
    c0, c1 = int(col.min()), int(col.max())
    nr, nc = r1 - r0 + 2, c1 - c0 + 1
    idx = (poly * nr + (row - r0)) * nc + (col - c0)
    acc = (
        np.bincount(
            np.concatenate([idx, idx + nc]),
            np.concatenate([dx * (1.0 - frac), dx * frac]),
            minlength=n * nr * nc,
        )
        .astype(np.float64, copy=False)
        .reshape(n, nr, nc)
    )
    rows = min(r1 + 1, height) - r0
    for r in range(1, rows):  # cumulative sum down the columns (faster than np.cumsum here)
        np.add(acc[:, r], acc[:, r - 1], out=acc[:, r])
    cov = acc[:, :rows]
    np.abs(cov, out=cov)
    # drop the 1e-15 round-off left where the signed areas cancel: the background is exactly 0
    np.subtract(cov, _COVERAGE_EPS, out=cov)
    np.clip(cov, 0.0, 1.0, out=out[:, r0 : r0 + rows, c0 : c1 + 1])


def rasterize_polygons(polygons, height: int, width: int | None = None, chunk: int = 64) -> np.ndarray:
    """Exact-area anti-aliased rasterisation of filled polygons (white on black).

    Pixel ``(i, j)`` covers ``[j, j+1] x [i, i+1]`` in pixel coordinates (x right, y down) and gets
    the exact fraction of its area inside the polygon (box-filter anti-aliasing). Each edge is
    split at the integer grid lines so that every piece lies in one pixel; a piece adds its signed
    area (horizontal extent x fraction of the pixel below it) to an accumulation buffer, and a
    cumulative sum down each column turns the buffer into coverage (the signed-area method of
    font rasterisers; by Green's theorem it is the integral of the winding number over the pixel).
    The absolute winding is clipped to 1: exact for simple polygons of either
    orientation; for self-intersecting ones it is the non-zero rule, approximate on boundary
    pixels. Parts outside the canvas are clipped. Cost is O(perimeter) per polygon plus one pass
    over the image.

    Args:
      polygons: ``(N, V, 2)`` vertices in pixel coordinates, V >= 3.
      height: image height in pixels, >= :data:`MIN_IMAGE_SIZE`.
      width: image width (default ``height``).
      chunk: polygons rasterised per vectorised step (bounds the temporary memory).

    Returns:
      ``(N, height, width)`` float32 coverage in ``[0, 1]``.

    Example:
      >>> img = rasterize_polygons([[[2, 2], [18, 2], [18, 10], [2, 10]]], 20)
      >>> float(img.sum())
      128.0
    """
    p = np.asarray(polygons, dtype=np.float64)
    if p.ndim != 3 or p.shape[-1] != 2 or p.shape[1] < 3:
        raise ValueError(f"polygons must have shape (N, V>=3, 2), got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("polygons must be finite")
    height = _check_size(height, "height")
    width = height if width is None else _check_size(width, "width")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    out = np.empty((p.shape[0], height, width), dtype=np.float32)
    for start in range(0, p.shape[0], chunk):
        _rasterize_chunk(p[start : start + chunk], height, width, out[start : start + chunk])
    return out


def render_quadrilaterals(vertices, rotation_deg=0.0, scale=1.0, size: int = DEFAULT_IMAGE_SIZE) -> np.ndarray:
    """Render quadrilaterals as in the oddball task: filled white shape on black, anti-aliased.

    Each shape is centred on the canvas at its vertex mean, rotated and scaled
    (:func:`transform_vertices`), and drawn at ``size / CANVAS_UNITS`` pixels per shape unit.
    At ``size=224`` this reproduces the authors' reference PNGs (mean absolute pixel difference
    about 1e-4, see ``docs/stimuli_quadrilaterals.md``).

    Args:
      vertices: ``(N, 4, 2)`` (or ``(4, 2)``) shape-unit vertices, e.g. from
        :func:`variant_vertices`.
      rotation_deg: degrees (clockwise on screen), scalar or ``(N,)``.
      scale: scalar or ``(N,)``, > 0.
      size: image side in pixels, >= :data:`MIN_IMAGE_SIZE`.

    Returns:
      ``(N, size, size)`` (or ``(size, size)``) float32 images in ``[0, 1]``.

    Example:
      >>> from gensim_jax.stimuli.quadrilaterals import reference_vertices
      >>> img = render_quadrilaterals(reference_vertices("square"), 15.0, 1.0, size=64)
      >>> img.shape
      (64, 64)
    """
    size = _check_size(size)
    v = _as_quads(vertices)
    single = v.ndim == 2
    v = v.reshape(-1, 4, 2)
    n = v.shape[0]
    if np.ndim(rotation_deg) > 1 or np.ndim(scale) > 1:
        raise ValueError(
            f"rotation_deg {np.shape(rotation_deg)} and scale {np.shape(scale)} must be scalars or shape ({n},)"
        )
    try:
        rot = np.broadcast_to(np.asarray(rotation_deg, dtype=np.float64), (n,))
        sc = np.broadcast_to(np.asarray(scale, dtype=np.float64), (n,))
    except ValueError as err:
        raise ValueError(
            f"rotation_deg {np.shape(rotation_deg)} and scale {np.shape(scale)} must be scalars or shape ({n},)"
        ) from err
    if not np.all(np.isfinite(rot)):
        raise ValueError("rotation_deg must be finite")
    q = transform_vertices(v, rot, sc)
    px = q * (size / CANVAS_UNITS) + size / 2.0
    images = rasterize_polygons(px, size)
    return images[0] if single else images


def render_shape(
    shape: str | int,
    variant: str | int = 0,
    rotation_deg: float = 0.0,
    scale: float = 1.0,
    size: int = DEFAULT_IMAGE_SIZE,
) -> np.ndarray:
    """Render one reference shape or deviant (see :func:`render_quadrilaterals`).

    Returns:
      ``(size, size)`` float32 image in ``[0, 1]``.

    Example:
      >>> render_shape("kite", "deviant_2", rotation_deg=-25, scale=0.875, size=32).shape
      (32, 32)
    """
    return render_quadrilaterals(variant_vertices(shape, variant), rotation_deg, scale, size)
