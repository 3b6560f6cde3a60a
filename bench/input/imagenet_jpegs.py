"""ImageNet-like JPEGs from the photographs that ship with scikit-learn (seeded, deterministic).

The ImageNet-1k training set (ILSVRC-2012) holds 1.28 M JPEGs of about 110 kB each (about 140 GB
in all) whose sides average roughly 400 x 350 pixels, many of them 500 x 375 or 500 x 333 (the
Flickr "medium" size); they are photographs, dense in fine detail, so a decoder spends far more
time on them than on smooth renders of the same size. This module makes stand-ins with those
statistics without a download: each image is a random crop of one of scikit-learn's two sample
photographs (``sklearn.datasets.load_sample_images``: ``china.jpg`` and ``flower.jpg``, 640 x 427),
resized (Lanczos) to a size drawn from an ImageNet-like distribution (:func:`sample_size`), given
fine texture (a high-pass detail layer cut from a second, 2-3x downscaled crop of the photographs,
plus luma and chroma grain) and re-encoded by PIL (libjpeg, 4:2:0 chroma subsampling) at
:data:`QUALITY`. The texture amplitude was set so that the mean file size is about 110 kB
(:func:`summary` reports it; :data:`EXPECTED` holds the figures of 512 images, seed 0). Quality 95
rather than 90: these two photographs re-encoded at 90 come to 1.4-3 bits per pixel, and grain or
detail strong enough to reach ImageNet's ~6 bits per pixel at 90 looked plainly artificial (at 90
with the texture used here: 80 kB on the first 128 images, against 112 kB at 95).

Every image is a function of ``(seed, index)`` only (``numpy.random.default_rng([seed, index])``),
so a set can be regenerated image by image, in any order and on any process.
"""

from __future__ import annotations

import functools
import io

import numpy as np

__all__ = ["QUALITY", "EXPECTED", "sample_size", "imagenet_like_jpeg", "imagenet_like_jpegs", "summary"]

#: JPEG quality of the re-encoding (libjpeg scale); 4:2:0 chroma subsampling as most camera JPEGs.
QUALITY = 95
#: Texture: amplitude of the high-pass detail layer and standard deviations of the grain (8-bit levels).
DETAIL_GAIN, LUMA_GRAIN, CHROMA_GRAIN = 2.0, 4.0, 1.5
#: Measured over ``imagenet_like_jpegs(512, seed=0)`` (``summary``): mean kB, mean height and width.
EXPECTED = {"mean_kb": 111.2, "mean_height": 362.5, "mean_width": 403.5}


@functools.lru_cache(maxsize=1)
def _photos() -> tuple[np.ndarray, ...]:
    from sklearn.datasets import load_sample_images

    return tuple(np.ascontiguousarray(p, dtype=np.uint8) for p in load_sample_images().images)


def sample_size(rng: np.random.Generator) -> tuple[int, int]:
    """An ImageNet-like ``(height, width)``.

    The long side is 500 with probability 0.55 (Flickr's medium size), else uniform in
    ``[200, 500]``; the aspect ratio (long / short) is 4/3 (p = 0.51), 3/2 (0.2125), 1 (0.1275) or
    uniform in ``[1, 1.8]`` (0.15); landscape with probability 0.7. Means over 512 draws:
    362.5 x 403.5 (height x width), sides 135 to 500.
    """
    long = 500 if rng.random() < 0.55 else int(rng.integers(200, 501))
    if rng.random() < 0.85:
        aspect = float(rng.choice([4 / 3, 3 / 2, 1.0], p=[0.6, 0.25, 0.15]))
    else:
        aspect = float(rng.uniform(1.0, 1.8))
    short = max(1, int(round(long / aspect)))
    return (short, long) if rng.random() < 0.7 else (long, short)


def _crop(rng: np.random.Generator, photo: np.ndarray, aspect: float, area: tuple[float, float]) -> np.ndarray:
    """A random crop of ``photo`` with ``width / height = aspect`` covering a fraction ``U(area)`` of its height^2."""
    ph, pw = photo.shape[:2]
    ch = ph * np.sqrt(rng.uniform(*area))
    cw = ch * aspect
    if cw > pw:
        cw, ch = pw, pw / aspect
    ch, cw = max(1, int(ch)), max(1, int(cw))
    y = int(rng.integers(0, ph - ch + 1))
    x = int(rng.integers(0, pw - cw + 1))
    return photo[y : y + ch, x : x + cw]


def _detail(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A ``(height, width, 3)`` float high-pass layer: a photo shrunk 2-3x, mirror-tiled, minus its blur."""
    from PIL import Image, ImageFilter

    photo = _photos()[int(rng.integers(len(_photos())))]
    f = rng.uniform(2.0, 3.0)
    small = Image.fromarray(photo).resize((int(photo.shape[1] / f), int(photo.shape[0] / f)), Image.Resampling.LANCZOS)
    hp = np.asarray(small, np.float32) - np.asarray(small.filter(ImageFilter.GaussianBlur(2)), np.float32)
    if rng.random() < 0.5:
        hp = hp[:, ::-1]
    reps = (height // hp.shape[0] + 2, width // hp.shape[1] + 2)
    tiled = np.pad(hp, ((0, (reps[0] - 1) * hp.shape[0]), (0, (reps[1] - 1) * hp.shape[1]), (0, 0)), mode="symmetric")
    y = int(rng.integers(0, hp.shape[0]))
    x = int(rng.integers(0, hp.shape[1]))
    return tiled[y : y + height, x : x + width]


def imagenet_like_jpeg(index: int, seed: int = 0, quality: int = QUALITY) -> bytes:
    """JPEG bytes of image ``index`` of the set ``seed`` (see the module docstring)."""
    from PIL import Image

    rng = np.random.default_rng([int(seed), int(index)])
    height, width = sample_size(rng)
    photo = _photos()[int(rng.integers(len(_photos())))]
    crop = _crop(rng, photo, width / height, (0.6, 1.0))
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    base = np.asarray(Image.fromarray(crop).resize((width, height), Image.Resampling.LANCZOS), np.float32)
    grain = rng.normal(0.0, LUMA_GRAIN, (height, width, 1)) + rng.normal(0.0, CHROMA_GRAIN, (height, width, 3))
    image = base + DETAIL_GAIN * _detail(rng, height, width) + grain
    image = np.clip(np.round(image), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="JPEG", quality=int(quality), subsampling=2)
    return buf.getvalue()


def imagenet_like_jpegs(n: int, seed: int = 0, quality: int = QUALITY) -> list[bytes]:
    """Images ``0 .. n-1`` of the set ``seed``."""
    if int(n) < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    return [imagenet_like_jpeg(i, seed, quality) for i in range(int(n))]


def summary(jpegs) -> dict:
    """Mean file size (kB = 1000 bytes), mean and range of the pixel sizes of JPEG bytes ``jpegs``."""
    from PIL import Image

    if not len(jpegs):
        raise ValueError("no JPEGs to summarise")
    sizes = np.array([len(b) for b in jpegs], np.float64)
    hw = np.array([Image.open(io.BytesIO(b)).size[::-1] for b in jpegs], np.float64)
    return {
        "images": len(jpegs),
        "mean_kb": round(float(sizes.mean()) / 1e3, 1),
        "median_kb": round(float(np.median(sizes)) / 1e3, 1),
        "mean_height": round(float(hw[:, 0].mean()), 1),
        "mean_width": round(float(hw[:, 1].mean()), 1),
        "mean_megapixels": round(float((hw[:, 0] * hw[:, 1]).mean()) / 1e6, 4),
        "min_side": int(hw.min()),
        "max_side": int(hw.max()),
    }
