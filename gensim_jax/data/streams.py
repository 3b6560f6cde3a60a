"""The runner's streams over an indexed source: this process's rows of every global batch, ready for an objective.

Every experiment trains on one of three kinds of batch, built here once for all of them from the
pipelines of :mod:`gensim_jax.data.pipelines` (stateless, resumable, identical for any process
count: :class:`~gensim_jax.parallel.HostShard`):

============  =================================================================  ================================
kind          batch entries                                                      objectives
============  =================================================================  ================================
``labelled``  ``image`` ``(b, H, W, C)`` uint8, metadata ``keys``, ``mask``      GenSim regression, cross entropy
``triplets``  ``anchor``, ``positive``, ``negative`` (Eq. A3 by ``group_key``),  class triplets
              metadata ``keys`` ``(b, 3)``, ``mask``
``views``     ``view1``, ``view2`` (two augmentations, rounded to uint8),        SimCLR / NT-Xent
              metadata ``keys``, ``mask``
============  =================================================================  ================================

``b`` is the shard's rows (``global batch / processes``). Images stay ``uint8``: the jitted step
normalises them (:func:`gensim_jax.training.step.normalize_inputs`). ``labelled`` and ``triplets``
gather rows of the in-memory source with numpy (``engine="numpy"``: the batches of ``tf.data``,
without its per-batch scheduling and without importing TensorFlow) in a background thread that
keeps :data:`PREFETCH` batches ready ahead of the consumer (:func:`background`); ``views`` augment
with TensorFlow's stateless ops in ``tf.data``'s parallel map, or, with ``device_augment=True``
(``data.augment = "device"``), send each example once as ``image`` ``uint8`` at the load size with its
``augment_seed`` ``(b, 2)`` int32 = ``(aug_key, global position)``: the jitted step draws the views
(:class:`gensim_jax.data.device_augment.DeviceAugment`), keyed as the host's views are.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

__all__ = ["STREAM_KINDS", "PREFETCH", "background", "stream", "to_uint8"]

STREAM_KINDS = ("labelled", "triplets", "views")

#: Host batches a numpy stream keeps ready ahead of its consumer (:func:`background`).
PREFETCH = 2

_END = object()


def background(batches: Iterable, depth: int = PREFETCH) -> Iterator:
    """The items of ``batches``, produced by a daemon thread that stays at most ``depth`` items ahead.

    The thread builds batch ``s + 1`` (numpy gathers and copies release the GIL) while the consumer
    dispatches step ``s``; the order is unchanged, an exception of the producer is raised in the
    consumer at the item where it happened, and closing the iterator (or dropping it) stops the thread.
    ``depth < 1``: the items in the consumer's thread, as they come.

    The hand-off is two C-level ``queue.SimpleQueue``: the items, and ``depth`` credits that the
    consumer returns as it takes an item and the producer takes before it puts one (``queue.Queue``'s
    Python conditions cost 2-3x the CPU per batch, a cost that no process count divides).
    """
    if int(depth) < 1:
        yield from batches
        return
    items: queue.SimpleQueue = queue.SimpleQueue()
    credits: queue.SimpleQueue = queue.SimpleQueue()
    for _ in range(int(depth)):
        credits.put(None)
    stop = threading.Event()

    def take_credit() -> bool:
        while not stop.is_set():
            try:
                credits.get(timeout=0.1)
                return True
            except queue.Empty:
                continue
        return False

    def produce():
        try:
            for item in batches:
                if not take_credit():
                    return
                items.put((item, None))
            items.put((_END, None))
        except BaseException as err:  # handed to the consumer
            items.put((_END, err))

    thread = threading.Thread(target=produce, name="gensim-jax-batches", daemon=True)
    thread.start()
    try:
        while True:
            item, err = items.get()
            if item is _END:
                if err is not None:
                    raise err
                return
            credits.put(None)
            yield item
    finally:
        stop.set()


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
    device_augment: bool = False,
) -> Callable[[int], Iterator[dict]]:
    """``position -> iterator`` of this process's rows (``shard``) of every batch of ``kind`` from ``position`` on.

    Args:
      kind: one of :data:`STREAM_KINDS` (see the module docstring).
      source: an :class:`~gensim_jax.data.sources.IndexedSource` of ``uint8`` images with metadata.
      seed: the stream's seed (order, partners, augmentation).
      shard: the :class:`~gensim_jax.parallel.HostShard` of this process.
      keys: metadata entries carried along (e.g. ``("features",)``, ``("label",)``).
      group_key: ``triplets``: the metadata whose value is the generative parameter (class, program).
      augment: ``views``: ``augment(image, seed)`` (:func:`gensim_jax.data.augment.simclr_augment`).
      device_augment: ``views``: no host augmentation; each example once as ``image`` (the source's
        ``uint8`` at its load size) with ``augment_seed`` ``(b, 2)`` int32 ``(aug_key, position)``, the
        same examples at the same positions as the host's views.
    """
    from gensim_jax.data import pipelines

    if kind not in STREAM_KINDS:
        raise ValueError(f"kind must be one of {STREAM_KINDS}, got {kind!r}")
    if kind == "triplets" and not group_key:
        raise ValueError("a triplets stream needs group_key (the metadata naming each example's group)")
    if kind == "views" and augment is None and not device_augment:
        raise ValueError("a views stream needs augment(image, seed) (or device_augment=True)")
    keys, kw = list(keys), shard.pipeline_kwargs

    def labelled_rows(position: int) -> Iterator[dict]:
        ds = pipelines.labelled_batches(source, seed=seed, keys=keys, start_step=position, engine="numpy", **kw)
        for b in pipelines.as_numpy(ds):
            yield {"image": b["image"], **{k: b[k] for k in keys}, "mask": b["mask"]}

    def labelled(position: int) -> Iterator[dict]:
        return background(labelled_rows(position))

    def device_view_rows(position: int) -> Iterator[dict]:
        aug_key = pipelines.derive_key(seed, pipelines._AUG_TAG)  # the key of the host's views
        ds = pipelines.labelled_batches(source, seed=seed, keys=keys, start_step=position, engine="numpy", **kw)
        for b in pipelines.as_numpy(ds):
            pos = b["position"]
            if pos.size and int(pos.max()) >= 2**31:
                raise ValueError(f"stream position {int(pos.max())} does not fit the int32 augment_seed")
            seeds = np.stack([np.full(pos.shape, aug_key, np.int64), pos], axis=1).astype(np.int32)
            yield {"image": b["image"], "augment_seed": seeds, **{k: b[k] for k in keys}, "mask": b["mask"]}

    def device_views(position: int) -> Iterator[dict]:
        return background(device_view_rows(position))

    def triplet_rows(position: int) -> Iterator[dict]:
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

    def triplets(position: int) -> Iterator[dict]:
        return background(triplet_rows(position))

    def views(position: int) -> Iterator[dict]:
        ds = pipelines.view_batches(source, augment=augment, seed=seed, keys=keys, start_step=position, **kw)
        for b in pipelines.as_numpy(ds):
            x = to_uint8(b["image"])
            yield {"view1": x[:, 0], "view2": x[:, 1], **{k: b[k] for k in keys}, "mask": b["mask"]}

    if kind == "views" and device_augment:
        return device_views
    return {"labelled": labelled, "triplets": triplets, "views": views}[kind]
