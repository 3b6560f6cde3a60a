"""Input normalisation of the encoders: one table per scheme, used on the host and inside jitted steps (numpy only).

Images cross from host to device as ``uint8``; every consumer normalises them by looking the 256
levels of each channel up in :func:`normalization_table`, which numpy computes once with IEEE
division. The training step (:func:`gensim_jax.training.step.normalize_inputs`), the evaluation's
encoders (:mod:`gensim_jax.evaluation.embed`) and host code (:func:`normalize_uint8`) therefore give
the same numbers bit for bit (XLA would turn a division by a constant into a multiplication by its
rounded reciprocal, one unit in the last place away).

Schemes (an export's ``preprocess``): ``imagenet``: ``(x / 255 - mean) / std`` per channel with the
ImageNet statistics (:data:`IMAGENET_MEAN`, :data:`IMAGENET_STD`); ``unit``: ``x / 255``; ``none``:
unchanged.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = [
    "INPUT_PREPROCESSING",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "normalization_table",
    "normalize_images",
    "normalize_uint8",
]

#: ImageNet channel statistics on the ``[0, 1]`` scale (torchvision's), the encoders' input normalisation.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

INPUT_PREPROCESSING = ("imagenet", "unit", "none")


def _check(preprocess: str) -> None:
    if preprocess not in INPUT_PREPROCESSING:
        raise ValueError(f"preprocess must be one of {INPUT_PREPROCESSING}, got {preprocess!r}")


@functools.lru_cache(maxsize=None)
def normalization_table(preprocess: str = "imagenet") -> np.ndarray:
    """``(3, 256)`` float32: the normalised value of each ``uint8`` level per channel (read-only).

    Example:
      >>> t = normalization_table("unit")
      >>> t.shape, float(t[0, 255])
      ((3, 256), 1.0)
    """
    _check(preprocess)
    u = np.arange(256, dtype=np.float32)[None, :] / np.float32(255.0)
    if preprocess == "imagenet":
        mean = np.asarray(IMAGENET_MEAN, np.float32)[:, None]
        std = np.asarray(IMAGENET_STD, np.float32)[:, None]
        table = ((u - mean) / std).astype(np.float32)
    else:
        table = np.repeat(u, 3, axis=0)
    table.setflags(write=False)
    return table


def normalize_uint8(images, preprocess: str = "imagenet") -> np.ndarray:
    """``uint8`` images ``(..., C)`` (``C`` 1 or 3; 1 is broadcast to 3 for ``imagenet``) normalised on the host.

    Example:
      >>> x = np.zeros((1, 2, 2, 3), np.uint8)
      >>> normalize_uint8(x).dtype, normalize_uint8(x, "unit").max()
      (dtype('float32'), np.float32(0.0))
    """
    _check(preprocess)
    x = np.asarray(images)
    if x.dtype != np.uint8:
        raise ValueError(f"normalize_uint8 takes uint8 images, got {x.dtype}")
    if preprocess == "none":
        return x
    table = normalization_table(preprocess)
    if preprocess == "unit":
        return table[0][x]
    if x.shape[-1] == 1:
        x = np.broadcast_to(x, x.shape[:-1] + (3,))
    if x.shape[-1] != 3:
        raise ValueError(f"'imagenet' normalisation needs 1 or 3 channels, got shape {x.shape}")
    return table[np.arange(3), x]


def normalize_images(images) -> np.ndarray:
    """ImageNet-normalised float32 images ``(..., H, W, 3)`` from ``uint8`` in ``[0, 255]`` (:func:`normalize_uint8`,
    the training step's numbers) or from floats in ``[0, 1]`` (``(x - mean) / std``).

    Example:
      >>> a = normalize_images(np.full((1, 1, 1, 3), 255, np.uint8))
      >>> b = normalize_images(np.ones((1, 1, 1, 3), np.float32))
      >>> bool(np.allclose(a, b, atol=1e-6))
      True
    """
    x = np.asarray(images)
    if x.dtype == np.uint8:
        return normalize_uint8(x, "imagenet")
    return (x.astype(np.float32) - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(IMAGENET_STD, np.float32)
