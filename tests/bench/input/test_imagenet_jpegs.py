"""Tests for bench.input.imagenet_jpegs: determinism, pixel sizes and file sizes of the ImageNet-like JPEGs."""

import io

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the JPEGs are made from scikit-learn's sample photographs")
Image = pytest.importorskip("PIL.Image")

from bench.input import imagenet_jpegs as J  # noqa: E402


def test_each_image_is_a_function_of_seed_and_index():
    a = J.imagenet_like_jpegs(4, seed=3)
    assert a == J.imagenet_like_jpegs(4, seed=3)
    assert J.imagenet_like_jpeg(2, seed=3) == a[2]  # any order, image by image
    b = J.imagenet_like_jpegs(4, seed=4)
    assert all(x != y for x, y in zip(a, b))
    assert len(set(a)) == 4
    with pytest.raises(ValueError, match="non-negative"):
        J.imagenet_like_jpegs(-1)


def test_sample_size_matches_the_stated_distribution():
    rng = np.random.default_rng(0)
    hw = np.array([J.sample_size(rng) for _ in range(4000)], float)
    long, short = hw.max(1), hw.min(1)
    assert long.max() == 500 and long.min() >= 200 and short.min() >= 1
    # long side: 500 w.p. 0.55, else uniform on the integers 200..500 -> mean 0.55*500 + 0.45*350
    mean_long = 0.55 * 500 + 0.45 * 350
    assert abs(long.mean() - mean_long) < 4 * long.std() / np.sqrt(len(long))
    # landscape w.p. 0.7 among the non-square images (squares: aspect 1, w.p. 0.85 * 0.15)
    assert abs(np.mean(hw[:, 1] > hw[:, 0]) - 0.7 * (1 - 0.1275)) < 0.03
    # aspect within 0.02 of 4/3: the 4/3 draws (0.85 * 0.6) and 0.04 / 0.8 of the uniform ones (0.15);
    # rounding the short side moves the aspect by less than 0.01 for sides >= 200
    aspect = long / short
    assert abs(np.mean(np.abs(aspect - 4 / 3) < 0.02) - (0.51 + 0.15 * 0.04 / 0.8)) < 0.03
    assert (aspect <= 1.8 + 1e-2).all() and (aspect >= 1.0).all()


def test_jpegs_decode_to_the_sampled_size_with_imagenet_like_bytes():
    jpegs = J.imagenet_like_jpegs(24, seed=0)
    for i, data in enumerate(jpegs):
        image = Image.open(io.BytesIO(data))
        assert image.format == "JPEG" and image.mode == "RGB"
        expected = J.sample_size(np.random.default_rng([0, i]))  # the first draw of image i's generator
        assert image.size[::-1] == expected
        pixels = np.asarray(image, np.float32)
        # a photograph with fine texture: neighbouring pixels differ by several levels on average
        assert np.abs(np.diff(pixels, axis=1)).mean() > 4.0
    s = J.summary(jpegs)
    assert s["mean_kb"] == round(np.mean([len(b) for b in jpegs]) / 1e3, 1)
    # small-sample bounds around the stated means of 512 images (EXPECTED: 111 kB, 362 x 404)
    assert 80 <= s["mean_kb"] <= 145
    assert 300 <= s["mean_height"] <= 420 and 340 <= s["mean_width"] <= 460
    with pytest.raises(ValueError, match="no JPEGs"):
        J.summary([])
