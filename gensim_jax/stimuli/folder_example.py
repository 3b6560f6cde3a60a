"""Example folders for ``gensim-jax train folder``: images whose pixels follow a known generative model, and their table.

Two forms of the metadata table of :mod:`gensim_jax.data.folder`, seeded and deterministic:

* ``features``: six binary features, each drawn with probability 1/2, each a visible element of
  the image (:data:`FEATURES`): a warm background, a white disc at the top left, a green square at
  the top right, horizontal stripes at the bottom left, a red triangle at the bottom right, a
  frame; positions jitter by a few pixels and every pixel carries Gaussian noise. Table columns
  ``file`` and the six feature names (Beta-Bernoulli kernel, paper Eq. I3).
* ``class_path``: twelve classes on a three-level tree ``{round, angular} / shape / colour``
  (:data:`CLASS_PATHS`): one shape per image in a random place and size on a noisy grey ground.
  Table columns ``file`` and ``class_path`` (hierarchy kernel, paper Eq. 4).

:func:`render_features` and :func:`render_class_paths` return ``uint8`` arrays;
:func:`write_example_folder` writes the PNG files and ``metadata.csv`` (it needs pillow).
"""

from __future__ import annotations

import csv
import os

import numpy as np

__all__ = ["CLASS_PATHS", "FEATURES", "KINDS", "render_class_paths", "render_features", "write_example_folder"]

FEATURES = ("warm_background", "disc", "square", "stripes", "triangle", "frame")
KINDS = ("features", "class_path")
_SHAPES = {"round": ("disc", "ring", "ellipse"), "angular": ("square", "triangle", "diamond")}
CLASS_PATHS = tuple(f"{g}/{s}/{c}" for g, shapes in _SHAPES.items() for s in shapes for c in ("red", "blue"))
_COLOURS = {"red": (220, 40, 40), "blue": (40, 70, 230)}


def _grid(size: int):
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    return y, x


def _shape_mask(shape: str, y, x, cy: float, cx: float, r: float) -> np.ndarray:
    dy, dx = y - cy, x - cx
    if shape == "disc":
        return dy**2 + dx**2 <= r**2
    if shape == "ring":
        d = np.sqrt(dy**2 + dx**2)
        return (d <= r) & (d >= 0.6 * r)
    if shape == "ellipse":
        return (dy / (0.55 * r)) ** 2 + (dx / r) ** 2 <= 1
    if shape == "square":
        return (np.abs(dy) <= 0.85 * r) & (np.abs(dx) <= 0.85 * r)
    if shape == "triangle":
        return (dy <= r * 0.8) & (dy >= -r) & (np.abs(dx) <= (dy + r) * 0.6)
    if shape == "diamond":
        return np.abs(dy) + np.abs(dx) <= r
    raise ValueError(f"unknown shape {shape!r}")


def render_features(features: np.ndarray, size: int, seed: int = 0, noise: float = 12.0) -> np.ndarray:
    """``(N, size, size, 3)`` uint8 images of the ``(N, 6)`` binary ``features`` (:data:`FEATURES` order)."""
    f = np.asarray(features)
    if f.ndim != 2 or f.shape[1] != len(FEATURES):
        raise ValueError(f"features must be (N, {len(FEATURES)}), got shape {f.shape}")
    rng = np.random.default_rng(seed)
    y, x = _grid(int(size))
    out = np.empty((len(f), size, size, 3), np.uint8)
    for i, row in enumerate(f.astype(bool)):
        img = np.empty((size, size, 3), np.float32)
        img[:] = (200, 150, 90) if row[0] else (90, 120, 170)
        j = rng.uniform(-0.04, 0.04, size=(4, 2))
        if row[1]:
            img[_shape_mask("disc", y, x, 0.27 + j[0, 0], 0.27 + j[0, 1], 0.15)] = (245, 245, 245)
        if row[2]:
            img[_shape_mask("square", y, x, 0.27 + j[1, 0], 0.73 + j[1, 1], 0.15)] = (40, 190, 60)
        if row[3]:
            band = (y > 0.55) & (x < 0.45) & (np.floor((y + j[2, 0]) * size / 3) % 2 == 0)
            img[band] = (20, 20, 20)
        if row[4]:
            img[_shape_mask("triangle", y, x, 0.73 + j[3, 0], 0.73 + j[3, 1], 0.17)] = (220, 40, 40)
        if row[5]:
            img[(y < 0.06) | (y > 0.94) | (x < 0.06) | (x > 0.94)] = (250, 220, 30)
        out[i] = np.clip(img + rng.normal(0, noise, img.shape), 0, 255).astype(np.uint8)
    return out


def render_class_paths(classes: np.ndarray, size: int, seed: int = 0, noise: float = 12.0) -> np.ndarray:
    """``(N, size, size, 3)`` uint8 images of the classes ``classes`` (indices into :data:`CLASS_PATHS`)."""
    rng = np.random.default_rng(seed)
    y, x = _grid(int(size))
    out = np.empty((len(classes), size, size, 3), np.uint8)
    for i, c in enumerate(np.asarray(classes)):
        _, shape, colour = CLASS_PATHS[int(c)].split("/")
        img = np.full((size, size, 3), 128.0, np.float32)
        r = rng.uniform(0.22, 0.32)
        cy, cx = rng.uniform(r, 1 - r, size=2)
        img[_shape_mask(shape, y, x, cy, cx, r)] = _COLOURS[colour]
        out[i] = np.clip(img + rng.normal(0, noise, img.shape), 0, 255).astype(np.uint8)
    return out


def write_example_folder(directory, kind: str = "features", n: int = 300, size: int = 64, seed: int = 0) -> str:
    """Write ``n`` PNG images of ``kind`` (:data:`KINDS`) at ``size`` and ``metadata.csv`` into ``directory``.

    Returns the path of ``metadata.csv``. Features and classes come from ``numpy.random.default_rng(seed)``;
    file ``images/00042.png`` is row 42 (0-based).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    from gensim_jax._extras import require

    image_module = require("PIL.Image", "eval")
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(directory, "images"), exist_ok=True)
    files = [f"images/{i:05d}.png" for i in range(int(n))]
    if kind == "features":
        meta = rng.integers(0, 2, size=(int(n), len(FEATURES)))
        images = render_features(meta, size, seed=seed + 1)
        header, rows = ["file", *FEATURES], [[f, *map(str, m)] for f, m in zip(files, meta)]
    else:
        meta = rng.integers(0, len(CLASS_PATHS), size=int(n))
        images = render_class_paths(meta, size, seed=seed + 1)
        header, rows = ["file", "class_path"], [[f, CLASS_PATHS[m]] for f, m in zip(files, meta)]
    for f, image in zip(files, images):
        image_module.fromarray(image).save(os.path.join(directory, f))
    path = os.path.join(directory, "metadata.csv")
    with open(path, "w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows([header, *rows])
    return path
