"""Tests for gensim_jax.data.augment: each op against numpy/scipy, determinism, seeds."""

import math

import numpy as np
import pytest
from scipy import ndimage

from tests._lazy import LazyModule

A = LazyModule("gensim_jax.data.augment")
tf = LazyModule("gensim_jax.data._tf", "tf")

RNG = np.random.default_rng(0)


def seeds(n, base=0):
    return [np.array([base, i], np.int64) for i in range(n)]


def test_to_float_and_normalize():
    img = np.array([[[0, 128, 255]]], np.uint8)
    np.testing.assert_allclose(A.to_float(img).numpy(), img / 255.0, rtol=1e-6)
    x = RNG.random((4, 5, 3)).astype(np.float32)
    out = A.normalize(x).numpy()
    np.testing.assert_allclose(out, (x - np.array(A.IMAGENET_MEAN)) / np.array(A.IMAGENET_STD), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="std"):
        A.normalize(x, std=(1.0, 0.0, 1.0))


@pytest.mark.parametrize("name,axis", [("random_flip_left_right", 1), ("random_flip_up_down", 0)])
def test_flips_against_numpy(name, axis):
    op = getattr(A, name)
    x = RNG.random((5, 6, 2)).astype(np.float32)
    np.testing.assert_array_equal(op(x, seeds(1)[0], p=1.0).numpy(), np.flip(x, axis))
    np.testing.assert_array_equal(op(x, seeds(1)[0], p=0.0).numpy(), x)
    jop = tf.function(lambda s: op(x, s))
    flipped = [not np.array_equal(jop(s).numpy(), x) for s in seeds(200)]
    assert 0.35 < np.mean(flipped) < 0.65
    for s in seeds(10):  # every output is either the image or its mirror
        out = op(x, s).numpy()
        assert np.array_equal(out, x) or np.array_equal(out, np.flip(x, axis))


@pytest.mark.parametrize("size", [5, 6])
def test_rotate_quarter_turns_match_rot90(size):
    x = RNG.random((size, size, 3)).astype(np.float32)
    np.testing.assert_allclose(A.rotate(x, 90.0).numpy(), np.rot90(x, 1), atol=1e-5)
    np.testing.assert_allclose(A.rotate(x, -90.0).numpy(), np.rot90(x, -1), atol=1e-5)
    np.testing.assert_allclose(A.rotate(x, 180.0).numpy(), x[::-1, ::-1], atol=1e-5)


def test_rotate_against_scipy_bilinear():
    x = ndimage.gaussian_filter(RNG.random((33, 33)), 2).astype(np.float32)
    ours = A.rotate(x[..., None], 30.0).numpy()[..., 0]
    ref = ndimage.rotate(x, 30.0, reshape=False, order=1, mode="constant", cval=0.0)
    inner = slice(8, 25)  # away from the corners that rotate out of the frame
    np.testing.assert_allclose(ours[inner, inner], ref[inner, inner], atol=1e-4)


def test_rotate_fill_value():
    x = np.zeros((9, 9, 1), np.float32)
    out = A.rotate(x, 45.0, fill_value=1.0).numpy()
    assert out[0, 0, 0] == pytest.approx(1.0)  # corner uncovered by the rotated frame
    assert out[4, 4, 0] == pytest.approx(0.0)


def test_random_rotation_angle_range():
    size = 41
    x = np.zeros((size, size, 1), np.float32)
    c = size // 2
    x[c, c + 5 : c + 18, 0] = 1.0  # a ray pointing right (angle 0)
    angles = []
    op = tf.function(lambda s: A.random_rotation(x, s, 45.0))
    for s in seeds(40, base=3):
        out = op(s).numpy()[..., 0]
        ys, xs = np.nonzero(out > 1e-6)
        w = out[ys, xs]
        dy, dx = np.sum(w * (ys - c)) / w.sum(), np.sum(w * (xs - c)) / w.sum()
        angles.append(math.degrees(math.atan2(-dy, dx)))  # counter-clockwise positive on screen
    angles = np.array(angles)
    assert np.all(np.abs(angles) <= 45.5)
    assert angles.min() < -15 and angles.max() > 15


def test_gaussian_kernel_and_blur_against_numpy():
    sigma, radius = 1.3, 3
    k = np.exp(-(np.arange(-radius, radius + 1) ** 2) / (2 * sigma**2))
    k /= k.sum()
    np.testing.assert_allclose(A.gaussian_kernel(sigma, radius).numpy(), k, rtol=1e-5)
    x = RNG.random((10, 12, 2)).astype(np.float32)
    out = A.gaussian_blur(x, sigma, 2 * radius + 1).numpy()
    pad = np.pad(x, ((radius, radius), (radius, radius), (0, 0)), mode="reflect")
    ref = np.zeros_like(x, dtype=np.float64)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            patch = pad[i : i + 2 * radius + 1, j : j + 2 * radius + 1]
            ref[i, j] = np.einsum("ijc,i,j->c", patch, k, k)
    np.testing.assert_allclose(out, ref, atol=1e-5)
    # even sizes round up to odd: kernel 6 -> radius 3
    np.testing.assert_allclose(A.gaussian_blur(x, sigma, 6).numpy(), out, atol=1e-6)


def test_random_blur_probability_and_constant_image():
    x = np.full((20, 20, 3), 0.4, np.float32)
    np.testing.assert_allclose(A.random_gaussian_blur(x, seeds(1)[0], p=1.0).numpy(), x, atol=1e-6)
    y = RNG.random((20, 20, 3)).astype(np.float32)
    op = tf.function(lambda s: A.random_gaussian_blur(y, s, p=0.5))
    blurred = [not np.allclose(op(s).numpy(), y) for s in seeds(100)]
    assert 0.3 < np.mean(blurred) < 0.7


def test_grayscale_against_numpy():
    x = RNG.random((4, 4, 3)).astype(np.float32)
    luma = x[..., 0] * 0.2989 + x[..., 1] * 0.5870 + x[..., 2] * 0.1140
    np.testing.assert_allclose(A.rgb_to_grayscale(x).numpy(), np.repeat(luma[..., None], 3, -1), atol=1e-6)
    np.testing.assert_allclose(A.random_grayscale(x, seeds(1)[0], p=0.0).numpy(), x)
    op = tf.function(lambda s: A.random_grayscale(x, s))
    gray = [np.allclose(op(s).numpy()[..., 0], op(s).numpy()[..., 1]) for s in seeds(300)]
    assert 0.13 < np.mean(gray) < 0.27  # p = 0.2
    with pytest.raises(ValueError, match="3 channels"):
        A.rgb_to_grayscale(x[..., :2])


@pytest.mark.parametrize("hw", [(32, 32), (20, 50), (64, 17)])
def test_crop_box_bounds_area_and_ratio(hw):
    h, w = hw
    areas, ratios = [], []
    box = tf.function(lambda s: A.sample_crop_box(s, h, w))
    for s in seeds(200, base=h):
        y, x, bh, bw = box(s).numpy()
        assert 0 <= y and 0 <= x and y + bh <= h and x + bw <= w and bh >= 1 and bw >= 1
        areas.append(bh * bw / (h * w))
        ratios.append(bw / bh)
    areas, ratios = np.array(areas), np.array(ratios)
    # rounding of w and h to integers loosens the bounds by about a pixel
    tol = 2.5 / min(h, w)
    assert areas.min() >= 0.08 * (1 - tol) ** 2 - 1e-9 and areas.max() <= 1.0
    assert ratios.min() >= 0.75 * (1 - 2 * tol) and ratios.max() <= 4 / 3 * (1 + 2 * tol)
    # the whole range is used (a box with ratio <= 4/3 covers at most 17 x 22 of 64 x 17)
    assert areas.max() - areas.min() > (0.6 if h == w else 0.2)


def test_crop_box_fallback_is_centred():
    # scale (0.99, 1) with ratio (2, 3) cannot fit in a square: fallback to a centred box.
    y, x, bh, bw = A.sample_crop_box(seeds(1)[0], 30, 30, scale=(0.99, 1.0), ratio=(2.0, 3.0)).numpy()
    assert (bh, bw) == (15, 30) and (y, x) == (7, 0)


def test_random_resized_crop_matches_crop_then_bilinear_on_ramp():
    h, w, size = 37, 29, (11, 13)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    ramp = np.stack([yy, xx], -1)
    for s in seeds(8, base=5):
        y0, x0, bh, bw = A.sample_crop_box(s, h, w).numpy()
        out = A.random_resized_crop(ramp, s, size).numpy()
        # bilinear resampling with half-pixel centres is exact on a linear ramp
        sy = np.clip((np.arange(size[0]) + 0.5) * bh / size[0] - 0.5, 0, bh - 1)
        sx = np.clip((np.arange(size[1]) + 0.5) * bw / size[1] - 0.5, 0, bw - 1)
        np.testing.assert_allclose(out[..., 0], np.broadcast_to((y0 + sy)[:, None], size), atol=1e-3)
        np.testing.assert_allclose(out[..., 1], np.broadcast_to((x0 + sx)[None, :], size), atol=1e-3)


def test_center_crop_of_ramp():
    yy, xx = np.mgrid[0:64, 0:48].astype(np.float32)
    out = A.center_crop(np.stack([yy, xx], -1), (12, 12), crop_padding=4).numpy()
    side = round(12 / 16 * 48)  # 36
    y0, x0 = (64 - side + 1) // 2, (48 - side + 1) // 2
    src = np.clip((np.arange(12) + 0.5) * side / 12 - 0.5, 0, side - 1)
    np.testing.assert_allclose(out[:, 0, 0], y0 + src, atol=1e-3)
    np.testing.assert_allclose(out[0, :, 1], x0 + src, atol=1e-3)


def test_simclr_augment_224_determinism_and_range():
    img = RNG.integers(0, 256, (256, 300, 3), dtype=np.uint8)
    fn = A.simclr_augment((224, 224), grayscale_p=0.2)
    a = fn(img, np.array([1, 2])).numpy()
    b = fn(img, np.array([1, 2])).numpy()
    c = fn(img, np.array([1, 3])).numpy()
    assert a.shape == (224, 224, 3) and a.dtype == np.float32
    assert a.min() >= 0.0 and a.max() <= 1.0
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    norm = A.simclr_augment((224, 224), grayscale_p=0.2, mean=A.IMAGENET_MEAN, std=A.IMAGENET_STD)
    np.testing.assert_allclose(
        norm(img, np.array([1, 2])).numpy(), (a - np.array(A.IMAGENET_MEAN)) / np.array(A.IMAGENET_STD), atol=1e-5
    )


def test_quadrilateral_preset_on_white_canvas():
    img = np.full((48, 48, 1), 255, np.uint8)
    fn = A.simclr_augment((24, 24), rotation_deg=45.0, vertical_flip=True, fill_value=1.0, blur_p=0.0)
    for s in seeds(5):
        np.testing.assert_allclose(fn(img, s).numpy(), 1.0, atol=1e-5)


def test_validation_errors():
    with pytest.raises(ValueError, match="seed"):
        A.random_flip_left_right(np.zeros((2, 2, 1)), np.array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"\(H, W, C\)"):
        A.rotate(np.zeros((2, 2)), 10.0)
    with pytest.raises(ValueError, match="scale"):
        A.sample_crop_box(np.array([0, 0]), 8, 8, scale=(0.5, 0.2))
    with pytest.raises(ValueError, match="probability"):
        A.random_grayscale(np.zeros((2, 2, 3)), np.array([0, 0]), p=1.5)
    with pytest.raises(ValueError, match="size"):
        A.simclr_augment((0, 3))


def test_tensorflow_sees_no_gpu():
    assert tf.config.get_visible_devices("GPU") == []
