"""Throughput of Geoclidean image generation (sampler + renderer) against a matplotlib reference.

Ours: :func:`gensim_jax.stimuli.geoclidean.sampler.sample_scene` +
:func:`gensim_jax.stimuli.geoclidean.render.render` (numpy distance fields).
Reference: the same sampled scenes drawn the straightforward way, as the benchmark authors did,
with one matplotlib figure per image (Agg canvas of ``size`` x ``size`` pixels, one ``ax.plot``
per visible object, 3-pt-equivalent lines, ``axis('equal')``, ``axis('off')``), read back as a
grayscale array. Both run on the training concepts in round-robin, one image at a time, on one
process. Prints one JSON line
``{"name", "ours_images_per_s", "reference_images_per_s", "ratio", ...}``.

Usage: python bench/bench_geoclidean_render.py [--size 224] [--n 600] [--n-ref 120]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from gensim_jax.stimuli.geoclidean.concepts import TRAIN_CONCEPTS, concept_program
from gensim_jax.stimuli.geoclidean.render import REFERENCE_LINE_WIDTH, REFERENCE_SIZE, render
from gensim_jax.stimuli.geoclidean.sampler import sample_scene


def matplotlib_image(scene, size: int) -> np.ndarray:
    """Reference renderer: one matplotlib figure per image."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    dpi = 72
    fig = Figure(figsize=(size / dpi, size / dpi), dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot(111)
    ax.axis("equal")
    ax.axis("off")
    lw = REFERENCE_LINE_WIDTH * size / REFERENCE_SIZE  # points == pixels at 72 dpi
    th = np.linspace(0.0, 2.0 * np.pi, 65)
    for x0, y0, x1, y1 in scene.segments:
        ax.plot([x0, x1], [y0, y1], color="black", linewidth=lw)
    for cx, cy, r in scene.circles:
        ax.plot(cx + r * np.cos(th), cy + r * np.sin(th), color="black", linewidth=lw)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    return rgba[..., :3].mean(-1).astype(np.uint8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--n-ref", type=int, default=120)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    progs = [concept_program(n) for n in TRAIN_CONCEPTS]
    k = len(progs)

    def scene(i):
        return sample_scene(progs[i % k], np.random.default_rng([args.seed, i]))

    render(scene(0), args.size)  # warm-up
    matplotlib_image(scene(0), args.size)

    t0 = time.perf_counter()
    for i in range(args.n):
        render(scene(i), args.size)
    ours = args.n / (time.perf_counter() - t0)

    scenes = [scene(i) for i in range(args.n)]
    t0 = time.perf_counter()
    for s in scenes:
        render(s, args.size)
    ours_render_only = args.n / (time.perf_counter() - t0)

    t0 = time.perf_counter()
    for i in range(args.n_ref):
        matplotlib_image(scene(i), args.size)
    ref = args.n_ref / (time.perf_counter() - t0)

    print(json.dumps({
        "name": "geoclidean_render",
        "ours_images_per_s": round(ours, 1),
        "reference_images_per_s": round(ref, 1),
        "ratio": round(ours / ref, 1),
        "ours_render_only_images_per_s": round(ours_render_only, 1),
        "size": args.size,
        "reference": "matplotlib Agg, one figure per image, same sampled scenes",
    }))


if __name__ == "__main__":
    main()
