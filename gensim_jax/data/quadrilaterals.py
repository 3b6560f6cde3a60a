"""The quadrilaterals experiment's training data: rendered quadrilaterals as a source, and each arm's batches.

:func:`training_source` renders the training stimuli of
:func:`gensim_jax.stimuli.quadrilaterals.sample_training_stimuli` (the test grid held out) once;
:func:`arm_batches` streams this process's rows of every global batch of an arm
(:func:`gensim_jax.data.streams.stream`): ``gensim`` images with their 22 geometric features,
``supervised`` images with their shape label, ``simclr`` two augmented views. Images are ``uint8``
(normalised inside the training step).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

from gensim_jax.data.sources import GreyImageSource
from gensim_jax.stimuli import quadrilaterals as quads

__all__ = ["DataConfig", "arm_batches", "check_data_config", "training_source"]


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """``data`` of the quadrilaterals experiment: the rendered training quadrilaterals; ``train_variants``: the paper's 11 references, or more of
    the generative model with deviants (each with its own 22 features, labelled as its reference)."""

    image_size: int = 224
    num_train_images: int = 11_000  # ours: 1,000 per shape (the paper does not give the number)
    train_variants: tuple[str, ...] = ("reference",)
    rotation_range_deg: tuple[float, float] = (-30.0, 30.0)  # covers the test rotations +-25 (held out exactly)
    scale_range: tuple[float, float] = (0.85, 1.15)  # covers the test scales 0.875..1.125
    augment: str = "auto"  # SimCLR views: "host" (TensorFlow in tf.data), "device" (in the step), "auto" (by backend)


def check_data_config(data: DataConfig) -> None:
    """``ValueError`` naming the ``data.`` field when the section is out of range (before anything is rendered)."""
    variants = data.train_variants
    if not variants or any(v not in quads.VARIANT_NAMES for v in variants):
        raise ValueError(f"data.train_variants must be a non-empty subset of {quads.VARIANT_NAMES}, got {variants}")


def training_source(data: Any, seed: int) -> GreyImageSource:
    """``data.num_train_images`` rendered training quadrilaterals at ``data.image_size`` (the test grid held out).

    ``data``: the experiment config's ``data`` section (``num_train_images``, ``image_size``,
    ``train_variants``, ``rotation_range_deg``, ``scale_range``). Metadata: ``label`` (shape index
    0..10, :data:`~gensim_jax.stimuli.quadrilaterals.SHAPE_NAMES` order) and ``features`` (22 binary
    geometric features, float32).
    """
    n, size = int(data.num_train_images), int(data.image_size)
    stim = quads.sample_training_stimuli(
        np.random.default_rng(seed),
        n,
        variants=tuple(data.train_variants),
        rotation_range_deg=tuple(data.rotation_range_deg),
        scale_range=tuple(data.scale_range),
    )
    images = np.empty((n, size, size), np.uint8)
    vertices = stim.vertices()
    chunk = 512  # bounds the float32 render buffer (512 x 224 x 224 x 4 B = 100 MB)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        grey = quads.render_quadrilaterals(
            vertices[start:stop], stim.rotation_deg[start:stop], stim.scale[start:stop], size
        )
        images[start:stop] = np.round(grey * 255.0).astype(np.uint8)
    return GreyImageSource(images, label=stim.shape.astype(np.int32), features=stim.features.astype(np.float32))


def arm_batches(
    arm: str,
    source: GreyImageSource,
    seed: int,
    shard,
    *,
    image_size: int,
    label_offset: int = 0,
    simclr: Optional[Any] = None,
    augment: str = "host",
):
    """``position -> iterator`` of this process's rows (``shard``, a :class:`~gensim_jax.parallel.HostShard`)
    of the batches of ``arm``.

    ``gensim``: ``image``, ``features``; ``supervised``: ``image``, ``label`` (plus ``label_offset``:
    1000 when the 11 classes follow a pretrained ImageNet read-out); ``simclr``: two views by
    rotation (``simclr.rotation_deg``), random resized crop (``simclr.crop_scale``), flip and blur
    (``simclr.blur_p``) on a black canvas, ``simclr`` the ``objectives.simclr`` section; with
    ``augment="device"`` the images are sent once with their ``augment_seed`` and the step draws the
    views (:func:`gensim_jax.data.device_augment.simclr_preset` ``("quadrilaterals", ...)``).
    """
    from gensim_jax.data.streams import stream

    if arm == "gensim":
        return stream("labelled", source, seed=seed, shard=shard, keys=("features",))
    if arm == "supervised":
        labelled = stream("labelled", source, seed=seed, shard=shard, keys=("label",))
        return lambda position: ({**b, "label": b["label"] + label_offset} for b in labelled(position))
    if arm != "simclr" or simclr is None:
        raise ValueError(f"arm must be gensim, supervised or simclr (with its simclr section), got {arm!r}")
    if augment == "device":
        return stream("views", source, seed=seed, shard=shard, device_augment=True)
    from gensim_jax.data.augment import simclr_augment  # TensorFlow: imported by the SimCLR arm only

    aug = simclr_augment(
        (image_size, image_size),
        crop_scale=tuple(simclr.crop_scale),
        blur_p=simclr.blur_p,
        rotation_deg=simclr.rotation_deg,
        fill_value=0.0,  # black canvas
    )
    return stream("views", source, seed=seed, shard=shard, augment=aug)
