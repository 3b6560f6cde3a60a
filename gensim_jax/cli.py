"""The ``gensim-jax`` console command (a thin front end).

``gensim-jax list-models``            registered encoders (``gensim_jax.models.list_models``)
``gensim-jax info``                   JAX backend, processes and devices (after multi-host set-up)
``gensim-jax train EXPERIMENT ...``   train an experiment (:mod:`gensim_jax.experiments.cli`; in a checkout
                                      ``python -m train`` is the same); ``gensim-jax train --help`` lists them
``gensim-jax plan EXPERIMENT ...``    compile its step for a TPU / GPU topology: memory, FLOPs, step time
``gensim-jax eval PROTOCOL ...``      evaluate exports (:mod:`gensim_jax.evaluation.cli`; = ``python -m eval``)
``gensim-jax runs compare DIR...``    final metrics of several runs as a table, loss curves as a PNG

Everything after ``train``/``eval`` (``--help`` included) goes to that command unchanged, so both work
from an installed wheel, outside any checkout.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, Sequence

__all__ = ["main"]


def _list_models(_args) -> int:
    from gensim_jax.models import list_models

    for name in list_models():
        print(name)
    return 0


def _info(args) -> int:
    from gensim_jax import parallel

    if args.distributed:
        parallel.initialize_distributed(force=True)
    print(json.dumps(parallel.device_summary(), indent=2))
    return 0


def _runs_compare(args) -> int:
    from gensim_jax import runs

    try:
        rows = runs.compare_runs(args.dirs, keys=args.keys or list(runs.DEFAULT_COLUMNS))
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            print(runs.format_table(rows))
        if args.out:
            out = runs.plot_curves(args.dirs, args.out, metric=args.metric, logy=args.logy)
            print(f"wrote {out}", file=sys.stderr)
    except ValueError as e:
        print(f"gensim-jax runs compare: {e}", file=sys.stderr)
        return 2
    return 0


FORWARDED = {
    "train": "EXPERIMENT, e.g. geoclidean",
    "eval": "PROTOCOL, e.g. oddball",
    "plan": "EXPERIMENT, e.g. imagenet_hierarchy (with --topology v5e:16x16)",
}


def _forward(command: str, rest: Sequence[str]) -> int:
    """Run the ``train`` or ``eval`` command of the package with ``rest`` as its arguments."""
    if command == "train":
        from gensim_jax.experiments.cli import main as run
    elif command == "plan":
        from gensim_jax.experiments.cli import plan_main as run
    else:
        from gensim_jax.evaluation.cli import main as run
    return int(run(list(rest)) or 0)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``gensim-jax`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in FORWARDED:  # all of the rest, --help included, is for python -m train/eval
        return _forward(argv[0], argv[1:])
    parser = argparse.ArgumentParser(prog="gensim-jax", description="GenSim in JAX: models, devices, training.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list-models", help="list the registered encoders").set_defaults(fn=_list_models)
    p_info = sub.add_parser("info", help="print the JAX backend, processes and devices")
    p_info.add_argument(
        "--distributed", action="store_true", help="call jax.distributed.initialize() first (multi-host jobs)"
    )
    p_info.set_defaults(fn=_info)
    p_runs = sub.add_parser("runs", help="look at run directories (metrics.jsonl) without TensorBoard")
    runs_sub = p_runs.add_subparsers(dest="runs_command", required=True)
    p_cmp = runs_sub.add_parser("compare", help="final metrics of several runs as a table; loss curves as a PNG")
    p_cmp.add_argument("dirs", nargs="+", metavar="DIR", help="run directories (each with a metrics.jsonl)")
    p_cmp.add_argument(
        "--keys",
        nargs="+",
        metavar="PATTERN",
        help="metric keys to show, glob patterns (default: loss, accuracy, grad_norm, eval/*, "
        "perf/examples_per_s, perf/step_time_s)",
    )
    p_cmp.add_argument("--out", metavar="PNG", help="also draw --metric against step for every run into this PNG")
    p_cmp.add_argument("--metric", default="loss", help="the curve drawn with --out (default: loss)")
    p_cmp.add_argument("--logy", action="store_true", help="logarithmic y axis for --out")
    p_cmp.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    p_cmp.set_defaults(fn=_runs_compare)
    for command, what in FORWARDED.items():  # listed for --help; main() forwards them before parsing
        p = sub.add_parser(
            command,
            help=f"= python -m {command} {what.split(',')[0]} [options] (`gensim-jax {command} --help` for the list)",
        )
        p.add_argument("name", help=what)
        p.add_argument("rest", nargs=argparse.REMAINDER, help=f"options passed on to python -m {command}")
    args = parser.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
