"""TFRecord cache of Geoclidean image streams (paper Appendix M training set) and its reader.

Each record is a ``tf.train.Example`` with

* ``image``: the raw uint8 bytes of the ``(height, width)`` grayscale image (black on white);
* ``height``, ``width``, ``program_id``, ``tree_id``, ``variant``, ``index``: int64 scalars
  (see :mod:`gensim_jax.stimuli.geoclidean.dataset` for the ids).

Files are GZIP-compressed (line drawings compress ~20x) and named
``geoclidean-KKKKK-of-NNNNN.tfrecord.gz``. :func:`write_tfrecords` is resumable: a shard is
written to a temporary name and renamed when complete, and complete shards are skipped on a
re-run with the same settings. :func:`read_tfrecords` returns a ``tf.data.Dataset`` of dicts.

TensorFlow is imported lazily, inside the functions (it costs seconds and memory at import), and
is kept off the GPUs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gensim_jax._extras import require
from gensim_jax.stimuli.geoclidean import dataset as _ds

__all__ = ["write_tfrecords", "read_tfrecords", "record_paths"]

_INT_FIELDS = ("height", "width", "program_id", "tree_id", "variant", "index")


def _tf():
    from gensim_jax.data._tf import tf  # the one import of TensorFlow: GPUs hidden, start-up notices dropped

    return tf


def _name(k: int, num: int) -> str:
    return f"geoclidean-{k:05d}-of-{num:05d}.tfrecord.gz"


def _serialize(tf, ex: dict) -> bytes:
    img = np.ascontiguousarray(ex["image"], dtype=np.uint8)
    h, w = img.shape
    feats = {"image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[img.tobytes()]))}
    vals = {
        "height": h,
        "width": w,
        "program_id": int(ex["program_id"]),
        "tree_id": int(ex["tree_id"]),
        "variant": int(ex["variant"]),
        "index": int(ex["index"]),
    }
    for k, v in vals.items():
        feats[k] = tf.train.Feature(int64_list=tf.train.Int64List(value=[v]))
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()


def write_tfrecords(
    directory: str | os.PathLike,
    n: int = _ds.PAPER_TRAIN_SIZE,
    seed: int = 0,
    *,
    shard_size: int = 10_000,
    concepts: str | Sequence[str | int] = "train",
    variant: str | int = "concept",
    size: int = 224,
    progress: bool = True,
) -> list[Path]:
    """Generate a Geoclidean stream and cache it as GZIP TFRecord shards (resumable).

    The examples are those of :func:`gensim_jax.stimuli.geoclidean.dataset.generate` with the
    same arguments (example ``i`` depends only on ``(seed, i)``); the default is the paper's
    100,000-image training set over the 30 training concepts (Appendix M).

    Args:
      directory: output directory (created); holds the shards and ``meta.json``.
      n: number of examples.
      seed: stream seed.
      shard_size: examples per shard.
      concepts, variant, size: as in :func:`~gensim_jax.stimuli.geoclidean.dataset.example`.
      progress: tqdm progress bar.

    Returns:
      Paths of all shards, in order.

    Raises:
      ValueError: bad sizes, or a directory written with other settings.
    """
    if isinstance(shard_size, bool) or not isinstance(shard_size, (int, np.integer)) or shard_size < 1:
        raise ValueError(f"shard_size must be a positive int, got {shard_size!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    ids = _ds.program_ids(concepts)
    v = _ds.variant_index(variant)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    meta = {
        "format": "gensim_jax.geoclidean.tfrecord/1",
        "n": int(n),
        "seed": int(seed),
        "shard_size": int(shard_size),
        "program_ids": list(ids),
        "variant": v,
        "size": int(size),
    }
    mpath = d / "meta.json"
    if mpath.exists():
        old = json.loads(mpath.read_text())
        if old != meta:
            raise ValueError(f"{d} holds records written with other settings: {old} != {meta}")
    else:
        mpath.write_text(json.dumps(meta, indent=1) + "\n")
    tf = _tf()
    num = max(1, -(-int(n) // int(shard_size)))
    paths = [d / _name(k, num) for k in range(num)]
    todo = [k for k in range(num) if not paths[k].exists()]
    bar = None
    if progress:
        tqdm = require("tqdm.auto", "train").tqdm

        done = int(n) - sum(min(shard_size, n - k * shard_size) for k in todo)
        bar = tqdm(total=int(n), initial=done, desc="geoclidean tfrecords", unit="img")
    opts = tf.io.TFRecordOptions(compression_type="GZIP")
    for k in todo:
        lo, hi = k * shard_size, min((k + 1) * shard_size, n)
        tmp = paths[k].with_name(paths[k].name + ".tmp")
        with tf.io.TFRecordWriter(str(tmp), opts) as w:
            for ex in _ds.generate(hi - lo, seed, start=lo, concepts=ids, variant=v, size=size):
                w.write(_serialize(tf, ex))
                if bar is not None:
                    bar.update(1)
        os.replace(tmp, paths[k])
    if bar is not None:
        bar.close()
    return paths


def record_paths(directory: str | os.PathLike) -> list[Path]:
    """The shard paths of a directory written by :func:`write_tfrecords`, checked complete.

    Raises:
      ValueError: no ``meta.json`` or missing shards.
    """
    d = Path(directory)
    mpath = d / "meta.json"
    if not mpath.exists():
        raise ValueError(f"{d} has no meta.json; not a Geoclidean TFRecord directory")
    meta = json.loads(mpath.read_text())
    num = max(1, -(-meta["n"] // meta["shard_size"]))
    paths = [d / _name(k, num) for k in range(num)]
    missing = [p.name for p in paths if not p.exists()]
    if missing:
        raise ValueError(
            f"{d} is incomplete: {len(missing)} of {num} shards missing "
            f"(first: {missing[0]}); re-run write_tfrecords to resume"
        )
    return paths


def read_tfrecords(directory_or_paths: str | os.PathLike | Sequence[str | os.PathLike]):
    """A ``tf.data.Dataset`` of the cached examples, in index order (shuffle downstream).

    Args:
      directory_or_paths: a directory written by :func:`write_tfrecords`, or shard paths (e.g.
        this host's share of them).

    Returns:
      ``tf.data.Dataset`` of dicts: ``image`` uint8 ``(height, width)``, and int32 scalars
      ``program_id``, ``tree_id``, ``variant``, int64 ``index``.

    Example (not run: needs TensorFlow and a cache)::

      ds = read_tfrecords("/data/geoclidean").shuffle(10_000).batch(128)
    """
    tf = _tf()
    if isinstance(directory_or_paths, (str, os.PathLike)) and Path(directory_or_paths).is_dir():
        paths = record_paths(directory_or_paths)
    elif isinstance(directory_or_paths, (str, os.PathLike)):
        paths = [Path(directory_or_paths)]
    else:
        paths = [Path(p) for p in directory_or_paths]
    spec = {"image": tf.io.FixedLenFeature([], tf.string)}
    spec.update({k: tf.io.FixedLenFeature([], tf.int64) for k in _INT_FIELDS})

    def parse(raw):
        f = tf.io.parse_single_example(raw, spec)
        shape = tf.stack([f["height"], f["width"]])
        img = tf.reshape(tf.io.decode_raw(f["image"], tf.uint8), shape)
        return {
            "image": img,
            "program_id": tf.cast(f["program_id"], tf.int32),
            "tree_id": tf.cast(f["tree_id"], tf.int32),
            "variant": tf.cast(f["variant"], tf.int32),
            "index": f["index"],
        }

    ds = tf.data.TFRecordDataset([str(p) for p in paths], compression_type="GZIP")
    return ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
