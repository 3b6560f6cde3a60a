"""Train each experiment's smallest config, shortened, and compare its ``results.json`` with another checkout's.

A refactor must keep every number: ``python scripts/same_results.py run DIR`` trains the five
experiments (the configs of :data:`RUNS`, a few steps each, so all five take minutes on 2 CPU cores)
with this checkout into ``DIR/<experiment>``; run it from two checkouts (before and after a change)
and ``python scripts/same_results.py compare DIR_A DIR_B`` prints, per experiment, whether the two
``results.json`` are equal with timings and provenance left out (:data:`VOLATILE`), and the first
differing paths otherwise.  Exit status 1 when any experiment differs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

#: ``experiment: (config, --set items)``: each experiment's smallest config, a few steps of it
RUNS = {
    "quadrilaterals": (
        "cpu_small",
        ["num_runs=1", "num_steps=6", "data.num_train_images=220", "eval.trials_per_condition=2"],
    ),
    "geoclidean": ("cpu_small", ["num_steps=4"]),
    "imagenet_hierarchy": ("cpu_small", ["num_steps=4"]),
    "gaussian_mixture": (
        "paper",
        ["num_steps=60", "eval.num_pairs=2000", "eval.num_bins=10", "eval.num_test_points=200"],
    ),
    "spurious_digits": ("cpu_small", ["num_steps=4", "lambdas=[0,1]"]),
}
#: keys whose values differ between any two runs (wall-clock times, where and what ran)
VOLATILE = {"train_seconds", "seconds", "data_seconds", "provenance", "devices", "time", "timestamp"}


def strip_volatile(tree):
    """``tree`` (a results.json) without the keys of :data:`VOLATILE`, at any depth."""
    if isinstance(tree, dict):
        return {k: strip_volatile(v) for k, v in tree.items() if k not in VOLATILE}
    if isinstance(tree, list):
        return [strip_volatile(v) for v in tree]
    return tree


def differences(a, b, path: str = "", rtol: float = 0.0, atol: float = 0.0) -> list:
    """Where two trees differ, as ``path: a != b`` lines; floats within ``atol + rtol * |b|`` count as equal
    (the defaults: only identical values)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}/{k}: only in one" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += differences(a[k], b[k], f"{path}/{k}", rtol, atol)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]", rtol, atol)]
    if (rtol or atol) and isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return [] if abs(a - b) <= atol + rtol * abs(b) else [f"{path}: {a} != {b}"]
    return [] if a == b else [f"{path}: {str(a)[:60]} != {str(b)[:60]}"]


def run(out: Path, names) -> None:
    for name in names:
        config, sets = RUNS[name]
        cmd = [sys.executable, "-m", "train", name, "--config", config, "--workdir", str(out / name), "--set", *sets]
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def compare(a: Path, b: Path) -> int:
    bad = 0
    for name in RUNS:
        ra, rb = (json.loads((d / name / "results.json").read_text()) for d in (a, b))
        diff = differences(strip_volatile(ra), strip_volatile(rb))
        bad += bool(diff)
        print(f"{name}: {'same' if not diff else f'{len(diff)} differences: ' + '; '.join(diff[:5])}")
    return 1 if bad else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--only", nargs="*", default=list(RUNS), choices=list(RUNS))
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.out, args.only)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
