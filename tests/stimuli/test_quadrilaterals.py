"""Tests of gensim_jax.stimuli.quadrilaterals against independent computations and real data.

Reference data (the authors' feature table and their 224 x 224 PNG stimuli) are read from
``<repo>/../shared/reference/sable_meyer/``; tests that need them are skipped, with the reason,
when that directory is absent.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from gensim_jax.stimuli import quadrilaterals as q

REPO = Path(__file__).resolve().parents[2]
SABLE_MEYER = REPO / ".." / "shared" / "reference" / "sable_meyer"
needs_reference = pytest.mark.skipif(not SABLE_MEYER.is_dir(), reason=f"reference data not found at {SABLE_MEYER}")


# ----------------------------------------------------------------------------------------------
# independent helpers (plain Python loops, math module)
# ----------------------------------------------------------------------------------------------


def _features_by_loops(poly, t_angle, t_length):
    """The 22 bits written out from the definition, one scalar at a time."""
    (ax, ay), (bx, by), (cx, cy), (dx, dy) = [tuple(map(float, p)) for p in poly]  # A, B, B', A'
    sides = [(bx - ax, by - ay), (dx - ax, dy - ay), (cx - bx, cy - by), (cx - dx, cy - dy)]
    ab, aap, bbp, apbp = sides

    def neg(v):
        return (-v[0], -v[1])

    def angle(u, v):
        c = (u[0] * v[0] + u[1] * v[1]) / (math.hypot(*u) * math.hypot(*v))
        return math.acos(max(-1.0, min(1.0, c)))

    angles = [angle(neg(aap), ab), angle(apbp, neg(aap)), angle(neg(bbp), neg(apbp)), angle(neg(ab), bbp)]
    lengths = [math.hypot(*s) for s in sides]
    dirs = [math.atan2(s[1], s[0]) % math.pi for s in sides]
    pairs = [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2)]
    bits = [int(abs(a - math.pi / 2) < t_angle) for a in angles]
    for i, j in pairs:
        d = abs(dirs[i] - dirs[j])
        bits.append(int(min(d, math.pi - d) < t_angle))
    for i, j in pairs:
        bits.append(int(max(lengths[i], lengths[j]) / min(lengths[i], lengths[j]) - 1 < t_length))
    for i, j in pairs:
        bits.append(int(abs(angles[i] - angles[j]) < t_angle))
    return bits


def _shoelace(poly):
    x, y = np.asarray(poly, float).T
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def _clip_to_box(poly, x0, y0, x1, y1):
    """Sutherland-Hodgman clipping of a simple polygon against an axis-aligned box."""
    pts = [tuple(p) for p in poly]
    for axis, bound, keep_greater in ((0, x0, True), (0, x1, False), (1, y0, True), (1, y1, False)):

        def inside(p):
            return p[axis] >= bound if keep_greater else p[axis] <= bound

        out = []
        for k in range(len(pts)):
            cur, nxt = pts[k], pts[(k + 1) % len(pts)]
            if inside(cur):
                out.append(cur)
            if inside(cur) != inside(nxt):
                t = (bound - cur[axis]) / (nxt[axis] - cur[axis])
                out.append((cur[0] + t * (nxt[0] - cur[0]), cur[1] + t * (nxt[1] - cur[1])))
        pts = out
        if not pts:
            return []
    return pts


def _coverage_by_clipping(poly, h, w):
    img = np.zeros((h, w))
    for i in range(h):
        for j in range(w):
            clipped = _clip_to_box(poly, j, i, j + 1, i + 1)
            img[i, j] = _shoelace(clipped) if len(clipped) >= 3 else 0.0
    return img


def _segments_cross(p1, p2, p3, p4):
    def orient(a, b, c):
        return np.sign((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))

    return orient(p1, p2, p3) != orient(p1, p2, p4) and orient(p3, p4, p1) != orient(p3, p4, p2)


def _is_simple_quad(p):
    return not _segments_cross(p[0], p[1], p[2], p[3]) and not _segments_cross(p[1], p[2], p[3], p[0])


def _random_simple_polygon(rng, n_vertices, centre, radius):
    angles = np.sort(rng.uniform(0, 2 * np.pi, n_vertices))
    radii = radius * rng.uniform(0.4, 1.0, n_vertices)  # star-shaped, hence simple, maybe concave
    return centre + np.stack([radii * np.cos(angles), radii * np.sin(angles)], axis=-1)


def _reference_png(name, i, j):
    from PIL import Image  # Pillow ships with matplotlib

    path = SABLE_MEYER / "stimuli_reference" / name / f"geom_{name}_reference_{i}_{j}.png"
    return np.asarray(Image.open(path))[..., 0].astype(np.float64) / 255.0


def _csv_rows():
    with open(SABLE_MEYER / "symbolic_features.csv", newline="") as f:
        return list(csv.DictReader(f))


# ----------------------------------------------------------------------------------------------
# shapes, deviants, assets
# ----------------------------------------------------------------------------------------------


@needs_reference
def test_asset_matches_shared_shapes_json():
    shared = json.loads((SABLE_MEYER / "shapes.json").read_text())
    assert set(q.SHAPE_NAMES) == set(shared["vertices"])
    assert list(q.SHAPE_NAMES) == shared["regularity_order_most_to_least"]
    for name, (v1, v2, v3, centre) in shared["vertices"].items():
        np.testing.assert_array_equal(q.reference_vertices(name), [[0, 0], v1, v3, v2])
        np.testing.assert_allclose(q.reference_vertices(name).mean(0), centre, atol=1e-4)
        assert list(q.regularities(name).values()) == shared["table1_regularities"][name]


def test_deviants_follow_the_rule():
    for name in q.SHAPE_NAMES:
        ref = q.reference_vertices(name)
        pts = [tuple(map(float, p)) for p in ref]
        dists = [math.dist(pts[a], pts[b]) for a in range(4) for b in range(a + 1, 4)]
        d = 0.3 * sum(dists) / 6
        v3, v2 = pts[2], pts[3]
        length = math.dist(v3, v2)
        u = ((v2[0] - v3[0]) / length, (v2[1] - v3[1]) / length)
        a = 0.5 * math.acos((d * d - 2 * length * length) / (2 * length * length))
        for k in range(1, 5):
            dev = q.deviant_vertices(name, k)
            np.testing.assert_array_equal(dev[[0, 1, 3]], ref[[0, 1, 3]])  # only v3 moves
            step = dev[2] - ref[2]
            assert math.hypot(*step) == pytest.approx(d, rel=1e-12)
            cos_su = (step[0] * u[0] + step[1] * u[1]) / d
            cross_us = u[0] * step[1] - u[1] * step[0]  # > 0: step is u turned by a positive angle
            if k == 1:
                assert cos_su == pytest.approx(-1.0, abs=1e-12)
            elif k == 2:
                assert cos_su == pytest.approx(1.0, abs=1e-12)
            else:
                assert cos_su == pytest.approx(math.cos(a), abs=1e-12)
                assert np.sign(cross_us) == (1 if k == 3 else -1)
            assert _is_simple_quad(dev), (name, k)
        assert _is_simple_quad(ref)
        np.testing.assert_array_equal(q.variant_vertices(name, 0), ref)
        np.testing.assert_array_equal(q.variant_vertices(name, "deviant_3"), q.deviant_vertices(name, 3))


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="unknown shape"):
        q.reference_vertices("triangle")
    with pytest.raises(ValueError, match="shape index"):
        q.reference_vertices(11)
    with pytest.raises(ValueError, match="deviant"):
        q.deviant_vertices("square", 0)
    with pytest.raises(ValueError, match="deviant"):
        q.deviant_vertices("square", 5)
    with pytest.raises(ValueError, match="unknown variant"):
        q.variant_vertices("square", "deviant_7")
    with pytest.raises(ValueError, match="MIN_IMAGE_SIZE"):
        q.render_shape("square", size=q.MIN_IMAGE_SIZE - 1)
    with pytest.raises(ValueError, match="size"):
        q.render_shape("square", size=32.5)
    with pytest.raises(ValueError, match="unknown shape"):
        q.render_shape("circle")
    with pytest.raises(ValueError, match=r"\(\.\.\., 4, 2\)"):
        q.geometric_features(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="non-zero length"):
        q.geometric_features([[0, 0], [0, 0], [1, 1], [0, 1]])
    with pytest.raises(ValueError, match="finite"):
        q.render_quadrilaterals([[0, 0], [1, 0], [1, np.nan], [0, 1]])
    with pytest.raises(ValueError, match="scale"):
        q.render_quadrilaterals(q.reference_vertices("square"), 0.0, -1.0, size=32)
    with pytest.raises(ValueError, match="polygons"):
        q.rasterize_polygons(np.zeros((2, 2, 2)), 32)
    with pytest.raises(ValueError, match="unknown shape"):
        q.sample_oddball_trials(0, shapes=["square", "oval"])
    with pytest.raises(ValueError, match="scale_range"):
        q.sample_training_stimuli(0, 4, scale_range=(1.1, 0.9))
    with pytest.raises(ValueError, match="held-out"):
        q.sample_training_stimuli(0, 4, rotation_range_deg=(4.0, 6.0), scale_range=(1.02, 1.03))
    with pytest.raises(ValueError, match="rng"):
        q.sample_training_stimuli("seed", 4)


# ----------------------------------------------------------------------------------------------
# geometric features
# ----------------------------------------------------------------------------------------------


@needs_reference
def test_features_equal_the_authors_table():
    rows = _csv_rows()
    assert list(rows[0])[2:] == list(q.FEATURE_NAMES)
    assert len(rows) == 55
    seen = set()
    for row in rows:
        expected = np.array([int(row[c]) for c in q.FEATURE_NAMES])
        got = q.geometric_features(q.variant_vertices(row["shape"], row["variant"]))
        np.testing.assert_array_equal(got, expected, err_msg=f"{row['shape']} {row['variant']}")
        seen.add(row["shape"])
    assert seen == set(q.SHAPE_NAMES)


@needs_reference
def test_documented_tolerance_window():
    """All 55 rows hold inside (4.092, 4.163) deg x (0.0087, 0.0177), and fail just outside it."""
    rows = _csv_rows()
    verts = np.stack([q.variant_vertices(r["shape"], r["variant"]) for r in rows])
    table = np.array([[int(r[c]) for c in q.FEATURE_NAMES] for r in rows])

    def matches(t_deg, t_len):
        return np.array_equal(q.geometric_features(verts, np.deg2rad(t_deg), t_len), table)

    assert matches(4.095, 0.009) and matches(4.16, 0.0175) and matches(4.125, 0.0125)
    for t_deg, t_len in [(4.085, 0.0125), (4.17, 0.0125), (4.125, 0.0085), (4.125, 0.018), (3.0, 0.02)]:
        assert not matches(t_deg, t_len), (t_deg, t_len)
    # Sable-Meyer's symbolic-model tolerances do not reproduce the GenSim authors' table
    assert not matches(np.rad2deg(0.125 * np.pi / 2), 0.125)


def test_features_match_loop_definition_on_random_quadrilaterals():
    rng = np.random.default_rng(3)
    polys = rng.uniform(-1, 1, size=(300, 4, 2))
    # a third of them built with exact regularities (so that the bits are not all zero)
    polys[:100] = q.transform_vertices(
        np.stack([q.variant_vertices(s, v) for s in range(11) for v in range(5)])[rng.integers(0, 55, 100)],
        rng.uniform(-180, 180, 100),
        rng.uniform(0.2, 5, 100),
    )
    got = q.geometric_features(polys)
    for p, g in zip(polys, got):
        assert list(g) == _features_by_loops(p, q.ANGLE_TOLERANCE_RAD, q.LENGTH_TOLERANCE)
    assert got[:100].sum() > 100  # the test exercises set bits


def test_features_invariant_to_rotation_scaling_translation_reflection():
    rng = np.random.default_rng(0)
    base = np.stack([q.variant_vertices(s, v) for s in range(11) for v in range(5)])  # (55, 4, 2)
    f0 = q.geometric_features(base)
    for _ in range(20):
        rot = rng.uniform(-360, 360, size=55)
        sc = np.exp(rng.uniform(np.log(0.05), np.log(20), size=55))
        moved = q.transform_vertices(base, rot, sc) + rng.uniform(-100, 100, size=(55, 1, 2))
        np.testing.assert_array_equal(q.geometric_features(moved), f0)
        mirrored = moved * np.array([-1.0, 1.0])
        np.testing.assert_array_equal(q.geometric_features(mirrored), f0)
    # batch shapes are kept
    assert q.geometric_features(base.reshape(11, 5, 4, 2)).shape == (11, 5, 22)


# ----------------------------------------------------------------------------------------------
# rasteriser and renderer
# ----------------------------------------------------------------------------------------------


def test_rasterizer_equals_exact_clipped_area():
    rng = np.random.default_rng(1)
    h, w = 18, 21
    polys = [
        _random_simple_polygon(rng, 4, np.array([10.3, 8.7]), 7.0),  # inside
        _random_simple_polygon(rng, 6, np.array([9.0, 9.0]), 9.5),  # concave, touches borders
        _random_simple_polygon(rng, 5, np.array([-2.0, 4.0]), 12.0),  # partly off the left/top
        _random_simple_polygon(rng, 4, np.array([19.5, 16.0]), 8.0),  # partly off right/bottom
        np.array([[3.0, 2.0], [15.0, 2.0], [15.0, 11.0], [3.0, 11.0]]),  # on grid lines
        np.array([[30.0, 2.0], [40.0, 2.0], [35.0, 9.0]]),  # entirely off the canvas
        np.array([[-40.0, -30.0], [60.0, -30.0], [60.0, 50.0], [-40.0, 50.0]]),  # covers it all
    ]
    for poly in polys:
        expected = _coverage_by_clipping(poly, h, w)
        for oriented in (poly, poly[::-1]):  # either orientation
            got = q.rasterize_polygons(oriented[None], h, w)[0]
            np.testing.assert_allclose(got, expected, atol=2e-6)


def test_rendered_area_equals_shoelace_area():
    rng = np.random.default_rng(2)
    stim = q.sample_training_stimuli(rng, 64, variants=range(5))
    for size in (224, 64):
        imgs = q.render_quadrilaterals(stim.vertices(), stim.rotation_deg, stim.scale, size)
        px = q.transform_vertices(stim.vertices(), stim.rotation_deg, stim.scale) * size / 3
        areas = np.array([_shoelace(p) for p in px])
        np.testing.assert_allclose(imgs.sum(axis=(1, 2)), areas, rtol=1e-5)
        assert imgs.min() >= 0.0 and imgs.max() <= 1.0 and imgs.dtype == np.float32
        # the shape is centred: its vertex mean maps to the canvas centre
        assert np.allclose(px.mean(axis=1), 0.0, atol=1e-9)


@needs_reference
@pytest.mark.slow
def test_renders_match_the_reference_pngs():
    """All 11 shapes x 6 scalings x 6 rotations against the authors' 224 x 224 PNGs."""
    verts, rots, scales, refs = [], [], [], []
    for name in q.SHAPE_NAMES:
        for i, s in enumerate(q.TRIAL_SCALES, start=1):
            for j, r in enumerate(q.TRIAL_ROTATIONS_DEG, start=1):
                verts.append(q.reference_vertices(name))
                rots.append(r)
                scales.append(s)
                refs.append(_reference_png(name, i, j))
    refs = np.stack(refs)
    ours = q.render_quadrilaterals(np.stack(verts), np.array(rots), np.array(scales)).astype(np.float64)
    diff = np.abs(ours - refs)
    soft_iou = np.minimum(ours, refs).sum((1, 2)) / np.maximum(ours, refs).sum((1, 2))
    # measured: mean |diff| 1.2e-4 (worst image 2.1e-4), max pixel 0.073, IoU >= 0.9985
    assert diff.mean() < 2e-4
    assert diff.mean(axis=(1, 2)).max() < 3e-4
    assert diff.max() < 0.1
    assert soft_iou.min() > 0.998
    # the opposite rotation sign would be far off: the convention is pinned down
    flipped = q.render_quadrilaterals(np.stack(verts[:36]), -np.array(rots[:36]), np.array(scales[:36]))
    assert np.abs(flipped - refs[:36]).mean(axis=(1, 2))[[0, 1, 4, 5]].min() > 10 * diff.mean(axis=(1, 2)).max()


def test_render_shape_scalar_and_batch_agree():
    one = q.render_shape("kite", "deviant_2", 15.0, 1.075, size=48)
    batch = q.render_quadrilaterals(q.variant_vertices("kite", 2)[None].repeat(3, 0), [0.0, 15.0, -5.0], 1.075, 48)
    assert one.shape == (48, 48)
    np.testing.assert_array_equal(batch[1], one)
    # chunking does not change the result
    stim = q.sample_training_stimuli(5, 20)
    px = q.transform_vertices(stim.vertices(), stim.rotation_deg, stim.scale) * 32 / 3 + 16
    np.testing.assert_array_equal(q.rasterize_polygons(px, 32, chunk=3), q.rasterize_polygons(px, 32))


# ----------------------------------------------------------------------------------------------
# trials, training sampler, disjointness, determinism
# ----------------------------------------------------------------------------------------------


def test_oddball_trials_structure():
    trials = q.oddball_test_set(seed=0, trials_per_condition=3)
    assert len(trials) == 11 * 4 * 3
    for t in range(len(trials)):
        variant = trials.variant[t]
        assert (variant != 0).sum() == 1
        assert variant[trials.deviant_position[t]] == trials.deviant[t] in (1, 2, 3, 4)
        assert sorted(trials.rotation_deg[t]) == sorted(q.TRIAL_ROTATIONS_DEG)
        assert sorted(trials.scale[t]) == sorted(q.TRIAL_SCALES)
    for s in range(11):
        for k in range(1, 5):
            assert np.sum((trials.shape == s) & (trials.deviant == k)) == 3
    images = trials.images(size=32)
    assert images.shape == (len(trials), 6, 32, 32)
    t = 7
    for item in range(6):
        expected = q.render_shape(
            int(trials.shape[t]),
            int(trials.variant[t, item]),
            trials.rotation_deg[t, item],
            trials.scale[t, item],
            size=32,
        )
        np.testing.assert_array_equal(images[t, item], expected)
    feats = trials.features()
    assert feats.shape == (len(trials), 6, 22)
    np.testing.assert_array_equal(
        feats[t, 0], q.geometric_features(q.variant_vertices(int(trials.shape[t]), int(trials.variant[t, 0])))
    )
    adults = q.oddball_test_set(seed=0, trials_per_condition=1, scales=q.TRIAL_SCALES_FRENCH_ADULTS_1)
    assert set(adults.scale.ravel()) == set(q.TRIAL_SCALES_FRENCH_ADULTS_1)


def test_determinism_given_seed():
    a, b = q.oddball_test_set(seed=11), q.oddball_test_set(seed=11)
    for field in ("shape", "deviant", "deviant_position", "variant", "rotation_deg", "scale"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    c = q.oddball_test_set(seed=12)
    assert not np.array_equal(a.rotation_deg, c.rotation_deg)
    s1 = q.sample_training_stimuli(np.random.default_rng(4), 50, variants=range(5))
    s2 = q.sample_training_stimuli(np.random.default_rng(4), 50, variants=range(5))
    for field in ("shape", "variant", "rotation_deg", "scale", "features"):
        np.testing.assert_array_equal(getattr(s1, field), getattr(s2, field))
    b1 = next(q.training_batches(9, 8, size=32))
    b2 = next(q.training_batches(9, 8, size=32))
    for key in b1:
        np.testing.assert_array_equal(b1[key], b2[key])


def test_training_sampler_metadata_and_ranges():
    stim = q.sample_training_stimuli(0, 2000, variants=range(5), rotation_range_deg=(-40, 40), scale_range=(0.8, 1.2))
    assert stim.rotation_deg.min() >= -40 and stim.rotation_deg.max() <= 40
    assert stim.scale.min() >= 0.8 and stim.scale.max() <= 1.2
    assert set(stim.shape) == set(range(11)) and set(stim.variant) == set(range(5))
    np.testing.assert_array_equal(stim.features, q.geometric_features(stim.vertices()))
    ref_only = q.sample_training_stimuli(0, 200)
    assert set(ref_only.variant) == {0}
    batch = next(q.training_batches(0, 16, size=40, shapes=["square", "random"]))
    assert batch["image"].shape == (16, 40, 40) and batch["features"].shape == (16, 22)
    assert set(batch["shape"]) <= {0, 10}


def test_training_never_produces_a_test_combination():
    """Disjointness: every test item is in the held-out region, no training draw is."""
    test = q.oddball_test_set(seed=0)
    combos = test.combinations()
    assert q.is_held_out(combos[:, 2], combos[:, 3]).all()
    adults = q.oddball_test_set(seed=1, scales=q.TRIAL_SCALES_FRENCH_ADULTS_1).combinations()
    assert q.is_held_out(adults[:, 2], adults[:, 3]).all()
    # even over a range that covers every rotation, including symmetric copies (mod 90 deg)
    train = q.sample_training_stimuli(
        1, 20000, variants=range(5), rotation_range_deg=(-180, 180), scale_range=(0.7, 1.3)
    )
    assert not q.is_held_out(train.rotation_deg, train.scale).any()
    train_set = set(zip(train.shape, train.variant, train.rotation_deg, train.scale))
    assert not train_set & set(map(tuple, combos))
    # brute-force distance to the grid, written independently of is_held_out
    grid_r = np.array(q.TRIAL_ROTATIONS_DEG)
    grid_s = np.array(q.TRIAL_SCALES + q.TRIAL_SCALES_FRENCH_ADULTS_1)
    for r, s in zip(train.rotation_deg[:2000], train.scale[:2000]):
        near_r = any(abs(r - g - 90 * m) < q.ROTATION_MARGIN_DEG for g in grid_r for m in range(-3, 4))
        near_s = any(abs(s - g) < q.SCALE_MARGIN for g in grid_s)
        assert not (near_r and near_s)
    # the held-out region is really excluded for a square's 90-degree copies
    assert q.is_held_out(95.0, 1.025) and q.is_held_out(-175.0, 0.975) and not q.is_held_out(10.0, 1.0)


def test_training_images_differ_from_test_images():
    test = q.oddball_test_set(seed=0, trials_per_condition=1)
    rng = np.random.default_rng(0)
    train = q.sample_training_stimuli(rng, 400, variants=range(5))
    # for each training draw, the test grid point nearest to it, same shape and variant
    gr = np.array(q.TRIAL_ROTATIONS_DEG)[
        np.abs(train.rotation_deg[:, None] - np.array(q.TRIAL_ROTATIONS_DEG)).argmin(1)
    ]
    gs = np.array(q.TRIAL_SCALES)[np.abs(train.scale[:, None] - np.array(q.TRIAL_SCALES)).argmin(1)]
    a = q.render_quadrilaterals(train.vertices(), train.rotation_deg, train.scale, 64)
    b = q.render_quadrilaterals(train.vertices(), gr, gs, 64)
    assert np.abs(a - b).sum(axis=(1, 2)).min() > 1.0  # at least a pixel's worth of difference
    assert len(test) == 44
