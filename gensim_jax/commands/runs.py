"""``gensim-jax runs [DIR]``: the runs under DIR; ``gensim-jax runs compare DIR...``: final metrics of runs as a
table, loss curves as a PNG.

The command part of :mod:`gensim_jax.runs` (which finds and reads the run directories and draws the
curves): :func:`add_parser` adds ``runs`` (sub-commands ``list``, the default, and ``compare``) to the
``gensim-jax`` parser, :func:`route` makes ``runs DIR`` and a bare ``runs`` mean ``runs list``,
:func:`list_command` and :func:`compare` run them.
"""

from __future__ import annotations

import json
import sys

__all__ = ["add_parser", "compare", "list_command", "route", "SUBCOMMANDS"]

#: The sub-commands of ``gensim-jax runs``; anything else after ``runs`` is a directory for ``list``.
SUBCOMMANDS = ("list", "compare")

#: The directory ``gensim-jax runs`` lists when given none (``make demo`` and the docs write runs there).
DEFAULT_ROOT = "runs"


def route(argv: list) -> list:
    """``argv`` of ``gensim-jax`` with ``list`` put after ``runs`` unless a sub-command (or ``--help``) follows:
    ``runs DIR`` and a bare ``runs`` are ``runs list [DIR]``."""
    if argv[:1] == ["runs"] and (len(argv) == 1 or argv[1] not in (*SUBCOMMANDS, "-h", "--help")):
        return ["runs", "list", *argv[1:]]
    return argv


def add_parser(sub) -> None:
    """Add ``runs [list] [DIR]`` and ``runs compare DIR...`` to the sub-parsers ``sub`` of ``gensim-jax``."""
    p_runs = sub.add_parser(
        "runs",
        help="list runs (gensim-jax runs [DIR]) and compare them (gensim-jax runs compare DIR...) without TensorBoard",
        usage="gensim-jax runs [DIR]\n       gensim-jax runs compare DIR... [options]",
        description="gensim-jax runs [DIR] lists the runs under DIR (default ./runs): every directory holding a "
        "metrics.jsonl, with its steps, last loss, status and final result/* numbers. "
        "gensim-jax runs compare DIR... compares runs; each DIR is a run directory or a directory holding runs "
        "(a training workdir, a sweep).",
    )
    runs_sub = p_runs.add_subparsers(
        dest="runs_command", metavar="{list,compare}", required=True, prog="gensim-jax runs"
    )
    p_list = runs_sub.add_parser(
        "list", help="the runs under DIR as a table (the default: gensim-jax runs DIR is gensim-jax runs list DIR)"
    )
    p_list.add_argument(
        "dir", nargs="?", default=None, metavar="DIR", help=f"where to look for runs (default: ./{DEFAULT_ROOT})"
    )
    p_list.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    p_list.set_defaults(fn=list_command)
    p_cmp = runs_sub.add_parser("compare", help="final metrics of several runs as a table; loss curves as a PNG")
    p_cmp.add_argument(
        "dirs",
        nargs="+",
        metavar="DIR",
        help="run directories (each with a metrics.jsonl) or directories holding runs below them (a workdir)",
    )
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


def list_command(args) -> int:
    """``gensim-jax runs [DIR]``: :func:`gensim_jax.runs.list_runs` as a table (or JSON); without DIR ./runs, or
    one line saying there is none."""
    from pathlib import Path

    from gensim_jax import runs

    root = args.dir
    if root is None:
        if not Path(DEFAULT_ROOT).is_dir():
            print(f"no ./{DEFAULT_ROOT} directory here: give the directory of your runs (gensim-jax runs DIR)")
            return 0
        root = DEFAULT_ROOT
    rows = runs.list_runs(root)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    finished = sum(r["status"] == "finished" for r in rows)
    print(f"{len(rows)} run(s) under {root} ({finished} finished):")
    print(runs.format_table(rows))
    print(f"all final metrics: gensim-jax runs compare {root}")
    return 0


def compare(args) -> int:
    """``gensim-jax runs compare``: :func:`gensim_jax.runs.compare_runs` as a table (or JSON), curves with ``--out``;
    directories holding runs stand for their runs (:func:`gensim_jax.runs.expand_run_dirs`)."""
    from gensim_jax import runs

    args.dirs = runs.expand_run_dirs(args.dirs)
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
