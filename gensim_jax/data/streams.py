"""The runner's streams over an indexed source: this process's rows of every global batch, ready for an objective.

Every experiment trains on one of three kinds of batch, built here once for all of them from the
pipelines of :mod:`gensim_jax.data.pipelines` (stateless, resumable, identical for any process
count: :class:`~gensim_jax.training.experiment.HostShard`):

==============  ==============================================================  ===========================
kind            batch entries                                                   objectives
==============  ==============================================================  ===========================
``labelled``    ``image`` ``(b, H, W, C)`` uint8, metadata ``keys``, ``mask``   GenSim regression, cross entropy
``triplets``    ``anchor``, ``positive``, ``negative`` (Eq. A3 by ``group_key``),  class triplets
                metadata ``keys`` ``(b, 3)``, ``mask``
``views``       ``view1``, ``view2`` (two augmentations, rounded to uint8),     SimCLR / NT-Xent
                metadata ``keys``, ``mask``
==============  ==============================================================  ===========================

``b`` is the shard's rows (``global batch / processes``). Images stay ``uint8``: the jitted step
normalises them (:func:`gensim_jax.training.step.normalize_inputs`). ``labelled`` and ``triplets``
gather rows of the in-memory source in the consumer's thread (``engine="numpy"``: the batches of
``tf.data``, without its per-batch scheduling and without importing TensorFlow); ``views`` augment
with TensorFlow's stateless ops in ``tf.data``'s parallel map.
"""

from __future__ import annotations

from typing import Callable, Iterator, Sequence

import numpy as np

__all__ = ["STREAM_KINDS", "stream", "to_uint8"]

STREAM_KINDS = ("labelled", "triplets", "views")


def to_uint8(images) -> np.ndarray:
    """Images in ``[0, 1]`` as ``uint8`` (rounded to the nearest of the 256 levels, clipped)."""
    return np.clip(np.rint(np.asarray(images, np.float32) * 255.0), 0, 255).astype(np.uint8)


def stream(
    kind: str,
    source,
    *,
    seed: int,
    shard,
    keys: Sequence[str] = (),
    group_key: str | None = None,
    augment=None,
) -> Callable[[int], Iterator[dict]]:
    """``position -> iterator`` of this process's rows (``shard``) of every batch of ``kind`` from ``position`` on.

    Args:
      kind: one of :data:`STREAM_KINDS` (see the module docstring).
      source: an :class:`~gensim_jax.data.sources.IndexedSource` of ``uint8`` images with metadata.
      seed: the stream's seed (order, partners, augmentation).
      shard: the :class:`~gensim_jax.training.experiment.HostShard` of this process.
      keys: metadata entries carried along (e.g. ``("features",)``, ``("label",)``).
      group_key: ``triplets``: the metadata whose value is the generative parameter (class, program).
      augment: ``views``: ``augment(image, seed)`` (:func:`gensim_jax.data.augment.simclr_augment`).
    """
    from gensim_jax.data import pipelines

    if kind not in STREAM_KINDS:
        raise ValueError(f"kind must be one of {STREAM_KINDS}, got {kind!r}")
    if kind == "triplets" and not group_key:
        raise ValueError("a triplets stream needs group_key (the metadata naming each example's group)")
    if kind == "views" and augment is None:
        raise ValueError("a views stream needs augment(image, seed)")
    keys, kw = list(keys), shard.pipeline_kwargs

    def labelled(position: int) -> Iterator[dict]:
        ds = pipelines.labelled_batches(source, seed=seed, keys=keys, start_step=position, engine="numpy", **kw)
        for b in pipelines.as_numpy(ds):
            yield {"image": b["image"], **{k: b[k] for k in keys}, "mask": b["mask"]}

    def triplets(position: int) -> Iterator[dict]:
        ds = pipelines.triplet_batches(
            source,
            seed=seed,
            group_key=group_key,
            keys=keys or [group_key],
            start_step=position,
            engine="numpy",
            **kw,
        )
        for b in pipelines.as_numpy(ds):
            x = b["image"]
            out = {"anchor": x[:, 0], "positive": x[:, 1], "negative": x[:, 2]}
            yield {**out, **{k: b[k] for k in keys}, "mask": b["mask"]}

    def views(position: int) -> Iterator[dict]:
        ds = pipelines.view_batches(source, augment=augment, seed=seed, keys=keys, start_step=position, **kw)
        for b in pipelines.as_numpy(ds):
            x = to_uint8(b["image"])
            yield {"view1": x[:, 0], "view2": x[:, 1], **{k: b[k] for k in keys}, "mask": b["mask"]}

    return {"labelled": labelled, "triplets": triplets, "views": views}[kind]
