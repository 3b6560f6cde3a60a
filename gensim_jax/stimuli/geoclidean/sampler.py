"""Constraint sampler for Geoclidean programs: a parsed program in, one random scene out.

A Geoclidean program (paper Sec. 3.2, Appendix P; Hsu et al. 2022) names points and builds lines
and circles on them. Sampling a program gives every point a position, in the benchmark's
canvas coordinates ``[0, canvas]^2`` (``canvas = 16`` in the original environment):

* a **free point** ``p()`` (first appearance, no constraints) is uniform on the canvas square;
* a point on **one object** ``p(o)`` is uniform on it: uniform in arc length on a line segment,
  uniform in angle on a circle;
* a point on **two objects** ``p(a, b)`` is one of their intersections (segment-segment,
  segment-circle, circle-circle), chosen uniformly among those that exist and are not already
  named points (a new name denotes a new point; if every intersection is an already-named
  point, uniformly among all of them). With a plain uniform choice, ``p5(l1, c3)`` of concept
  ``rhomboid`` would be the already-named ``p3`` half of the time even when the second
  intersection, the one that makes its parallelogram, exists;
* a **reused point name** keeps the value it got at its first appearance (constraints written at
  later appearances are not re-applied);
* ``line(p, q)`` is the **segment** from ``p`` to ``q`` (the benchmark images draw segments, and
  intersections are taken with the segments, not with infinite lines); ``circle(c, q)`` is the
  circle centred at ``c`` through ``q`` (radius ``|q - c|``);
* objects marked ``*`` constrain points but are not drawn.

A draw is rejected and the whole program re-sampled when a required intersection does not
exist (or is not a finite set: coincident circles, overlapping collinear segments), when any
object is degenerate (zero length or radius), or when a visible object would be hidden in the
rendered image. The benchmark images are framed to the drawing (matplotlib ``axis('equal')``
autoscaling, see :mod:`~gensim_jax.stimuli.geoclidean.render`), so no object can fall off the
canvas; "hidden" and "too small" are therefore measured relative to the drawing's extent
``E = max(width, height)`` of the visible objects' bounding box: a visible object must show at
least ``min_visible * E`` of its length farther than ``cover_tol * E`` from every other visible
object. This is the analytic counterpart of the original environment's visibility test
(each visible object must change at least 400 pixels of the 360 x 360 render, about 0.35 E).

After ``max_tries`` rejected draws :func:`sample_scene` raises :class:`GeoclideanSamplingError`
naming the program and the most frequent reason.

Randomness comes only from the ``numpy.random.Generator`` passed in, so a scene is a function of
the generator state (use ``np.random.default_rng([seed, index])`` for per-image streams).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from gensim_jax.stimuli.geoclidean.grammar import Program, parse_program

__all__ = [
    "CANVAS",
    "GeoclideanSamplingError",
    "Scene",
    "sample_scene",
    "segment_intersections",
    "segment_circle_intersections",
    "circle_intersections",
]

#: Side of the square canvas of free points (the original environment's ``CANVAS_SIZE``).
CANVAS = 16.0

_EPS = 1e-9


class GeoclideanSamplingError(RuntimeError):
    """No valid scene was found for a program within ``max_tries`` draws."""


@dataclass(frozen=True)
class Scene:
    """One sampled realisation of a Geoclidean program.

    Attributes:
      segments: float64 ``(S, 4)`` visible segments ``[x0, y0, x1, y1]`` in drawing order among
        segments (canvas coordinates, y up).
      circles: float64 ``(C, 3)`` visible circles ``[cx, cy, r]``.
      objects: every constructed object, name -> ``("line", x0, y0, x1, y1)`` or
        ``("circle", cx, cy, r)``, invisible ones included.
      visible: names of the drawn objects, in program order.
      points: point name -> ``(x, y)``.
      tries: how many draws it took (1 = first draw accepted).
      name: the program's name if one was given, else ``""``.
      extent: ``(xmin, ymin, xmax, ymax)`` of the visible objects (circles as full discs),
        the box that :func:`~gensim_jax.stimuli.geoclidean.render.view_transform` frames.
    """

    segments: np.ndarray
    circles: np.ndarray
    objects: Mapping[str, tuple]
    visible: tuple[str, ...]
    points: Mapping[str, tuple[float, float]]
    tries: int = 1
    name: str = ""
    extent: tuple[float, float, float, float] = field(default=(0.0, 0.0, 0.0, 0.0))

    def bbox(self) -> tuple[float, float, float, float]:
        """``(xmin, ymin, xmax, ymax)`` of the visible objects (circles as full discs)."""
        return self.extent


# --------------------------------------------------------------------------------------------
# intersections (public: also used by the tests' independent checks)
# --------------------------------------------------------------------------------------------


def segment_intersections(a: Sequence[float], b: Sequence[float]) -> list[tuple[float, float]]:
    """Intersection points of segments ``a = [x0, y0, x1, y1]`` and ``b`` (0 or 1 point).

    Parallel (including collinear overlapping) segments return ``[]``: their intersection is
    empty or not a finite point set.

    Example:
      >>> segment_intersections([0, 0, 2, 2], [0, 2, 2, 0])
      [(1.0, 1.0)]
    """
    px, py, qx, qy = (float(v) for v in a)
    sx, sy, tx, ty = (float(v) for v in b)
    rx, ry = qx - px, qy - py
    ux, uy = tx - sx, ty - sy
    den = rx * uy - ry * ux
    scale = math.hypot(rx, ry) * math.hypot(ux, uy)
    if scale <= 0.0 or abs(den) <= 1e-12 * scale:
        return []
    wx, wy = sx - px, sy - py
    t = (wx * uy - wy * ux) / den
    u = (wx * ry - wy * rx) / den
    if -_EPS <= t <= 1 + _EPS and -_EPS <= u <= 1 + _EPS:
        return [(px + t * rx, py + t * ry)]
    return []


def segment_circle_intersections(seg: Sequence[float], circ: Sequence[float]) -> list[tuple[float, float]]:
    """Intersections of segment ``[x0, y0, x1, y1]`` with circle ``[cx, cy, r]`` (0, 1 or 2).

    Solves ``|p + t d - c|^2 = r^2`` for ``t`` in ``[0, 1]``; a tangent touch counts once.

    Example:
      >>> segment_circle_intersections([-2, 0, 2, 0], [0, 0, 1])
      [(-1.0, 0.0), (1.0, 0.0)]
    """
    px, py, qx, qy = (float(v) for v in seg)
    cx, cy, r = (float(v) for v in circ)
    dx, dy = qx - px, qy - py
    fx, fy = px - cx, py - cy
    a = dx * dx + dy * dy
    if a <= 0.0 or r <= 0.0:
        return []
    b = 2.0 * (fx * dx + fy * dy)
    c = fx * fx + fy * fy - r * r
    disc = b * b - 4.0 * a * c
    if disc < 0.0:
        return []
    sq = math.sqrt(disc)
    ts = [(-b - sq) / (2.0 * a)] if sq == 0.0 else [(-b - sq) / (2.0 * a), (-b + sq) / (2.0 * a)]
    return [(px + t * dx, py + t * dy) for t in ts if -_EPS <= t <= 1 + _EPS]


def circle_intersections(c1: Sequence[float], c2: Sequence[float]) -> list[tuple[float, float]]:
    """Intersections of circles ``[cx, cy, r]`` (0, 1 or 2 points).

    Concentric circles (coincident or not) return ``[]``.

    Example:
      >>> [tuple(round(v, 6) for v in p) for p in circle_intersections([0, 0, 1], [1, 0, 1])]
      [(0.5, -0.866025), (0.5, 0.866025)]
    """
    x1, y1, r1 = (float(v) for v in c1)
    x2, y2, r2 = (float(v) for v in c2)
    dx, dy = x2 - x1, y2 - y1
    d = math.hypot(dx, dy)
    if d <= 1e-12 * max(r1, r2, 1.0) or d > r1 + r2 or d < abs(r1 - r2):
        return []
    a = (r1 * r1 - r2 * r2 + d * d) / (2.0 * d)
    h = math.sqrt(max(r1 * r1 - a * a, 0.0))
    mx, my = x1 + a * dx / d, y1 + a * dy / d
    if h == 0.0:
        return [(mx, my)]
    ox, oy = -dy * h / d, dx * h / d
    return [(mx - ox, my - oy), (mx + ox, my + oy)]


# --------------------------------------------------------------------------------------------
# sampling
# --------------------------------------------------------------------------------------------


class _Reject(Exception):
    def __init__(self, reason: str):
        self.reason = reason


def _intersections(a: tuple, b: tuple) -> list[tuple[float, float]]:
    if a[0] == "line" and b[0] == "line":
        return segment_intersections(a[1:], b[1:])
    if a[0] == "line":
        return segment_circle_intersections(a[1:], b[1:])
    if b[0] == "line":
        return segment_circle_intersections(b[1:], a[1:])
    return circle_intersections(a[1:], b[1:])


_PLANS: dict[int, tuple[Program, tuple]] = {}


def _plan(program: Program) -> tuple:
    """Compile a program once: per construction ``(name, is_line, point_a, point_b)`` with
    points as ``(slot, name, constraint names)`` (``slot`` indexes the per-draw uniforms),
    plus the visible names."""
    hit = _PLANS.get(id(program))
    if hit is not None and hit[0] is program:
        return hit[1]
    slots = {n: i for i, n in enumerate(program.point_names)}
    steps = tuple(
        (c.name, c.kind == "line", *((slots[q.name], q.name, tuple(o.name for o in q.constraints)) for q in c.points))
        for c in program.constructions
    )
    plan = (steps, tuple(program.visible_objects), len(slots))
    if len(_PLANS) > 512:
        _PLANS.clear()
    _PLANS[id(program)] = (program, plan)
    return plan


def _resolve(q: tuple, objects: dict, points: dict, u: list, canvas: float) -> tuple:
    slot, name, cons = q
    xy = points.get(name)
    if xy is not None:
        return xy
    u0, u1 = u[2 * slot], u[2 * slot + 1]
    if not cons:
        xy = (u0 * canvas, u1 * canvas)
    elif len(cons) == 1:
        o = objects[cons[0]]
        if o[0] == "line":
            _, x0, y0, x1, y1 = o
            xy = (x0 + u0 * (x1 - x0), y0 + u0 * (y1 - y0))
        else:
            _, cx, cy, r = o
            th = 2.0 * math.pi * u0
            xy = (cx + r * math.cos(th), cy + r * math.sin(th))
    else:
        cands = _intersections(objects[cons[0]], objects[cons[1]])
        if not cands:
            raise _Reject(f"no intersection of {cons[0]} and {cons[1]}")
        if len(cands) > 1:
            # a new name denotes a new point: prefer intersections that are not already named
            tol = 1e-7 * canvas
            fresh = [c for c in cands if all(abs(c[0] - v[0]) + abs(c[1] - v[1]) > tol for v in points.values())]
            cands = fresh or cands
        xy = cands[min(int(u1 * len(cands)), len(cands) - 1)]
    points[name] = xy
    return xy


def _draw(plan: tuple, rng: np.random.Generator, canvas: float, tiny: float):
    steps, _, n_points = plan
    u = rng.random(2 * n_points).tolist()  # two uniforms per point, drawn once per try
    objects: dict[str, tuple] = {}
    points: dict[str, tuple[float, float]] = {}
    for name, is_line, qa, qb in steps:
        a = _resolve(qa, objects, points, u, canvas)
        b = _resolve(qb, objects, points, u, canvas)
        d = math.hypot(b[0] - a[0], b[1] - a[1])
        if d <= tiny:
            raise _Reject(f"degenerate {'line' if is_line else 'circle'} {name}")
        objects[name] = ("line", a[0], a[1], b[0], b[1]) if is_line else ("circle", a[0], a[1], d)
    return objects, points


def _samples_and_dist(objs: list[tuple], n: int) -> np.ndarray:
    """Distances from ``n`` points spread along each object to every object: ``(K, K, n)``.

    ``D[k, m, i]`` is the distance from the ``i``-th sample of object ``k`` to object ``m``
    (segment: distance to the closest point of the segment; circle: ``| |p - c| - r |``), and
    ``D[k, k] = inf``.
    """
    K = len(objs)
    lines = [k for k, o in enumerate(objs) if o[0] == "line"]
    circs = [k for k, o in enumerate(objs) if o[0] != "line"]
    t = (np.arange(n) + 0.5) / n
    P = np.empty((K, n, 2))
    D = np.empty((K, K, n))
    if lines:
        L = np.array([objs[k][1:] for k in lines])  # (nl, 4)
        a, d = L[:, :2], L[:, 2:] - L[:, :2]
        P[lines] = a[:, None, :] + t[None, :, None] * d[:, None, :]
    if circs:
        C = np.array([objs[k][1:] for k in circs])  # (nc, 3)
        ang = 2.0 * np.pi * t
        P[circs] = C[:, None, :2] + C[:, None, 2:] * np.stack([np.cos(ang), np.sin(ang)], -1)
    if lines:
        rel = P[:, None, :, :] - a[None, :, None, :]  # (K, nl, n, 2)
        u = np.clip((rel @ d[:, :, None])[..., 0] / (d * d).sum(1)[None, :, None], 0.0, 1.0)
        res = rel - u[..., None] * d[None, :, None, :]
        D[:, lines] = np.sqrt((res * res).sum(-1))
    if circs:
        rel = P[:, None, :, :] - C[None, :, None, :2]
        D[:, circs] = np.abs(np.sqrt((rel * rel).sum(-1)) - C[None, :, None, 2])
    D[np.arange(K), np.arange(K)] = np.inf
    return D


def _length(o: tuple) -> float:
    if o[0] == "line":
        return math.hypot(o[3] - o[1], o[4] - o[2])
    return 2.0 * math.pi * o[3]


def _bbox(objs: list[tuple]) -> tuple[float, float, float, float]:
    xs, ys = [], []
    for o in objs:
        if o[0] == "line":
            xs += [o[1], o[3]]
            ys += [o[2], o[4]]
        else:
            xs += [o[1] - o[3], o[1] + o[3]]
            ys += [o[2] - o[3], o[2] + o[3]]
    return (min(xs), min(ys), max(xs), max(ys))


def _check_visibility(
    objs: list[tuple], names: list[str], min_visible: float, cover_tol: float, n: int = 64
) -> tuple[float, float, float, float]:
    box = _bbox(objs)
    extent = max(box[2] - box[0], box[3] - box[1])
    if extent <= 0.0:
        raise _Reject("empty drawing")
    for k, o in enumerate(objs):  # cheap test first: too small even if fully exposed
        if _length(o) < min_visible * extent:
            raise _Reject(f"visible object {names[k]} hidden or too small")
    if len(objs) == 1:
        return box
    D = _samples_and_dist(objs, n)
    exposed = (D.min(axis=1) > cover_tol * extent).mean(axis=1)  # (K,)
    for k, o in enumerate(objs):
        if exposed[k] * _length(o) < min_visible * extent:
            raise _Reject(f"visible object {names[k]} hidden or too small")
    return box


def sample_scene(
    program: Program | str | Sequence[str],
    rng: np.random.Generator,
    *,
    max_tries: int = 1000,
    canvas: float = CANVAS,
    min_visible: float = 0.35,
    cover_tol: float = 0.02,
    name: str = "",
) -> Scene:
    """Sample one scene of a Geoclidean program by rejection (paper Sec. 3.2, Appendix P).

    Implements the generative process of the module docstring: points are drawn in program
    order (free: uniform on ``[0, canvas]^2``; on one object: uniform on it; on two: a uniform
    choice among the intersections that are not already-named points), objects are built from
    them, and the whole draw is repeated when it is invalid (missing intersection, degenerate
    object, hidden visible object).

    Args:
      program: a parsed :class:`~gensim_jax.stimuli.geoclidean.grammar.Program` or program text.
      rng: ``numpy.random.Generator``, the only source of randomness.
      max_tries: draws before giving up (>= 1).
      canvas: side of the square of free points.
      min_visible: each visible object must show at least ``min_visible * E`` of its length
        uncovered (``E``: larger side of the visible bounding box); 0 disables the test.
      cover_tol: a sample point of an object is covered when it lies within ``cover_tol * E``
        of another visible object.
      name: the program's name, used in error messages and stored in the scene.

    Returns:
      :class:`Scene`.

    Raises:
      GeoclideanSamplingError: no valid draw in ``max_tries`` tries (message names the program
        and the most frequent rejection reason).
      ValueError: bad ``max_tries``, ``canvas``, ``min_visible`` or ``cover_tol``, or a program
        without visible objects.
      TypeError: ``rng`` is not a ``numpy.random.Generator``.

    Example:
      >>> import numpy as np
      >>> s = sample_scene("c1 = circle(p1(), p2())\\nl1 = line(p3(c1), p4(c1))",
      ...                  np.random.default_rng(0))
      >>> s.segments.shape, s.circles.shape
      ((1, 4), (1, 3))
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if not isinstance(program, Program):
        program = parse_program(program)
    if int(max_tries) < 1:
        raise ValueError(f"max_tries must be >= 1, got {max_tries}")
    if not canvas > 0:
        raise ValueError(f"canvas must be > 0, got {canvas}")
    if not 0 <= min_visible or not 0 <= cover_tol:
        raise ValueError(f"min_visible and cover_tol must be >= 0, got {min_visible} and {cover_tol}")
    if not program.visible_objects:
        raise ValueError(f"program {name or program.to_source()!r} has no visible object to draw")
    tiny = 1e-9 * canvas
    reasons: Counter[str] = Counter()
    plan = _plan(program)
    vis_names = list(plan[1])
    for attempt in range(1, int(max_tries) + 1):
        try:
            objects, points = _draw(plan, rng, canvas, tiny)
            vis = [objects[n] for n in vis_names]
            box = _check_visibility(vis, vis_names, min_visible, cover_tol)
        except _Reject as e:
            reasons[e.reason] += 1
            continue
        segs = np.array([o[1:] for o in vis if o[0] == "line"], dtype=np.float64).reshape(-1, 4)
        circs = np.array([o[1:] for o in vis if o[0] == "circle"], dtype=np.float64).reshape(-1, 3)
        return Scene(
            segments=segs,
            circles=circs,
            objects=MappingProxyType(objects),
            visible=tuple(vis_names),
            points=MappingProxyType(points),
            tries=attempt,
            name=name,
            extent=box,
        )
    label = name or program.to_source().strip().replace("\n", "; ")
    common = ", ".join(f"{r} ({k}x)" for r, k in reasons.most_common(3))
    raise GeoclideanSamplingError(
        f"could not sample Geoclidean program {label!r} in max_tries={max_tries} draws; "
        f"most frequent rejections: {common}"
    )
