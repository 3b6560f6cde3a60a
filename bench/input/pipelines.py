"""Throughput of the gensim_jax.data pipeline builders at 224 x 224, against a plain tf.data reference.

Source: an in-memory :class:`~gensim_jax.data.sources.ArraySource` of ``--n`` random uint8
256 x 256 x 3 images with a label (so the numbers measure the pipelines, not a generator).
Pipelines (ours): plain labelled batches (no augmentation, uint8), labelled batches with the
Inception crop + flip to 224, Eq. A3 triplets with crop + flip, pairs with crop + flip, SimCLR
two-view batches (crop, flip, grayscale, blur; ImageNet preset), and the quadrilateral preset
(rotation +-45, crop, both flips, blur). Reference: the conventional non-resumable tf.data
pipeline doing the crop + flip work (``from_tensor_slices`` -> ``shuffle`` -> ``map`` with
``tf.image.sample_distorted_bounding_box`` and ``random_flip_left_right`` -> ``batch``), as in
the flax ImageNet example.  The reference is timed before and after the pipelines (the faster of
the two counts), so a load change during the run does not favour ours.

Prints one JSON line per pipeline:
``{"name", "images_per_s", "batch_size", "image_size", "steps", "reference", "reference_images_per_s",
"ratio"}`` where images are output images (``B`` x members per batch) and ``ratio`` =
ours / reference.

Usage: python bench/input/pipelines.py [--n 512] [--batch 64] [--steps 20]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def _time(iterator, steps: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        next(iterator)
    t0 = time.perf_counter()
    for _ in range(steps):
        next(iterator)
    return time.perf_counter() - t0


def main(argv=None) -> list[dict]:
    """Parse ``argv``, print one JSON line per pipeline and return the lines."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--size", type=int, default=224)
    args = ap.parse_args(argv)
    lines = measure(args.n, args.batch, args.steps, args.size)
    for line in lines:
        print(json.dumps(line), flush=True)
    return lines


def measure(n: int = 512, batch: int = 64, steps: int = 20, size: int = 224, warmup: int = 2, names=None) -> list[dict]:
    """Images/s of every pipeline (or of those in ``names``) and of the tf.data reference."""
    args = argparse.Namespace(n=n, batch=batch, steps=steps, size=size)

    from gensim_jax.data import tf
    from gensim_jax.data.augment import IMAGENET_MEAN, IMAGENET_STD, simclr_augment
    from gensim_jax.data.pipelines import as_numpy, labelled_batches, pair_batches, triplet_batches, view_batches
    from gensim_jax.data.sources import ArraySource

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(args.n, 256, 256, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, size=args.n)
    src = ArraySource({"image": images, "label": labels})
    size = (args.size, args.size)
    crop_flip = simclr_augment(size, blur_p=0.0, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    imagenet_views = simclr_augment(size, grayscale_p=0.2, blur_p=0.5, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    quad_views = simclr_augment(size, rotation_deg=45.0, vertical_flip=True, fill_value=1.0)

    # Reference: conventional stateful tf.data pipeline with the same crop + flip work.
    def ref_map(img, label):
        img = tf.cast(img, tf.float32) / 255.0
        begin, extent, _ = tf.image.sample_distorted_bounding_box(
            tf.shape(img),
            tf.zeros([0, 0, 4]),
            area_range=(0.08, 1.0),
            aspect_ratio_range=(3 / 4, 4 / 3),
            max_attempts=10,
            use_image_if_no_bounding_boxes=True,
        )
        img = tf.image.resize(tf.slice(img, begin, extent), size)
        img = tf.image.random_flip_left_right(img)
        img = (img - IMAGENET_MEAN) / IMAGENET_STD
        return {"image": img, "label": label}

    ref_ds = (
        tf.data.Dataset.from_tensor_slices((images, labels))
        .shuffle(args.n)
        .repeat()
        .map(ref_map, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(args.batch)
        .prefetch(tf.data.AUTOTUNE)
    )
    # a fresh iterator each time, dropped right after: a live tf.data iterator keeps filling its
    # prefetch buffer in background threads (stealing cores from ours, inflating its next reading)
    ref_rate = args.steps * args.batch / _time(iter(ref_ds), args.steps, warmup)

    cases = [
        ("labelled_uint8", labelled_batches(src, args.batch, seed=0), 1),
        ("labelled_crop_flip", labelled_batches(src, args.batch, seed=0, augment=crop_flip), 1),
        (
            "pairs_crop_flip",
            pair_batches(src, args.batch, seed=0, group_key="label", same_fraction=0.5, augment=crop_flip),
            2,
        ),
        ("triplets_crop_flip", triplet_batches(src, args.batch, seed=0, group_key="label", augment=crop_flip), 3),
        ("simclr_views_imagenet", view_batches(src, args.batch, imagenet_views, seed=0), 2),
        ("simclr_views_quadrilaterals", view_batches(src, args.batch, quad_views, seed=0), 2),
    ]
    if names is not None:
        cases = [c for c in cases if c[0] in names]
    rates = []
    for _name, ds, members in cases:
        elapsed = _time(as_numpy(ds), args.steps, warmup)
        rates.append(args.steps * args.batch * members / elapsed)
    # the reference is timed before and after ours; the faster of the two counts (load drifts)
    ref_rate = max(ref_rate, args.steps * args.batch / _time(iter(ref_ds), args.steps, warmup))
    lines = []
    for (name, _, _), rate in zip(cases, rates):
        lines.append(
            {
                "name": name,
                "images_per_s": round(rate, 1),
                "batch_size": args.batch,
                "image_size": args.size,
                "steps": args.steps,
                "reference": "tf.data from_tensor_slices+shuffle+sample_distorted_bounding_box+flip",
                "reference_images_per_s": round(ref_rate, 1),
                "ratio": round(rate / ref_rate, 3),
                "cpu_count": os.cpu_count(),
            }
        )
    return lines


if __name__ == "__main__":
    main()
