"""The body of ``gensim-jax plan``: one call from the CLI, errors as one line on stderr.

The CLI resolves ``EXPERIMENT --config NAME`` into a ``build(global_batch, fsdp) -> StepBuild``
(the runner's step, the abstract state/batch/objective, its shardings) and the config's global
batch, then calls :func:`run_plan_command`.
"""

from __future__ import annotations

import json
import sys
from typing import Callable, Optional, TextIO

from gensim_jax.planning.chips import chip_table_markdown
from gensim_jax.planning.max_batch import max_global_batch
from gensim_jax.planning.plan import plan_step
from gensim_jax.planning.report import fmt_bytes
from gensim_jax.planning.topology import PlannerSetupError, parse_topology

__all__ = ["run_plan_command", "add_plan_arguments"]


def add_plan_arguments(parser) -> None:
    """Add the ``plan`` options to an ``argparse`` (sub)parser."""
    parser.add_argument("--topology", default=None, help="target, e.g. v5e:16x16, v4:2x2x2, h100:8x8 (hosts x GPUs)")
    parser.add_argument("--batch-size", type=int, default=None, help="global batch (default: the config's)")
    parser.add_argument("--fsdp", type=int, default=1, help="size of the FSDP mesh axis (1: parameters replicated)")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument(
        "--max-batch",
        action="store_true",
        help="bisect over compiles for the largest global batch that fits, with and without FSDP",
    )
    parser.add_argument("--chips", action="store_true", help="print the chip table with the source of every figure")


def run_plan_command(
    build: Callable,
    global_batch: int,
    *,
    topology: Optional[str],
    fsdp: int = 1,
    as_json: bool = False,
    max_batch: bool = False,
    chips: bool = False,
    experiment: str = "",
    config: str = "",
    out: Optional[TextIO] = None,
    err: Optional[TextIO] = None,
) -> int:
    """Plan ``build(global_batch, fsdp)`` on ``topology`` and print the report; returns the exit status.

    Bad input (unknown topology, a batch the device count does not divide, a missing compiler
    plugin) prints one line on ``err`` and returns 2.  With ``max_batch`` the report is the
    bisection's result without and with FSDP over all devices.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        if chips:
            print(chip_table_markdown(), file=out)
            return 0
        if not topology:
            raise ValueError("--topology is required, e.g. --topology v5e:4x4 or --topology h100:8x8 (hosts x GPUs)")
        topo = parse_topology(topology)
        if max_batch:
            res = {}
            for f in (1, topo.num_devices):
                res["fsdp" if f > 1 else "no_fsdp"] = max_global_batch(
                    build, topo, fsdp=f, start=global_batch, experiment=experiment, config=config
                )
            if as_json:
                print(
                    json.dumps(
                        {"topology": topo.name, "experiment": experiment, "config": config, **res}, default=float
                    ),
                    file=out,
                )
            else:
                for k, r in res.items():
                    what = " ".join(x for x in (experiment, config and f"--config {config}") if x)
                    print(
                        f"{topo.name} {what}, {k.replace('_', ' ')} (fsdp axis {r['fsdp']}): "
                        f"largest global batch that fits {r['max_global_batch']:,} ({r['per_device']:,} per device); "
                        f"{len(r['trials'])} compiles in {r['seconds']:.0f} s"
                        + ("; still fits at the search limit" if r["fits_at_limit"] else ""),
                        file=out,
                    )
                    for t in r["trials"]:
                        print(
                            f"  B={t['global_batch']:>9,}  {'fits' if t['fits'] else 'does not fit':<13} "
                            f"{fmt_bytes(t['memory_per_device_bytes'])} per device",
                            file=out,
                        )
            return 0
        sb = build(global_batch, fsdp)
        rep = plan_step(
            sb.fn,
            sb.args,
            topology=topo,
            shardings=sb.shardings,
            fsdp=fsdp,
            donate_argnums=sb.donate_argnums,
            experiment=experiment,
            config=config,
        )
        print(rep.to_json() if as_json else rep.to_text(), file=out)
        return 0
    except (ValueError, PlannerSetupError) as e:
        print(f"gensim-jax plan: {str(e).splitlines()[0]}", file=err)
        return 2
