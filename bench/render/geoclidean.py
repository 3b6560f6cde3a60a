"""Throughput of Geoclidean image generation (sampler + renderer) against a matplotlib reference.

Ours: :func:`gensim_jax.stimuli.geoclidean.sampler.sample_scene` +
:func:`gensim_jax.stimuli.geoclidean.render.render` (numpy distance fields).
Reference: the same sampled scenes drawn the straightforward way, as the benchmark authors did,
with one matplotlib figure per image (Agg canvas of ``size`` x ``size`` pixels, one ``ax.plot``
per visible object, 3-pt-equivalent lines, ``axis('equal')``, ``axis('off')``), read back as a
grayscale array. Both run on the training concepts in round-robin, one image at a time, on one
process. Prints one JSON line
``{"name", "ours_images_per_s", "reference_images_per_s", "ratio", ...}``: the headline numbers
are end to end (sampling + drawing, the sampler shared by both); ``render_only_*`` time the
drawing of pre-sampled scenes alone.

Usage: python bench/render/geoclidean.py [--size 224] [--n 720] [--n-ref 180] [--repeats 6]
(block sizes of 120 and 30 images cover the 30 training concepts equally)
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


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--n", type=int, default=720)
    ap.add_argument("--n-ref", type=int, default=180)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=6)
    args = ap.parse_args(argv)
    progs = [concept_program(n) for n in TRAIN_CONCEPTS]
    k = len(progs)

    def scene(i):
        return sample_scene(progs[i % k], np.random.default_rng([args.seed, i]))

    render(scene(0), args.size)  # warm-up
    matplotlib_image(scene(0), args.size)
    scenes = [scene(i) for i in range(args.n)]

    def rate(fn, items):
        t0 = time.perf_counter()
        for it in items:
            fn(it)
        return len(items) / (time.perf_counter() - t0)

    # the machine may be shared: interleave the four measurements in blocks and keep the best
    # block of each (as timeit does), so that a load spike hits neither side alone
    best = {"ours": 0.0, "ref": 0.0, "ours_r": 0.0, "ref_r": 0.0}
    blk, blk_ref = args.n // args.repeats, args.n_ref // args.repeats
    for r in range(args.repeats):
        idx = range(r * blk, (r + 1) * blk)
        idx_ref = range(r * blk_ref, (r + 1) * blk_ref)
        best["ours"] = max(best["ours"], rate(lambda i: render(scene(i), args.size), idx))
        best["ref"] = max(best["ref"], rate(lambda i: matplotlib_image(scene(i), args.size), idx_ref))
        best["ours_r"] = max(best["ours_r"], rate(lambda s: render(s, args.size), scenes[idx.start : idx.stop]))
        best["ref_r"] = max(
            best["ref_r"], rate(lambda s: matplotlib_image(s, args.size), scenes[idx_ref.start : idx_ref.stop])
        )
    ours, ref = best["ours"], best["ref"]
    ours_render_only, ref_render_only = best["ours_r"], best["ref_r"]

    result = {
        "name": "geoclidean_render",
        "ours_images_per_s": round(ours, 1),
        "reference_images_per_s": round(ref, 1),
        "ratio": round(ours / ref, 1),
        "ours_render_only_images_per_s": round(ours_render_only, 1),
        "reference_render_only_images_per_s": round(ref_render_only, 1),
        "render_only_ratio": round(ours_render_only / ref_render_only, 1),
        "size": args.size,
        "reference": "matplotlib Agg, one figure per image, same sampled scenes",
        "n": args.n,
        "n_ref": args.n_ref,
        "repeats": args.repeats,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
