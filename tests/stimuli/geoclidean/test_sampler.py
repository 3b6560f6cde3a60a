"""Tests for the Geoclidean constraint sampler: every benchmark program samples, the sampled
geometry satisfies the program's constraints (checked numerically, independently of the
sampler), distributions are uniform where the process says so, Euclid's constructions come out
right, determinism, and clear failures."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_FAMILY, CONCEPT_NAMES, concept_program
from gensim_jax.stimuli.geoclidean.grammar import parse_program
from gensim_jax.stimuli.geoclidean.sampler import (
    CANVAS,
    GeoclideanSamplingError,
    circle_intersections,
    sample_scene,
    segment_circle_intersections,
    segment_intersections,
)

GEOCLIDEAN = Path(__file__).resolve().parents[3] / ".." / "shared" / "reference" / "geoclidean"
VARIANT_FILES = ("concept.txt", "close_concept.txt", "far_concept.txt")
needs_ref = pytest.mark.skipif(not GEOCLIDEAN.is_dir(), reason="shared/reference/geoclidean not present")


def reference_programs():
    out = []
    for name in CONCEPT_NAMES:
        d = GEOCLIDEAN / CONCEPT_FAMILY[name] / f"concept_{name}"
        for f in VARIANT_FILES:
            out.append((f"{name}/{f}", parse_program((d / f).read_text())))
    return out


# --------------------------------------------------------------------------------------------
# independent geometry checks (plain formulas, not the sampler's helpers)
# --------------------------------------------------------------------------------------------


def dist_to_segment(p, seg):
    """Distance from p to a segment: perpendicular distance (cross product) when the foot of
    the perpendicular falls inside the segment, else the distance to the nearer endpoint."""
    (x0, y0, x1, y1), (px, py) = seg, p
    L2 = (x1 - x0) ** 2 + (y1 - y0) ** 2
    t = ((px - x0) * (x1 - x0) + (py - y0) * (y1 - y0)) / L2
    if 0.0 <= t <= 1.0:
        return abs((x1 - x0) * (py - y0) - (y1 - y0) * (px - x0)) / math.sqrt(L2)
    return min(math.dist(p, (x0, y0)), math.dist(p, (x1, y1)))


def on_object(p, obj, tol):
    if obj[0] == "line":
        return dist_to_segment(p, obj[1:]) <= tol
    _, cx, cy, r = obj
    return abs(math.dist(p, (cx, cy)) - r) <= tol


def check_scene(prog, scene):
    tol = 1e-6 * CANVAS
    first: dict[str, tuple] = {}
    for c in prog.constructions:
        for p in c.points:
            first.setdefault(p.name, p.constraints)
    for c in prog.constructions:
        obj = scene.objects[c.name]
        a, b = (scene.points[p.name] for p in c.points)
        if c.kind == "line":
            assert obj[0] == "line"
            assert np.allclose(obj[1:], (*a, *b), atol=0)
        else:
            assert obj[0] == "circle"
            assert np.allclose(obj[1:3], a) and math.isclose(obj[3], math.dist(a, b), rel_tol=1e-12)
    for name, cons in first.items():
        p = scene.points[name]
        if not cons:
            assert 0 <= p[0] <= CANVAS and 0 <= p[1] <= CANVAS
        for o in cons:
            assert on_object(p, scene.objects[o.name], tol), (name, o.name)
    vis = [scene.objects[n] for n in prog.visible_objects]
    assert scene.visible == prog.visible_objects
    np.testing.assert_array_equal(scene.segments, [o[1:] for o in vis if o[0] == "line"] or np.zeros((0, 4)))
    np.testing.assert_array_equal(scene.circles, [o[1:] for o in vis if o[0] == "circle"] or np.zeros((0, 3)))


@needs_ref
def test_every_benchmark_program_samples_and_satisfies_constraints():
    progs = reference_programs()
    assert len(progs) == 111
    for k, (label, prog) in enumerate(progs):
        for j in range(2):
            scene = sample_scene(prog, np.random.default_rng([k, j]), name=label)
            check_scene(prog, scene)


def test_reused_point_keeps_first_value():
    # p2 is reused in l2 with a constraint that would move it if it were re-applied
    prog = parse_program("l1 = line(p1(), p2())\nc1 = circle(p3(), p4())\nl2 = line(p2(c1), p5())")
    for s in range(20):
        sc = sample_scene(prog, np.random.default_rng(s), min_visible=0.0)
        assert sc.objects["l2"][1:3] == sc.objects["l1"][3:5]


# --------------------------------------------------------------------------------------------
# Euclid's constructions come out exactly
# --------------------------------------------------------------------------------------------


def test_square_eq_triangle_sixty_angle_are_exact():
    rng = np.random.default_rng(0)
    for _ in range(20):
        sq = sample_scene(concept_program("square"), rng)
        P = sq.segments[:, :2]
        sides = np.linalg.norm(sq.segments[:, 2:] - sq.segments[:, :2], axis=1)
        np.testing.assert_allclose(sides, sides[0], rtol=1e-9)
        v = sq.segments[:, 2:] - P
        np.testing.assert_allclose([v[i] @ v[(i + 1) % 4] for i in range(4)], 0, atol=1e-9 * sides[0] ** 2)
        t = sample_scene(concept_program("eq_t"), rng)
        sides = np.linalg.norm(t.segments[:, 2:] - t.segments[:, :2], axis=1)
        np.testing.assert_allclose(sides, sides[0], rtol=1e-9)
        a = sample_scene(concept_program("sixty_ang"), rng)
        u, w = a.segments[0, 2:] - a.segments[0, :2], a.segments[1, 2:] - a.segments[1, :2]
        ang = math.degrees(math.acos(u @ w / np.linalg.norm(u) / np.linalg.norm(w)))
        assert abs(ang - 60.0) < 1e-7


# --------------------------------------------------------------------------------------------
# distributions
# --------------------------------------------------------------------------------------------


def test_point_on_circle_is_uniform_in_angle_and_on_segment_uniform_in_length():
    prog = parse_program("c1 = circle(p1(), p2())\nl1 = line(p3(c1), p4())\nl2 = line(p5(l1), p6())")
    angles, ts = [], []
    for s in range(400):
        sc = sample_scene(prog, np.random.default_rng([7, s]), min_visible=0.0)
        cx, cy, r = sc.objects["c1"][1:]
        x, y = sc.points["p3"]
        angles.append((math.atan2(y - cy, x - cx) / (2 * math.pi)) % 1.0)
        x0, y0, x1, y1 = sc.objects["l1"][1:]
        px, py = sc.points["p5"]
        L2 = (x1 - x0) ** 2 + (y1 - y0) ** 2
        ts.append(((px - x0) * (x1 - x0) + (py - y0) * (y1 - y0)) / L2)
    assert stats.kstest(angles, "uniform").pvalue > 1e-3
    assert stats.kstest(ts, "uniform").pvalue > 1e-3


def test_free_points_uniform_on_canvas():
    prog = parse_program("l1 = line(p1(), p2())")
    xs = np.array([sample_scene(prog, np.random.default_rng([3, s])).points["p1"] for s in range(300)])
    for col in xs.T:
        assert stats.kstest(col / CANVAS, "uniform").pvalue > 1e-3


def test_intersection_choice_is_uniform():
    # the two points of the vesica: above or below the base segment, each with probability 1/2
    prog = parse_program(
        "l1 = line(p1(), p2())\nc1* = circle(p1(), p2())\nc2* = circle(p2(), p1())\nl2 = line(p1(), p3(c1, c2))"
    )
    side = []
    for s in range(400):
        sc = sample_scene(prog, np.random.default_rng([11, s]))
        (x0, y0), (x1, y1), (x3, y3) = sc.points["p1"], sc.points["p2"], sc.points["p3"]
        side.append((x1 - x0) * (y3 - y0) - (y1 - y0) * (x3 - x0) > 0)
    assert stats.binomtest(int(np.sum(side)), len(side), 0.5).pvalue > 1e-3


# --------------------------------------------------------------------------------------------
# intersection formulas against independent computations
# --------------------------------------------------------------------------------------------

coord = st.floats(-10, 10, allow_nan=False)
radius = st.floats(0.1, 10, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(coord, coord, radius, coord, coord, radius)
def test_circle_intersections_lie_on_both(x1, y1, r1, x2, y2, r2):
    pts = circle_intersections((x1, y1, r1), (x2, y2, r2))
    d = math.hypot(x2 - x1, y2 - y1)
    if abs(r1 - r2) + 1e-9 < d < r1 + r2 - 1e-9:
        assert len(pts) == 2
    if d > r1 + r2 + 1e-9 or d < abs(r1 - r2) - 1e-9:
        assert pts == []
    for p in pts:
        assert abs(math.dist(p, (x1, y1)) - r1) < 1e-7 * (1 + r1)
        assert abs(math.dist(p, (x2, y2)) - r2) < 1e-7 * (1 + r2)


@settings(max_examples=150, deadline=None)
@given(coord, coord, coord, coord, coord, coord, coord, coord)
def test_segment_intersection_matches_linear_solve(a, b, c, d, e, f, g, h):
    s1, s2 = (a, b, c, d), (e, f, g, h)
    pts = segment_intersections(s1, s2)
    M = np.array([[c - a, -(g - e)], [d - b, -(h - f)]])
    if abs(np.linalg.det(M)) < 1e-6:
        return
    t, u = np.linalg.solve(M, [e - a, f - b])
    inside = -1e-9 <= t <= 1 + 1e-9 and -1e-9 <= u <= 1 + 1e-9
    if abs(t) > 1e-6 and abs(t - 1) > 1e-6 and abs(u) > 1e-6 and abs(u - 1) > 1e-6:
        assert (len(pts) == 1) == inside
    for p in pts:
        assert dist_to_segment(p, s1) < 1e-4 and dist_to_segment(p, s2) < 1e-4


@settings(max_examples=100, deadline=None)
@given(coord, coord, coord, coord, coord, coord, radius)
def test_segment_circle_intersections_lie_on_both(a, b, c, d, cx, cy, r):
    pts = segment_circle_intersections((a, b, c, d), (cx, cy, r))
    assert len(pts) <= 2
    for p in pts:
        assert abs(math.dist(p, (cx, cy)) - r) < 1e-7 * (1 + r)
        assert dist_to_segment(p, (a, b, c, d)) < 1e-4
    # independent count: sign changes of |x(t) - c| - r on a fine grid
    t = np.linspace(0, 1, 20001)
    g = np.hypot(a + t * (c - a) - cx, b + t * (d - b) - cy) - r
    changes = int(np.sum(np.sign(g[1:]) != np.sign(g[:-1])))
    if np.min(np.abs(g)) > 1e-3 * (1 + r) and abs(g[0]) > 1e-3 and abs(g[-1]) > 1e-3:
        assert len(pts) == changes


# --------------------------------------------------------------------------------------------
# determinism and failures
# --------------------------------------------------------------------------------------------


def test_deterministic_given_generator_state():
    prog = concept_program("rhombus")
    s1 = sample_scene(prog, np.random.default_rng([5, 9]))
    s2 = sample_scene(prog, np.random.default_rng([5, 9]))
    s3 = sample_scene(prog, np.random.default_rng([5, 10]))
    np.testing.assert_array_equal(s1.segments, s2.segments)
    assert dict(s1.points) == dict(s2.points)
    assert not np.array_equal(s1.segments, s3.segments)


def test_unsatisfiable_program_raises_after_max_tries():
    # c2 is concentric with c1 and has a smaller radius: they never meet
    prog = parse_program(
        "c1 = circle(p1(), p2())\nl1* = line(p1(), p3(c1))\nc2 = circle(p1(), p4(l1))\nl2 = line(p5(c1, c2), p6())"
    )
    with pytest.raises(GeoclideanSamplingError, match=r"'nested'.*max_tries=25.*no intersection"):
        sample_scene(prog, np.random.default_rng(0), max_tries=25, name="nested")


def test_hidden_object_is_rejected():
    prog = parse_program("c1 = circle(p1(), p2())\nc2 = circle(p1(), p2())")
    with pytest.raises(GeoclideanSamplingError, match="hidden or too small"):
        sample_scene(prog, np.random.default_rng(0), max_tries=10)
    # with the test off, the draw is accepted
    sample_scene(prog, np.random.default_rng(0), max_tries=10, min_visible=0.0)


def test_visible_objects_are_exposed_in_every_accepted_draw():
    # independent check of the visibility criterion: dense sampling along each object
    prog = concept_program("cccc")
    for s in range(10):
        sc = sample_scene(prog, np.random.default_rng([2, s]))
        x0, y0, x1, y1 = sc.extent
        E = max(x1 - x0, y1 - y0)
        circles = sc.circles
        for k, (cx, cy, r) in enumerate(circles):
            th = np.linspace(0, 2 * np.pi, 4000, endpoint=False)
            P = np.stack([cx + r * np.cos(th), cy + r * np.sin(th)], 1)
            others = np.delete(circles, k, 0)
            d = np.min(
                np.abs(
                    np.hypot(P[:, None, 0] - others[None, :, 0], P[:, None, 1] - others[None, :, 1])
                    - others[None, :, 2]
                ),
                1,
            )
            exposed = np.mean(d > 0.02 * E) * 2 * np.pi * r
            assert exposed >= 0.35 * E * 0.95


def test_bad_arguments():
    prog = concept_program("angle")
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        sample_scene(prog, 0)
    with pytest.raises(ValueError, match="max_tries"):
        sample_scene(prog, np.random.default_rng(0), max_tries=0)
    with pytest.raises(ValueError, match="no visible object"):
        sample_scene("l1* = line(p1(), p2())", np.random.default_rng(0))
    with pytest.raises(ValueError, match="line 1"):
        sample_scene("l1 = line(p1(), )", np.random.default_rng(0))


@pytest.mark.slow
def test_new_point_name_prefers_an_unnamed_intersection():
    # l1 starts at p2, which lies on c1; when l1 meets c1 a second time, p4 must be that point
    prog = parse_program("c1 = circle(p1(), p2())\nl1 = line(p2(), p3())\nl2 = line(p4(l1, c1), p5())")
    seen_second = 0
    for s in range(200):
        sc = sample_scene(prog, np.random.default_rng([13, s]), min_visible=0.0)
        p2, p4 = np.array(sc.points["p2"]), np.array(sc.points["p4"])
        # independent count of the crossings of l1 with c1 (grid sign changes + endpoint p2)
        x0, y0, x1, y1 = sc.objects["l1"][1:]
        cx, cy, r = sc.objects["c1"][1:]
        t = np.linspace(1e-6, 1, 100001)
        g = np.hypot(x0 + t * (x1 - x0) - cx, y0 + t * (y1 - y0) - cy) - r
        if np.any(np.sign(g[1:]) != np.sign(g[:-1])):
            seen_second += 1
            assert np.linalg.norm(p4 - p2) > 1e-6
            assert on_object(tuple(p4), sc.objects["c1"], 1e-9 * CANVAS * 1e3)
        else:
            np.testing.assert_allclose(p4, p2, atol=1e-9)
    assert seen_second > 20
