"""Ahead-of-time plans of the all-pairs GenSim step for GPU clusters, without a GPU (markdown table).

Run it with a JAX that has the CUDA plugin (``pip install 'jax[cuda12]==<jax version>'``; about
3 GB, so it is not part of ``make test``); no GPU is needed:

    CUDA_VISIBLE_DEVICES=-1 python scripts/plan_gpu.py
    CUDA_VISIBLE_DEVICES=-1 python scripts/plan_gpu.py --topologies h100:8x8 --batches 65536 --report

The XLA GPU compiler gives memory per device but no cost analysis: FLOPs are the matmuls counted
from the compiled HLO (:func:`gensim_jax.training.hlo.matmul_flops`); the step (two-layer
perceptron 64 -> 256 -> 128, ``GenSimRegression`` on a class-table target, Adam) is the one
``scripts/plan_all_pairs.py`` compiles for TPUs.  The experiments' own steps on GPU topologies:
``scripts/plan_experiments.py --topologies h100:1x8 h100:8x8`` (same environment).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[4096, 16384, 65536, 262144])
    ap.add_argument("--topologies", nargs="+", default=["a100:1x8", "h100:1x8", "h200:1x8", "h100:8x8"])
    ap.add_argument("--report", action="store_true", help="also print the full text report of every plan")
    args = ap.parse_args(argv)

    from gensim_jax import planning
    from gensim_jax.models.mlp import TwoLayerPerceptron
    from gensim_jax.training import objectives as ob
    from gensim_jax.training.state import create_train_state
    from gensim_jax.training.step import train_step

    model = TwoLayerPerceptron(in_features=64, hidden=256, embed_dim=128)
    state = jax.eval_shape(lambda: create_train_state(model, optax.adam(1e-3), 0, example_input=jnp.zeros((1, 64))))
    objective = ob.GenSimRegression(target=ob.TableTarget.create(np.eye(1000, dtype=np.float32) - 1.0), input_key="x")

    print(
        f"<!-- {' '.join(sys.argv)} | jax {jax.__version__} | host {platform.machine()} {platform.node()}, no GPU -->"
    )
    print(
        "| topology | GPUs | global batch B | memory / device | fits | FLOPs / device (HLO matmuls) "
        "| collective bytes / device | roofline step | examples/s (bound) | compile s |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    reports = []
    for name in args.topologies:
        topo = planning.parse_topology(name)
        devs = planning.build_devices(topo)
        for b in args.batches:
            batch = {"x": jax.ShapeDtypeStruct((b, 64), jnp.float32), "label": jax.ShapeDtypeStruct((b,), jnp.int32)}
            t0 = time.perf_counter()
            rep = planning.plan_step(
                train_step, (state, batch, objective), topology=topo, devices=devs, experiment="all-pairs GenSim MLP"
            )
            wall = time.perf_counter() - t0
            d = rep.as_dict()
            r = d["roofline"] or {}
            fits = "yes" if d["fits"] else f"no ({planning.fmt_bytes(-d['margin_bytes'])} over)"
            print(
                f"| {topo.name} | {topo.num_devices} | {b:,} | {planning.fmt_bytes(d['memory_per_device_bytes'])} | {fits} "
                f"| {d['flops_per_device'] / 1e9:,.1f} G | {planning.fmt_bytes(d['collective_bytes_per_device'])} "
                f"| {r.get('step_seconds', float('nan')) * 1e3:.3g} ms | {r.get('examples_per_second', float('nan')):,.0f} "
                f"({r.get('bound', '-')}) | {wall:.1f} |",
                flush=True,
            )
            reports.append(rep)
    if args.report:
        for rep in reports:
            print("\n" + rep.to_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
