"""A/B of XLA:CPU compiler options on convolutions and on the ResNet-50 training step.

Every variant is compiled from the same lowered program with
``jax.jit(f).lower(...).compile(options)`` and the variants are timed alternately in one process
(medians and minima), so a load change hits all of them.  Results are in docs/performance_log.md
("XLA CPU options").

Variants (``xla_cpu_experimental_ynn_fusion_type``; jaxlib 0.10 puts dots, reductions and
convolutions on YNNPACK by default):

* ``ynn_default``: no option;
* ``eigen_conv``: ``INDIVIDUAL_DOT,REDUCE`` (convolutions on XLA's Eigen path), which is
  :data:`gensim_jax.training.step.CPU_EIGEN_CONV_OPTIONS`;
* ``dot_only``: ``INDIVIDUAL_DOT`` (reductions off YNNPACK as well);
* ``eigen_region``: ``eigen_conv`` with ``xla_cpu_copy_insertion_use_region_analysis`` (no copy of a
  donated parameter that the step reads again after computing its update);
* ``eigen_vec512``: ``eigen_conv`` with ``xla_cpu_prefer_vector_width=512`` (AVX-512 loops);
* ``eigen_concurrency``: ``eigen_conv`` with ``xla_cpu_enable_concurrency_optimized_scheduler``.

Usage::

    python -m bench.step.xla_cpu_options convs [--batch 32] [--repeats 5]
    python -m bench.step.xla_cpu_options step [--model resnet50] [--size 64] [--batch 32] [--repeats 3] [--variants ynn_default eigen_conv]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from gensim_jax.training.step import CPU_EIGEN_CONV_OPTIONS

VARIANTS = {
    "ynn_default": {},
    "eigen_conv": dict(CPU_EIGEN_CONV_OPTIONS),
    "dot_only": {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"},
    "eigen_region": {**CPU_EIGEN_CONV_OPTIONS, "xla_cpu_copy_insertion_use_region_analysis": True},
    "eigen_vec512": {**CPU_EIGEN_CONV_OPTIONS, "xla_cpu_prefer_vector_width": 512},
    "eigen_concurrency": {**CPU_EIGEN_CONV_OPTIONS, "xla_cpu_enable_concurrency_optimized_scheduler": True},
}

#: ResNet-50 convolution shapes at a 64 x 64 input: name -> (H, C_in, C_out, k, stride, padding).
CONV_SHAPES = {
    "stem7x7s2_64px": (64, 3, 64, 7, 2, 3),
    "l1_1x1_16_64to256": (16, 64, 256, 1, 1, 0),
    "l1_3x3_16_64": (16, 64, 64, 3, 1, 1),
    "l2_3x3s2_16_128": (16, 128, 128, 3, 2, 1),
    "l3_3x3_4_256": (4, 256, 256, 3, 1, 1),
    "l3_1x1_4_1024to256": (4, 1024, 256, 1, 1, 0),
}


def _alternate(fns: dict, repeats: int) -> dict:
    """``{name: [seconds]}`` of ``repeats`` alternated calls of each zero-argument function."""
    ts = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        for k in names if r % 2 == 0 else names[::-1]:
            t0 = time.perf_counter()
            fns[k]()
            ts[k].append(time.perf_counter() - t0)
    return ts


def _summary(ts: dict) -> dict:
    return {k: {"median_s": round(statistics.median(v), 4), "min_s": round(min(v), 4)} for k, v in ts.items()}


def convs(batch: int = 32, repeats: int = 5, variants=("ynn_default", "eigen_conv")) -> list[dict]:
    """Forward + both gradients of each convolution shape under each variant."""
    out = []
    for name, (h, c, o, k, s, p) in CONV_SHAPES.items():
        rng = np.random.default_rng(0)
        x = jnp.asarray(rng.standard_normal((batch, h, h, c)).astype(np.float32))
        w = jnp.asarray(rng.standard_normal((k, k, c, o)).astype(np.float32) * 0.05)

        def f(x, w, s=s, p=p):
            def loss(x, w):
                y = jax.lax.conv_general_dilated(
                    x, w, (s, s), ((p, p), (p, p)), dimension_numbers=("NHWC", "HWIO", "NHWC")
                )
                return jnp.sum(jax.nn.relu(y) ** 2)

            return jax.grad(loss, argnums=(0, 1))(x, w)

        lowered = jax.jit(f).lower(x, w)
        comp = {v: lowered.compile(VARIANTS[v]) for v in variants}
        for c_ in comp.values():
            jax.block_until_ready(c_(x, w))
        ts = _alternate({v: (lambda c_=c_: jax.block_until_ready(c_(x, w))) for v, c_ in comp.items()}, repeats)
        out.append(
            {
                "conv": name,
                "batch": batch,
                "repeats": repeats,
                **_summary(ts),
                "load_avg_1m": round(os.getloadavg()[0], 2),
            }
        )
    return out


def step(
    size: int = 64, batch: int = 32, repeats: int = 3, model: str = "resnet50", variants=("ynn_default", "eigen_conv")
) -> list[dict]:
    """The full training step (CrossEntropy, Adam, donated state) under each variant."""
    import optax

    from gensim_jax.models import get_model
    from gensim_jax.training import create_train_state, make_train_step
    from gensim_jax.training.objectives import CrossEntropy

    rng = np.random.default_rng(0)
    data = {
        "image": jnp.asarray(rng.standard_normal((batch, size, size, 3)).astype(np.float32)),
        "label": jnp.asarray(rng.integers(0, 1000, batch), jnp.int32),
    }
    net = get_model(model, num_classes=1000)
    states, steps, compile_s = {}, {}, {}
    for v in variants:
        states[v] = create_train_state(net, optax.adam(1e-3), 0, example_input=jnp.zeros((1, size, size, 3)))
        steps[v] = make_train_step(CrossEntropy(), compiler_options=VARIANTS[v] or None)
        t0 = time.perf_counter()
        states[v], _ = steps[v](states[v], data)
        jax.block_until_ready(states[v])
        compile_s[v] = round(time.perf_counter() - t0, 1)

    def run(v):
        states[v], _ = steps[v](states[v], data)
        jax.block_until_ready(states[v])

    ts = _alternate({v: (lambda v=v: run(v)) for v in variants}, repeats)
    return [
        {
            "model": model,
            "size": size,
            "batch": batch,
            "repeats": repeats,
            **_summary(ts),
            "first_call_s": compile_s,
            "load_avg_1m": round(os.getloadavg()[0], 2),
        }
    ]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("convs", "step"))
    ap.add_argument("--model", default="resnet50", choices=("resnet50", "cornet_s", "cornet_z"))
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--repeats", type=int)
    ap.add_argument("--variants", nargs="+", choices=tuple(VARIANTS), default=["ynn_default", "eigen_conv"])
    a = ap.parse_args(argv)
    if a.what == "convs":
        lines = convs(a.batch, a.repeats or 5, a.variants)
    else:
        lines = step(a.size, a.batch, a.repeats or 3, model=a.model, variants=a.variants)
    for line in lines:
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
