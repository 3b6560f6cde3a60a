"""Memory per device of the all-pairs GenSim regression against B^2/n on TPU v5e slices (markdown table).

Compiles (ahead of time, with libtpu; no TPU needed) the library's train step
(``gensim_jax.training.step.train_step`` sharded as ``parallel.jit_sharded`` does) for a small
encoder (two-layer perceptron 64 -> 256 -> 128) under ``GenSimRegression`` on a class-table target,
for each global batch and v5e topology, and prints per device: the size of one f32 (B/n) x B block,
the compiler's temporaries and total, whether it fits in 16 GiB, and the compile time.

    python scripts/plan_all_pairs.py                       # 4k..256k on v5e:4x4, 8x8, 16x16
    python scripts/plan_all_pairs.py --batches 4096 16384 --topologies v5e:2x2 --json

Needs ``pip install 'gensim-jax[tpu]'``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[4096, 16384, 65536, 262144])
    ap.add_argument("--topologies", nargs="+", default=["v5e:4x4", "v5e:8x8", "v5e:16x16"])
    ap.add_argument("--fsdp", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="also print one JSON object per row")
    ap.add_argument(
        "--max-batch",
        action="store_true",
        help="instead of the table: bisect for the largest global batch that fits on each topology, "
        "without and with FSDP (gensim_jax.commands.plan.run_plan_command, as `gensim-jax plan --max-batch`)",
    )
    args = ap.parse_args(argv)

    from gensim_jax import planning
    from gensim_jax.commands.plan import run_plan_command
    from gensim_jax.models.mlp import TwoLayerPerceptron
    from gensim_jax.training import objectives as ob
    from gensim_jax.training.state import create_train_state
    from gensim_jax.training.step import train_step

    model = TwoLayerPerceptron(in_features=64, hidden=256, embed_dim=128)
    state = jax.eval_shape(lambda: create_train_state(model, optax.adam(1e-3), 0, example_input=jnp.zeros((1, 64))))
    objective = ob.GenSimRegression(target=ob.TableTarget.create(np.eye(1000, dtype=np.float32) - 1.0), input_key="x")

    if args.max_batch:

        def build(b, fsdp):
            batch = {"x": jax.ShapeDtypeStruct((b, 64), jnp.float32), "label": jax.ShapeDtypeStruct((b,), jnp.int32)}
            return planning.StepBuild(train_step, (state, batch, objective))

        status = 0
        for topo_name in args.topologies:
            status |= run_plan_command(
                build,
                args.batches[0],
                topology=topo_name,
                max_batch=True,
                as_json=args.json,
                experiment="all-pairs GenSim MLP",
            )
        return status

    print(f"<!-- {' '.join(sys.argv)} | jax {jax.__version__} | host {platform.machine()} {platform.node()} -->")
    print(
        "| topology | chips | global batch B | B^2/n (M) | f32 (B/n) x B block | temporaries / device "
        "| total / device | fits (16 GiB) | compile s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    rows = []
    for topo_name in args.topologies:
        topo = planning.parse_topology(topo_name)
        devs = planning.build_devices(topo)
        n = topo.num_devices
        for b in args.batches:
            batch = {"x": jax.ShapeDtypeStruct((b, 64), jnp.float32), "label": jax.ShapeDtypeStruct((b,), jnp.int32)}
            t0 = time.perf_counter()
            rep = planning.plan_step(
                train_step,
                (state, batch, objective),
                topology=topo,
                devices=devs,
                fsdp=args.fsdp,
                experiment="all-pairs GenSim MLP",
            )
            wall = time.perf_counter() - t0
            d = rep.as_dict()
            block = 4.0 * b * b / n
            fits = "yes" if d["fits"] else "no (" + planning.fmt_bytes(-d["margin_bytes"]) + " over)"
            print(
                f"| {topo.name} | {n} | {b:,} | {b * b / n / 1e6:,.1f} | {planning.fmt_bytes(block)} "
                f"| {planning.fmt_bytes(d['memory_breakdown_bytes']['temporaries'])} "
                f"| {planning.fmt_bytes(d['memory_per_device_bytes'])} | {fits} | {wall:.1f} |",
                flush=True,
            )
            rows.append(
                {
                    "topology": topo.name,
                    "chips": n,
                    "global_batch": b,
                    "b2_over_n": b * b / n,
                    "block_bytes": block,
                    "temporaries_bytes": d["memory_breakdown_bytes"]["temporaries"],
                    "memory_per_device_bytes": d["memory_per_device_bytes"],
                    "fits": d["fits"],
                    "compile_seconds": wall,
                    "compiler_error": d["compiler_error"],
                }
            )
    if args.json:
        for r in rows:
            print(json.dumps(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
