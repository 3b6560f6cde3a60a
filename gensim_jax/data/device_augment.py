"""Random image augmentations inside the jitted step: pure JAX, vectorised over the batch (no TensorFlow).

The device twin of :mod:`gensim_jax.data.augment` (the host's TensorFlow ops). The host sends
``uint8`` images at a fixed load size with one ``augment_seed`` row per example; the step draws
every random number of view ``v`` of an example from

    ``k = fold_in(fold_in(key(seed[0]), seed[1]), v)``,  ``seed = (aug_key, position)``,

the same ``(aug_key, global stream position, view)`` that keys the host's
``tf.random.experimental.stateless_split([aug_key, position], views)[v]``
(:mod:`gensim_jax.data.pipelines`), so a resumed or re-sharded run sees the same views (a view
depends on the example's global position only, never on the batch or process it lands in). The
random bits are identical across batch splits and processes; what is computed from them is equal up
to the float rounding of the compiled program: a step partitioned over other devices may vectorise
the arithmetic differently, and a pixel at a ``uint8`` rounding boundary then rounds the other way
(measured: 3 pixels of 38,400 by one level, 8 devices against 1). The
random numbers differ from TensorFlow's (threefry here, Philox there): the transforms are equal
given the same parameters, and the parameters have the same distributions (tests/data/test_device_augment.py).

Definitions followed (all as the host implements them):

* random resized crop: Szegedy et al. 2015 (Inception) as used by SimCLR (Chen et al. 2020,
  Appendix A): area fraction ``s ~ U(scale)``, aspect ratio ``r = w / h`` log-uniform in ``ratio``,
  ``w = round(sqrt(s r A))``, ``h = round(sqrt(s A / r))``, the first of 10 draws that fits, else
  the whole image with its ratio clipped, centred; offset uniform over the valid positions
  (torchvision's ``RandomResizedCrop.get_params`` samples the same way). The crop is resized
  bilinearly with half-pixel centres, without antialiasing: ``tf.image.resize(method="bilinear")``,
  i.e. output pixel ``i`` samples crop coordinate ``(i + 0.5) h / out - 0.5``, clamped to the crop.
* flips: mirror the width (height) axis with probability 1/2.
* rotation: inverse mapping about the image centre, counter-clockwise on screen, bilinear, pixels
  outside the input read ``fill_value`` (``ImageProjectiveTransformV3`` with ``fill_mode="CONSTANT"``).
* random grayscale: luma ``0.2989 R + 0.587 G + 0.114 B`` (ITU-R 601) on all 3 channels with probability p.
* Gaussian blur (SimCLR Appendix A): probability 1/2, ``sigma ~ U(0.1, 2.0)``, kernel side 10% of
  the image height, separable, reflect padding.
* colour jitter (SimCLR Appendix A, ``color_jitter`` with strength ``s``: brightness, contrast and
  saturation ``0.8 s``, hue ``0.2 s``, applied with probability 0.8 in a random order): offered by
  :func:`color_jitter` for research forks; no host preset of this project uses it (the GenSim
  paper's baselines have none), so no preset here does.

Presets (:func:`simclr_preset`): ImageNet (crop, flip, grayscale 0.2, blur), quadrilaterals
(rotation +-45 degrees on a black canvas before the crop, crop, flip, blur) and Geoclidean (crop,
flip, blur), each with the scale and probabilities of the experiment's ``objectives.simclr`` section.
The quadrilaterals' training poses (rotation, scale of the rendered shape) are drawn when the
stimuli are rendered (:func:`gensim_jax.stimuli.quadrilaterals.sample_training_stimuli`): that stays
on the host, once per data set, not per step.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "AUGMENT_MODES",
    "SEED_KEY",
    "LUMA_WEIGHTS",
    "resolve_augment",
    "view_key",
    "sample_crop_box",
    "crop_and_resize",
    "flip_left_right",
    "flip_up_down",
    "rotate",
    "gaussian_blur",
    "rgb_to_grayscale",
    "color_jitter",
    "simclr_view",
    "DeviceAugment",
    "simclr_preset",
]

#: ``data.augment``: ``host`` (TensorFlow ops in tf.data), ``device`` (this module, in the step) or
#: ``auto`` (resolved by :func:`resolve_augment`).
AUGMENT_MODES = ("auto", "host", "device")

#: The batch entry holding each row's ``(aug_key, position)`` (int32 ``(B, 2)``).
SEED_KEY = "augment_seed"

#: ITU-R 601 luma weights (those of ``tf.image.rgb_to_grayscale`` and the host's ``rgb_to_grayscale``).
LUMA_WEIGHTS = (0.2989, 0.5870, 0.1140)

#: What ``auto`` resolves to per JAX backend (docs/performance_log.md, "Augmentation on the device").
AUTO_DEFAULT = {"cpu": "device", "gpu": "device", "tpu": "device"}


def resolve_augment(mode: str, backend: str | None = None) -> str:
    """``host`` or ``device`` for ``data.augment = mode``; ``auto`` picks by ``jax.default_backend()``
    (:data:`AUTO_DEFAULT`: the device everywhere. GPUs and TPUs consume images faster than a host
    augments them; on a CPU the jitted views won 6 of 8 measured rounds against TensorFlow's workers,
    with lower medians in both experiments measured, docs/performance_log.md "Augmentation on the device")."""
    if mode not in AUGMENT_MODES:
        raise ValueError(f"data.augment must be one of {AUGMENT_MODES}, got {mode!r}")
    if mode != "auto":
        return mode
    backend = jax.default_backend() if backend is None else backend
    return AUTO_DEFAULT.get(backend, "device")


def _check_images(images, name: str = "images", require_uint8: bool = False) -> jax.Array:
    images = jnp.asarray(images)
    if images.ndim != 4:
        raise ValueError(f"{name} must have shape (B, H, W, C), got {images.shape}")
    if require_uint8 and images.dtype != jnp.uint8:
        raise ValueError(f"{name} must be uint8 in [0, 255] (the host's load format), got dtype {images.dtype}")
    if not (images.dtype == jnp.uint8 or jnp.issubdtype(images.dtype, jnp.floating)):
        raise ValueError(f"{name} must be uint8 or floating, got dtype {images.dtype}")
    return images


def _as_unit_float(images) -> jax.Array:
    """``uint8`` -> float32 ``/ 255``; float images as float32 (assumed in ``[0, 1]``)."""
    if images.dtype == jnp.uint8:
        return images.astype(jnp.float32) / 255.0
    return images.astype(jnp.float32)


def view_key(seed, view: int) -> jax.Array:
    """The key of view ``view`` of the example with ``seed = (aug_key, position)`` (int ``(2,)``):
    ``fold_in(fold_in(key(aug_key), position), view)``."""
    seed = jnp.asarray(seed)
    k = jax.random.key(seed[0].astype(jnp.uint32))
    return jax.random.fold_in(jax.random.fold_in(k, seed[1].astype(jnp.uint32)), view)


# --------------------------------------------------------------------------------------------
# Parameters of one example (scalar keys; vmap over a batch)
# --------------------------------------------------------------------------------------------


def sample_crop_box(key, height: int, width: int, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3), attempts: int = 10):
    """Inception crop box ``(y, x, h, w)`` (int32 ``(4,)``) of a ``height x width`` image (see module docstring).

    Mirrors :func:`gensim_jax.data.augment.sample_crop_box` draw for draw: ``s ~ U(scale) A``,
    ``log r ~ U(log ratio)``, ``w = round(sqrt(s r))``, ``h = round(sqrt(s / r))``, the first of
    ``attempts`` boxes that fits, else the centred whole image with its ratio clipped into ``ratio``;
    offsets ``floor(u (H - h + 1))`` with ``u ~ U(0, 1)``.
    """
    if not 0 < scale[0] <= scale[1] <= 1:
        raise ValueError(f"scale must satisfy 0 < min <= max <= 1, got {scale}")
    if not 0 < ratio[0] <= ratio[1]:
        raise ValueError(f"ratio must satisfy 0 < min <= max, got {ratio}")
    k_area, k_ratio, k_off = jax.random.split(key, 3)
    hf, wf = float(height), float(width)
    s = jax.random.uniform(k_area, (attempts,), jnp.float32, scale[0], scale[1]) * (hf * wf)
    r = jnp.exp(jax.random.uniform(k_ratio, (attempts,), jnp.float32, math.log(ratio[0]), math.log(ratio[1])))
    w = jnp.round(jnp.sqrt(s * r))
    h = jnp.round(jnp.sqrt(s / r))
    ok = (w >= 1) & (h >= 1) & (w <= wf) & (h <= hf)
    first = jnp.argmax(ok)
    any_ok = jnp.any(ok)
    in_ratio = wf / hf
    fw = wf if ratio[0] <= in_ratio <= ratio[1] or in_ratio < ratio[0] else float(round(hf * ratio[1]))
    fh = float(round(wf / ratio[0])) if in_ratio < ratio[0] else hf
    bh = jnp.where(any_ok, h[first], fh).astype(jnp.int32)
    bw = jnp.where(any_ok, w[first], fw).astype(jnp.int32)
    u = jax.random.uniform(k_off, (2,), jnp.float32)
    y = jnp.floor(u[0] * (height - bh + 1).astype(jnp.float32)).astype(jnp.int32)
    x = jnp.floor(u[1] * (width - bw + 1).astype(jnp.float32)).astype(jnp.int32)
    y = jnp.where(any_ok, jnp.minimum(y, height - bh), (height - bh) // 2)
    x = jnp.where(any_ok, jnp.minimum(x, width - bw), (width - bw) // 2)
    return jnp.stack([y, x, bh, bw])


def _coin(key, p: float) -> jax.Array:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability must be in [0, 1], got {p}")
    return jax.random.uniform(key, (), jnp.float32) < p


# --------------------------------------------------------------------------------------------
# Transforms of one image (H, W, C) float32 with given parameters (vmap over a batch)
# --------------------------------------------------------------------------------------------


def _axis_taps(start, length, size: int, out: int):
    """Source rows (lower, upper) and weights of a half-pixel-centre bilinear resize of ``[start, start + length)``
    to ``out`` samples (``tf.image.resize`` bilinear, ``half_pixel_centers=True``)."""
    length = jnp.asarray(length, jnp.float32)
    c = (jnp.arange(out, dtype=jnp.float32) + 0.5) * (length / out) - 0.5
    f = jnp.floor(c)
    frac = c - f
    top = jnp.maximum(length - 1.0, 0.0)
    lo = jnp.clip(f, 0.0, top)
    hi = jnp.clip(f + 1.0, 0.0, top)
    start = jnp.asarray(start, jnp.int32)
    lo_i = jnp.clip(start + lo.astype(jnp.int32), 0, size - 1)
    hi_i = jnp.clip(start + hi.astype(jnp.int32), 0, size - 1)
    return lo_i, hi_i, frac


def crop_and_resize(image, box, size: Sequence[int]) -> jax.Array:
    """The crop ``box = (y, x, h, w)`` of ``image`` ``(H, W, C)`` resized bilinearly to ``size`` (float32).

    Equals ``tf.image.resize(tf.image.crop_to_bounding_box(image, y, x, h, w), size, "bilinear")``
    (half-pixel centres, no antialiasing) up to float rounding; a gather, so ``box`` may be traced.
    """
    image = jnp.asarray(image)
    if image.ndim != 3:
        raise ValueError(f"image must have shape (H, W, C), got {image.shape}")
    x = image.astype(jnp.float32)
    H, W = image.shape[0], image.shape[1]
    oh, ow = int(size[0]), int(size[1])
    y0, y1, fy = _axis_taps(box[0], box[2], H, oh)
    x0, x1, fx = _axis_taps(box[1], box[3], W, ow)
    rows = x[y0] * (1.0 - fy)[:, None, None] + x[y1] * fy[:, None, None]  # (oh, W, C)
    return rows[:, x0] * (1.0 - fx)[None, :, None] + rows[:, x1] * fx[None, :, None]


def flip_left_right(image, flip) -> jax.Array:
    """``image[:, ::-1]`` where ``flip`` (a traced bool), else ``image``."""
    return jnp.where(flip, jnp.flip(image, axis=1), image)


def flip_up_down(image, flip) -> jax.Array:
    """``image[::-1]`` where ``flip``, else ``image``."""
    return jnp.where(flip, jnp.flip(image, axis=0), image)


def rotate(image, angle_deg, fill_value: float = 0.0) -> jax.Array:
    """``image`` ``(H, W, C)`` turned ``angle_deg`` degrees counter-clockwise on screen about its centre (float32).

    Output pixel ``(i, j)`` (column ``x = j``, row ``y = i``) reads the input at
    ``(c x - s y + x0, s x + c y + y0)`` with ``c, s = cos, sin(angle)`` and the offsets that keep
    the centre ``((W - 1) / 2, (H - 1) / 2)`` fixed: the host's
    :func:`gensim_jax.data.augment.rotate` (``ImageProjectiveTransformV3``, bilinear,
    ``fill_mode="CONSTANT"``: each of the 4 neighbours outside the input reads ``fill_value``).
    """
    x = jnp.asarray(image).astype(jnp.float32)
    H, W = x.shape[0], x.shape[1]
    a = jnp.asarray(angle_deg, jnp.float32) * (math.pi / 180.0)
    c, s = jnp.cos(a), jnp.sin(a)
    cy, cx = (H - 1.0) / 2.0, (W - 1.0) / 2.0
    x_off = cx - c * cx + s * cy
    y_off = cy - s * cx - c * cy
    jj = jnp.arange(W, dtype=jnp.float32)[None, :]
    ii = jnp.arange(H, dtype=jnp.float32)[:, None]
    src_x = c * jj - s * ii + x_off
    src_y = s * jj + c * ii + y_off
    x_f, y_f = jnp.floor(src_x), jnp.floor(src_y)
    out = jnp.zeros(x.shape, jnp.float32)
    for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
        yy, xx = y_f + dy, x_f + dx
        wy = (src_y - y_f) if dy else (y_f + 1.0 - src_y)
        wx = (src_x - x_f) if dx else (x_f + 1.0 - src_x)
        inside = (yy >= 0) & (yy < H) & (xx >= 0) & (xx < W)
        v = x[jnp.clip(yy, 0, H - 1).astype(jnp.int32), jnp.clip(xx, 0, W - 1).astype(jnp.int32)]
        v = jnp.where(inside[..., None], v, jnp.float32(fill_value))
        out = out + (wy * wx)[..., None] * v
    return out


def _gaussian_weights(sigma, radius: int) -> jax.Array:
    k = jnp.arange(-radius, radius + 1, dtype=jnp.float32)
    w = jnp.exp(-jnp.square(k) / (2.0 * jnp.square(jnp.asarray(sigma, jnp.float32))))
    return w / jnp.sum(w)


def gaussian_blur(image, sigma, kernel_size: int) -> jax.Array:
    """Separable Gaussian blur of ``image`` ``(H, W, C)``: weights ``exp(-k^2 / (2 sigma^2))`` normalised,
    ``k = -r..r`` with ``r = kernel_size // 2``, reflect padding (the host's :func:`gensim_jax.data.augment.gaussian_blur`).

    ``sigma`` may be traced; ``kernel_size`` is static (``H, W > r`` for the reflection).
    """
    x = jnp.asarray(image).astype(jnp.float32)
    radius = int(kernel_size) // 2
    if radius == 0:
        return x
    H, W = x.shape[0], x.shape[1]
    if radius >= min(H, W):
        raise ValueError(f"kernel_size {kernel_size} is too large for a {H} x {W} image (reflect padding)")
    w = _gaussian_weights(sigma, radius)
    p = jnp.pad(x, ((radius, radius), (0, 0), (0, 0)), mode="reflect")
    x = sum(w[k] * p[k : k + H] for k in range(2 * radius + 1))
    p = jnp.pad(x, ((0, 0), (radius, radius), (0, 0)), mode="reflect")
    return sum(w[k] * p[:, k : k + W] for k in range(2 * radius + 1))


def rgb_to_grayscale(image) -> jax.Array:
    """Luma (:data:`LUMA_WEIGHTS`) repeated on the 3 channels of ``image`` ``(..., 3)`` (float32)."""
    x = jnp.asarray(image).astype(jnp.float32)
    if x.shape[-1] != 3:
        raise ValueError(f"rgb_to_grayscale needs 3 channels, got {x.shape[-1]}")
    y = jnp.sum(x * jnp.asarray(LUMA_WEIGHTS, jnp.float32), axis=-1, keepdims=True)
    return jnp.broadcast_to(y, x.shape)


def _rgb_to_hsv(x):
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    v = jnp.max(x, axis=-1)
    mn = jnp.min(x, axis=-1)
    d = v - mn
    s = jnp.where(v > 0, d / jnp.where(v > 0, v, 1.0), 0.0)
    dd = jnp.where(d > 0, d, 1.0)
    h = jnp.where(v == r, (g - b) / dd, jnp.where(v == g, 2.0 + (b - r) / dd, 4.0 + (r - g) / dd))
    h = jnp.where(d > 0, (h / 6.0) % 1.0, 0.0)
    return h, s, v


def _hsv_to_rgb(h, s, v):
    i = jnp.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    i = i.astype(jnp.int32) % 6
    r = jnp.choose(i, [v, q, p, p, t, v], mode="clip")
    g = jnp.choose(i, [t, v, v, q, p, p], mode="clip")
    b = jnp.choose(i, [p, p, t, v, v, q], mode="clip")
    return jnp.stack([r, g, b], axis=-1)


def color_jitter(image, key, strength: float = 1.0, p: float = 0.8) -> jax.Array:
    """SimCLR's colour distortion (Chen et al. 2020, Appendix A): with probability ``p``, brightness
    (``x * U[1 - 0.8 s, 1 + 0.8 s]``), contrast (``(x - mean) * U[...] + mean``, mean of the luma),
    saturation (blend with the luma by ``U[1 - 0.8 s, 1 + 0.8 s]``) and hue (shift by
    ``U[-0.2 s, 0.2 s]`` of a turn in HSV) in a uniformly random order, clipped to ``[0, 1]``.

    ``image``: float ``(H, W, 3)`` in ``[0, 1]``. Not used by the presets (the host has no colour jitter).
    """
    x = jnp.asarray(image).astype(jnp.float32)
    if x.shape[-1] != 3:
        raise ValueError(f"color_jitter needs 3 channels, got {x.shape[-1]}")
    k_apply, k_order, kb, kc, ks, kh = jax.random.split(key, 6)
    b, c, sat = (jax.random.uniform(k, (), jnp.float32, 1 - 0.8 * strength, 1 + 0.8 * strength) for k in (kb, kc, ks))
    hue = jax.random.uniform(kh, (), jnp.float32, -0.2 * strength, 0.2 * strength)

    def luma(z):
        return jnp.sum(z * jnp.asarray(LUMA_WEIGHTS, jnp.float32), axis=-1, keepdims=True)

    def hue_shift(z):
        h, s, v = _rgb_to_hsv(z)
        return _hsv_to_rgb((h + hue) % 1.0, s, v)

    ops = (
        lambda z: jnp.clip(z * b, 0.0, 1.0),
        lambda z: jnp.clip((z - jnp.mean(luma(z))) * c + jnp.mean(luma(z)), 0.0, 1.0),
        lambda z: jnp.clip((z - luma(z)) * sat + luma(z), 0.0, 1.0),
        lambda z: jnp.clip(hue_shift(z), 0.0, 1.0),
    )
    order = jax.random.permutation(k_order, 4)
    y = x
    for slot in range(4):
        y = jax.lax.switch(order[slot], ops, y)
    return jnp.where(_coin(k_apply, p), y, x)


# --------------------------------------------------------------------------------------------
# The SimCLR view and the step's augmentation
# --------------------------------------------------------------------------------------------


def simclr_view(
    image,
    key,
    size: Sequence[int],
    *,
    crop_scale=(0.08, 1.0),
    crop_ratio=(3 / 4, 4 / 3),
    flip: bool = True,
    vertical_flip: bool = False,
    rotation_deg: float = 0.0,
    fill_value: float = 0.0,
    grayscale_p: float = 0.0,
    blur_p: float = 0.5,
    blur_sigma=(0.1, 2.0),
    blur_fraction: float = 0.1,
) -> jax.Array:
    """One SimCLR view of ``image`` ``(H, W, C)`` (uint8 or float in [0, 1]) from ``key``: float32 ``(size..., C)`` in ``[0, 1]``.

    The order and the sub-keys of :func:`gensim_jax.data.augment.simclr_augment`: ``split(key, 6)``
    gives rotation, crop, horizontal flip, vertical flip, grayscale and blur their own key (the host
    splits its seed into 6 the same way); rotation (``rotation_deg > 0``) before the crop, then
    flips, grayscale, blur, a final clip to ``[0, 1]``.
    """
    x = _as_unit_float(jnp.asarray(image))
    ks = jax.random.split(key, 6)
    if rotation_deg:
        angle = jax.random.uniform(ks[0], (), jnp.float32, -rotation_deg, rotation_deg)
        x = rotate(x, angle, fill_value)
    box = sample_crop_box(ks[1], x.shape[0], x.shape[1], crop_scale, crop_ratio)
    x = crop_and_resize(x, box, size)
    if flip:
        x = flip_left_right(x, _coin(ks[2], 0.5))
    if vertical_flip:
        x = flip_up_down(x, _coin(ks[3], 0.5))
    if grayscale_p and x.shape[-1] == 3:
        x = jnp.where(_coin(ks[4], grayscale_p), rgb_to_grayscale(x), x)
    if blur_p:
        k_sigma, k_coin = jax.random.split(ks[5], 2)
        sigma = jax.random.uniform(k_sigma, (), jnp.float32, blur_sigma[0], blur_sigma[1])
        ksize = max(int(round(blur_fraction * int(size[0]))), 1)
        x = jnp.where(_coin(k_coin, blur_p), gaussian_blur(x, sigma, ksize), x)
    return jnp.clip(x, 0.0, 1.0)


def _to_uint8(x) -> jax.Array:
    """``[0, 1]`` floats -> uint8, rounded half to even (``np.rint``, as the host's ``to_uint8``)."""
    return jnp.clip(jnp.round(x * 255.0), 0, 255).astype(jnp.uint8)


@dataclasses.dataclass(frozen=True)
class DeviceAugment:
    """The augmentation a jitted step applies to its batch (hashable: a static argument of the jit).

    The step receives ``batch[input_key]`` ``uint8 (B, H, W, C)`` at the load size and
    ``batch["augment_seed"]`` int ``(B, 2)`` = ``(aug_key, global position)``; :meth:`__call__`
    replaces them by ``len(output_keys)`` views ``uint8 (B, size..., C)`` (view ``v`` keyed by
    :func:`view_key` ``(seed, v)``), rounded to ``uint8`` as the host's views are, so the step's
    normalisation (:func:`gensim_jax.training.step.normalize_inputs`) treats both alike.

    Fields are those of :func:`simclr_view`; ``output_keys`` name the views (``("view1", "view2")``).
    """

    size: tuple = (224, 224)
    crop_scale: tuple = (0.08, 1.0)
    crop_ratio: tuple = (3 / 4, 4 / 3)
    flip: bool = True
    vertical_flip: bool = False
    rotation_deg: float = 0.0
    fill_value: float = 0.0
    grayscale_p: float = 0.0
    blur_p: float = 0.5
    blur_sigma: tuple = (0.1, 2.0)
    blur_fraction: float = 0.1
    input_key: str = "image"
    output_keys: tuple = ("view1", "view2")

    def __post_init__(self):
        size = tuple(int(s) for s in self.size)
        if len(size) != 2 or min(size) <= 0:
            raise ValueError(f"size must be (height, width) with positive entries, got {self.size}")
        object.__setattr__(self, "size", size)
        for name in ("crop_scale", "crop_ratio", "blur_sigma", "output_keys"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if not 0 < self.crop_scale[0] <= self.crop_scale[1] <= 1:
            raise ValueError(f"crop_scale must satisfy 0 < min <= max <= 1, got {self.crop_scale}")
        if not 0 < self.crop_ratio[0] <= self.crop_ratio[1]:
            raise ValueError(f"crop_ratio must satisfy 0 < min <= max, got {self.crop_ratio}")
        for name in ("grayscale_p", "blur_p"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.rotation_deg < 0:
            raise ValueError(f"rotation_deg must be non-negative, got {self.rotation_deg}")
        if not self.output_keys:
            raise ValueError("output_keys must name at least one view")

    def _kwargs(self) -> dict:
        names = ("crop_scale", "crop_ratio", "flip", "vertical_flip", "rotation_deg", "fill_value")
        names += ("grayscale_p", "blur_p", "blur_sigma", "blur_fraction")
        return {k: getattr(self, k) for k in names}

    def views(self, images, seeds, view: int) -> jax.Array:
        """View ``view`` of every row: ``images`` uint8 ``(B, H, W, C)``, ``seeds`` int ``(B, 2)`` -> uint8 ``(B, size..., C)``."""
        images = _check_images(images, require_uint8=True)
        seeds = jnp.asarray(seeds)
        if seeds.shape != (images.shape[0], 2) or not jnp.issubdtype(seeds.dtype, jnp.integer):
            raise ValueError(
                f"{SEED_KEY} must be integers of shape (B, 2) = ({images.shape[0]}, 2) (aug_key, position), "
                f"got {seeds.dtype} {seeds.shape}"
            )
        kw = self._kwargs()

        def one(image, seed):
            return _to_uint8(simclr_view(image, view_key(seed, view), self.size, **kw))

        return jax.vmap(one)(images, seeds)

    def __call__(self, batch: Mapping[str, jax.Array]) -> dict:
        """``batch`` with ``input_key`` and ``augment_seed`` replaced by the views ``output_keys``."""
        for k in (self.input_key, SEED_KEY):
            if k not in batch:
                raise ValueError(f"device augmentation needs batch[{k!r}]; the batch has keys {sorted(batch)}")
        out = {k: v for k, v in batch.items() if k not in (self.input_key, SEED_KEY)}
        for v, name in enumerate(self.output_keys):
            out[name] = self.views(batch[self.input_key], batch[SEED_KEY], v)
        return out

    def input_spec(self, load_shape: Sequence[int]) -> dict:
        """``{key: (per-example shape, dtype)}`` of what the host sends: the uint8 image at ``load_shape``
        ``(H, W, C)`` and the seed row."""
        return {self.input_key: (tuple(int(s) for s in load_shape), np.uint8), SEED_KEY: ((2,), np.int32)}


def simclr_preset(kind: str, image_size: int, simclr) -> DeviceAugment:
    """The device twin of each experiment's host SimCLR views, from its ``objectives.simclr`` section.

    ``imagenet`` (imagenet_hierarchy): crop ``simclr.crop_scale``, flip, grayscale ``simclr.grayscale_p``,
    blur ``simclr.blur_p``; ``quadrilaterals``: rotation ``+-simclr.rotation_deg`` on a black canvas,
    crop, flip, blur; ``geoclidean``: crop, flip, blur (:mod:`gensim_jax.data.quadrilaterals`,
    :mod:`gensim_jax.data.geoclidean`, :mod:`gensim_jax.data.hierarchy` build the same on the host).
    """
    if kind not in ("imagenet", "quadrilaterals", "geoclidean"):
        raise ValueError(f"kind must be 'imagenet', 'quadrilaterals' or 'geoclidean', got {kind!r}")
    s = int(image_size)
    common = {"size": (s, s), "crop_scale": tuple(simclr.crop_scale), "blur_p": float(simclr.blur_p)}
    if kind == "imagenet":
        return DeviceAugment(**common, grayscale_p=float(simclr.grayscale_p))
    if kind == "quadrilaterals":
        return DeviceAugment(**common, rotation_deg=float(simclr.rotation_deg), fill_value=0.0)
    return DeviceAugment(**common)  # geoclidean
