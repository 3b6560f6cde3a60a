"""Max pooling's gradient on the CPU: :func:`gensim_jax.models.layers.window_max_pool` vs select-and-scatter.

``pool``: the value and VJP of 3 x 3 / 2 max pooling (padding 1) at the four pooling shapes of the
48-px CORnet-Z step, batch 32 (V1 24 x 24 x 64, V2 12 x 12 x 128, V4 6 x 6 x 256, IT 3 x 3 x 512,
each a ReLU output: zeros tie), jitted, ``jax.vjp(pool, x)[1](g)``.  Ours: ``window_max_pool`` (what
``models.layers.max_pool`` runs on XLA:CPU); reference: ``flax.linen.max_pool`` (``lax.reduce_window``
max, whose gradient XLA computes with select-and-scatter).  The two gradients are checked equal
(bitwise) before timing; with ``--dtype bfloat16`` or ``float16`` the line says whether ours is the float32
gradient rounded once (``rounded_once``: ``window_max_pool`` sums a 16-bit gradient in float32, where
select-and-scatter rounds after every addition) and counts the elements where the two differ.

``step`` (``--step``): the runner's jitted CORnet-Z step at 48 px, batch 32 (``make_train_step``,
``CrossEntropy`` on 11 classes, Adam, state donated, XLA's default CPU options: ``compiler_options=None``),
with the new pooling against the same step traced with ``flax.linen.max_pool``; and the step with the
new pooling under :data:`~gensim_jax.training.step.CPU_EIGEN_CONV_OPTIONS` (what ``make bench``'s
training-step rows use, and the runner's default on a CPU since 2026-11-28) against XLA's default options.

Both alternate in one process (:func:`bench._harness.compare`); ``ratio = ours_s / reference_s``.

Usage: python -m bench.step.max_pool [--step] [--repeats 21] [--dtype float32] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from bench._harness import block, compare, emit, record
from gensim_jax.models import cornet, get_model
from gensim_jax.models.layers import window_max_pool
from gensim_jax.training import create_train_state, make_train_step
from gensim_jax.training.objectives import CrossEntropy
from gensim_jax.training.step import CPU_EIGEN_CONV_OPTIONS

#: (name, H, C) of the 48-px CORnet-Z step's pooling inputs (after each area's convolution and ReLU)
SHAPES = (("V1", 24, 64), ("V2", 12, 128), ("V4", 6, 256), ("IT", 3, 512))
BATCH = 32


def _reduce_window_pool(x, kernel_size=3, stride=2, padding=1):
    k, s, p = kernel_size, stride, padding
    return nn.max_pool(x, (k, k), strides=(s, s), padding=((p, p), (p, p)))


def pool_case(
    name: str, size: int, channels: int, batch: int = BATCH, repeats: int = 21, dtype: str = "float32"
) -> dict:
    rng = np.random.default_rng(0)
    x = jnp.asarray(np.maximum(rng.standard_normal((batch, size, size, channels)), 0).astype(np.float32), dtype)
    out = (size + 2 - 3) // 2 + 1
    g = jnp.asarray(rng.standard_normal((batch, out, out, channels)).astype(np.float32), dtype)
    ours = jax.jit(lambda x, g: jax.vjp(lambda t: window_max_pool(t, 3, 2, 1), x)[1](g)[0])
    ref = jax.jit(lambda x, g: jax.vjp(_reduce_window_pool, x)[1](g)[0])
    a, b = np.asarray(ours(x, g)), np.asarray(ref(x, g))
    equal = bool(np.array_equal(a, b))
    if jnp.dtype(dtype) == jnp.float32:
        if not equal:
            raise AssertionError(f"{name}: window_max_pool's gradient differs from select-and-scatter's")
    # a 16-bit gradient: is it the float32 gradient (bitwise select-and-scatter's there) rounded once?
    once = (
        a
        if jnp.dtype(dtype) == jnp.float32
        else np.asarray(ours(x.astype(jnp.float32), g.astype(jnp.float32)).astype(dtype))
    )
    t = compare(lambda: block(ours(x, g)), lambda: block(ref(x, g)), repeats=repeats, warmup=2)
    return record(
        "max_pool_vjp",
        {"area": name, "shape": [batch, size, size, channels], "kernel": 3, "stride": 2, "padding": 1, "dtype": dtype},
        t,
        "flax.linen.max_pool (reduce_window max; VJP: select-and-scatter)",
        1.0,
        gradients_equal=equal,
        rounded_once=bool(np.array_equal(a, once)),
        elements_differing=int(np.sum(a != b)),
        elements=int(a.size),
    )


@contextlib.contextmanager
def _pool_in_cornet(fn):
    saved = cornet.max_pool
    cornet.max_pool = fn
    try:
        yield
    finally:
        cornet.max_pool = saved


class _Step:
    def __init__(self, size: int, batch: int, pool=None, seed: int = 0, compiler_options=None):
        rng = np.random.default_rng(seed)
        model = get_model("cornet_z", num_classes=11)
        self.state = create_train_state(model, optax.adam(1e-3), 0, example_input=jnp.zeros((1, size, size, 3)))
        self.batch = {
            "image": jnp.asarray(rng.standard_normal((batch, size, size, 3)).astype(np.float32)),
            "label": jnp.asarray(rng.integers(0, 11, batch), jnp.int32),
        }
        self.step = make_train_step(CrossEntropy(), compiler_options=compiler_options)
        self.pool = pool

    def __call__(self):
        with _pool_in_cornet(self.pool) if self.pool is not None else contextlib.nullcontext():
            self.state, metrics = self.step(self.state, self.batch)  # traced on the first call
        block(self.state)
        return metrics


def step_case(size: int = 48, batch: int = BATCH, repeats: int = 15) -> list[dict]:
    params = {"model": "cornet_z", "size": size, "batch": batch, "objective": "CrossEntropy", "optimizer": "adam"}
    ours, ref = _Step(size, batch), _Step(size, batch, pool=_reduce_window_pool)
    t = compare(ours, ref, repeats=repeats, warmup=2)
    lines = [
        record(
            "cornet_z_step_max_pool",
            {**params, "xla_options": "default"},
            t,
            "the same step with flax.linen.max_pool (select-and-scatter gradient)",
            1.0,
        )
    ]
    eigen = _Step(size, batch, compiler_options=CPU_EIGEN_CONV_OPTIONS)
    t = compare(eigen, ours, repeats=repeats, warmup=2)
    lines.append(
        record(
            "cornet_z_step_xla_options",
            {**params, "xla_options": "eigen_conv"},
            t,
            "the same step (window_max_pool) under XLA's default CPU options (compiler_options=None)",
            1.0,
        )
    )
    return lines


def run(quick: bool = False, step: bool = False, repeats: int = 21, dtype: str = "float32") -> list[dict]:
    if quick:
        return [pool_case("V2", 12, 8, batch=2, repeats=1, dtype=dtype)]
    lines = [pool_case(name, size, ch, repeats=repeats, dtype=dtype) for name, size, ch in SHAPES]
    if step:
        lines.extend(step_case(repeats=max(5, repeats // 2)))
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one tiny shape (smoke run)")
    ap.add_argument("--step", action="store_true", help="also the 48-px CORnet-Z step, old pooling vs new")
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument(
        "--dtype", default="float32", choices=("float32", "bfloat16", "float16"), help="the pooled maps' type"
    )
    args = ap.parse_args(argv)
    for line in run(quick=args.quick, step=args.step, repeats=args.repeats, dtype=args.dtype):
        emit(line)


if __name__ == "__main__":
    main()
