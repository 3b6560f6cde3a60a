"""The ``gensim-jax`` console command (a thin front end).

``gensim-jax list-models``            registered encoders (``gensim_jax.models.list_models``)
``gensim-jax info``                   JAX backend, processes and devices (after multi-host set-up)
``gensim-jax train EXPERIMENT ...``   forwards to ``python -m train EXPERIMENT ...`` (run from the
                                      repository root, where the ``train/`` package lives)
``gensim-jax eval PROTOCOL ...``      forwards to ``python -m eval PROTOCOL ...`` (likewise)
``gensim-jax eval --help``            forwards to ``python -m eval --help`` (lists the protocols;
                                      ``train --help`` likewise)
"""

from __future__ import annotations

import argparse
import json
import subprocess
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


def _forward(args) -> int:
    cmd = [sys.executable, "-m", args.command, args.name, *args.rest]
    return subprocess.call(cmd)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``gensim-jax`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 2 and argv[0] in ("train", "eval") and argv[1] in ("-h", "--help"):
        return int(subprocess.call([sys.executable, "-m", argv[0], "--help"]))
    parser = argparse.ArgumentParser(prog="gensim-jax", description="GenSim in JAX: models, devices, training.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list-models", help="list the registered encoders").set_defaults(fn=_list_models)
    p_info = sub.add_parser("info", help="print the JAX backend, processes and devices")
    p_info.add_argument("--distributed", action="store_true",
                        help="call jax.distributed.initialize() first (multi-host jobs)")
    p_info.set_defaults(fn=_info)
    for command, what in (("train", "EXPERIMENT, e.g. gaussian_mixture"), ("eval", "PROTOCOL, e.g. oddball")):
        p = sub.add_parser(command, help=f"python -m {command} {what.split(',')[0]} [options]")
        p.add_argument("name", help=what)
        p.add_argument("rest", nargs=argparse.REMAINDER, help=f"options passed on to python -m {command}")
        p.set_defaults(fn=_forward)
    args = parser.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
