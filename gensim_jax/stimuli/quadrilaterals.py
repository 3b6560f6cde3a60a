"""Quadrilateral stimuli of the geometric oddball task (Sable-Meyer et al., 2021).

This module rebuilds the stimuli of the GenSim paper's shape-regularity experiment (paper
Section 3.1 and Appendix L, which reuse the oddball task of Sable-Meyer et al., 2021):

* the 11 reference quadrilaterals (square ... random), with vertex coordinates shipped as package
  data in ``gensim_jax/assets/sable_meyer_2021_quadrilaterals.json`` (source: Sable-Meyer et al.,
  2021, PNAS 118(16) e2023123118, transcribed from the authors' materials), and their 4 deviants
  made by moving the vertex diagonal to the origin (:func:`deviant_vertices`);
* the 22 binary geometric features of Appendix L (4 right angles, 6 parallel pairs of sides,
  6 equal-length pairs, 6 equal-angle pairs) computed from the vertices
  (:func:`geometric_features`);
* an exact-area anti-aliased polygon rasteriser in pure numpy (:func:`rasterize_polygons`) and the
  stimulus renderer (:func:`render_quadrilaterals`) that reproduces the authors' 224 x 224 PNGs;
* oddball trials (5 references + 1 deviant, rotations/scalings of the human task) with a fixed
  seeded test set (:func:`oddball_test_set`), and a training sampler with continuous rotations and
  scalings that provably never produces a held-out test combination
  (:func:`sample_training_stimuli`, :func:`is_held_out`).

Coordinate conventions
    Shape coordinates are in "shape units" with x to the right and **y down**, exactly as the
    original stimuli draw them (so a plot with y up shows the shapes mirrored). A shape is
    rendered centred on the canvas at its vertex mean; at scale 1 the canvas spans
    :data:`CANVAS_UNITS` = 3 shape units (224 / 3 pixels per unit at the default size). A positive
    rotation angle turns the shape **clockwise on screen** (the standard rotation matrix applied in
    y-down coordinates); this is the convention of the reference files
    ``geom_<shape>_reference_<i>_<j>.png``, whose ``i = 1..6`` indexes the scalings
    :data:`TRIAL_SCALES` and ``j = 1..6`` the rotations :data:`TRIAL_ROTATIONS_DEG`.

Everything random takes an explicit ``numpy.random.Generator`` (or an int seed), so that every
trial set and training stream is reproducible.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import json
from typing import Iterator, Sequence

import numpy as np

from gensim_jax.stimuli._random import as_generator as _rng

__all__ = [
    "ANGLE_TOLERANCE_RAD",
    "CANVAS_UNITS",
    "DEFAULT_IMAGE_SIZE",
    "FEATURE_NAMES",
    "FEATURE_PAIRS",
    "LENGTH_TOLERANCE",
    "MIN_IMAGE_SIZE",
    "ROTATION_MARGIN_DEG",
    "SCALE_MARGIN",
    "SHAPE_NAMES",
    "TABLE1_COLUMNS",
    "TRIAL_ROTATIONS_DEG",
    "TRIAL_SCALES",
    "TRIAL_SCALES_FRENCH_ADULTS_1",
    "VARIANT_NAMES",
    "OddballTrials",
    "TrainingStimuli",
    "deviant_vertices",
    "geometric_features",
    "is_held_out",
    "oddball_test_set",
    "rasterize_polygons",
    "reference_vertices",
    "regularities",
    "render_quadrilaterals",
    "render_shape",
    "sample_oddball_trials",
    "sample_training_stimuli",
    "shape_index",
    "training_batches",
    "transform_vertices",
    "variant_index",
    "variant_vertices",
]

_ASSET_NAME = "sable_meyer_2021_quadrilaterals.json"


@functools.lru_cache(maxsize=1)
def _asset() -> dict:
    text = importlib.resources.files("gensim_jax").joinpath("assets", _ASSET_NAME).read_text()
    return json.loads(text)


#: The 11 reference shapes, ordered from most to least geometrically regular (paper Table 1).
SHAPE_NAMES: tuple[str, ...] = tuple(_asset()["shapes_most_to_least_regular"])
#: Variant 0 is the reference shape, variants 1..4 its deviants (shapes.json deviant rule).
VARIANT_NAMES: tuple[str, ...] = ("reference", "deviant_1", "deviant_2", "deviant_3", "deviant_4")
#: Columns of paper Table 1 (regularity counts per shape).
TABLE1_COLUMNS: tuple[str, ...] = tuple(_asset()["table1_columns"])
#: Rotations (degrees) of the six items of a trial in the human task.
TRIAL_ROTATIONS_DEG: tuple[float, ...] = tuple(float(r) for r in _asset()["trial_rotations_deg"])
#: Scalings of the six items of a trial in the human task (all populations but french_adults_1).
TRIAL_SCALES: tuple[float, ...] = tuple(float(s) for s in _asset()["trial_scales"])
#: Scalings used with the first group of French adults (0.75 ... 1.25).
TRIAL_SCALES_FRENCH_ADULTS_1: tuple[float, ...] = tuple(float(s) for s in _asset()["trial_scales_french_adults_1"])

#: At scale 1 the square canvas spans this many shape units (224 / 3 px per unit at size 224).
CANVAS_UNITS = 3.0
DEFAULT_IMAGE_SIZE = 224
#: Smallest image side accepted by the renderers (below it the shapes are a few pixels wide).
MIN_IMAGE_SIZE = 16

#: Angle tolerance of the right-angle, parallel and equal-angle features (0.072 rad = 4.125 deg).
#: Every value in (4.092, 4.163) degrees reproduces all 55 rows of the authors' feature table.
ANGLE_TOLERANCE_RAD = 0.072
#: Relative length tolerance of the equal-length features (max/min - 1 < 0.0125).
#: Every value in (0.0087, 0.0177) reproduces all 55 rows of the authors' feature table.
LENGTH_TOLERANCE = 0.0125

#: Pairs (i, j) of sides / angles compared by each group of 6 features, in table order.
FEATURE_PAIRS: tuple[tuple[int, int], ...] = ((1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2))
#: Names of the 22 binary features, in the column order of the authors' table.
FEATURE_NAMES: tuple[str, ...] = (
    tuple(f"right_angle_{i}" for i in range(4))
    + tuple(f"parallel_{i}" for i in range(6))
    + tuple(f"equal_length_{i}" for i in range(6))
    + tuple(f"equal_angle_{i}" for i in range(6))
)

#: Training rotations closer than this (degrees, modulo 90) to a trial rotation ...
ROTATION_MARGIN_DEG = 2.5
#: ... AND closer than this to a trial scaling are held out of training (see :func:`is_held_out`).
SCALE_MARGIN = 0.0125


# ----------------------------------------------------------------------------------------------
# Shapes and deviants
# ----------------------------------------------------------------------------------------------


def shape_index(shape: str | int) -> int:
    """Index of a reference shape in :data:`SHAPE_NAMES` (most to least regular).

    Args:
      shape: a shape name (e.g. ``"square"``) or an index in ``[0, 11)``.

    Returns:
      The integer index.

    Raises:
      ValueError: the name or index is unknown.

    Example:
      >>> shape_index("square"), shape_index("random")
      (0, 10)
    """
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        if not 0 <= int(shape) < len(SHAPE_NAMES):
            raise ValueError(f"shape index must be in [0, {len(SHAPE_NAMES)}), got {shape}")
        return int(shape)
    if isinstance(shape, str) and shape in SHAPE_NAMES:
        return SHAPE_NAMES.index(shape)
    raise ValueError(f"unknown shape {shape!r}; known shapes: {', '.join(SHAPE_NAMES)}")


def variant_index(variant: str | int) -> int:
    """Index of a variant: 0 = ``"reference"``, k = ``"deviant_k"`` for k in 1..4.

    Raises:
      ValueError: the name or index is unknown.
    """
    if isinstance(variant, (int, np.integer)) and not isinstance(variant, bool):
        if not 0 <= int(variant) < len(VARIANT_NAMES):
            raise ValueError(f"variant index must be in [0, 5), got {variant}")
        return int(variant)
    if isinstance(variant, str) and variant in VARIANT_NAMES:
        return VARIANT_NAMES.index(variant)
    raise ValueError(f"unknown variant {variant!r}; known variants: {', '.join(VARIANT_NAMES)}")


def reference_vertices(shape: str | int) -> np.ndarray:
    """Vertices of a reference quadrilateral (Sable-Meyer et al., 2021; paper Appendix L).

    Args:
      shape: a name of :data:`SHAPE_NAMES` or its index.

    Returns:
      ``(4, 2)`` float64 array, polygon order ``A=(0,0), B=v1, B'=v3, A'=v2`` in shape units
      (x right, y down).

    Example:
      >>> reference_vertices("rectangle").tolist()
      [[0.0, 0.0], [1.5, 0.0], [1.5, 1.0], [0.0, 1.0]]
    """
    name = SHAPE_NAMES[shape_index(shape)]
    v1, v2, v3, _centre = np.asarray(_asset()["vertices"][name], dtype=np.float64)
    return np.stack([np.zeros(2), v1, v3, v2])


def deviant_vertices(shape: str | int, deviant: int) -> np.ndarray:
    """Vertices of deviant ``deviant`` (1..4) of a reference shape (Sable-Meyer et al., 2021).

    The vertex ``B' = v3`` (diagonal to the origin) moves by ``d = 0.3 x`` the mean of the 6
    distances between the 4 vertices. With ``u`` the unit vector from ``v3`` to ``v2`` and
    ``L = |v2 - v3|``: deviant 1 is ``v3 - d u``, deviant 2 ``v3 + d u``, deviants 3 and 4 are
    ``v3 + d R(+a) u`` and ``v3 + d R(-a) u`` with ``a = 0.5 arccos((d^2 - 2 L^2) / (2 L^2))``
    and ``R`` the rotation matrix. (The paper describes this as moving the lower-right vertex.)

    Args:
      shape: a name of :data:`SHAPE_NAMES` or its index.
      deviant: 1, 2, 3 or 4.

    Returns:
      ``(4, 2)`` float64 array in the polygon order of :func:`reference_vertices`.

    Raises:
      ValueError: unknown shape or deviant not in 1..4.
    """
    if isinstance(deviant, bool) or not isinstance(deviant, (int, np.integer)) or not 1 <= deviant <= 4:
        raise ValueError(f"deviant must be an integer in 1..4, got {deviant!r}")
    p = reference_vertices(shape)
    v3, v2 = p[2], p[3]
    iu, ju = np.triu_indices(4, k=1)
    d = 0.3 * np.linalg.norm(p[iu] - p[ju], axis=-1).mean()
    length = np.linalg.norm(v2 - v3)
    u = (v2 - v3) / length
    if deviant == 1:
        step = -u
    elif deviant == 2:
        step = u
    else:
        a = 0.5 * np.arccos((d * d - 2.0 * length * length) / (2.0 * length * length))
        a = a if deviant == 3 else -a
        step = np.array([np.cos(a) * u[0] - np.sin(a) * u[1], np.sin(a) * u[0] + np.cos(a) * u[1]])
    out = p.copy()
    out[2] = v3 + d * step
    return out


def variant_vertices(shape: str | int, variant: str | int = 0) -> np.ndarray:
    """Vertices of a reference shape (variant 0) or one of its deviants (variants 1..4).

    Returns:
      ``(4, 2)`` float64 array (see :func:`reference_vertices`).
    """
    k = variant_index(variant)
    return reference_vertices(shape) if k == 0 else deviant_vertices(shape, k)


@functools.lru_cache(maxsize=1)
def _variant_table() -> np.ndarray:
    """All variants of all shapes, ``(11, 5, 4, 2)``, read-only."""
    table = np.stack([np.stack([variant_vertices(s, v) for v in range(5)]) for s in range(len(SHAPE_NAMES))])
    table.setflags(write=False)
    return table


def regularities(shape: str | int) -> dict[str, int]:
    """Regularity counts of a reference shape (paper Appendix L, Table 1).

    Returns:
      ``{"rightAngles", "parallels", "symmetry", "equalSides", "equalAngles"}`` -> count.

    Example:
      >>> regularities("square")["rightAngles"]
      4
    """
    name = SHAPE_NAMES[shape_index(shape)]
    return dict(zip(TABLE1_COLUMNS, (int(x) for x in _asset()["table1_regularities"][name])))


# ----------------------------------------------------------------------------------------------
# Geometric features
# ----------------------------------------------------------------------------------------------


def _as_quads(vertices, name: str = "vertices") -> np.ndarray:
    v = np.asarray(vertices, dtype=np.float64)
    if v.ndim < 2 or v.shape[-2:] != (4, 2):
        raise ValueError(f"{name} must have shape (..., 4, 2), got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite")
    return v


def _unsigned_angle(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    cross = u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]
    dot = (u * v).sum(-1)
    return np.arctan2(np.abs(cross), dot)


def geometric_features(
    vertices,
    angle_tolerance: float = ANGLE_TOLERANCE_RAD,
    length_tolerance: float = LENGTH_TOLERANCE,
) -> np.ndarray:
    """The 22 binary geometric features of a quadrilateral (paper Appendix L, Table 1 features).

    Name the vertices ``A, B, B', A'`` (polygon order of :func:`reference_vertices`). The 4 sides,
    in this order, are ``AB, AA', BB', A'B'`` (``XY`` = vector from X to Y). The 4 "angles" are the
    unsigned angles between the vector pairs ``(-AA', AB), (A'B', -AA'), (-BB', -A'B'),
    (-AB, BB')`` -- the interior angles at A', B', B and the exterior angle at A, which is how the
    authors' table defines them. The bits, in the column order of the authors' table, are

    * ``right_angle_i`` (4): ``|angle_i - pi/2| < angle_tolerance``;
    * ``parallel_k`` (6): the two sides' lines differ in direction by less than
      ``angle_tolerance`` (directions compared modulo pi);
    * ``equal_length_k`` (6): ``max/min - 1 < length_tolerance`` for the two side lengths;
    * ``equal_angle_k`` (6): ``|angle_i - angle_j| < angle_tolerance``;

    where group k compares the pairs :data:`FEATURE_PAIRS` ``(1,0),(2,0),(2,1),(3,0),(3,1),(3,2)``.
    All quantities are invariant to rotation, scaling, translation and reflection, so the features
    are too. The default tolerances (4.125 deg, 1.25 %) sit in the middle of the intervals that
    reproduce all 55 rows (11 shapes x 5 variants) of the authors' ``symbolic_features.csv``.

    Args:
      vertices: ``(..., 4, 2)`` quadrilaterals in polygon order.
      angle_tolerance: radians, > 0.
      length_tolerance: relative, > 0.

    Returns:
      ``(..., 22)`` uint8 array of 0/1 in the order of :data:`FEATURE_NAMES`.

    Raises:
      ValueError: wrong shape, non-finite vertices, a side of zero length, or tolerance <= 0.

    Example:
      >>> int(geometric_features(reference_vertices("square")).sum())  # 2 of 6 side pairs parallel
      18
    """
    v = _as_quads(vertices)
    if not angle_tolerance > 0 or not length_tolerance > 0:
        raise ValueError(
            f"tolerances must be > 0, got angle_tolerance={angle_tolerance}, length_tolerance={length_tolerance}"
        )
    a, b, bp, ap = v[..., 0, :], v[..., 1, :], v[..., 2, :], v[..., 3, :]
    ab, aap, bbp, apbp = b - a, ap - a, bp - b, bp - ap
    sides = np.stack([ab, aap, bbp, apbp], axis=-2)
    lengths = np.linalg.norm(sides, axis=-1)
    scale = np.max(lengths, axis=-1, keepdims=True)
    if np.any(lengths <= 1e-9 * np.maximum(scale, 1e-300)):
        raise ValueError("vertices: every quadrilateral needs 4 sides of non-zero length")
    angles = np.stack(
        [
            _unsigned_angle(-aap, ab),
            _unsigned_angle(apbp, -aap),
            _unsigned_angle(-bbp, -apbp),
            _unsigned_angle(-ab, bbp),
        ],
        axis=-1,
    )
    direction = np.mod(np.arctan2(sides[..., 1], sides[..., 0]), np.pi)
    i, j = np.array(FEATURE_PAIRS).T
    right = np.abs(angles - np.pi / 2) < angle_tolerance
    dd = np.abs(direction[..., i] - direction[..., j])
    parallel = np.minimum(dd, np.pi - dd) < angle_tolerance
    li, lj = lengths[..., i], lengths[..., j]
    equal_length = np.maximum(li, lj) / np.minimum(li, lj) - 1.0 < length_tolerance
    equal_angle = np.abs(angles[..., i] - angles[..., j]) < angle_tolerance
    return np.concatenate([right, parallel, equal_length, equal_angle], axis=-1).astype(np.uint8)


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


# ----------------------------------------------------------------------------------------------
# Test/training split and samplers
# ----------------------------------------------------------------------------------------------


def _shape_indices(shapes) -> np.ndarray:
    if shapes is None:
        return np.arange(len(SHAPE_NAMES))
    idx = np.array([shape_index(s) for s in shapes], dtype=np.int64)
    if idx.size == 0:
        raise ValueError("shapes must not be empty")
    return idx


def is_held_out(
    rotation_deg,
    scale,
    rotation_margin_deg: float = ROTATION_MARGIN_DEG,
    scale_margin: float = SCALE_MARGIN,
    rotations_deg: Sequence[float] = TRIAL_ROTATIONS_DEG,
    scales: Sequence[float] = TRIAL_SCALES + TRIAL_SCALES_FRENCH_ADULTS_1,
) -> np.ndarray:
    """Whether a (rotation, scaling) lies in the guard box of a test-trial grid point.

    The held-out region is the union over the trial grid ``rotations_deg x scales`` of the boxes
    ``|rotation - r| < rotation_margin_deg (modulo 90 deg)`` and ``|scale - s| < scale_margin``.
    Rotations are compared modulo 90 degrees because the rotational symmetry group of any
    quadrilateral is a subgroup of C4: two rotations of the same polygon give the same image only
    if they differ by a multiple of 90 (square) or 180 degrees. :func:`sample_training_stimuli`
    rejects every draw for which this is True, and every test item lies at a grid point (inside
    its own box), so no training (shape, variant, rotation, scale) can equal a test one -- for any
    shape and variant -- and every training image differs from every test image by at least the
    margins in rotation or scale. By default the grid holds both published scale sets.

    Args:
      rotation_deg: degrees, any shape.
      scale: broadcastable with ``rotation_deg``.
      rotation_margin_deg, scale_margin: guard half-widths, >= 0.
      rotations_deg, scales: the trial grid.

    Returns:
      bool array of the broadcast shape.
    """
    if not rotation_margin_deg >= 0 or not scale_margin >= 0:
        raise ValueError(
            f"margins must be >= 0, got rotation_margin_deg={rotation_margin_deg}, scale_margin={scale_margin}"
        )
    rot = np.asarray(rotation_deg, dtype=np.float64)[..., None]
    sc = np.asarray(scale, dtype=np.float64)[..., None]
    grid_r = np.asarray(rotations_deg, dtype=np.float64)
    grid_s = np.asarray(scales, dtype=np.float64)
    dr = np.abs(np.mod(rot - grid_r + 45.0, 90.0) - 45.0)
    near_r = np.any(dr < rotation_margin_deg, axis=-1)
    near_s = np.any(np.abs(sc - grid_s) < scale_margin, axis=-1)
    return near_r & near_s


@dataclasses.dataclass(frozen=True)
class OddballTrials:
    """A set of oddball trials: 6 items each, one of them a deviant (Sable-Meyer et al., 2021).

    Attributes:
      shape: ``(T,)`` int shape index (:data:`SHAPE_NAMES`).
      deviant: ``(T,)`` int in 1..4, which deviant is the oddball.
      deviant_position: ``(T,)`` int in 0..5, the oddball's item position.
      variant: ``(T, 6)`` int, 0 for reference items and ``deviant`` at the oddball's position.
      rotation_deg: ``(T, 6)`` float rotations (a permutation of the 6 trial values per trial).
      scale: ``(T, 6)`` float scalings (a permutation of the 6 trial values per trial).
    """

    shape: np.ndarray
    deviant: np.ndarray
    deviant_position: np.ndarray
    variant: np.ndarray
    rotation_deg: np.ndarray
    scale: np.ndarray

    def __len__(self) -> int:
        return int(self.shape.shape[0])

    def vertices(self) -> np.ndarray:
        """``(T, 6, 4, 2)`` shape-unit vertices of every item."""
        return _variant_table()[self.shape[:, None], self.variant]

    def features(self) -> np.ndarray:
        """``(T, 6, 22)`` uint8 geometric features of every item (:func:`geometric_features`)."""
        return geometric_features(self.vertices())

    def images(self, size: int = DEFAULT_IMAGE_SIZE) -> np.ndarray:
        """``(T, 6, size, size)`` float32 renders of every item (:func:`render_quadrilaterals`)."""
        size = _check_size(size)
        t = len(self)
        flat = render_quadrilaterals(
            self.vertices().reshape(t * 6, 4, 2), self.rotation_deg.reshape(-1), self.scale.reshape(-1), size
        )
        return flat.reshape(t, 6, size, size)

    def combinations(self) -> np.ndarray:
        """``(T * 6, 4)`` float array of the items' (shape, variant, rotation_deg, scale)."""
        return np.stack(
            [
                np.repeat(self.shape, 6).astype(np.float64),
                self.variant.reshape(-1).astype(np.float64),
                self.rotation_deg.reshape(-1),
                self.scale.reshape(-1),
            ],
            axis=-1,
        )


def sample_oddball_trials(
    rng,
    trials_per_condition: int = 1,
    shapes: Sequence[str | int] | None = None,
    rotations_deg: Sequence[float] = TRIAL_ROTATIONS_DEG,
    scales: Sequence[float] = TRIAL_SCALES,
) -> OddballTrials:
    """Sample oddball trials as in the human task (paper Section 3.1; Sable-Meyer et al., 2021).

    For every (shape, deviant 1..4) condition, ``trials_per_condition`` trials. Each trial shows 6
    items: 5 references of the shape and 1 deviant at a uniformly drawn position; the 6 items get a
    random permutation of the 6 rotations and an independent random permutation of the 6
    scalings, as in the behavioural files. Trials are ordered by shape, then deviant.

    Args:
      rng: numpy ``Generator`` or int seed.
      trials_per_condition: >= 1.
      shapes: subset of shapes (names or indices); default all 11.
      rotations_deg, scales: the 6 values each (the trial grid).

    Returns:
      :class:`OddballTrials` with ``T = len(shapes) * 4 * trials_per_condition``.
    """
    gen = _rng(rng)
    if (
        isinstance(trials_per_condition, bool)
        or not isinstance(trials_per_condition, (int, np.integer))
        or trials_per_condition < 1
    ):
        raise ValueError(f"trials_per_condition must be a positive integer, got {trials_per_condition!r}")
    rots = np.asarray(rotations_deg, dtype=np.float64)
    scs = np.asarray(scales, dtype=np.float64)
    if rots.shape != (6,) or scs.shape != (6,):
        raise ValueError(f"rotations_deg and scales need 6 values each, got {rots.shape} and {scs.shape}")
    if not np.all(scs > 0) or not np.all(np.isfinite(rots)):
        raise ValueError("scales must be > 0 and rotations finite")
    idx = _shape_indices(shapes)
    shape = np.repeat(idx, 4 * trials_per_condition)
    deviant = np.tile(np.repeat(np.arange(1, 5), trials_per_condition), idx.size)
    t = shape.size
    position = gen.integers(0, 6, size=t)
    rot = rots[gen.permuted(np.tile(np.arange(6), (t, 1)), axis=1)]
    sc = scs[gen.permuted(np.tile(np.arange(6), (t, 1)), axis=1)]
    variant = np.zeros((t, 6), dtype=np.int64)
    variant[np.arange(t), position] = deviant
    return OddballTrials(shape, deviant, position, variant, rot, sc)


def oddball_test_set(
    seed: int = 0,
    trials_per_condition: int = 10,
    scales: Sequence[float] = TRIAL_SCALES,
) -> OddballTrials:
    """The fixed, seeded oddball test set (all 11 shapes x 4 deviants x ``trials_per_condition``).

    Every item sits on the trial grid ``TRIAL_ROTATIONS_DEG x scales``, which
    :func:`sample_training_stimuli` never produces (see :func:`is_held_out`).

    Args:
      seed: int seed of ``numpy.random.default_rng``.
      trials_per_condition: trials per (shape, deviant); default 10 (440 trials, 2640 images).
      scales: :data:`TRIAL_SCALES` (default) or :data:`TRIAL_SCALES_FRENCH_ADULTS_1`.

    Returns:
      :class:`OddballTrials`.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an int, got {seed!r}")
    return sample_oddball_trials(
        np.random.default_rng(int(seed)), trials_per_condition, None, TRIAL_ROTATIONS_DEG, scales
    )


@dataclasses.dataclass(frozen=True)
class TrainingStimuli:
    """Training stimuli with their generative metadata.

    Attributes:
      shape: ``(N,)`` int shape index (the 11-way class label).
      variant: ``(N,)`` int, 0 = reference, 1..4 = deviant.
      rotation_deg: ``(N,)`` float.
      scale: ``(N,)`` float.
      features: ``(N, 22)`` uint8 geometric features (:func:`geometric_features`).
    """

    shape: np.ndarray
    variant: np.ndarray
    rotation_deg: np.ndarray
    scale: np.ndarray
    features: np.ndarray

    def __len__(self) -> int:
        return int(self.shape.shape[0])

    def vertices(self) -> np.ndarray:
        """``(N, 4, 2)`` shape-unit vertices."""
        return _variant_table()[self.shape, self.variant]

    def images(self, size: int = DEFAULT_IMAGE_SIZE) -> np.ndarray:
        """``(N, size, size)`` float32 renders (:func:`render_quadrilaterals`)."""
        return render_quadrilaterals(self.vertices(), self.rotation_deg, self.scale, size)


def sample_training_stimuli(
    rng,
    n: int,
    shapes: Sequence[str | int] | None = None,
    variants: Sequence[str | int] = ("reference",),
    rotation_range_deg: tuple[float, float] = (-30.0, 30.0),
    scale_range: tuple[float, float] = (0.85, 1.15),
    rotation_margin_deg: float = ROTATION_MARGIN_DEG,
    scale_margin: float = SCALE_MARGIN,
) -> TrainingStimuli:
    """Sample training quadrilaterals with continuous rotations/scalings, test grid held out.

    Shape and variant are uniform over ``shapes`` x ``variants``; rotation and scale are uniform
    over the ranges, redrawn (rejection sampling) while :func:`is_held_out` is True, so the
    sampler never yields a (rotation, scale) within the margins of a trial-grid point -- the
    images of :func:`oddball_test_set` are held out of training (paper Appendix L). The paper
    trained on the 11 reference categories, hence the default ``variants``.

    Args:
      rng: numpy ``Generator`` or int seed.
      n: number of stimuli, >= 0.
      shapes: subset of shapes; default all 11.
      variants: subset of ``0..4`` / :data:`VARIANT_NAMES`.
      rotation_range_deg: ``(low, high)`` degrees, low < high.
      scale_range: ``(low, high)``, 0 < low < high.
      rotation_margin_deg, scale_margin: guard half-widths of :func:`is_held_out`.

    Returns:
      :class:`TrainingStimuli` of length ``n`` (features included).

    Raises:
      ValueError: bad ranges, unknown shapes/variants, or a range entirely held out.
    """
    gen = _rng(rng)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    idx = _shape_indices(shapes)
    var = np.array([variant_index(v) for v in variants], dtype=np.int64)
    if var.size == 0:
        raise ValueError("variants must not be empty")
    r_lo, r_hi = (float(x) for x in rotation_range_deg)
    s_lo, s_hi = (float(x) for x in scale_range)
    if not (np.isfinite(r_lo) and np.isfinite(r_hi) and r_lo < r_hi):
        raise ValueError(f"rotation_range_deg must be finite with low < high, got {rotation_range_deg}")
    if not (0 < s_lo < s_hi and np.isfinite(s_hi)):
        raise ValueError(f"scale_range must satisfy 0 < low < high, got {scale_range}")
    shape = idx[gen.integers(0, idx.size, size=n)]
    variant = var[gen.integers(0, var.size, size=n)]
    rot = np.empty(n)
    sc = np.empty(n)
    filled = 0
    draws = 0
    while filled < n:
        m = max(2 * (n - filled), 64)
        r = gen.uniform(r_lo, r_hi, size=m)
        s = gen.uniform(s_lo, s_hi, size=m)
        ok = ~is_held_out(r, s, rotation_margin_deg, scale_margin)
        k = min(int(ok.sum()), n - filled)
        rot[filled : filled + k] = r[ok][:k]
        sc[filled : filled + k] = s[ok][:k]
        filled += k
        draws += m
        if filled == 0 and draws >= 100_000:
            raise ValueError(
                f"rotation_range_deg={rotation_range_deg} x scale_range={scale_range} lies (almost) "
                "entirely in the held-out test region; widen the ranges or reduce the margins"
            )
    feats = _variant_features()[shape, variant]
    return TrainingStimuli(shape, variant, rot, sc, feats)


@functools.lru_cache(maxsize=1)
def _variant_features() -> np.ndarray:
    f = geometric_features(_variant_table())
    f.setflags(write=False)
    return f


def training_batches(
    seed: int,
    batch_size: int,
    size: int = DEFAULT_IMAGE_SIZE,
    **sampler_kwargs,
) -> Iterator[dict[str, np.ndarray]]:
    """Endless stream of rendered training batches with their generative metadata.

    Each batch is ``{"image": (B, size, size) float32, "features": (B, 22) uint8,
    "shape": (B,), "variant": (B,), "rotation_deg": (B,), "scale": (B,)}``, drawn by
    :func:`sample_training_stimuli` from ``numpy.random.default_rng(seed)``; the stream is a
    deterministic function of the arguments.

    Args:
      seed: int seed.
      batch_size: >= 1.
      size: image side.
      **sampler_kwargs: forwarded to :func:`sample_training_stimuli`.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    size = _check_size(size)
    gen = _rng(seed)
    while True:
        s = sample_training_stimuli(gen, batch_size, **sampler_kwargs)
        yield {
            "image": s.images(size),
            "features": s.features,
            "shape": s.shape,
            "variant": s.variant,
            "rotation_deg": s.rotation_deg,
            "scale": s.scale,
        }
