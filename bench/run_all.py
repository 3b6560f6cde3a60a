"""Run every benchmark and print one JSON line per measurement (``make bench``).

Usage::

    python -m bench.run_all            # the default suite (``make bench``; < 5 min on 2 CPU cores)
    python -m bench.run_all --full     # adds the 224 x 224 training steps (~+10 min here)
    python -m bench.run_all --quick    # tiny sizes, a smoke run
    python -m bench.run_all --only functions.losses functions.kernels
    python -m bench.run_all --only runner.accelerator   # the accelerator acceptance run (bench/runner/accelerator.py)

Modules (``--only`` names them by their path under bench/): ``functions.losses``, ``functions.kernels``,
``functions.scaling`` (loss and table timings vs PyTorch), ``runner.overhead`` (the runner against a
bare jit loop, 1 and 2 processes), ``input.throughput`` (data pipelines vs tf.data, stimulus rendering
vs matplotlib), ``step.training_step`` (ResNet-50 and CORnet-S training steps vs PyTorch at 64 x 64,
CORnet-Z at 48 x 48; 224 x 224 with ``--full``), ``functions.mc_estimator`` (the Monte Carlo Eq. 1 estimator of
``gensim_jax.testing`` vs a NumPy loop over samples), ``input.scaling`` (host input work per process of
one global batch at 1, 2 and 4 processes), ``input.imagenet_stream`` (the ImageNet training stream on
ImageNet-sized JPEGs: images per second per host core, host and device augmentation),
``input.folder_stream`` (the folder experiment's stream of image files against the ImageNet stream, per core),
``runner.device_idle`` (the run's device-idle figure against a simulated accelerator whose idle time is
known), ``input.device_augment`` (the SimCLR presets jitted vs the host's TensorFlow views per core),
``step.max_pool`` (the 48-px CORnet-Z step's max pooling gradients: ``window_max_pool`` vs XLA's
select-and-scatter).
``input.augment_default`` (host vs device augmentation per SimCLR step through the runner, minutes) and
``runner.accelerator`` (loss curves on the accelerator vs the CPU, paper steps vs ``gensim-jax plan``,
several devices vs one; ``make accel-check``) run only when named with ``--only``; on a CPU-only
machine ``runner.accelerator`` needs ``--quick`` (its smoke mode).

Each module runs in a fresh Python process (``--same-process`` runs them all in this one): what one
benchmark leaves behind -- PyTorch's OpenMP pool after the training steps, TensorFlow's thread pools
after the input pipelines, a warm or fragmented allocator -- must not time another. (The Monte Carlo
estimator once measured 3x slower than alone; in-process after PyTorch steps it slowed in 3 of 11
processes, the cause not pinned down: docs/performance_log.md, "Re-measured on the idle machine".)

The first line describes the machine (``"bench": "machine"``); every other line is
``{"bench", "params", "ours_s", "reference", "reference_s", "ratio", "target", "met", ...}`` with
``ratio = ours_s / reference_s`` measured in the same process, the two alternated.  The exit status
is 0 whether or not targets are met (the lines say); ``--strict`` makes a missed target exit 1.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # ``python bench/run_all.py``: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# names are modules under bench/ (``--only functions.losses`` runs ``bench.functions.losses``)
MODULES = (
    "functions.losses",
    "functions.kernels",
    "functions.scaling",
    "input.throughput",
    "input.scaling",
    "input.imagenet_stream",
    "input.folder_stream",
    "input.device_augment",
    "step.training_step",
    "step.max_pool",
    "runner.overhead",
    "runner.device_idle",
    "functions.mc_estimator",
)
OPTIONAL = ("runner.accelerator", "input.augment_default")  # run only when named in --only


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    parser.add_argument("--full", action="store_true", help="add the 224 x 224 training-step cases")
    parser.add_argument("--only", nargs="+", choices=MODULES + OPTIONAL, default=list(MODULES))
    parser.add_argument("--strict", action="store_true", help="exit 1 if any target is missed")
    parser.add_argument("--same-process", action="store_true", help="run every module in this process")
    args = parser.parse_args(argv)

    from bench._harness import emit, machine

    start = time.perf_counter()
    emit(
        {
            "bench": "machine",
            **machine(),
            "load_avg": [round(x, 2) for x in os.getloadavg()],
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "quick": args.quick,
            "full": args.full,
        }
    )
    missed = 0
    for name in args.only:
        lines = _run_module(name, args.quick, args.full) if args.same_process else _run_isolated(name, args)
        for line in lines:
            emit(line)
            missed += not line["met"]
    emit(
        {
            "bench": "summary",
            "total_s": round(time.perf_counter() - start, 1),
            "missed": missed,
            "load_avg": [round(x, 2) for x in os.getloadavg()],
        }
    )
    return 1 if (args.strict and missed) else 0


def _run_module(name: str, quick: bool, full: bool) -> list[dict]:
    module = importlib.import_module(f"bench.{name}")
    kwargs = {"full": full} if name == "step.training_step" else {}
    return list(module.run(quick=quick, **kwargs))


def _run_isolated(name: str, args) -> list[dict]:
    """``bench.<name>``'s lines, measured in a fresh interpreter (its stderr passes through)."""
    code = (
        "import json, sys; from bench.run_all import _run_module; "
        f"[print(json.dumps(line), flush=True) for line in _run_module({name!r}, {args.quick}, {args.full})]"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=root, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"bench.run_all: bench.{name} failed (exit {proc.returncode}); its error is above")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


if __name__ == "__main__":
    sys.exit(main())
