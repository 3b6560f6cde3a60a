"""The ``gensim-jax`` console command (a thin front end).

``gensim-jax list-models``            registered encoders (``gensim_jax.models.list_models``)
``gensim-jax info``                   JAX backend, processes and devices (after multi-host set-up)
``gensim-jax train EXPERIMENT ...``   train an experiment (:mod:`gensim_jax.experiments.cli`; in a checkout
                                      ``python -m train`` is the same); ``gensim-jax train --help`` lists them
``gensim-jax eval PROTOCOL ...``      evaluate exports (:mod:`gensim_jax.evaluation.cli`; = ``python -m eval``)

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


FORWARDED = {"train": "EXPERIMENT, e.g. geoclidean", "eval": "PROTOCOL, e.g. oddball"}


def _forward(command: str, rest: Sequence[str]) -> int:
    """Run the ``train`` or ``eval`` command of the package with ``rest`` as its arguments."""
    if command == "train":
        from gensim_jax.experiments.cli import main as run
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
    p_info.add_argument("--distributed", action="store_true",
                        help="call jax.distributed.initialize() first (multi-host jobs)")
    p_info.set_defaults(fn=_info)
    for command, what in FORWARDED.items():  # listed for --help; main() forwards them before parsing
        p = sub.add_parser(command, help=f"= python -m {command} {what.split(',')[0]} [options] "
                                         f"(`gensim-jax {command} --help` for the list)")
        p.add_argument("name", help=what)
        p.add_argument("rest", nargs=argparse.REMAINDER, help=f"options passed on to python -m {command}")
    args = parser.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
