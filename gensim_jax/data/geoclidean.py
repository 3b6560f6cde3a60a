"""The Geoclidean experiment's training data: rendered images of the 30 training concepts, and each arm's batches.

:class:`GeoclideanSource` renders ``dataset.example(i, seed, concepts="train")`` once (grey
storage, RGB out, metadata ``program_id``); :func:`arm_batches` streams this process's rows of every
global batch (:func:`gensim_jax.data.streams.stream`): ``gensim`` images with their program id,
``class_triplet`` anchor / positive / negative of two programs, ``simclr`` two augmented views.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from gensim_jax.data.sources import GreyImageSource
from gensim_jax.stimuli.geoclidean import dataset as geo

__all__ = ["GeoclideanSource", "arm_batches"]


class GeoclideanSource(GreyImageSource):
    """Indexed source of rendered training images, stored grey ``(N, S, S)`` and served as RGB.

    Example ``i`` is ``dataset.example(i, seed, concepts="train", size=S)`` (concept ``i mod 30``,
    geometry from ``(seed, i)``), rendered once at construction; metadata ``program_id``.
    """

    def __init__(self, n: int, seed: int, size: int, progress: bool = False):
        images = np.empty((n, size, size), np.uint8)  # 5 GB for the paper's 100,000 at 224
        program_id = np.empty((n,), np.int32)
        for i, e in enumerate(geo.generate(n, seed=seed, concepts="train", size=size, progress=progress)):
            images[i] = e["image"]
            program_id[i] = e["program_id"]
        super().__init__(images, program_id=program_id)

    @property
    def images(self) -> np.ndarray:
        """The stored grey images ``(N, S, S)`` uint8."""
        return self.arrays["image"][..., 0]


def arm_batches(
    arm: str,
    source: GeoclideanSource,
    seed: int,
    shard,
    *,
    image_size: int,
    simclr: Optional[Any] = None,
    augment: str = "host",
):
    """``position -> iterator`` of this process's rows (``shard``) of the batches of ``arm`` (images ``uint8``,
    normalised in the step); ``simclr``: the ``objectives.simclr`` section (``crop_scale``, ``blur_p``);
    ``augment="device"``: the SimCLR images once with their ``augment_seed``, the views drawn in the step."""
    from gensim_jax.data.streams import stream

    if arm == "gensim":
        return stream("labelled", source, seed=seed, shard=shard, keys=("program_id",))
    if arm == "class_triplet":
        return stream("triplets", source, seed=seed, shard=shard, group_key="program_id")
    if arm != "simclr" or simclr is None:
        raise ValueError(f"arm must be gensim, class_triplet or simclr (with its simclr section), got {arm!r}")
    if augment == "device":
        return stream("views", source, seed=seed, shard=shard, device_augment=True)
    from gensim_jax.data.augment import simclr_augment  # TensorFlow: imported by the SimCLR arm only

    aug = simclr_augment((image_size, image_size), crop_scale=tuple(simclr.crop_scale), blur_p=simclr.blur_p)
    return stream("views", source, seed=seed, shard=shard, augment=aug)
