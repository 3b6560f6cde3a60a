"""Pixel statistics of our Geoclidean renders against the official benchmark images.

For every concept of the benchmark (Hsu et al. 2022) it renders ``--per-concept`` scenes of the
concept program at 360 x 360 and compares, with the 20 in-concept official images (5 train +
5 test ``in_*``), the mean ink fraction, the stroke width (20th percentile of the ink summed
across single row/column crossings of a stroke, which is the width for strokes crossing at right
angles), and the pixel bounding box of the drawing. Prints one JSON line; with ``--figure PATH``
it also writes a side-by-side figure (ours | official) for a few concepts.

Usage: python bench/render/geoclidean_pixel_stats.py [--root ../shared/reference/geoclidean]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from gensim_jax.stimuli.geoclidean.concepts import CONCEPT_FAMILY, CONCEPT_NAMES, concept_program
from gensim_jax.stimuli.geoclidean.render import render_ink
from gensim_jax.stimuli.geoclidean.sampler import sample_scene

REPO = Path(__file__).resolve().parents[2]


def load_official(path: Path) -> np.ndarray:
    from PIL import Image

    a = np.asarray(Image.open(path).convert("RGBA"), dtype=np.float32) / 255.0
    # black strokes with alpha over white: ink = alpha * (1 - gray)
    return a[..., 3] * (1.0 - a[..., :3].mean(-1))


def crossing_widths(ink: np.ndarray) -> np.ndarray:
    out = []
    for img in (ink, ink.T):
        on = img > 0.02
        for row, m in zip(img, on):
            if not m.any():
                continue
            d = np.diff(np.concatenate([[0], m.astype(np.int8), [0]]))
            starts, ends = np.nonzero(d == 1)[0], np.nonzero(d == -1)[0]
            for s, e in zip(starts, ends):
                out.append(row[s:e].sum())
    return np.asarray(out)


def stats(images: list[np.ndarray]) -> dict:
    ink = np.array([im.mean() for im in images])
    widths = np.concatenate([crossing_widths(im) for im in images])
    boxes = []
    for im in images:
        ys, xs = np.nonzero(im > 0.5)
        boxes.append((xs.min(), xs.max(), ys.min(), ys.max()))
    b = np.array(boxes, dtype=np.float64)
    ext = np.maximum(b[:, 1] - b[:, 0], b[:, 3] - b[:, 2]) + 1
    return {
        "ink_fraction": float(ink.mean()),
        "stroke_width_px": float(np.percentile(widths, 20)),
        "extent_px": float(np.median(ext)),
        "center_x_px": float(np.median((b[:, 0] + b[:, 1]) / 2)),
        "center_y_px": float(np.median((b[:, 2] + b[:, 3]) / 2)),
        "n": len(images),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", default=str(REPO.parent / "shared" / "reference" / "geoclidean"))
    ap.add_argument("--per-concept", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--figure", default="")
    args = ap.parse_args()
    root = Path(args.root)
    ours, theirs, per = [], [], {}
    for cid, name in enumerate(CONCEPT_NAMES):
        d = root / CONCEPT_FAMILY[name] / f"concept_{name}"
        files = sorted(d.glob("train/*.png")) + sorted(d.glob("test/in_*.png"))
        off = [load_official(p) for p in files]
        prog = concept_program(name)
        mine = [
            render_ink(sample_scene(prog, np.random.default_rng([args.seed, cid, i])), 360)
            for i in range(args.per_concept)
        ]
        per[name] = (float(np.mean([m.mean() for m in mine])), float(np.mean([o.mean() for o in off])))
        ours += mine
        theirs += off
    so, st = stats(ours), stats(theirs)
    ratio = np.array([a / b for a, b in per.values()])
    print(
        json.dumps(
            {
                "name": "geoclidean_pixel_stats",
                "ours": so,
                "official": st,
                "per_concept_ink_ratio_median": float(np.median(ratio)),
                "per_concept_ink_ratio_range": [float(ratio.min()), float(ratio.max())],
            }
        )
    )
    if args.figure:
        make_figure(root, Path(args.figure), args.seed)


def make_figure(root: Path, out: Path, seed: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["square", "rhomboid", "parallel_l", "radii", "ccl", "tcc"]
    k = 3
    fig, axes = plt.subplots(len(names), 2 * k, figsize=(2 * k * 1.1, len(names) * 1.15), dpi=100)
    for r, name in enumerate(names):
        d = root / CONCEPT_FAMILY[name] / f"concept_{name}"
        off = [load_official(p) for p in sorted(d.glob("train/*.png"))[:k]]
        prog = concept_program(name)
        cid = CONCEPT_NAMES.index(name)
        mine = [render_ink(sample_scene(prog, np.random.default_rng([seed, cid, 100 + i])), 360) for i in range(k)]
        for c, im in enumerate(mine + off):
            ax = axes[r, c]
            ax.imshow(1.0 - im, cmap="gray", vmin=0, vmax=1, interpolation="antialiased")
            ax.set_xticks([])
            ax.set_yticks([])
            for sp in ax.spines.values():
                sp.set_color("0.7")
            if c == 0:
                ax.set_ylabel(name, fontsize=7)
            if r == 0:
                ax.set_title("ours" if c < k else "official", fontsize=7)
    fig.tight_layout(pad=0.2)
    out.parent.mkdir(parents=True, exist_ok=True)
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, dpi=90, format="png")
    plt.close(fig)
    buf.seek(0)
    # grayscale, 16 levels: the figure is line art, this keeps the file small
    Image.open(buf).convert("L").quantize(16).save(out, optimize=True)


if __name__ == "__main__":
    main()
