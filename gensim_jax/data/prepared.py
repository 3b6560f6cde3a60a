"""ImageNet pre-resized to a fixed load size, once (FFCV-style records), and read back decoded.

The training stream of :mod:`gensim_jax.data.imagenet` decodes every ImageNet JPEG (about 110 kB,
400 x 350 pixels on average) in every epoch. With augmentation on the device, the host only has to
send ``uint8`` images at a fixed *load size*; :func:`prepare_records` makes them once: every image
of a tfds ``imagenet2012`` split is decoded, resized as a whole to ``load_size x load_size``
(antialiased bilinear, the aspect ratio not kept; the original ``height`` and ``width`` are
stored so that a crop box drawn on the original, e.g. the Inception crop, maps onto the stored image
by scaling its coordinates) and written to TFRecord shards, either re-encoded as JPEG
(``fmt="jpeg"``, ``quality``) or as raw ``uint8`` pixels (``fmt="raw"``: no decoding at all when
read, ``3 L^2`` bytes per image). :func:`prepared_dataset` reads them back as ``uint8``
``(L, L, 3)`` images. The disk cost is written to ``prepared.json`` (bytes per image; for
ImageNet-1k's 1,281,167 training images multiply by that count).

Files in ``out_dir``: ``{split}-{L}-{fmt}.tfrecord-{i:05d}`` and ``prepared.json``
(``{"splits": {split: {"examples", "bytes", "bytes_per_image", "files", "load_size", "format",
"quality"}}}``).

TensorFlow is imported when a function here first runs, not with the module: the command's parser
(``gensim-jax prepare-imagenet --help``, :mod:`gensim_jax.commands.prepare_imagenet`) reads :data:`FORMATS`
without it (4-5 s).

Command line::

    gensim-jax prepare-imagenet --data-dir DATA_DIR --out OUT_DIR --split train --load-size 256
"""

from __future__ import annotations

import json
import os

from gensim_jax._extras import require

__all__ = ["FORMATS", "prepare_records", "prepared_dataset", "read_manifest", "resize_to_load_size"]

FORMATS = ("jpeg", "raw")
MANIFEST = "prepared.json"
#: ImageNet-1k (ILSVRC-2012) training images, for the disk cost of a full preparation.
IMAGENET_TRAIN_IMAGES = 1_281_167


def resize_to_load_size(image, load_size: int):
    """``uint8 (H, W, 3)`` -> ``uint8 (L, L, 3)``: the whole image, antialiased bilinear (``tf.image.resize``)."""
    from gensim_jax.data._tf import tf

    out = tf.image.resize(image, [int(load_size), int(load_size)], method="bilinear", antialias=True)
    return tf.cast(tf.round(tf.clip_by_value(out, 0.0, 255.0)), tf.uint8)


def _file(out_dir: str, split: str, load_size: int, fmt: str, index: int) -> str:
    return os.path.join(out_dir, f"{split}-{int(load_size)}-{fmt}.tfrecord-{index:05d}")


def _check(load_size: int, fmt: str, quality: int) -> None:
    if int(load_size) <= 0:
        raise ValueError(f"load_size must be positive, got {load_size}")
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    if not 1 <= int(quality) <= 100:
        raise ValueError(f"quality must lie in [1, 100], got {quality}")


def _tfds_split(data_dir: str | None, split: str):
    """``(dataset of {"image": JPEG bytes, "label"}, label names)`` of tfds ``imagenet2012`` under ``data_dir``."""
    from gensim_jax.data._tf import tf

    tfds = require("tensorflow_datasets", "data")

    builder = tfds.builder("imagenet2012", data_dir=data_dir)
    try:
        ds = builder.as_dataset(split=split, shuffle_files=False, decoders={"image": tfds.decode.SkipDecoding()})
    except (AssertionError, FileNotFoundError, tf.errors.NotFoundError) as err:
        raise FileNotFoundError(
            f"no prepared tfds imagenet2012 split {split!r} under {data_dir!r} ({str(err).split('. ')[0]}); "
            "prepare it first with gensim_jax.data.imagenet.prepare_imagenet"
        ) from None
    return ds.map(lambda ex: {"image": ex["image"], "label": ex["label"]})


def prepare_records(
    data_dir: str | None,
    out_dir: str,
    *,
    split: str = "train",
    load_size: int = 256,
    fmt: str = "jpeg",
    quality: int = 90,
    examples_per_file: int = 10_000,
    max_examples: int | None = None,
    dataset=None,
) -> dict:
    """Decode every image of tfds ``imagenet2012`` ``split``, resize it to ``load_size``, write TFRecords.

    Args:
      data_dir: tfds data directory holding the prepared ``imagenet2012`` (as for
        :func:`~gensim_jax.data.imagenet.imagenet_dataset`).
      out_dir: directory of the records (created).
      split: tfds split name (``"train"``, ``"validation"``; slices such as ``"train[:1%]"`` work).
      load_size: side ``L`` of the stored square images.
      fmt: ``"jpeg"`` (re-encoded at ``quality``, 4:2:0) or ``"raw"`` (``3 L^2`` bytes of ``uint8``).
      quality: JPEG quality (``fmt="jpeg"``).
      examples_per_file: records per TFRecord shard.
      max_examples: stop after this many examples (None: the whole split).
      dataset: instead of tfds, a ``tf.data.Dataset`` of ``{"image": JPEG bytes, "label": int}``.

    Returns:
      The manifest entry of the split: ``examples``, ``bytes`` (of the record files),
      ``bytes_per_image``, ``imagenet_train_bytes`` (that per-image cost times 1,281,167),
      ``files``, ``load_size``, ``format``, ``quality``. Also merged into ``out_dir/prepared.json``.
    """
    _check(load_size, fmt, quality)
    if int(examples_per_file) <= 0:
        raise ValueError(f"examples_per_file must be positive, got {examples_per_file}")
    from gensim_jax.data._tf import tf

    source = dataset if dataset is not None else _tfds_split(data_dir, split)
    if max_examples is not None:
        source = source.take(int(max_examples))
    L, q = int(load_size), int(quality)

    def convert(ex):
        data = ex["image"]
        shape = tf.io.extract_jpeg_shape(data)
        image = resize_to_load_size(tf.io.decode_jpeg(data, channels=3), L)
        if fmt == "jpeg":
            payload = tf.io.encode_jpeg(image, quality=q, chroma_downsampling=True)
        else:
            payload = tf.io.serialize_tensor(image)
        return payload, tf.cast(ex["label"], tf.int64), tf.cast(shape[0], tf.int64), tf.cast(shape[1], tf.int64)

    examples = source.map(convert, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    os.makedirs(out_dir, exist_ok=True)
    per = int(examples_per_file)
    files: list[str] = []
    writer = None
    count = 0
    try:  # streamed: one shard open at a time, nothing held in memory
        for payload, label, height, width in examples.as_numpy_iterator():
            if count % per == 0:
                if writer is not None:
                    writer.close()
                files.append(_file(out_dir, split, L, fmt, len(files)))
                writer = tf.io.TFRecordWriter(files[-1])
            feature = {
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[payload])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
                "height": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(height)])),
                "width": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(width)])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
            count += 1
    finally:
        if writer is not None:
            writer.close()
    if not count:
        raise ValueError(f"split {split!r} has no examples")
    nbytes = sum(os.path.getsize(f) for f in files)
    entry = {
        "examples": count,
        "bytes": nbytes,
        "bytes_per_image": round(nbytes / count, 1),
        "imagenet_train_bytes": int(round(nbytes / count * IMAGENET_TRAIN_IMAGES)),
        "files": [os.path.basename(f) for f in files],
        "load_size": L,
        "format": fmt,
        "quality": q if fmt == "jpeg" else None,
    }
    path = os.path.join(out_dir, MANIFEST)
    manifest = _load_json(path) if os.path.exists(path) else {"splits": {}}
    manifest["splits"][split] = entry
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
    return entry


def _load_json(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def read_manifest(directory: str, split: str) -> dict:
    """The manifest entry of ``split`` in ``directory`` (see :func:`prepare_records`); checks its files exist."""
    path = os.path.join(directory, MANIFEST)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{directory!r} holds no prepared records ({MANIFEST} is missing); "
            "make them with gensim-jax prepare-imagenet --data-dir DATA_DIR --out DIR"
        )
    splits = _load_json(path).get("splits", {})
    if split not in splits:
        raise FileNotFoundError(f"{directory!r} has no prepared split {split!r} (it has {sorted(splits)})")
    entry = splits[split]
    missing = [f for f in entry["files"] if not os.path.isfile(os.path.join(directory, f))]
    if missing:
        raise FileNotFoundError(f"{directory!r} lacks {len(missing)} record file(s) of split {split!r}: {missing[0]}")
    return entry


def prepared_dataset(
    directory: str,
    split: str = "train",
    *,
    process_index: int = 0,
    process_count: int = 1,
    shuffle_buffer: int = 0,
    seed: int = 0,
    num_parallel_calls=None,
):
    """Records of :func:`prepare_records`, decoded: ``{"image": uint8 (L, L, 3), "label", "height", "width"}``.

    Process ``process_index`` of ``process_count`` keeps every ``process_count``-th record from its
    ``process_index``-th; in stored order, or shuffled before decoding (the records, not decoded images,
    wait in the buffer) by a ``shuffle_buffer`` seeded with ``seed``, reshuffled on each pass.
    Batching and augmentation are the caller's.

    Args:
      directory: ``out_dir`` of :func:`prepare_records`.
      split: the prepared split.
      process_index, process_count: this process's records.
      shuffle_buffer: records in the shuffle buffer (0: stored order).
      seed: seed of the shuffle.
      num_parallel_calls: parallel decodes (default ``tf.data.AUTOTUNE``).
    """
    if int(process_count) <= 0 or not 0 <= int(process_index) < int(process_count):
        raise ValueError(f"need 0 <= process_index < process_count, got {process_index}, {process_count}")
    from gensim_jax.data._tf import tf

    entry = read_manifest(directory, split)
    L, fmt = int(entry["load_size"]), entry["format"]
    files = [os.path.join(directory, f) for f in entry["files"]]
    spec = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "height": tf.io.FixedLenFeature([], tf.int64),
        "width": tf.io.FixedLenFeature([], tf.int64),
    }
    ds = tf.data.TFRecordDataset(files)
    if int(process_count) > 1:
        ds = ds.shard(int(process_count), int(process_index))
    if int(shuffle_buffer) > 0:
        ds = ds.shuffle(int(shuffle_buffer), seed=int(seed), reshuffle_each_iteration=True)

    def decode(record):
        ex = tf.io.parse_single_example(record, spec)
        if fmt == "jpeg":
            image = tf.io.decode_jpeg(ex["image"], channels=3)
        else:
            image = tf.io.parse_tensor(ex["image"], tf.uint8)
        ex["image"] = tf.ensure_shape(image, [L, L, 3])
        return ex

    calls = tf.data.AUTOTUNE if num_parallel_calls is None else num_parallel_calls
    return ds.map(decode, num_parallel_calls=calls, deterministic=True)
