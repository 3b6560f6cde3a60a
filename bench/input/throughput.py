"""Input-side throughput in the suite's line format: data pipelines and stimulus rendering.

Wraps the three standalone scripts so that :mod:`bench.run_all` prints them with every other ratio:

* ``pipeline_*`` (:mod:`bench.input.pipelines`): images/s of each ``gensim_jax.data`` pipeline at
  224 x 224 against the conventional non-resumable tf.data crop + flip pipeline.  Only
  ``labelled_crop_flip`` does the same work as the reference; its target is parity
  (speedup >= 1).  The other pipelines do more (several members per example, SimCLR colour/blur
  augmentations) or less (no augmentation) work, so their lines carry the reference's rate for
  scale and no target (``"target": "none"``, ``met`` true).
* ``quadrilaterals_render`` (:mod:`bench.render.quadrilaterals`): sampling + rendering +
  features vs one matplotlib figure per image; target >= 20x.
* ``geoclidean_render`` and ``geoclidean_render_only`` (:mod:`bench.render.geoclidean`):
  sampling + rendering (end to end) and rendering of pre-sampled scenes vs matplotlib; target
  >= 20x.

In these lines ``ours_s`` and ``reference_s`` are seconds per image (``1 / images_per_s``), so
``ratio = ours_s / reference_s`` reads as everywhere else and ``speedup = 1 / ratio``.
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import Optional

from bench._harness import sig

#: The pipeline doing exactly the reference's work (Inception crop + flip on labelled images).
LIKE_FOR_LIKE = "labelled_crop_flip"


def _line(
    bench: str,
    params: dict,
    ours_rate: float,
    ref_rate: float,
    reference: str,
    target: Optional[float],
    repeats,
    **extra,
) -> dict:
    ratio = ref_rate / ours_rate  # = (1 / ours_rate) / (1 / ref_rate)
    speedup = ours_rate / ref_rate
    out = {
        "bench": bench,
        "params": params,
        "ours_s": sig(1.0 / ours_rate),
        "reference": reference,
        "reference_s": sig(1.0 / ref_rate),
        "ratio": float(f"{ratio:.4g}"),
        "target": "none" if target is None else f"speedup >= {target}",
        "met": True if target is None else bool(speedup >= target),
        "speedup": float(f"{speedup:.4g}"),
        "images_per_s": round(ours_rate, 1),
        "reference_images_per_s": round(ref_rate, 1),
        "repeats": repeats,
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    out.update(extra)
    return out


def pipelines(n: int, batch: int, steps: int, size: int, names=None) -> list[dict]:
    from bench.input import pipelines as bench_pipelines

    out = []
    for r in bench_pipelines.measure(n=n, batch=batch, steps=steps, size=size, warmup=1, names=names):
        out.append(
            _line(
                f"pipeline_{r['name']}",
                {"size": size, "batch": batch, "source_images": n},
                r["images_per_s"],
                r["reference_images_per_s"],
                r["reference"],
                1.0 if r["name"] == LIKE_FOR_LIKE else None,
                f"{steps} batches",
            )
        )
    return out


def renders(quick: bool) -> list[dict]:
    from bench.render import geoclidean as bench_geoclidean_render
    from bench.render import quadrilaterals as bench_quadrilaterals_render

    size = 64 if quick else 224
    with contextlib.redirect_stdout(io.StringIO()):  # the scripts print their own JSON; re-emitted below
        q = bench_quadrilaterals_render.main(
            [
                "--size",
                str(size),
                "--batch",
                "32" if quick else "256",
                "--n-ref",
                "6" if quick else "60",
                "--repeats",
                "1" if quick else "3",
            ]
        )
    with contextlib.redirect_stdout(io.StringIO()):
        g = bench_geoclidean_render.main(
            [
                "--size",
                str(size),
                "--n",
                "30" if quick else "240",
                "--n-ref",
                "6" if quick else "60",
                "--repeats",
                "1" if quick else "2",
            ]
        )
    ref = "matplotlib Agg, one figure per image (same vertices / scenes)"
    return [
        _line(
            "quadrilaterals_render",
            {"size": size},
            q["ours_images_per_s"],
            q["reference_images_per_s"],
            ref,
            20.0,
            "best block of 1" if quick else "best block of 3",
        ),
        _line(
            "geoclidean_render",
            {"size": size, "scope": "sample + render"},
            g["ours_images_per_s"],
            g["reference_images_per_s"],
            ref,
            20.0,
            f"best block of {g['repeats']}",
        ),
        _line(
            "geoclidean_render_only",
            {"size": size, "scope": "render pre-sampled scenes"},
            g["ours_render_only_images_per_s"],
            g["reference_render_only_images_per_s"],
            ref,
            20.0,
            f"best block of {g['repeats']}",
        ),
    ]


def run(quick: bool = False) -> list[dict]:
    if quick:
        return pipelines(n=16, batch=4, steps=1, size=32, names=("labelled_uint8", LIKE_FOR_LIKE)) + renders(quick=True)
    return pipelines(n=256, batch=32, steps=6, size=224) + renders(quick=False)


if __name__ == "__main__":
    from bench._harness import emit

    for line in run():
        emit(line)
