"""The folder experiment's image stream: host images per second per core, against the ImageNet stream (``make bench``).

Source: ``n`` ImageNet-like JPEGs (:mod:`bench.input.imagenet_jpegs`: crops of real photographs at
ImageNet's pixel sizes, about 110 kB each) written once as files of a folder with a ``metadata.csv``
(binary feature columns), as a user's folder would be; the same JPEGs as TFRecords for the reference.

Rows (``"bench": "input_folder_stream"``), one per ``image_size``:

* ours: :func:`gensim_jax.data.folder.folder_stream` as the runner uses it (the ``gensim`` arm's
  stream: read each file, decode, antialiased resize to ``image_size``, ``uint8``, batch of 32,
  with its ``target_id``; the views are drawn on the device). The table is checked first
  (:func:`gensim_jax.data.folder.load_table`), not timed.
* reference: the ImageNet training stream of :mod:`bench.input.imagenet_stream`
  (:func:`gensim_jax.data.imagenet.imagenet_dataset` with ``train=True, dtype="uint8"``: read
  records, shuffle, ``decode_and_crop_jpeg`` at an Inception box, bicubic to 224, flip), in this process
  on the same JPEGs, with tf.data's default parallelism like ours.

``images_per_s_per_core`` is images per CPU second of the whole process (every thread, the
conversion to numpy included); ``ours_s`` and ``reference_s`` are CPU seconds per image and
``ratio = ours_s / reference_s``. Target (issue 39): at least the ImageNet stream's rate per core,
``ratio <= 1``. The first batches (start-up) are excluded.

Usage::

    python -m bench.input.folder_stream            # 256 JPEGs, 64 and 224 px
    python -m bench.input.folder_stream --quick    # 32 JPEGs, smoke sizes
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
import time

import numpy as np

from bench._harness import emit, sig
from bench.input import imagenet_stream as imagenet

BATCH = imagenet.BATCH
SIZES = (64, 224)


def write_folder(jpegs: list, directory: str) -> str:
    """The JPEGs as ``directory/images/<i>.jpg`` with ``metadata.csv`` (three binary features from the index)."""
    os.makedirs(os.path.join(directory, "images"), exist_ok=True)
    rows = [["file", "a", "b", "c"]]
    for i, data in enumerate(jpegs):
        with open(os.path.join(directory, "images", f"{i}.jpg"), "wb") as f:
            f.write(data)
        rows.append([f"images/{i}.jpg", str(i % 2), str(i // 2 % 2), str(i // 4 % 2)])
    with open(os.path.join(directory, "metadata.csv"), "w", newline="") as f:
        csv.writer(f).writerows(rows)
    return directory


def time_folder_stream(directory: str, size: int, seconds: float, warmup_batches: int = 2, min_batches: int = 3):
    """Images, CPU seconds and wall seconds of the folder stream at ``size`` after ``warmup_batches``."""
    from gensim_jax.data.folder import folder_stream, load_table
    from gensim_jax.parallel import HostShard

    table = load_table(directory, "metadata.csv", holdout=0.5)
    every = np.arange(len(table.files))  # every image: the split does not matter here
    stream = folder_stream(table, every, seed=0, shard=HostShard(0, 1, BATCH), image_size=size, keys=("target_id",))(0)
    for _ in range(warmup_batches):
        next(stream)
    batches = 0
    c0, t0 = time.process_time(), time.perf_counter()
    while batches < min_batches or time.perf_counter() - t0 < seconds:
        batch = next(stream)
        batches += 1
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return {
        "images": batches * len(batch["image"]),
        "cpu_s": cpu,
        "wall_s": wall,
        "shape": list(batch["image"].shape[1:]),
    }


def run(quick: bool = False, n: int | None = None, seconds: float | None = None):
    from bench.input import imagenet_jpegs

    n = int(n or (32 if quick else 256))
    seconds = float(seconds if seconds is not None else (0.2 if quick else 3.0))
    warm = 1 if quick else 2
    jpegs = imagenet_jpegs.imagenet_like_jpegs(n, seed=0)
    stats = imagenet_jpegs.summary(jpegs)
    with tempfile.TemporaryDirectory() as tmp:
        directory = write_folder(jpegs, os.path.join(tmp, "folder"))
        records = os.path.join(tmp, "imagenet-like.tfrecord")
        imagenet._write_records(jpegs, records)
        with imagenet._mocked_imagenet(records):
            ref = imagenet.time_stream(
                imagenet.host_stream(1, n), "default", seconds, warmup_batches=warm, min_batches=2
            )
        ref_s = ref["cpu_s"] / ref["images"]
        for size in SIZES:
            t = time_folder_stream(directory, size, seconds, warmup_batches=warm, min_batches=2)
            per_core = t["images"] / t["cpu_s"]
            ours_s = 1.0 / per_core
            yield {
                "bench": "input_folder_stream",
                "params": {"image_size": size, "batch": BATCH, "threads": "default", "source_images": n},
                "images_per_s_per_core": round(per_core, 1),
                "images_per_s": round(t["images"] / t["wall_s"], 1),
                "cores_used": round(t["cpu_s"] / t["wall_s"], 2),
                "ours_s": sig(ours_s),
                "reference": "the ImageNet training stream (imagenet_dataset, uint8, 224 px) on the same JPEGs",
                "reference_s": sig(ref_s),
                "reference_images_per_s_per_core": round(1.0 / ref_s, 1),
                "ratio": float(f"{ours_s / ref_s:.4g}"),
                "target": "images_per_s_per_core >= the ImageNet stream's",
                "met": bool(ours_s <= ref_s),
                "images_timed": t["images"],
                "output_shape": t["shape"],
                "jpeg_mean_kb": stats["mean_kb"],
                "jpeg_mean_hw": [stats["mean_height"], stats["mean_width"]],
                "load_avg_1m": round(os.getloadavg()[0], 2),
            }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="32 JPEGs, a fraction of a second per row")
    parser.add_argument("--n", type=int, help="JPEGs generated (default 256)")
    parser.add_argument("--seconds", type=float, help="timed seconds per row (default 3)")
    args = parser.parse_args(argv)
    for line in run(quick=args.quick, n=args.n, seconds=args.seconds):
        emit(line)


if __name__ == "__main__":
    main()
