"""``gensim-jax prepare-imagenet --data-dir DIR --out DIR``: one-time ImageNet records at a fixed load size.

The command part of :mod:`gensim_jax.data.prepared` (``prepare_records``; docs/performance_log.md, JPEG input).
"""

from __future__ import annotations

import argparse

__all__ = ["main"]


def main(argv: list, prog: str = "gensim-jax prepare-imagenet") -> int:
    """``gensim-jax prepare-imagenet``: :func:`gensim_jax.data.prepared.prepare_records` from the command line."""
    from gensim_jax.data import prepared

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Write tfds imagenet2012 resized to a fixed load size as TFRecords (once; see "
        "gensim_jax.data.prepared).",
    )
    parser.add_argument("--data-dir", required=True, help="tfds data directory holding the prepared imagenet2012")
    parser.add_argument("--out", required=True, help="output directory of the records")
    parser.add_argument("--split", default="train", help="tfds split (default: train)")
    parser.add_argument("--load-size", type=int, default=256, help="side of the stored square images (default 256)")
    parser.add_argument("--format", choices=prepared.FORMATS, default="jpeg", help="jpeg (re-encoded) or raw uint8")
    parser.add_argument("--quality", type=int, default=90, help="JPEG quality (default 90)")
    parser.add_argument("--examples-per-file", type=int, default=10_000)
    parser.add_argument("--max-examples", type=int, help="stop after this many examples")
    args = parser.parse_args(argv)
    entry = prepared.prepare_records(
        args.data_dir,
        args.out,
        split=args.split,
        load_size=args.load_size,
        fmt=args.format,
        quality=args.quality,
        examples_per_file=args.examples_per_file,
        max_examples=args.max_examples,
    )
    gb = entry["imagenet_train_bytes"] / 1e9
    print(
        f"{entry['examples']} images, {entry['bytes_per_image'] / 1e3:.1f} kB each "
        f"({gb:.1f} GB for ImageNet-1k's {prepared.IMAGENET_TRAIN_IMAGES:,} training images) in {args.out}"
    )
    return 0
