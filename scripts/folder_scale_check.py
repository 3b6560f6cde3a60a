"""A folder of N images (default 100,000) streamed without holding the images: table time, and memory while streaming.

The folder holds N files that are hard links to a few 64-px PNGs (so it costs no disk and no
rendering), named in a ``metadata.csv`` with six random binary features. The script checks the table
(:func:`gensim_jax.data.folder.load_table`: every file opened, its header read), then reads batches of
the ``gensim`` arm's stream (:func:`gensim_jax.data.folder.folder_stream`) and prints one JSON line:
the table's time and the process's resident memory before the table, after it and after each block of
batches. Flat memory over the batches is the point: only the table is held, the images are read per batch.

Usage::

    python scripts/folder_scale_check.py DIR                 # 100,000 images, 200 batches of 64 at 64 px
    python scripts/folder_scale_check.py DIR --n 20000 --batches 50
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # ``python scripts/folder_scale_check.py``: make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mb() -> float:
    """Resident memory of this process in MB (``/proc/self/status``)."""
    with open("/proc/self/status") as f:
        line = next(ln for ln in f if ln.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024.0


def write_linked_folder(directory: str, n: int, seed: int = 0) -> None:
    """``n`` hard links to 8 distinct PNGs, and ``metadata.csv`` with six random binary features."""
    import numpy as np

    from gensim_jax.stimuli.folder_example import FEATURES, render_features

    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(directory, "images"), exist_ok=True)
    features = rng.integers(0, 2, size=(n, len(FEATURES)))
    from PIL import Image

    bases = []
    for k, image in enumerate(render_features(features[:8], 64, seed=seed)):
        bases.append(os.path.join(directory, f"base{k}.png"))
        Image.fromarray(image).save(bases[-1])
    rows = [["file", *FEATURES]]
    for i in range(n):
        name = f"images/{i:06d}.png"
        if not os.path.exists(os.path.join(directory, name)):
            os.link(bases[i % 8], os.path.join(directory, name))
        rows.append([name, *map(str, features[i])])
    with open(os.path.join(directory, "metadata.csv"), "w", newline="") as f:
        csv.writer(f).writerows(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args(argv)
    from gensim_jax.data.folder import folder_stream, load_table
    from gensim_jax.parallel import HostShard

    write_linked_folder(args.directory, args.n)
    out = {"images": args.n, "rss_mb_start": round(rss_mb(), 1)}
    t0 = time.perf_counter()
    table = load_table(args.directory, "metadata.csv")
    out["table_s"] = round(time.perf_counter() - t0, 2)
    out["rss_mb_after_table"] = round(rss_mb(), 1)
    stream = folder_stream(
        table, table.rows(False), seed=0, shard=HostShard(0, 1, args.batch), image_size=64, keys=("target_id",)
    )(0)
    rss, t0 = [], time.perf_counter()
    for b in range(args.batches):
        next(stream)
        if (b + 1) % max(1, args.batches // 5) == 0:
            rss.append(round(rss_mb(), 1))
    out["stream_images"] = args.batches * args.batch
    out["stream_s"] = round(time.perf_counter() - t0, 2)
    out["rss_mb_during_stream"] = rss
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
