"""ImageNet-1k through tensorflow-datasets ``imagenet2012``: decode, crop, flip, normalise, leaves.

Data preparation (once per machine or shared file system): ImageNet cannot be downloaded
automatically. Put ``ILSVRC2012_img_train.tar`` and ``ILSVRC2012_img_val.tar`` (from
image-net.org) in a *manual directory*, then::

    import tensorflow_datasets as tfds
    tfds.builder("imagenet2012", data_dir=DATA_DIR).download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=MANUAL_DIR))

(default ``manual_dir``: ``DATA_DIR/downloads/manual``). :func:`prepare_imagenet` does the same.
Afterwards :func:`imagenet_dataset` reads ``DATA_DIR`` only.

Pipeline (:func:`imagenet_dataset`): each host reads its own contiguous 1/P of the split
(``tfds.even_splits``); JPEG bytes are decoded lazily (training: decode only the Inception crop
window, ``tf.image.decode_and_crop_jpeg``); training applies the Inception random resized crop
(area ``(0.08, 1)``, ratio ``(3/4, 4/3)``) to ``image_size``, a horizontal flip and, for SimCLR
views, grayscale and blur; evaluation takes the central ``224/256`` crop; all images are
normalised with the ImageNet mean and standard deviation. Labels are also given as leaves of the
WordNet hierarchy of the kernels (:func:`gensim_jax.kernels.hierarchy.imagenet1k_hierarchy`),
whose class ``y`` is the tfds label ``y`` (checked by :func:`check_label_order`).

Determinism and resumption: the host's records are read in their stored order and shuffled
per epoch by a buffer seeded with ``(seed, epoch)``; augmentations are stateless, keyed by
``(seed, host, position)``. Resuming at step ``k`` starts at epoch ``k b // n`` and skips the
remaining ``k b mod n`` records of that epoch *before decoding* (tfrecords have no random
access; skipping undecoded records is cheap), so the resumed stream equals the uninterrupted one.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from gensim_jax._extras import require
from gensim_jax.data import augment as aug
from gensim_jax.data._tf import tf
from gensim_jax.data.indexing import derive_key

__all__ = [
    "NUM_CLASSES",
    "label_to_leaf",
    "check_label_order",
    "prepare_imagenet",
    "decode_train",
    "decode_eval",
    "imagenet_dataset",
    "imagenet_stream",
    "next_other_class",
]

NUM_CLASSES = 1000
_AUG_TAG, _SHUFFLE_TAG = 41, 42


def label_to_leaf(labels) -> np.ndarray:
    """Map tfds ``imagenet2012`` labels to node ids of the ImageNet-1k hierarchy (its leaves).

    Args:
      labels: integer array in ``[0, 1000)`` (any shape).

    Returns:
      int64 node ids, same shape (``imagenet1k_hierarchy().class_nodes[labels]``).
    """
    from gensim_jax.kernels.hierarchy import imagenet1k_hierarchy

    labels = np.asarray(labels)
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integers, got dtype {labels.dtype}")
    if labels.size and (labels.min() < 0 or labels.max() >= NUM_CLASSES):
        raise ValueError(f"labels must lie in [0, {NUM_CLASSES}), got range [{labels.min()}, {labels.max()}]")
    return imagenet1k_hierarchy().class_nodes[labels]


def check_label_order(names: Sequence[str]) -> None:
    """Raise ``ValueError`` unless ``names`` (tfds label names, WordNet ids) are the hierarchy's
    classes in label order."""
    from gensim_jax.kernels.hierarchy import imagenet1k_hierarchy

    expected = imagenet1k_hierarchy().class_wnids
    names = tuple(names)
    if names != expected:
        bad = next((i for i, (a, b) in enumerate(zip(names, expected)) if a != b), min(len(names), len(expected)))
        raise ValueError(
            f"label names disagree with the hierarchy's classes ({len(names)} vs "
            f"{len(expected)} names; first difference at label {bad})"
        )


def prepare_imagenet(data_dir: str, manual_dir: str | None = None) -> None:
    """Run tfds ``imagenet2012`` preparation from the manually downloaded archives (see module doc)."""
    tfds = require("tensorflow_datasets", "data")

    builder = tfds.builder("imagenet2012", data_dir=data_dir)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=manual_dir))


def decode_train(image_bytes, seed, size: int = 224):
    """Inception crop fused with JPEG decoding, resize to ``size``, random horizontal flip.

    Args:
      image_bytes: scalar string tensor (JPEG).
      seed: ``(2,)`` int seed.
      size: output side.

    Returns:
      float32 ``(size, size, 3)`` in ``[0, 1]`` (not normalised).
    """
    seeds = aug.split_seed(seed, 2)
    shape = tf.io.extract_jpeg_shape(image_bytes)
    box = aug.sample_crop_box(seeds[0], shape[0], shape[1])
    image = tf.io.decode_and_crop_jpeg(image_bytes, box, channels=3)
    image = tf.image.resize(tf.cast(image, tf.float32) / 255.0, [size, size], method="bicubic")
    image = tf.clip_by_value(image, 0.0, 1.0)
    image = aug.random_flip_left_right(image, seeds[1])
    return tf.ensure_shape(image, [size, size, 3])


def decode_eval(image_bytes, size: int = 224, crop_padding: int = 32):
    """Decode and take the central ``size / (size + crop_padding)`` crop, resized to ``size``."""
    image = tf.io.decode_jpeg(image_bytes, channels=3)
    image = aug.center_crop(tf.cast(image, tf.float32) / 255.0, [size, size], crop_padding)
    return tf.clip_by_value(image, 0.0, 1.0)


def _host_split(split: str, process_index: int, process_count: int):
    tfds = require("tensorflow_datasets", "data")

    if process_count == 1:
        return split
    return tfds.even_splits(split, n=process_count, drop_remainder=False)[process_index]


def imagenet_dataset(
    split: str,
    batch_size: int,
    *,
    seed: int,
    train: bool,
    data_dir: str | None = None,
    image_size: int = 224,
    num_views: int = 1,
    grayscale_p: float = 0.2,
    blur_p: float = 0.5,
    shuffle_buffer: int = 16_384,
    start_step: int = 0,
    num_steps: int | None = None,
    process_index: int = 0,
    process_count: int = 1,
    num_examples: int | None = None,
    mean=aug.IMAGENET_MEAN,
    std=aug.IMAGENET_STD,
    dtype: str = "float32",
):
    """Batches of ImageNet-1k from tfds ``imagenet2012`` (see module docstring).

    Args:
      split: tfds split (``"train"``, ``"validation"``, or a slice such as ``"train[:10%]"``).
      batch_size: per-host batch ``B``.
      seed: integer seed of shuffling and augmentation.
      train: training transform (Inception crop + flip, shuffled, endless) or evaluation
        transform (central crop, stored order, one pass with the last batch padded and masked).
      data_dir: tfds data directory holding the prepared ``imagenet2012``.
      image_size: output side (224 in the paper).
      num_views: 1 for supervised training; 2 (or more) for SimCLR views, each with its own
        Inception crop, flip, grayscale (``grayscale_p``) and blur (``blur_p``, SimCLR kernel).
      shuffle_buffer: per-host shuffle buffer (training).
      start_step: first step (resume point).
      num_steps: number of steps (None: endless for training, one pass for evaluation).
      process_index, process_count: this host's shard of the split.
      num_examples: examples in this host's shard (default: from the dataset's metadata).
      mean, std: normalisation statistics on the ``[0, 1]`` scale (``dtype="float32"``).
      dtype: ``"float32"``: normalised images; ``"uint8"``: the augmented images in ``[0, 255]``
        rounded to ``uint8``, not normalised (a quarter of the host memory and transfer; the
        training step normalises them, :func:`gensim_jax.training.step.normalize_inputs`).

    Returns:
      ``tf.data.Dataset`` of dicts: ``image`` ``dtype`` ``(B, S, S, 3)`` (``(B, V, S, S, 3)`` when
      ``num_views > 1``), ``label (B,)`` tfds label, ``leaf (B,)`` hierarchy node id,
      ``position (B,)`` host-stream position, ``mask (B,)``.
    """
    tfds = require("tensorflow_datasets", "data")

    if int(batch_size) <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if dtype not in ("float32", "uint8"):
        raise ValueError(f"dtype must be 'float32' or 'uint8', got {dtype!r}")
    if dtype == "uint8":
        mean = std = None
    if int(num_views) < 1:
        raise ValueError(f"num_views must be >= 1, got {num_views}")
    if int(start_step) < 0:
        raise ValueError(f"start_step must be non-negative, got {start_step}")
    if int(process_count) <= 0 or not 0 <= int(process_index) < int(process_count):
        raise ValueError(f"need 0 <= process_index < process_count, got {process_index}, {process_count}")
    builder = tfds.builder("imagenet2012", data_dir=data_dir)
    check_label_order(builder.info.features["label"].names)
    host_split = _host_split(split, int(process_index), int(process_count))
    base = builder.as_dataset(
        split=host_split,
        shuffle_files=False,
        decoders={"image": tfds.decode.SkipDecoding()},
        read_config=tfds.ReadConfig(interleave_cycle_length=16),
    )
    base = base.map(lambda ex: {"image": ex["image"], "label": ex["label"]})
    if num_examples is None:
        card = int(base.cardinality())
        if card >= 0:
            num_examples = card
        else:  # unknown cardinality (e.g. generated data): count the records once
            num_examples = int(base.reduce(np.int64(0), lambda n, _: n + 1))
    n = int(num_examples)
    if n <= 0:
        raise ValueError(f"the {host_split!r} shard is empty")
    b = int(batch_size)
    first = int(start_step) * b
    epoch0, skip = divmod(first, n)
    shuffle_key = derive_key(seed, _SHUFFLE_TAG, process_index)
    aug_key = derive_key(seed, _AUG_TAG, process_index)
    leaf_table = tf.constant(label_to_leaf(np.arange(NUM_CLASSES)), tf.int64)

    if train:

        def one_epoch(e):
            ds = base.shuffle(
                min(shuffle_buffer, n),
                seed=tf.constant(shuffle_key, tf.int64) + e * 1_000_003,
                reshuffle_each_iteration=False,
            )
            ds = ds.enumerate()
            return ds.map(lambda i, ex: dict(ex, position=e * n + i))

        first_epoch = one_epoch(tf.constant(epoch0, tf.int64)).skip(skip)
        rest = tf.data.Dataset.range(epoch0 + 1, np.iinfo(np.int64).max).flat_map(one_epoch)
        stream = first_epoch.concatenate(rest)
    else:
        stream = base.enumerate().map(lambda i, ex: dict(ex, position=i))
        # Pad the last batch by repeating the first records, marked invalid.
        pad = (-n) % b
        stream = stream.concatenate(base.take(pad).enumerate().map(lambda i, ex: dict(ex, position=n + i)))
        stream = stream.skip(first)
    seed_base = tf.constant(aug_key, tf.int64)
    size = int(image_size)

    def finish(image):  # [0, 1] floats -> normalised float32, or uint8
        if dtype == "uint8":
            return tf.cast(tf.round(tf.clip_by_value(image * 255.0, 0.0, 255.0)), tf.uint8)
        return aug.normalize(image, mean, std)

    def transform(ex):
        pos = ex["position"]
        seed_ = tf.stack([seed_base, pos])
        if not train:
            image = finish(decode_eval(ex["image"], size))
        elif num_views == 1:
            image = finish(decode_train(ex["image"], seed_, size))
        else:
            view = aug.simclr_augment((size, size), grayscale_p=grayscale_p, blur_p=blur_p, mean=mean, std=std)
            decoded = tf.io.decode_jpeg(ex["image"], channels=3)
            seeds = aug.split_seed(seed_, num_views)
            image = tf.stack([view(decoded, seeds[v]) for v in range(num_views)])
            if dtype == "uint8":
                image = finish(image)
        label = ex["label"]
        return {
            "image": image,
            "label": label,
            "leaf": tf.gather(leaf_table, label),
            "position": pos,
            "mask": pos < n if not train else tf.constant(True),
        }

    ds = stream.map(transform, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    ds = ds.batch(b, drop_remainder=True)
    if num_steps is not None:
        ds = ds.take(int(num_steps))
    options = tf.data.Options()
    options.deterministic = True
    return ds.with_options(options).prefetch(tf.data.AUTOTUNE)


# --------------------------------------------------------------------------------------------
# The runner's streams (this process's rows of every global batch)
# --------------------------------------------------------------------------------------------


def next_other_class(labels) -> np.ndarray:
    """For each ``i``, the first ``j`` after ``i`` (cyclically) with ``labels[j] != labels[i]``; ``-1`` if none."""
    y = np.asarray(labels)
    n = len(y)
    out = np.full(n, -1, np.int64)
    for i in range(n):
        for k in range(1, n):
            j = (i + k) % n
            if y[j] != y[i]:
                out[i] = j
                break
    return out


def imagenet_stream(
    kind: str,
    split: str,
    *,
    seed: int,
    shard,
    data_dir=None,
    image_size: int = 224,
    shuffle_buffer: int = 16_384,
    grayscale_p: float = 0.2,
    blur_p: float = 0.5,
):
    """``position -> iterator`` of this process's rows (``shard``, a
    :class:`~gensim_jax.parallel.HostShard`) of the training batches of ``kind`` from ``split``.

    Kinds as :func:`gensim_jax.data.streams.stream`, images ``uint8`` (normalised in the step):
    ``labelled`` (``image``, ``label``, ``mask``); ``views`` (two SimCLR views ``view1``, ``view2``);
    ``triplets``: the training stream (Inception crop and flip) regrouped by ``tf.data``
    ``group_by_window`` into pairs of consecutive images of one class (anchor, positive); ``b``
    pairs make a batch and the negative of triplet ``i`` is the positive of the next triplet of
    another class (:func:`next_other_class`); a triplet without one (a batch of a single class) is
    masked out, and ``label`` is ``(b, 3)``. Pending half pairs are held in memory (at most one
    decoded image per class: 600 MB at 224 x 224 for 1,000 classes). About two records are read per
    triplet, so resuming at ``position`` restarts the record stream at its batch ``2 * position``: a
    valid continuation, not bit-identical to the uninterrupted stream.

    Each process reads and decodes its own contiguous shard of the records, so, unlike the
    in-memory sources, the records of a global batch depend on the process count (tfrecords have no
    random access).
    """
    from gensim_jax.data.pipelines import as_numpy

    if kind not in ("labelled", "views", "triplets"):
        raise ValueError(f"kind must be 'labelled', 'views' or 'triplets', got {kind!r}")
    common = dict(
        seed=seed,
        train=True,
        data_dir=data_dir,
        image_size=image_size,
        shuffle_buffer=shuffle_buffer,
        process_index=shard.index,
        process_count=shard.count,
        dtype="uint8",
    )

    def labelled_or_views(position: int):
        views = 2 if kind == "views" else 1
        ds = imagenet_dataset(
            split, shard.batch, num_views=views, grayscale_p=grayscale_p, blur_p=blur_p, start_step=position, **common
        )
        for b in as_numpy(ds):
            if kind == "views":
                yield {"view1": b["image"][:, 0], "view2": b["image"][:, 1], "label": b["label"], "mask": b["mask"]}
            else:
                yield {"image": b["image"], "label": b["label"], "mask": b["mask"]}

    def triplets(position: int):
        b = shard.batch
        ds = imagenet_dataset(split, b, start_step=2 * int(position), **common)
        ds = ds.unbatch().map(lambda ex: {"image": ex["image"], "label": ex["label"]})
        ds = ds.group_by_window(key_func=lambda ex: ex["label"], reduce_func=lambda _, w: w.batch(2), window_size=2)
        ds = ds.batch(b, drop_remainder=True).prefetch(2)
        for batch in as_numpy(ds):
            img, lab = batch["image"], batch["label"]
            j = next_other_class(lab[:, 1])
            ok = j >= 0
            j = np.where(ok, j, np.arange(len(j)))
            yield {
                "anchor": img[:, 0],
                "positive": img[:, 1],
                "negative": img[j, 1],
                "label": np.stack([lab[:, 0], lab[:, 1], lab[j, 1]], axis=1),
                "mask": ok,
            }

    return triplets if kind == "triplets" else labelled_or_views
