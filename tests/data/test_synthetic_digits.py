"""Tests for gensim_jax.data.synthetic_digits: the offline digit / background stand-ins of seed 003."""

import numpy as np
import pytest

from gensim_jax.data.spurious_digits import load_spurious_digits, make_pools
from gensim_jax.data.synthetic_digits import DIGIT_STROKES, colour_backgrounds, render_digits, synthetic_arrays


def _segment_distance(px, py, a, b):
    """Distance from point (px, py) to segment a-b, written out with scalars."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    L = dx * dx + dy * dy
    t = 0.0 if L == 0 else max(0.0, min(1.0, ((px - a[0]) * dx + (py - a[1]) * dy) / L))
    return ((px - a[0] - t * dx) ** 2 + (py - a[1] - t * dy) ** 2) ** 0.5


@pytest.mark.slow
def test_classes_are_distinguishable_by_shape():
    from sklearn.linear_model import LogisticRegression

    y_train, y_test = np.arange(400) % 10, np.arange(200) % 10
    x_train = render_digits(y_train, seed=1).reshape(400, -1) / 255.0
    x_test = render_digits(y_test, seed=2).reshape(200, -1) / 255.0
    clf = LogisticRegression(max_iter=200).fit(x_train, y_train)
    assert clf.score(x_test, y_test) > 0.9
    # and within-class variation is real: no two images of a class are identical
    same = render_digits(np.full(20, 3), seed=0).reshape(20, -1)
    assert len({row.tobytes() for row in same}) == 20


def test_unjittered_glyph_matches_a_loop_rasterisation():
    # jitter = 0 leaves only scale (and width) random; recover both from the function's own draws is
    # not possible from outside, so compare the lit set with a brute-force raster of the clean glyph at
    # the extreme scales: every lit pixel must lie within (max width / 2 + 1) px of the glyph scaled by
    # some s in [0.8, 1.1] about the centre.
    img = render_digits(np.array([7]), seed=5, jitter=0.0)[0]
    lit = np.argwhere(img > 0)
    assert len(lit) > 20
    segs = [(s[i], s[i + 1]) for s in DIGIT_STROKES[7] for i in range(len(s) - 1)]
    for y, x in lit:
        best = min(
            _segment_distance(
                x,
                y,
                *[(4 + 20 * (0.5 + sc * (p[0] - 0.5)) - 0.5, 4 + 20 * (0.5 + sc * (p[1] - 0.5)) - 0.5) for p in ab],
            )
            for sc in np.linspace(0.8, 1.1, 13)
            for ab in segs
        )
        assert best <= 1.6 + 0.5 + 1.0


def test_digits_deterministic_and_index_stable():
    labels = np.array([0, 5, 9, 2, 2, 7])
    a = render_digits(labels, seed=3)
    np.testing.assert_array_equal(a, render_digits(labels, seed=3))
    np.testing.assert_array_equal(a[:3], render_digits(labels[:3], seed=3))  # image i depends on (seed, i)
    np.testing.assert_array_equal(a, render_digits(labels, seed=3, chunk=1))
    assert not np.array_equal(a, render_digits(labels, seed=4))
    assert a.dtype == np.uint8 and a.shape == (6, 28, 28) and a.max() == 255
    assert (a[:, :2] == 0).all() and (a[:, -2:] == 0).all()  # the digit stays inside the image


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(labels=np.array([10])), "labels must lie"),
        (dict(labels=np.array([1.0])), "integer"),
        (dict(labels=np.array([1]), seed=-1), "seed"),
        (dict(labels=np.array([1]), jitter=-0.5), "jitter"),
    ],
)
def test_render_digits_rejects_bad_input(kwargs, match):
    kwargs.setdefault("seed", 0)
    with pytest.raises(ValueError, match=match):
        render_digits(**kwargs)


def test_backgrounds_smooth_distinct_deterministic():
    bg, lab = colour_backgrounds(40, seed=7)
    assert bg.shape == (40, 32, 32, 3) and bg.dtype == np.uint8 and lab.shape == (40,)
    assert lab.min() >= 0 and lab.max() <= 9
    np.testing.assert_array_equal(bg, colour_backgrounds(40, seed=7)[0])
    np.testing.assert_array_equal(bg[:5], colour_backgrounds(5, seed=7)[0])
    assert not np.array_equal(bg, colour_backgrounds(40, seed=8)[0])
    f = bg.astype(float)
    # smooth: neighbouring pixels differ far less than pixels of different backgrounds
    local = np.abs(np.diff(f, axis=1)).mean()
    between = np.abs(f[:20] - f[20:]).mean()
    assert local < 0.25 * between
    # bright enough that a multiplied digit stays visible
    assert f.mean() > 90
    # mean colours of different backgrounds differ
    means = f.mean(axis=(1, 2))
    d = np.linalg.norm(means[:, None] - means[None], axis=-1)
    assert d[~np.eye(40, dtype=bool)].min() > 1.0


def test_synthetic_arrays_go_through_the_pool_machinery_and_carry_a_background_shortcut():
    arrays = synthetic_arrays(num_train=200, num_test=200, num_backgrounds=60, num_ood_backgrounds=10, seed=1)
    assert arrays["mnist_train"]["image"].shape == (200, 28, 28, 1)
    assert arrays["cifar10_train"]["image"].shape == (60, 32, 32, 3)
    assert arrays["cifar10_test"]["image"].shape == (10, 32, 32, 3)
    np.testing.assert_array_equal(np.bincount(arrays["mnist_test"]["label"]), np.full(10, 20))
    splits = {s: load_spurious_digits(s, per_class=2, seed=4, arrays=arrays) for s in ("train", "test_id", "test_ood")}
    pools = make_pools(60, 2, 0.0, seed=4)
    for a in range(10):  # disjoint pools
        for b in range(a + 1, 10):
            assert not set(pools[a]) & set(pools[b])
    ex = {s: src.examples(np.arange(len(src))) for s, src in splits.items()}
    assert ex["train"]["in_pool"].all() and ex["test_id"]["in_pool"].all() and not ex["test_ood"]["in_pool"].any()

    # The shortcut: classify by the mean colour seen through the stroke, label of the nearest
    # training image (1-NN) -- right in distribution, wrong after swapping pools.
    def stroke_colour(images):
        x = images.astype(float)
        ink = x.sum(-1, keepdims=True) > 0
        return (x * ink).sum((1, 2)) / np.maximum(ink.sum((1, 2)), 1)

    train_colour = stroke_colour(ex["train"]["image"])

    def colour_accuracy(split):
        c = stroke_colour(ex[split]["image"])
        nearest = np.argmin(np.linalg.norm(c[:, None] - train_colour[None], axis=-1), axis=1)
        return np.mean(ex["train"]["label"][nearest] == ex[split]["label"])

    assert colour_accuracy("test_id") > 0.6
    assert colour_accuracy("test_ood") < 0.15
    with pytest.raises(ValueError, match="num_backgrounds"):
        synthetic_arrays(num_train=10, num_test=10, num_backgrounds=0)


def test_docstring_examples():
    import doctest

    from gensim_jax.data import synthetic_digits

    result = doctest.testmod(synthetic_digits, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
