"""The 11 quadrilaterals of Sable-Meyer et al. (2021), their deviants and their 22 geometric features.

The reference vertices come from package data (``gensim_jax/assets/sable_meyer_2021_quadrilaterals.json``);
each of the 4 deviants moves the vertex diagonal to the origin (:func:`deviant_vertices`);
:func:`geometric_features` computes the 22 binary features of paper Appendix L (right angles,
parallel sides, equal lengths, equal angles), the features of the Beta-Bernoulli GenSim kernel
(paper Eq. 3, :mod:`gensim_jax.kernels.beta_bernoulli`). Coordinates as in
:mod:`gensim_jax.stimuli.quadrilaterals`.
"""

from __future__ import annotations

import functools
import importlib.resources
import json

import numpy as np

__all__ = [
    "ANGLE_TOLERANCE_RAD",
    "FEATURE_NAMES",
    "FEATURE_PAIRS",
    "LENGTH_TOLERANCE",
    "SHAPE_NAMES",
    "TABLE1_COLUMNS",
    "TRIAL_ROTATIONS_DEG",
    "TRIAL_SCALES",
    "TRIAL_SCALES_FRENCH_ADULTS_1",
    "VARIANT_NAMES",
    "deviant_vertices",
    "geometric_features",
    "reference_vertices",
    "regularities",
    "shape_index",
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
