"""``python -m train EXPERIMENT [--config NAME] [--workdir DIR] [--set key=value ...] [--benchmark-dir DIR]``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

EXPERIMENTS = ("gaussian_mixture", "geoclidean", "quadrilaterals", "spurious_digits")


def _parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train", description=__doc__)
    parser.add_argument("experiment", choices=EXPERIMENTS)
    parser.add_argument("--config", default="paper", help="config variant (default: paper)")
    parser.add_argument("--workdir", default=None, help="output directory (default: runs/EXPERIMENT-CONFIG)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="override config fields")
    parser.add_argument("--benchmark-dir", default=None,
                        help="official Geoclidean benchmark directory, also evaluated (geoclidean only)")
    args = parser.parse_args(argv)

    import importlib

    exp = importlib.import_module(f"train.{args.experiment}")

    overrides = {}
    fields = {f.name for f in dataclasses.fields(exp.Config)}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or key not in fields:
            parser.error(f"--set expects KEY=VALUE with KEY in {sorted(fields)}, got {item!r}")
        overrides[key] = _parse_value(value)
    if args.benchmark_dir is not None:
        if "benchmark_dir" not in fields:
            parser.error(f"--benchmark-dir does not apply to {args.experiment}")
        overrides["benchmark_dir"] = args.benchmark_dir
    try:
        config = exp.get_config(args.config, **overrides)
    except ValueError as err:
        parser.error(str(err))
    workdir = args.workdir or f"runs/{args.experiment}-{args.config}"
    results = exp.train_and_evaluate(config, workdir)
    print()
    print(exp.format_table(results))
    print(f"\ntrained in {results['train_seconds']:.1f} s; wrote {workdir}/results.json and "
          f"{workdir}/{args.experiment}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
