"""Offline stand-ins for MNIST and CIFAR-10 in the spurious-digits data set (seed 003, Sec. 3.1).

The thesis of seed 003 multiplies MNIST digits onto CIFAR-10 backgrounds
(:mod:`gensim_jax.data.spurious_digits`). Both come from tensorflow-datasets, which needs a
download. This module makes procedural replacements, numpy only, so that the whole experiment
runs on a machine without network access:

* :func:`render_digits` -- **not MNIST**: ten hand-designed stroke glyphs ("0" to "9": polylines
  and elliptic arcs in a unit box) with per-image random control-point wobble, random affine
  jitter (rotation, anisotropic scale, shear, translation) and a random pen width, rasterised with
  an anti-aliased distance-to-stroke profile into ``28 x 28`` uint8 images, white strokes on black
  like MNIST. The classes are separable by shape alone but vary from image to image; they are
  simpler than handwriting (no style changes within a class beyond the jitter).
* :func:`colour_backgrounds` -- **not CIFAR-10**: ``32 x 32`` RGB fields, each the blend of two
  random bright colours through a smooth random mask (bilinearly upsampled ``4 x 4`` noise) plus
  fine pixel texture. Every background has its own colours, so -- exactly as with CIFAR images --
  the colour seen through a digit's stroke identifies the background and hence (through the
  per-digit pools) the label: a shortcut a network can take instead of the shape. Its "label" is
  the hue bin (``0..9``) of the mean colour, standing in for the CIFAR-10 class.
* :func:`synthetic_arrays` -- both, in the ``{"mnist_train", "mnist_test", "cifar10_train",
  "cifar10_test"}`` layout that :func:`~gensim_jax.data.spurious_digits.load_spurious_digits`
  takes as ``arrays=``, so pools, composition and the ID / OOD splits are the very same code as
  with the real data sets.

Determinism: image ``i`` of a call depends only on ``(seed, i)`` (and the label / size
arguments), never on how many images are drawn: every random number is a
:func:`~gensim_jax.data.indexing.stateless_uniform` of ``(seed, stream, i)``.
"""

from __future__ import annotations

import numpy as np

from gensim_jax.data.indexing import derive_key, stateless_uniform

__all__ = ["DIGIT_STROKES", "colour_backgrounds", "digit_strokes", "render_digits", "synthetic_arrays"]

_DIGIT_TAG, _BG_TAG = 41, 42
_ARC_POINTS = 10


def _arc(cx, cy, rx, ry, t0, t1, n=_ARC_POINTS):
    """Points of an elliptic arc; angles in degrees, image coordinates (y down: 90 = bottom)."""
    t = np.deg2rad(np.linspace(t0, t1, n))
    return np.stack([cx + rx * np.cos(t), cy + ry * np.sin(t)], axis=1)


def _line(*points):
    return np.asarray(points, dtype=np.float64)


def digit_strokes() -> tuple[tuple[np.ndarray, ...], ...]:
    """The ten glyphs as polylines: ``strokes[d]`` is a tuple of ``(K, 2)`` ``(x, y)`` arrays.

    Coordinates lie in the unit box (x right, y down); a polyline joins consecutive points.
    """
    return (
        (_arc(0.5, 0.5, 0.24, 0.37, 0, 360, 2 * _ARC_POINTS),),  # 0
        (_line((0.37, 0.26), (0.52, 0.12), (0.52, 0.88)),),  # 1
        (
            np.concatenate(
                [
                    _arc(0.5, 0.33, 0.2, 0.2, 180, 400),  # 2
                    _line((0.27, 0.88), (0.76, 0.88)),
                ]
            ),
        ),
        (_arc(0.48, 0.3, 0.19, 0.18, 200, 450), _arc(0.48, 0.68, 0.21, 0.2, -90, 160)),  # 3
        (_line((0.63, 0.88), (0.63, 0.12), (0.24, 0.64), (0.78, 0.64)),),  # 4
        (
            np.concatenate(
                [
                    _line((0.72, 0.12), (0.34, 0.12), (0.31, 0.45)),  # 5
                    _arc(0.5, 0.65, 0.22, 0.21, -125, 150),
                ]
            ),
        ),
        (
            _arc(0.5, 0.67, 0.19, 0.19, 0, 360, 2 * _ARC_POINTS),  # 6
            _line((0.68, 0.13), (0.52, 0.19), (0.39, 0.33), (0.32, 0.5), (0.31, 0.67)),
        ),
        (_line((0.24, 0.12), (0.76, 0.12), (0.42, 0.88)),),  # 7
        (
            _arc(0.5, 0.3, 0.16, 0.17, 0, 360, 2 * _ARC_POINTS),  # 8
            _arc(0.5, 0.68, 0.2, 0.2, 0, 360, 2 * _ARC_POINTS),
        ),
        (
            _arc(0.5, 0.33, 0.19, 0.2, 0, 360, 2 * _ARC_POINTS),  # 9
            _line((0.69, 0.33), (0.66, 0.6), (0.58, 0.88)),
        ),
    )


DIGIT_STROKES = digit_strokes()


def _segments(label: int) -> tuple[np.ndarray, np.ndarray]:
    """``(S, 2)`` start and end points of every segment of glyph ``label``."""
    starts = np.concatenate([s[:-1] for s in DIGIT_STROKES[label]])
    ends = np.concatenate([s[1:] for s in DIGIT_STROKES[label]])
    return starts, ends


_SEGMENTS = [_segments(d) for d in range(10)]
_MAX_SEGMENTS = max(len(s[0]) for s in _SEGMENTS)


def _normal(key: int, stream: int, positions: np.ndarray) -> np.ndarray:
    """Standard normals from two stateless uniforms (Box-Muller), a function of ``(key, stream, position)``."""
    u1 = stateless_uniform(key, 2 * stream, positions)
    u2 = stateless_uniform(key, 2 * stream + 1, positions)
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def render_digits(labels, *, seed: int, size: int = 28, jitter: float = 1.0, chunk: int = 32) -> np.ndarray:
    """Procedural digit images of the given classes (an offline MNIST stand-in, see module docstring).

    Per image ``i`` with glyph ``labels[i]``: each stroke bends smoothly (offsets ``N(0, (0.02
    jitter)^2)`` at its start, middle and end, interpolated linearly along it);
    the glyph is rotated by ``U(-15, 15) jitter`` degrees, scaled by ``U(0.8, 1.1)`` (x: times a
    further ``U(0.85, 1.15)``), sheared by ``U(-0.25, 0.25) jitter`` and shifted by
    ``U(-0.08, 0.08) jitter`` of the box, about the box centre; the unit box maps onto the central
    ``20/28`` of the image (MNIST's digit box). Pixel intensity is
    ``255 clip(w/2 + 1/2 - d, 0, 1)``, ``d`` the distance in pixels from the pixel centre to the
    nearest stroke segment and ``w ~ U(1.6, 3.2) size/28`` the pen width.

    Args:
      labels: ``(N,)`` integers in ``[0, 10)``.
      seed: non-negative integer; image ``i`` depends only on ``(seed, i, labels[i])``.
      size: output side in pixels (28 like MNIST).
      jitter: scale of the random deformation (0: every image of a class is the clean glyph).
      chunk: images rasterised at once (memory a few ``chunk x size^2`` float32 arrays).

    Returns:
      ``(N, size, size)`` uint8.

    Example:
      >>> img = render_digits(np.array([1, 8]), seed=0)
      >>> img.shape, img.dtype.name, bool(img[1].sum() > img[0].sum())
      ((2, 28, 28), 'uint8', True)
    """
    seed = _check_seed(seed)
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be a 1-d integer array, got shape {labels.shape} dtype {labels.dtype}")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise ValueError(f"labels must lie in [0, 10), got [{labels.min()}, {labels.max()}]")
    if int(size) < 8:
        raise ValueError(f"size must be >= 8, got {size}")
    if not jitter >= 0:
        raise ValueError(f"jitter must be >= 0, got {jitter}")
    n, size = labels.size, int(size)
    key = derive_key(seed, _DIGIT_TAG)
    idx = np.arange(n, dtype=np.int64)

    def uni(stream, lo, hi):
        return lo + (hi - lo) * stateless_uniform(key, stream, idx)

    angle = np.deg2rad(uni(0, -15.0, 15.0) * jitter)
    scale = uni(1, 0.8, 1.1)
    aspect = 1.0 + (uni(2, 0.85, 1.15) - 1.0) * min(jitter, 1.0)
    shear = uni(3, -0.25, 0.25) * jitter
    shift = np.stack([uni(4, -0.08, 0.08), uni(5, -0.08, 0.08)], axis=1) * jitter
    width = uni(6, 1.6, 3.2) * size / 28.0
    c, s = np.cos(angle), np.sin(angle)
    # A = R(angle) @ Shear @ diag(scale * aspect, scale), applied to (point - 0.5)
    a00 = scale * aspect * c
    a01 = scale * (c * shear - s)
    a10 = scale * aspect * s
    a11 = scale * (s * shear + c)
    mat = np.stack([np.stack([a00, a01], -1), np.stack([a10, a11], -1)], -2)  # (N, 2, 2)

    # Segments padded to a common count; padding segments are masked out below.
    p0 = np.zeros((n, _MAX_SEGMENTS, 2))
    p1 = np.zeros((n, _MAX_SEGMENTS, 2))
    real = np.zeros((n, _MAX_SEGMENTS), bool)
    for d in range(10):
        sel = np.flatnonzero(labels == d)
        if sel.size == 0:
            continue
        # smooth wobble of each stroke: offsets drawn at 3 anchors (start, middle, end) and
        # interpolated linearly along the stroke
        moved = []
        for k, stroke in enumerate(DIGIT_STROKES[d]):
            pos = sel[:, None] * 16 + 3 * k + np.arange(3)[None, :]
            anchors = np.stack([_normal(key, 8, pos), _normal(key, 9, pos)], -1) * 0.02 * jitter  # (m, 3, 2)
            t = np.linspace(0.0, 2.0, len(stroke))
            j = np.minimum(np.floor(t).astype(np.int64), 1)
            f = (t - j)[None, :, None]
            moved.append(stroke[None] + anchors[:, j] * (1 - f) + anchors[:, j + 1] * f)
        starts = np.concatenate([m[:, :-1] for m in moved], axis=1)
        ends = np.concatenate([m[:, 1:] for m in moved], axis=1)
        ns = starts.shape[1]
        p0[sel, :ns], p1[sel, :ns], real[sel, :ns] = starts, ends, True
    box = 20.0 * size / 28.0
    margin = (size - box) / 2.0

    def to_pixels(p):
        q = np.einsum("nij,nsj->nsi", mat, p - 0.5) + 0.5 + shift[:, None, :]
        return margin + box * q - 0.5  # pixel centres at integer coordinates

    q0, q1 = to_pixels(p0), to_pixels(p1)
    gx = np.tile(np.arange(size, dtype=np.float32), size)[None, :]  # (1, P) pixel centres, x
    gy = np.repeat(np.arange(size, dtype=np.float32), size)[None, :]  # (1, P) y
    out = np.empty((n, size * size), np.uint8)
    step = max(int(chunk), 1)
    for start in range(0, n, step):
        sl = slice(start, start + step)
        a, b, ok = q0[sl].astype(np.float32), q1[sl].astype(np.float32), real[sl]
        best = np.full((a.shape[0], size * size), np.inf, np.float32)  # squared distance to the nearest segment
        for k in np.flatnonzero(ok.any(0)):
            ax, ay = a[:, k, 0:1], a[:, k, 1:2]
            dx, dy = b[:, k, 0:1] - ax, b[:, k, 1:2] - ay
            px, py = gx - ax, gy - ay
            t = np.clip((px * dx + py * dy) / np.maximum(dx * dx + dy * dy, 1e-12), 0.0, 1.0)
            d2 = (px - t * dx) ** 2 + (py - t * dy) ** 2
            np.minimum(best, np.where(ok[:, k : k + 1], d2, np.inf), out=best)
        w = width[sl, None].astype(np.float32)
        out[sl] = np.rint(255.0 * np.clip(w / 2 + 0.5 - np.sqrt(best), 0.0, 1.0)).astype(np.uint8)
    return out.reshape(n, size, size)


def _hsv_to_rgb(h, s, v):
    """Vectorised HSV (all in [0, 1]) -> RGB in [0, 1], last axis 3."""
    i = np.floor(h * 6.0).astype(np.int64) % 6
    f = h * 6.0 - np.floor(h * 6.0)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    table = np.stack([np.stack(x, -1) for x in [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]], 0)
    return np.take_along_axis(table, i[None, ..., None], 0)[0]


def colour_backgrounds(n: int, *, seed: int, size: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Procedural colour backgrounds (an offline CIFAR-10 stand-in, see module docstring).

    Background ``i``: colours ``c1, c2`` with hue ``U(0, 1)``, saturation ``U(0.45, 1)`` and value
    ``U(0.6, 1)`` (bright, so a multiplied digit stays visible); a mask ``m`` = ``4 x 4`` uniform
    noise upsampled bilinearly to ``size x size``; pixel ``= (1 - m) c1 + m c2`` times a pixel
    texture factor ``1 + 0.08 N(0, 1)``, clipped to ``[0, 255]``.

    Args:
      n: number of backgrounds (>= 0).
      seed: non-negative integer; background ``i`` depends only on ``(seed, i)``.
      size: side in pixels (32 like CIFAR-10).

    Returns:
      ``(images (n, size, size, 3) uint8, labels (n,) int64)`` with ``labels`` the hue bin
      ``floor(10 h)`` of ``c1``, the dominant colour's hue (a CIFAR-class stand-in).

    Example:
      >>> bg, lab = colour_backgrounds(3, seed=0)
      >>> bg.shape, lab.shape
      ((3, 32, 32, 3), (3,))
    """
    seed = _check_seed(seed)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    if int(size) < 4:
        raise ValueError(f"size must be >= 4, got {size}")
    n, size = int(n), int(size)
    key = derive_key(seed, _BG_TAG)
    idx = np.arange(n, dtype=np.int64)

    def colour(stream):
        h = stateless_uniform(key, stream, idx)
        s = 0.45 + 0.55 * stateless_uniform(key, stream + 1, idx)
        v = 0.6 + 0.4 * stateless_uniform(key, stream + 2, idx)
        return h, _hsv_to_rgb(h, s, v)  # (n,), (n, 3)

    h1, c1 = colour(0)
    _, c2 = colour(3)
    coarse = stateless_uniform(key, 6, idx[:, None] * 16 + np.arange(16)[None, :]).reshape(n, 4, 4)
    # bilinear upsampling of the 4 x 4 grid (cell centres) to size x size
    pos = (np.arange(size) + 0.5) * 4.0 / size - 0.5
    lo = np.clip(np.floor(pos).astype(np.int64), 0, 3)
    hi = np.clip(lo + 1, 0, 3)
    frac = np.clip(pos - lo, 0.0, 1.0)
    rows = coarse[:, lo, :] * (1 - frac)[None, :, None] + coarse[:, hi, :] * frac[None, :, None]
    mask = rows[:, :, lo] * (1 - frac)[None, None, :] + rows[:, :, hi] * frac[None, None, :]
    pix = idx[:, None] * (size * size) + np.arange(size * size)[None, :]
    texture = 1.0 + 0.08 * _normal(key, 5, pix).reshape(n, size, size)
    img = (1 - mask)[..., None] * c1[:, None, None, :] + mask[..., None] * c2[:, None, None, :]
    img = np.clip(np.rint(255.0 * img * texture[..., None]), 0, 255).astype(np.uint8)
    labels = np.minimum(np.floor(h1 * 10).astype(np.int64), 9)
    return img, labels


def synthetic_arrays(
    *,
    num_train: int,
    num_test: int,
    num_backgrounds: int,
    num_ood_backgrounds: int = 0,
    seed: int = 0,
    jitter: float = 1.0,
) -> dict[str, dict[str, np.ndarray]]:
    """Offline stand-in data in the layout ``load_spurious_digits(arrays=...)`` takes.

    Digit labels cycle ``0..9`` (balanced classes); train and test digits are drawn from
    independent streams (seeds ``2 seed`` and ``2 seed + 1``), backgrounds for the pools and the
    ``"unseen"`` OOD backgrounds likewise.

    Args:
      num_train, num_test: digit images of the train and test split (>= 1 each).
      num_backgrounds: candidate pool backgrounds ("cifar10_train"); pools of ``P`` per digit with
        no overlap need ``10 P``.
      num_ood_backgrounds: backgrounds for ``ood="unseen"`` ("cifar10_test").
      seed: non-negative integer.
      jitter: digit deformation scale (:func:`render_digits`).

    Returns:
      ``{"mnist_train", "mnist_test", "cifar10_train", "cifar10_test"}`` -> ``{"image", "label"}``;
      digit images ``(N, 28, 28, 1)`` uint8, backgrounds ``(M, 32, 32, 3)`` uint8.

    Example:
      >>> from gensim_jax.data.spurious_digits import load_spurious_digits
      >>> arrays = synthetic_arrays(num_train=20, num_test=10, num_backgrounds=30)
      >>> load_spurious_digits("test_ood", per_class=3, arrays=arrays).example(0)["image"].shape
      (32, 32, 3)
    """
    seed = _check_seed(seed)
    for name, value, low in (
        ("num_train", num_train, 1),
        ("num_test", num_test, 1),
        ("num_backgrounds", num_backgrounds, 1),
        ("num_ood_backgrounds", num_ood_backgrounds, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    out = {}
    for split, count, s in (("train", num_train, 2 * seed), ("test", num_test, 2 * seed + 1)):
        labels = np.arange(count, dtype=np.int64) % 10
        out[f"mnist_{split}"] = {"image": render_digits(labels, seed=s, jitter=jitter)[..., None], "label": labels}
    for split, count, s in (("train", num_backgrounds, 2 * seed), ("test", num_ood_backgrounds, 2 * seed + 1)):
        img, lab = colour_backgrounds(int(count), seed=s)
        out[f"cifar10_{split}"] = {"image": img, "label": lab}
    return out
