"""``gensim-jax runs compare DIR...``: final metrics of several runs as a table, loss curves as a PNG.

The command part of :mod:`gensim_jax.runs` (which reads the run directories and draws the curves):
:func:`add_parser` adds ``runs compare`` to the ``gensim-jax`` parser, :func:`compare` runs it.
"""

from __future__ import annotations

import json
import sys

__all__ = ["add_parser", "compare"]


def add_parser(sub) -> None:
    """Add ``runs compare`` to the sub-parsers ``sub`` of ``gensim-jax``."""
    p_runs = sub.add_parser("runs", help="look at run directories (metrics.jsonl) without TensorBoard")
    runs_sub = p_runs.add_subparsers(dest="runs_command", required=True)
    p_cmp = runs_sub.add_parser("compare", help="final metrics of several runs as a table; loss curves as a PNG")
    p_cmp.add_argument("dirs", nargs="+", metavar="DIR", help="run directories (each with a metrics.jsonl)")
    p_cmp.add_argument(
        "--keys",
        nargs="+",
        metavar="PATTERN",
        help="metric keys to show, glob patterns (default: loss, accuracy, grad_norm, eval/*, result/*, "
        "perf/examples_per_s, perf/step_time_s)",
    )
    p_cmp.add_argument(
        "--config-fields",
        nargs="+",
        default=[],
        metavar="PATTERN",
        help="also show these config fields (glob patterns over config.json's config, nested sections "
        "joined with '.', e.g. optim.learning_rate 'objectives.*')",
    )
    p_cmp.add_argument("--out", metavar="PNG", help="also draw --metric against step for every run into this PNG")
    p_cmp.add_argument("--metric", default="loss", help="the curve drawn with --out (default: loss)")
    p_cmp.add_argument("--logy", action="store_true", help="logarithmic y axis for --out")
    p_cmp.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    p_cmp.set_defaults(fn=compare)


def compare(args) -> int:
    """``gensim-jax runs compare``: :func:`gensim_jax.runs.compare_runs` as a table (or JSON), curves with ``--out``."""
    from gensim_jax import runs

    rows = runs.compare_runs(args.dirs, keys=args.keys or list(runs.DEFAULT_COLUMNS), config_fields=args.config_fields)
    differ = runs.provenance_differences(rows)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(runs.format_table(rows))
    if differ:
        what = " and ".join("gensim-jax version" if k == "version" else "git commit" for k in differ)
        listing = "; ".join(f"{r['run']}: {r.get('version') or '?'} {r.get('commit') or '?'}" for r in rows)
        print(f"warning: these runs differ in {what} ({listing})", file=sys.stderr)
    if args.out:
        try:
            out = runs.plot_curves(args.dirs, args.out, metric=args.metric, logy=args.logy, warn=lambda _: None)
        except OSError as err:
            raise ValueError(f"--out {args.out}: cannot write it ({err.filename}: {err.strerror or err})") from err
        print(f"wrote {out}", file=sys.stderr)
    return 0
