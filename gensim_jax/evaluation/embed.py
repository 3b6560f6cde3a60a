"""Embedding images with a gensim-jax encoder, in fixed-size jitted batches.

Every evaluation protocol takes embeddings, not models; this is the one bridge from a model
(:func:`gensim_jax.models.get_model`, :func:`gensim_jax.models.load_pretrained`, or a trained
encoder exported by :func:`gensim_jax.training.export.export_variables`) to them.

* :func:`embed_images` -- ``model.apply(..., method="embed")`` in fixed-size jitted batches.
* :func:`prepare_images` -- grey/RGB images in ``[0, 1]`` -> the encoder's input: 3 channels,
  resized to its image size, normalised as it was trained (``"imagenet"``, or ``"unit"`` / ``"none"``: values in [0, 1] as they are).
* :class:`ExportedEncoder` -- a model with its variables and export metadata as a callable
  ``images -> (N, D)`` embeddings; :func:`load_encoder` reads one from an export directory and
  :func:`encoder` wraps a model in memory (a run's own evaluation).  Both are the same object, so a
  run's evaluation and an evaluation of its export embed the same images alike, bit for bit.
  ``uint8`` images of the encoder's size are normalised inside the jitted embedding exactly as the
  training step normalises them (:func:`gensim_jax.training.step.normalize_inputs`);
  :func:`load_encoders` reads one per run directory with errors that name the damaged export.
* :func:`load_npz` -- arrays of an ``.npz`` file (precomputed embeddings, trials), no pickles.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

import jax
import jax.numpy as jnp
import numpy as np

from gensim_jax.preprocessing import INPUT_PREPROCESSING

__all__ = [
    "model_label",
    "run_info",
    "ExportedEncoder",
    "PREPROCESSING",
    "embed_images",
    "encoder",
    "load_encoder",
    "load_encoders",
    "load_npz",
    "prepare_images",
]

#: Input normalisations an export can name in its ``preprocess`` metadata.
PREPROCESSING = INPUT_PREPROCESSING


def embed_images(model, variables: Mapping[str, Any], images, batch_size: int = 64) -> np.ndarray:
    """Penultimate-layer embeddings ``model.apply(variables, x, method="embed")`` of ``images``.

    The apply function is jitted once per model (flax modules compare by their fields, so a second
    call with an equal model and the same batch shape reuses the compiled program instead of tracing
    and compiling again); the last batch is zero-padded to ``batch_size`` so that only one shape is
    ever compiled, and the padding rows are dropped (inference mode, ``train=False``, so BatchNorm
    uses its running statistics and padding cannot leak).

    Args:
      model: a flax encoder with an ``embed`` method (every model of :mod:`gensim_jax.models`).
      variables: its variables (``{"params": ..., "batch_stats": ...}``).
      images: ``(N, *model input shape)`` array, e.g. ``(N, 224, 224, 3)`` float32.
      batch_size: images per jitted call.

    Returns:
      ``(N, D)`` float32 numpy array.

    Example:
      >>> import jax
      >>> from gensim_jax.models import get_model
      >>> m = get_model("mlp", in_features=3, embed_dim=2)
      >>> v = m.init(jax.random.key(0), m.example_input())
      >>> embed_images(m, v, np.ones((5, 3), np.float32), batch_size=2).shape
      (5, 2)
    """
    x = np.asarray(images)
    if x.ndim < 2 or len(x) == 0:
        raise ValueError(f"images must be a non-empty batch (N, ...), got shape {x.shape}")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return _embed_batches(_embed_fn(model), variables, x, min(int(batch_size), len(x)), lambda b: b)


@functools.partial(jax.jit, static_argnums=0)
def _embed_jitted(model, variables, batch):
    return model.apply(variables, batch, method="embed")


def _embed_fn(model):
    """``(variables, batch) -> model.apply(variables, batch, method="embed")``, jitted: one function
    for every model, keyed by the model's hash (its fields), so that equal models share compiled
    programs; a model with an unhashable field gets a jitted function of its own."""
    try:
        hash(model)
    except TypeError:
        return jax.jit(lambda v, b: model.apply(v, b, method="embed"))
    return functools.partial(_embed_jitted, model)


def _embed_batches(fn, variables, x, batch_size: int, prepare) -> np.ndarray:
    """``fn(variables, prepare(batch))`` over fixed-size batches of ``x`` (last one zero-padded)."""
    out = []
    for start in range(0, len(x), batch_size):
        b = prepare(x[start : start + batch_size])
        n = len(b)
        if n < batch_size:
            b = np.concatenate([b, np.zeros((batch_size - n, *b.shape[1:]), b.dtype)])
        out.append(np.asarray(fn(variables, jnp.asarray(b)), np.float32)[:n])
    return np.concatenate(out)


def prepare_images(images, image_size: int, preprocess: str = "imagenet", channels: int = 3) -> np.ndarray:
    """Images in ``[0, 1]`` -> an encoder's input batch ``(N, image_size, image_size, channels)``.

    Grey images (``(N, H, W)`` or ``(N, H, W, 1)``) are repeated to ``channels`` channels; images of
    another size are resized bilinearly (antialiased, ``jax.image.resize``); then ``"imagenet"``
    subtracts the ImageNet mean and divides by its standard deviation per channel
    (:func:`gensim_jax.models.normalize_imagenet`); ``"unit"`` and ``"none"`` leave the values as they are.

    Args:
      images: ``(N, H, W)`` or ``(N, H, W, C)`` with ``C`` in ``{1, channels}``, values in ``[0, 1]``.
      image_size: the encoder's input side ``S``.
      preprocess: ``"imagenet"``, ``"unit"`` or ``"none"`` (an export's ``preprocess`` metadata).
      channels: the encoder's input channels (3 for every image model here).

    Returns:
      ``(N, S, S, channels)`` float32 numpy array.

    Example:
      >>> prepare_images(np.ones((2, 8, 8)), 4, "none").shape
      (2, 4, 4, 3)
    """
    if preprocess not in PREPROCESSING:
        raise ValueError(f"preprocess must be one of {PREPROCESSING}, got {preprocess!r}")
    if int(image_size) < 1 or int(channels) < 1:
        raise ValueError(f"image_size and channels must be >= 1, got {image_size} and {channels}")
    x = np.asarray(images, np.float32)
    if x.ndim == 3:
        x = x[..., None]
    if x.ndim != 4 or len(x) == 0 or x.shape[-1] not in (1, channels):
        raise ValueError(f"images must be (N, H, W) or (N, H, W, C) with C in (1, {channels}), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("images contain NaN or inf")
    if x.shape[-1] == 1 and channels != 1:
        x = np.repeat(x, channels, axis=-1)
    s = int(image_size)
    if x.shape[1:3] != (s, s):
        x = np.asarray(jax.image.resize(jnp.asarray(x), (len(x), s, s, x.shape[-1]), "linear", antialias=True))
    if preprocess == "imagenet":
        if channels != 3:
            raise ValueError(f"'imagenet' preprocessing needs 3 channels, got channels={channels}")
        from gensim_jax.models import normalize_imagenet

        x = np.asarray(normalize_imagenet(x))
    return x.astype(np.float32)


@dataclass(frozen=True)
class ExportedEncoder:
    """A trained encoder read from an export directory; call it on images in ``[0, 1]``.

    Attributes:
      directory: the export directory.
      model, variables: the rebuilt flax module and its variables.
      metadata: the export's ``model.json`` (``model``, ``model_kwargs``, ``image_size``,
        ``preprocess``, ``seed``, ...).
    """

    directory: str
    model: Any
    variables: Mapping[str, Any]
    metadata: Mapping[str, Any]

    @property
    def image_size(self) -> int:
        return int(self.metadata["image_size"])

    @property
    def preprocess(self) -> str:
        return str(self.metadata.get("preprocess", "imagenet"))

    @property
    def channels(self) -> int:
        return int(self.metadata.get("channels", 3))

    @functools.cached_property
    def _apply(self):
        return _embed_fn(self.model)  # shared with embed_images: an equal model compiles once

    @functools.cached_property
    def _apply_uint8(self):
        from gensim_jax.training.step import normalize_inputs

        model = self.model
        pre = "unit" if self.preprocess == "none" else self.preprocess  # "none": pixels in [0, 1] as they are
        return jax.jit(lambda v, b: model.apply(v, normalize_inputs({"x": b}, pre)["x"], method="embed"))

    def __call__(self, images, batch_size: int = 64) -> np.ndarray:
        """``(N, D)`` float32 embeddings of ``images``.

        ``uint8`` images in ``[0, 255]`` of the encoder's size (``(N, S, S)`` grey or ``(N, S, S, C)``)
        go to the device as they are and are normalised in the jitted embedding, as in training;
        anything else is taken by :func:`prepare_images` (values in ``[0, 1]``, resized). Images are
        prepared batch by batch (a large set at 224 x 224 never exists as one float32 RGB array) and
        embedded by one jitted function kept for every call.
        """
        x = np.asarray(images)
        if x.ndim not in (3, 4) or len(x) == 0:
            raise ValueError(f"images must be a non-empty (N, H, W) or (N, H, W, C) batch, got shape {x.shape}")
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        s, c = self.image_size, self.channels
        if x.dtype == np.uint8 and x.shape[1:3] == (s, s) and (x.ndim == 3 or x.shape[-1] in (1, c)):

            def prepare(b):
                b = b[..., None] if b.ndim == 3 else b
                return np.repeat(b, c, axis=-1) if b.shape[-1] != c else b

            return _embed_batches(self._apply_uint8, self.variables, x, min(int(batch_size), len(x)), prepare)
        if x.dtype == np.uint8:
            x = x.astype(np.float32) / np.float32(255.0)
        prepare = lambda b: prepare_images(b, s, self.preprocess, c)  # noqa: E731
        return _embed_batches(self._apply, self.variables, x, min(int(batch_size), len(x)), prepare)


def encoder(model, variables: Mapping[str, Any], **metadata: Any) -> ExportedEncoder:
    """``model`` with ``variables`` as an :class:`ExportedEncoder` (no directory): what a run evaluates.

    ``metadata`` is what its export will carry (``image_size``, ``preprocess``, ...;
    :attr:`gensim_jax.training.experiment.Arm.export`), so the run's evaluation and an
    evaluation of the export (:func:`load_encoder`) embed the same images by the same code.
    """
    return ExportedEncoder("", model, variables, dict(metadata))


def load_encoder(directory: str | os.PathLike) -> ExportedEncoder:
    """Read an export (:func:`gensim_jax.training.export.load_exported`) as an :class:`ExportedEncoder`.

    The export's metadata must give ``image_size`` (the side its inputs were trained at);
    ``preprocess`` defaults to ``"imagenet"`` when absent.

    Raises:
      FileNotFoundError: not an export directory.
      ValueError: ``image_size`` missing or ``preprocess`` unknown.
    """
    from gensim_jax.models.export import load_exported

    model, variables, metadata = load_exported(directory)
    if "image_size" not in metadata:
        raise ValueError(
            f"export {directory} has no 'image_size' in its metadata; pass image_size=... to export_variables"
        )
    pre = metadata.get("preprocess", "imagenet")
    if pre not in PREPROCESSING:
        raise ValueError(f"export {directory}: preprocess {pre!r} is not one of {PREPROCESSING}")
    return ExportedEncoder(str(directory), model, variables, dict(metadata))


def load_encoders(dirs):
    """One :class:`~gensim_jax.evaluation.embed.ExportedEncoder` per export directory (one per run).

    A missing directory or file is ``FileNotFoundError`` naming it; an export whose files cannot be
    read (a truncated ``variables.msgpack``, a ``model.json`` that is not JSON) is ``ValueError``
    naming the directory and how to write it again.
    """
    encoders = []
    for d in dirs:
        try:
            encoders.append(load_encoder(d))
        except (FileNotFoundError, ImportError):
            raise
        except Exception as err:  # noqa: BLE001 - msgpack, JSON and flax errors name no file
            raise ValueError(
                f"{d} is a damaged export ({type(err).__name__}: {' '.join(str(err).split())}); write it again "
                "by running the training command again with --resume (a finished run only re-exports)"
            ) from err
    return encoders


def load_npz(path: str, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Arrays ``keys`` of an ``.npz`` file (``ValueError`` naming the file and the missing arrays).

    A missing file is ``FileNotFoundError``, a file that is not an ``.npz`` archive of arrays (no
    pickles are loaded) ``ValueError``; both name the file.
    """
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file (expected an .npz archive with arrays {', '.join(keys)})")
    try:
        z = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise ValueError(f"{path} is not an .npz archive of arrays (np.savez writes one)") from err
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ValueError(f"{path} is a single .npy array, not an .npz archive with arrays {', '.join(keys)}")
    with z:
        missing = [k for k in keys if k not in z.files]
        if missing:
            raise ValueError(f"{path}: missing arrays {missing}; it has {z.files}")
        return {k: z[k] for k in keys}


def run_info(encoder: ExportedEncoder) -> dict:
    """What a run's JSON entry says about its export: directory, model, seed, image size, preprocessing."""
    m = encoder.metadata
    return {
        "export": encoder.directory,
        "model": m.get("model"),
        "seed": m.get("seed"),
        "image_size": encoder.image_size,
        "preprocess": encoder.preprocess,
    }


def model_label(label: Optional[str], encoders) -> str:
    """A figure's label: ``label``, else the exports' model name(s) joined by ``+``."""
    if label:
        return label
    return "+".join(sorted({str(e.metadata.get("model")) for e in encoders}))
