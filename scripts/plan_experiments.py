"""The SCALING.md table: each experiment's config planned on TPU topologies with ``gensim-jax plan --json``.

Usage::

    python scripts/plan_experiments.py --experiments gaussian_mixture spurious_digits \\
        --topologies v5e:2x4 v5e:16x16 [--config paper] > table.md

Every row is one compile of the runner's own step (first arm of the config) for the topology; the
columns are the report's memory per device, the FLOPs per example and where they come from (TPU:
XLA's ``cost_analysis``; GPU: matmuls and convolutions counted from the compiled HLO, since the
XLA GPU compiler gives no cost analysis), the roofline step time, what bounds it and the
examples/s it implies.  GPU topologies (``h100:1x8``, ``h100:8x8``) need the XLA CUDA plug-in
(``pip install 'jax[cuda12]==<jax version>'``), no GPU::

    CUDA_VISIBLE_DEVICES=-1 JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 python scripts/plan_experiments.py \
        --experiments gaussian_mixture --topologies h100:1x8 h100:8x8
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def plan(experiment: str, config: str, topology: str, overrides=()) -> dict:
    """One ``gensim-jax plan --json``; a config batch that does not divide over the devices is raised to
    the next multiple of the device count (one example per device at least)."""
    from gensim_jax import experiments
    from gensim_jax.commands.plan import main as plan_main
    from gensim_jax.planning import parse_topology

    n = parse_topology(topology).num_devices
    exp = experiments.load(experiment)
    batch = dict(o.split("=", 1) for o in overrides).get("batch_size") or exp.get_config(config).batch_size
    batch = int(batch)
    batch = -(-batch // n) * n
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = plan_main(
            [experiment, "--config", config, "--topology", topology, "--json", "--batch-size", str(batch)]
            + (["--set", *overrides] if overrides else [])
        )
    if status:
        return {"error": err.getvalue().strip().splitlines()[-1]}
    return json.loads(out.getvalue().strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--experiments", nargs="+", required=True)
    p.add_argument("--topologies", nargs="+", required=True)
    p.add_argument("--config", default="paper")
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="config overrides, as for train")
    args = p.parse_args(argv)
    import platform

    import jax

    print(f"<!-- {' '.join(sys.argv)} | jax {jax.__version__} | host {platform.machine()}, no accelerator -->")
    print(
        "| experiment | topology | global batch | memory / device | of | fits | FLOPs / example (source) "
        "| step >= (roofline, bound) | examples/s <= | compile s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    from gensim_jax.planning import fmt_bytes

    for e in args.experiments:
        for t in args.topologies:
            r = plan(e, args.config, t, args.set)
            if "error" in r:
                print(f"| {e} | {t} | | {r['error']} | | | | | | |", flush=True)
                continue
            roof = r.get("roofline") or {}
            step = roof.get("step_seconds")
            fpe = r.get("flops_per_example")
            src = "XLA" if str(r.get("flops_source", "")).startswith("compiler") else "HLO count"
            print(
                f"| {e} | {t} | {r['global_batch']:,} | {fmt_bytes(r['memory_per_device_bytes'])} | "
                f"{fmt_bytes(r['memory_capacity_bytes'])} | {'yes' if r['fits'] else 'no'} | "
                f"{'n/a' if fpe is None else f'{fpe / 1e9:.4g} G'} ({src}) | "
                f"{'n/a' if step is None else f'{step * 1e3:.3g} ms'} ({roof.get('bound', '-')}) | "
                f"{'n/a' if not roof.get('examples_per_second') else format(roof['examples_per_second'], ',.0f')} | "
                f"{r['compile_seconds']:.1f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
