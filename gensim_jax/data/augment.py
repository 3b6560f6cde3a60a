"""Stateless image augmentations in TensorFlow ops (SimCLR / Inception style).

Every random op takes an explicit ``seed``: an int tensor of shape ``(2,)`` as used by
``tf.random.stateless_*``. The pipelines derive it from ``(seed, position, view)`` so that the
augmentation of an example is a function of its position in the stream (identical after a
restart). Images are float32 ``(H, W, C)`` in ``[0, 1]`` (use :func:`to_float`); only
:func:`normalize` leaves that range.

The augmentations of the GenSim paper's contrastive baselines (SimCLR, Chen et al. 2020,
Appendix A of that paper): random resized crop (area scale ``(0.08, 1)``, aspect ratio
``(3/4, 4/3)``), horizontal flip, Gaussian blur with a kernel of 10% of the image side and
``sigma ~ U[0.1, 2.0]``, random grayscale (``p = 0.2``, ImageNet); for quadrilaterals additionally
rotations of ``+-45`` degrees and vertical flips. :func:`simclr_augment` composes them.

This module imports TensorFlow at import time; :mod:`gensim_jax.data` loads it lazily.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from gensim_jax.data._tf import tf

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "to_float",
    "split_seed",
    "sample_crop_box",
    "random_resized_crop",
    "center_crop",
    "random_flip_left_right",
    "random_flip_up_down",
    "rotate",
    "random_rotation",
    "gaussian_kernel",
    "gaussian_blur",
    "random_gaussian_blur",
    "rgb_to_grayscale",
    "random_grayscale",
    "normalize",
    "simclr_augment",
]

#: ImageNet channel mean and standard deviation on the ``[0, 1]`` scale.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: ITU-R 601 luma weights (those of ``tf.image.rgb_to_grayscale``).
LUMA_WEIGHTS = (0.2989, 0.5870, 0.1140)


def to_float(image):
    """``uint8`` in ``[0, 255]`` -> float32 in ``[0, 1]``; float images are cast to float32."""
    image = tf.convert_to_tensor(image)
    if image.dtype == tf.uint8:
        return tf.cast(image, tf.float32) / 255.0
    return tf.cast(image, tf.float32)


def _seed(seed):
    seed = tf.convert_to_tensor(seed)
    if seed.shape.rank != 1 or (seed.shape[0] is not None and seed.shape[0] != 2):
        raise ValueError(f"seed must have shape (2,), got {seed.shape}")
    return tf.cast(seed, tf.int64)


def split_seed(seed, num: int):
    """``num`` independent ``(2,)`` seeds derived from ``seed`` (``(num, 2)`` int64)."""
    return tf.random.experimental.stateless_split(_seed(seed), num=num)


def _check_image(image, name: str = "image"):
    image = tf.convert_to_tensor(image)
    if image.shape.rank != 3:
        raise ValueError(f"{name} must have shape (H, W, C), got {image.shape}")
    return image


def sample_crop_box(seed, height, width, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3), attempts: int = 10):
    """Sample an Inception-style crop box ``(y, x, h, w)`` (Szegedy et al. 2015; SimCLR).

    Draws area fraction ``s ~ U(scale)`` and aspect ratio ``r = w / h`` log-uniform in ``ratio``,
    ``w = round(sqrt(s r A))``, ``h = round(sqrt(s A / r))``; the first of ``attempts`` draws that
    fits in the image is used, else the largest centred box whose ratio is clipped to ``ratio``.
    The offset is uniform over the valid positions.

    Args:
      seed: ``(2,)`` int seed.
      height, width: image size (scalars, may be tensors).
      scale: ``(min, max)`` area fraction, ``0 < min <= max <= 1``.
      ratio: ``(min, max)`` aspect ratio ``w / h``, ``0 < min <= max``.
      attempts: number of draws before the fallback.

    Returns:
      int32 tensor ``(4,)``: ``y, x, h, w`` with ``0 <= y``, ``y + h <= height`` (same for x).
    """
    if not 0 < scale[0] <= scale[1] <= 1:
        raise ValueError(f"scale must satisfy 0 < min <= max <= 1, got {scale}")
    if not 0 < ratio[0] <= ratio[1]:
        raise ValueError(f"ratio must satisfy 0 < min <= max, got {ratio}")
    seeds = split_seed(seed, 3)
    hf = tf.cast(height, tf.float32)
    wf = tf.cast(width, tf.float32)
    area = hf * wf
    s = tf.random.stateless_uniform([attempts], seeds[0], scale[0], scale[1]) * area
    logr = tf.random.stateless_uniform([attempts], seeds[1], math.log(ratio[0]), math.log(ratio[1]))
    r = tf.exp(logr)
    w = tf.round(tf.sqrt(s * r))
    h = tf.round(tf.sqrt(s / r))
    ok = (w >= 1) & (h >= 1) & (w <= wf) & (h <= hf)
    first = tf.argmax(tf.cast(ok, tf.int32), output_type=tf.int32)
    any_ok = tf.reduce_any(ok)
    # Fallback: whole image with the aspect ratio clipped into range, centred.
    in_ratio = wf / hf
    fw = tf.where(in_ratio < ratio[0], wf, tf.where(in_ratio > ratio[1], tf.round(hf * ratio[1]), wf))
    fh = tf.where(in_ratio < ratio[0], tf.round(wf / ratio[0]), hf)
    bh = tf.cast(tf.where(any_ok, h[first], fh), tf.int32)
    bw = tf.cast(tf.where(any_ok, w[first], fw), tf.int32)
    hi = tf.cast(height, tf.int32)
    wi = tf.cast(width, tf.int32)
    u = tf.random.stateless_uniform([2], seeds[2], 0.0, 1.0)
    y = tf.cast(tf.floor(u[0] * tf.cast(hi - bh + 1, tf.float32)), tf.int32)
    x = tf.cast(tf.floor(u[1] * tf.cast(wi - bw + 1, tf.float32)), tf.int32)
    y = tf.where(any_ok, tf.minimum(y, hi - bh), (hi - bh) // 2)
    x = tf.where(any_ok, tf.minimum(x, wi - bw), (wi - bw) // 2)
    return tf.stack([y, x, bh, bw])


def _resize(image, size: Sequence[int], method: str = "bilinear"):
    out = tf.image.resize(image, size, method=method, antialias=False)
    return tf.clip_by_value(out, 0.0, 1.0) if method == "bicubic" else out


def random_resized_crop(
    image, seed, size: Sequence[int], scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3), method: str = "bilinear"
):
    """Random resized crop (SimCLR / Inception): :func:`sample_crop_box`, then resize to ``size``.

    Args:
      image: ``(H, W, C)``, float or ``uint8``.
      seed: ``(2,)`` int seed.
      size: output ``(height, width)``.
      scale, ratio: see :func:`sample_crop_box`.
      method: ``tf.image.resize`` method.

    Returns:
      float32 ``(size[0], size[1], C)`` on the input's value scale (``[0, 255]`` for ``uint8``).
    """
    image = _check_image(image)
    shape = tf.shape(image)
    box = sample_crop_box(seed, shape[0], shape[1], scale, ratio)
    crop = tf.image.crop_to_bounding_box(image, box[0], box[1], box[2], box[3])
    out = _resize(crop, size, method)
    return tf.ensure_shape(out, [size[0], size[1], image.shape[-1]])


def center_crop(image, size: Sequence[int], crop_padding: int = 32):
    """Central crop of fraction ``size / (size + crop_padding)`` of the short side, resized to ``size``.

    The evaluation transform of the Inception/ResNet ImageNet recipe (224 from a 256 short side).
    """
    image = _check_image(image)
    shape = tf.shape(image)
    h, w = shape[0], shape[1]
    frac = size[0] / (size[0] + crop_padding)
    side = tf.cast(tf.round(frac * tf.cast(tf.minimum(h, w), tf.float32)), tf.int32)
    side = tf.maximum(side, 1)
    crop = tf.image.crop_to_bounding_box(image, (h - side + 1) // 2, (w - side + 1) // 2, side, side)
    out = _resize(crop, size)
    return tf.ensure_shape(out, [size[0], size[1], image.shape[-1]])


def _coin(seed, p: float):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability must be in [0, 1], got {p}")
    return tf.random.stateless_uniform([], _seed(seed), 0.0, 1.0) < p


def random_flip_left_right(image, seed, p: float = 0.5):
    """Mirror the width axis with probability ``p``."""
    image = _check_image(image)
    return tf.cond(_coin(seed, p), lambda: tf.reverse(image, axis=[1]), lambda: image)


def random_flip_up_down(image, seed, p: float = 0.5):
    """Mirror the height axis with probability ``p`` (quadrilaterals only)."""
    image = _check_image(image)
    return tf.cond(_coin(seed, p), lambda: tf.reverse(image, axis=[0]), lambda: image)


def rotate(image, angle_deg, fill_value: float = 0.0, method: str = "bilinear"):
    """Rotate by ``angle_deg`` degrees **counter-clockwise on screen** about the image centre.

    Output pixel ``(i, j)`` samples the input at the centre-relative position rotated by
    ``-angle`` (inverse mapping); pixels that fall outside the input take ``fill_value``.

    Args:
      image: float ``(H, W, C)``.
      angle_deg: scalar angle in degrees.
      fill_value: value of pixels uncovered by the rotated image (1.0 for a white canvas).
      method: ``"bilinear"`` or ``"nearest"``.

    Returns:
      float32 ``(H, W, C)``.
    """
    image = _check_image(image)
    image = tf.cast(image, tf.float32)
    shape = tf.shape(image)
    h = tf.cast(shape[0], tf.float32)
    w = tf.cast(shape[1], tf.float32)
    a = tf.cast(angle_deg, tf.float32) * (math.pi / 180.0)
    c, s = tf.cos(a), tf.sin(a)
    cy, cx = (h - 1.0) / 2.0, (w - 1.0) / 2.0
    # Screen coordinates have y down, so a counter-clockwise turn on screen maps an output
    # offset (dx, dy) to the input offset (c dx - s dy, s dx + c dy).
    x_off = cx - c * cx + s * cy
    y_off = cy - s * cx - c * cy
    transform = tf.stack([c, -s, x_off, s, c, y_off, 0.0, 0.0])[None]
    out = tf.raw_ops.ImageProjectiveTransformV3(
        images=image[None],
        transforms=transform,
        output_shape=shape[:2],
        fill_value=tf.cast(fill_value, tf.float32),
        interpolation=method.upper(),
        fill_mode="CONSTANT",
    )
    return tf.ensure_shape(out[0], image.shape)


def random_rotation(image, seed, max_deg: float = 45.0, fill_value: float = 0.0):
    """Rotate by an angle drawn uniformly from ``[-max_deg, max_deg]`` (see :func:`rotate`)."""
    if max_deg < 0:
        raise ValueError(f"max_deg must be non-negative, got {max_deg}")
    angle = tf.random.stateless_uniform([], _seed(seed), -max_deg, max_deg)
    return rotate(image, angle, fill_value=fill_value)


def gaussian_kernel(sigma, radius: int):
    """Normalised 1-D Gaussian weights ``exp(-k^2 / (2 sigma^2))``, ``k = -radius..radius``."""
    if radius < 0:
        raise ValueError(f"radius must be non-negative, got {radius}")
    k = tf.range(-radius, radius + 1, dtype=tf.float32)
    sigma = tf.cast(sigma, tf.float32)
    w = tf.exp(-tf.square(k) / (2.0 * tf.square(sigma)))
    return w / tf.reduce_sum(w)


def gaussian_blur(image, sigma, kernel_size: int):
    """Separable Gaussian blur with reflect padding.

    Args:
      image: float ``(H, W, C)`` with ``H, W > kernel_size // 2``.
      sigma: scalar standard deviation in pixels (> 0).
      kernel_size: kernel side; an even size is rounded up to the next odd one.

    Returns:
      float32 ``(H, W, C)``.
    """
    image = _check_image(image)
    radius = int(kernel_size) // 2
    if radius == 0:
        return tf.cast(image, tf.float32)
    w = gaussian_kernel(sigma, radius)
    channels = image.shape[-1]
    x = tf.cast(image, tf.float32)[None]
    x = tf.pad(x, [[0, 0], [radius, radius], [radius, radius], [0, 0]], mode="REFLECT")
    kv = tf.tile(tf.reshape(w, [-1, 1, 1, 1]), [1, 1, channels, 1])
    kh = tf.tile(tf.reshape(w, [1, -1, 1, 1]), [1, 1, channels, 1])
    x = tf.nn.depthwise_conv2d(x, kv, strides=[1, 1, 1, 1], padding="VALID")
    x = tf.nn.depthwise_conv2d(x, kh, strides=[1, 1, 1, 1], padding="VALID")
    return tf.ensure_shape(x[0], image.shape)


def random_gaussian_blur(image, seed, p: float = 0.5, sigma_range=(0.1, 2.0), kernel_fraction: float = 0.1):
    """SimCLR blur: with probability ``p``, :func:`gaussian_blur` with ``sigma ~ U(sigma_range)``
    and a kernel of ``kernel_fraction`` of the image height (SimCLR: 10%)."""
    image = _check_image(image)
    if image.shape[0] is None:
        raise ValueError("random_gaussian_blur needs a static image height")
    seeds = split_seed(seed, 2)
    sigma = tf.random.stateless_uniform([], seeds[0], sigma_range[0], sigma_range[1])
    ksize = max(int(round(kernel_fraction * image.shape[0])), 1)
    image = tf.cast(image, tf.float32)
    return tf.cond(_coin(seeds[1], p), lambda: gaussian_blur(image, sigma, ksize), lambda: image)


def rgb_to_grayscale(image):
    """Luma ``0.2989 R + 0.587 G + 0.114 B`` repeated over 3 channels (shape preserved)."""
    image = _check_image(image)
    if image.shape[-1] != 3:
        raise ValueError(f"rgb_to_grayscale needs 3 channels, got {image.shape[-1]}")
    y = tf.reduce_sum(tf.cast(image, tf.float32) * tf.constant(LUMA_WEIGHTS), axis=-1, keepdims=True)
    return tf.tile(y, [1, 1, 3])


def random_grayscale(image, seed, p: float = 0.2):
    """Convert to grayscale (3 channels kept) with probability ``p``; 1-channel images pass through."""
    image = _check_image(image)
    if image.shape[-1] == 1:
        return tf.cast(image, tf.float32)
    image = tf.cast(image, tf.float32)
    return tf.cond(_coin(seed, p), lambda: rgb_to_grayscale(image), lambda: image)


def normalize(image, mean: Sequence[float] = IMAGENET_MEAN, std: Sequence[float] = IMAGENET_STD):
    """``(image - mean) / std`` per channel (``mean``/``std`` of length ``C`` or 1)."""
    image = _check_image(image)
    std_arr = np.asarray(std, np.float32)
    if (std_arr <= 0).any():
        raise ValueError(f"std must be positive, got {std}")
    return (tf.cast(image, tf.float32) - tf.constant(mean, tf.float32)) / tf.constant(std_arr)


def simclr_augment(
    size: Sequence[int],
    *,
    crop_scale=(0.08, 1.0),
    flip: bool = True,
    blur_p: float = 0.5,
    grayscale_p: float = 0.0,
    vertical_flip: bool = False,
    rotation_deg: float = 0.0,
    fill_value: float = 0.0,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
) -> Callable:
    """Compose the SimCLR-style view augmentation: ``fn(image, seed) -> float32 (size..., C)``.

    Order: rotation (if ``rotation_deg``), random resized crop, horizontal flip, vertical flip,
    grayscale, blur, normalisation. Presets: ImageNet ``grayscale_p=0.2, mean/std=IMAGENET_*``;
    quadrilaterals ``rotation_deg=45, vertical_flip=True, fill_value=1.0`` (white canvas).

    Args:
      size: output ``(height, width)``.
      crop_scale: area range of the crop.
      flip: random horizontal flip (p = 0.5).
      blur_p: probability of the Gaussian blur (0 disables it).
      grayscale_p: probability of grayscale (0 disables it).
      vertical_flip: random vertical flip (p = 0.5).
      rotation_deg: maximum absolute rotation in degrees (0 disables it).
      fill_value: fill of pixels uncovered by rotation.
      mean, std: if given, :func:`normalize` with them.

    Returns:
      A function ``(image, seed) -> image``; ``image`` is ``uint8`` or float ``(H, W, C)``.
    """
    size = tuple(int(s) for s in size)
    if len(size) != 2 or min(size) <= 0:
        raise ValueError(f"size must be (height, width) with positive entries, got {size}")

    def fn(image, seed):
        image = _check_image(image)
        seeds = split_seed(seed, 6)
        if rotation_deg:
            x = random_rotation(to_float(image), seeds[0], rotation_deg, fill_value=fill_value)
            x = random_resized_crop(x, seeds[1], size, scale=crop_scale)
        else:
            # Crop before converting, then resize (which returns float32) and rescale: the same
            # values as converting first, with less work on large inputs.
            x = random_resized_crop(image, seeds[1], size, scale=crop_scale)
            if image.dtype == tf.uint8:
                x = x / 255.0
        if flip:
            x = random_flip_left_right(x, seeds[2])
        if vertical_flip:
            x = random_flip_up_down(x, seeds[3])
        if grayscale_p:
            x = random_grayscale(x, seeds[4], grayscale_p)
        if blur_p:
            x = random_gaussian_blur(x, seeds[5], blur_p)
        x = tf.clip_by_value(x, 0.0, 1.0)
        if mean is not None or std is not None:
            x = normalize(x, mean if mean is not None else (0.0,), std if std is not None else (1.0,))
        return x

    return fn
