"""Turn the JSON lines of :mod:`bench.run_all` into the Markdown tables of docs/PERFORMANCE.md.

Usage::

    python -m bench.run_all > results.jsonl
    python -m bench.report results.jsonl --machine "2-core Xeon (shared)"
"""

from __future__ import annotations

import json
import sys


def _fmt_s(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f} s"
    if x >= 1:
        return f"{x:.2f} s"
    return f"{x * 1e3:.3g} ms"


def _params(p: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items() if k not in ("dtype",))


_MODULE = {
    "gensim_loss_grad": "functions.losses",
    "ntxent_loss_grad": "functions.losses",
    "supcon_loss_grad": "functions.losses",
    "beta_bernoulli_table": "functions.kernels",
    "hierarchy_table": "functions.kernels",
    "tree_kernel_gram": "functions.kernels",
    "mc_estimator_gaussian_mixture": "functions.mc_estimator",
    "input_scaling": "input.scaling",
    "input_imagenet_stream": "input.imagenet_stream",
    "input_folder_stream": "input.folder_stream",
    "runner_overhead": "runner.overhead",
    "max_pool_vjp": "step.max_pool",
    "cornet_z_step_max_pool": "step.max_pool",
    "cornet_z_step_xla_options": "step.max_pool",
}


def _module(bench: str) -> str:
    """The ``--only`` module that prints the line ``bench``."""
    if bench in _MODULE:
        return _MODULE[bench]
    if bench.startswith("scaling_"):
        return "functions.scaling"
    if bench.startswith("train_step_"):
        return "step.training_step"
    if bench.startswith("pipeline_") or bench.endswith(("_render", "_render_only")):
        return "input.throughput"
    return "functions.kernels"


def tables(lines: list[dict], machine: str = "", date: str = "") -> str:
    head = next((ln for ln in lines if ln["bench"] == "machine"), {})
    date = date or head.get("date_utc", "")[:10]
    main = [ln for ln in lines if ln["bench"] not in ("machine", "summary") and not ln["bench"].startswith("scaling_")]
    scaling = [ln for ln in lines if ln["bench"].startswith("scaling_")]
    out = [
        "| benchmark | params | command | machine | date | ours | reference | reference time "
        "| ratio (ours/ref) | target | met |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for ln in main:
        ratio = f"{ln['ratio']:.3g}"
        if "speedup" in ln:
            ratio += f" (speedup {ln['speedup']:,.0f}x)"
        full = " --full" if ln["params"].get("size") == 224 and ln["bench"].startswith("train_step_") else ""
        cmd = f"`python -m bench.run_all --only {_module(ln['bench'])}{full}`"
        out.append(
            f"| `{ln['bench']}` | {_params(ln['params'])} | {cmd} | {machine} | {date} | "
            f"{_fmt_s(ln['ours_s'])} | "
            f"{ln['reference']} | {_fmt_s(ln['reference_s'])} | {ratio} | {ln['target']} | "
            f"{'yes' if ln['met'] else 'no'} |"
        )
    if scaling:
        out += [
            "",
            "| benchmark | B | ours | reference | ratio | torch threads (faster) |",
            "|---|---|---|---|---|---|",
        ]
        for ln in scaling:
            b = ln["params"].get("B", ln["params"].get("N"))
            out.append(
                f"| `{ln['bench']}` | {b} | {_fmt_s(ln['ours_s'])} | "
                f"{_fmt_s(ln['reference_s'])} | {ln['ratio']:.3g} | "
                f"{ln.get('reference_threads', '')} |"
            )
    return "\n".join(out)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    import argparse

    parser = argparse.ArgumentParser(description="JSON lines of bench.run_all -> Markdown")
    parser.add_argument("results")
    parser.add_argument("--machine", default="", help="short machine description for the table")
    args = parser.parse_args(argv)
    with open(args.results, encoding="utf-8") as fh:
        lines = [json.loads(s) for s in fh if s.strip().startswith("{")]
    lines = [ln for ln in lines if "bench" in ln]
    print(tables(lines, machine=args.machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
