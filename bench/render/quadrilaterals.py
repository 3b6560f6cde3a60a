"""Throughput of quadrilateral stimulus generation against a matplotlib reference.

Ours: :func:`gensim_jax.stimuli.quadrilaterals.training_batches` (sampling with the test grid held out,
exact-coverage numpy rasteriser, 22 features), in batches.  Reference: the same vertices drawn the
straightforward way, one matplotlib figure per image (a filled white polygon on black, Agg canvas of
``size`` x ``size`` pixels, read back as a grayscale array).  Blocks of the two alternate; the best
block of each counts.  Prints one JSON line ``{"name", "ours_images_per_s", "reference_images_per_s",
"ratio", "target_images_per_s", "target_ratio"}``.

Usage: python bench/render/quadrilaterals.py [--size 224] [--batch 256] [--n-ref 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from gensim_jax.stimuli import quadrilaterals as q


def matplotlib_image(vertices: np.ndarray, size: int) -> np.ndarray:
    """Reference renderer: one matplotlib figure per image, polygon in canvas units."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Polygon

    dpi = 72
    fig = Figure(figsize=(size / dpi, size / dpi), dpi=dpi, facecolor="black")
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(-q.CANVAS_UNITS / 2, q.CANVAS_UNITS / 2)
    ax.set_ylim(-q.CANVAS_UNITS / 2, q.CANVAS_UNITS / 2)
    ax.axis("off")
    ax.add_patch(Polygon(vertices, closed=True, facecolor="white", edgecolor="none"))
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].mean(-1).astype(np.uint8)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--n-ref", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    stream = q.training_batches(0, args.batch, size=args.size)
    next(stream)  # warm-up
    stim = q.sample_training_stimuli(np.random.default_rng(1), args.n_ref)
    verts = [
        q.transform_vertices(q.variant_vertices(int(s), int(v)), r, c)
        for s, v, r, c in zip(stim.shape, stim.variant, stim.rotation_deg, stim.scale)
    ]
    matplotlib_image(verts[0], args.size)  # warm-up
    ours, ref = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        next(stream)
        ours.append(args.batch / (time.perf_counter() - t))
        t = time.perf_counter()
        for v in verts:
            matplotlib_image(v, args.size)
        ref.append(len(verts) / (time.perf_counter() - t))
    result = {
        "name": f"quadrilaterals_render_{args.size}",
        "ours_images_per_s": round(max(ours), 1),
        "reference_images_per_s": round(max(ref), 1),
        "ratio": round(max(ours) / max(ref), 1),
        "target_images_per_s": 1000,
        "target_ratio": 20,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
