"""A/B of how ``models.layers.strided_conv`` evaluates convolutions on XLA:CPU, on a whole training step.

Each variant builds the step of :mod:`bench.step.training_step` (``make_train_step``, Adam, CrossEntropy,
float32, ``CPU_EIGEN_CONV_OPTIONS``) with one form of the convolutions, and the variants are timed
alternately in one process (medians and minima of ``--repeats`` rounds, after one compiling call each):

* ``shipped``: the library as it is (im2col for 1 x 1 kernels and for outputs of at most
  ``IM2COL_MAX_OUTPUT_PIXELS`` pixels);
* ``conv1x1``: 1 x 1 kernels through ``lax.conv_general_dilated`` again (the form before the 1 x 1
  rule; tiny outputs keep im2col);
* ``im2col<=N``: im2col also for every output of at most ``N`` pixels.

Results are in docs/performance_log.md ("1 x 1 convolutions as matrix products").

Usage::

    python -m bench.step.conv_forms --model resnet50 --size 64 --batch 32 --repeats 8 --variants conv1x1 shipped
    python -m bench.step.conv_forms --model resnet50 --size 224 --batch 8 --repeats 3 --variants shipped im2col<=49 im2col<=196
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time

import jax

from bench.step.training_step import MODELS, _batch, _OursStep
from gensim_jax.models import layers


def _direct(x, kernel, stride, padding):
    return jax.lax.conv_general_dilated(
        x,
        kernel,
        (stride, stride),
        ((padding, padding), (padding, padding)),
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )


@contextlib.contextmanager
def _form(variant: str):
    """The convolution form of ``variant`` while a step is built (traced at its first call)."""
    shipped, threshold = layers.strided_conv, layers.IM2COL_MAX_OUTPUT_PIXELS
    if variant == "conv1x1":
        layers.strided_conv = lambda x, k, s, p: _direct(x, k, s, p) if k.shape[:2] == (1, 1) else shipped(x, k, s, p)
    elif variant.startswith("im2col<="):
        layers.IM2COL_MAX_OUTPUT_PIXELS = int(variant.split("<=")[1])
    elif variant != "shipped":
        raise ValueError(f"variant must be shipped, conv1x1 or im2col<=N, got {variant!r}")
    try:
        yield
    finally:
        layers.strided_conv, layers.IM2COL_MAX_OUTPUT_PIXELS = shipped, threshold


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=MODELS, default="resnet50")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--variants", nargs="+", default=["conv1x1", "shipped"])
    ap.add_argument("--quick", action="store_true", help="the tiny model variants (a smoke run)")
    args = ap.parse_args(argv)
    x, y = _batch(args.batch, args.size)
    steps, first = {}, {}
    for v in args.variants:
        with _form(v):
            steps[v] = _OursStep(args.model, args.size, x, y, quick=args.quick)
            t0 = time.perf_counter()
            steps[v]()  # traces and compiles with this form
            first[v] = round(time.perf_counter() - t0, 2)
    times = {v: [] for v in args.variants}
    for r in range(args.repeats):  # alternated, the order reversed every other round
        for v in args.variants if r % 2 == 0 else args.variants[::-1]:
            t0 = time.perf_counter()
            steps[v]()
            times[v].append(time.perf_counter() - t0)
    out = {"model": args.model, "size": args.size, "batch": args.batch, "repeats": args.repeats, "first_call_s": first}
    for v, ts in times.items():
        out[v] = {"median_s": round(statistics.median(ts), 4), "min_s": round(min(ts), 4)}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
