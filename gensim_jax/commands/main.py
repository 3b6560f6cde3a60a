"""The ``gensim-jax`` console command: the dispatcher of :mod:`gensim_jax.commands`.

===================================== ======================================================================
``gensim-jax --version``              the gensim-jax version, its git commit (in a checkout) and the library versions
``gensim-jax list-models``            registered encoders (``gensim_jax.models.list_models``)
``gensim-jax info``                   JAX backend, processes and devices (after multi-host set-up)
``gensim-jax train EXPERIMENT ...``   train an experiment (:mod:`gensim_jax.commands.train`; in a checkout
                                      ``python -m train`` is the same); ``gensim-jax train --help`` lists them
``gensim-jax plan EXPERIMENT ...``    compile its step for a TPU / GPU topology (:mod:`gensim_jax.commands.plan`)
``gensim-jax eval PROTOCOL ...``      evaluate exports (:mod:`gensim_jax.commands.eval`; = ``python -m eval``)
``gensim-jax score ...``              the human-alignment report card of an encoder (:mod:`gensim_jax.commands.score`)
``gensim-jax runs [DIR]``             the runs under DIR (default ./runs): steps, last loss, status, results
``gensim-jax runs compare DIR...``    final metrics of several runs as a table, loss curves as a PNG
``gensim-jax new-experiment NAME``    write NAME.py, a one-file experiment of your own that trains at once
                                      (:mod:`gensim_jax.commands.new_experiment`)
``gensim-jax prepare-imagenet ...``   one-time ImageNet records at a load size (:mod:`gensim_jax.commands.prepare_imagenet`)
===================================== ======================================================================

Everything after ``train``/``eval``/``plan``/``score``/``prepare-imagenet`` (``--help`` included) goes to that
command unchanged, so they work from an installed wheel, outside any checkout.  In a checkout
``python -m gensim_jax.commands ...`` is the same as ``gensim-jax ...``.

Errors: every command runs under :func:`gensim_jax.commands.errors.run_command`: an error a user can
cause is ONE line on stderr, ``COMMAND: error: WHAT (FIX)``, exit status 2 (1 for an internal error);
``--debug`` anywhere on the command line, or ``GENSIM_JAX_DEBUG=1``, shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Optional, Sequence

from gensim_jax.commands import new_experiment
from gensim_jax.commands import runs as runs_command
from gensim_jax.commands.errors import debugging, one_line, run_command

__all__ = ["main", "module_main", "FORWARDED"]


def _prepare_process() -> None:
    """Settings of a command-line process: native stdout to stderr (Gloo), quieter TensorFlow, one-line warnings."""
    import warnings

    from gensim_jax._quiet import native_stdout_to_stderr, quiet_libtpu_env
    from gensim_jax.deprecation import GensimJaxDeprecationWarning

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    quiet_libtpu_env()  # no libtpu start-up errors on a machine without TPUs (before JAX is imported)
    native_stdout_to_stderr()
    # a warning is one line, "warning: MESSAGE", not the file, line and source of the warn() call
    warnings.formatwarning = lambda message, category, *args, **kwargs: f"warning: {one_line(message)}\n"
    # the old spellings of the public surface (gensim_jax.deprecation) warn on the command line too
    warnings.filterwarnings("default", category=GensimJaxDeprecationWarning)


def module_main(sub: str, prog: str) -> int:
    """The entry point of ``python -m train`` / ``python -m eval`` (the checkout's shims): ``sub`` run as ``prog``."""
    _prepare_process()
    return _forward(sub, sys.argv[1:], prog=prog)


def _list_models(_args) -> int:
    from gensim_jax.models import list_models

    for name in list_models():
        print(name)
    return 0


def _info(args) -> int:
    from gensim_jax import parallel

    if args.distributed:
        try:
            parallel.initialize_distributed(force=True)
        except (ValueError, RuntimeError) as err:
            raise ValueError(
                f"--distributed: jax.distributed.initialize() found no cluster to join ({one_line(err)}); run it "
                "inside a SLURM, TPU-pod or Open MPI job, or leave --distributed out"
            ) from err
    summary = parallel.device_summary()
    if args.distributed:
        summary["all_reduce"] = _all_reduce()
    print(json.dumps(summary, indent=2))
    return 0 if not args.distributed or summary["all_reduce"]["ok"] else 1


def _all_reduce() -> dict:
    """A sum over every device of every process (each device holds its process index + 1): the collective
    that a multi-host job's first step runs, checked against its known value."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("devices",))
    local = np.full((jax.local_device_count(),), jax.process_index() + 1, np.float32)
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("devices")), local)
    total = float(jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(x))
    expected = float(sum(d.process_index + 1 for d in jax.devices()))
    return {"sum": total, "expected": expected, "ok": total == expected}


FORWARDED = {
    "train": "EXPERIMENT, e.g. geoclidean",
    "eval": "PROTOCOL, e.g. oddball",
    "plan": "EXPERIMENT, e.g. imagenet_hierarchy (with --topology v5e:16x16)",
    "prepare-imagenet": "--data-dir DIR --out DIR [--load-size 256] [--format jpeg|raw]",
    "score": "--model NAME, --export DIR, --embeddings FILE or stimuli",
}

#: What each forwarded command is, for ``gensim-jax --help``.
_FORWARDED_HELP = {
    "train": "train an experiment (in a checkout also: python -m train)",
    "eval": "evaluate exported encoders with a protocol (in a checkout also: python -m eval)",
    "plan": "compile an experiment's training step for a TPU / GPU topology: memory, FLOPs, step time",
    "prepare-imagenet": "one-time records of ImageNet resized to a load size (docs/performance_log.md, JPEG input)",
    "score": "the human-alignment report card of any vision encoder (oddball, hierarchy, Geoclidean, odd-one-out)",
}


def _forward(command: str, rest: Sequence[str], prog: Optional[str] = None) -> int:
    """Run the ``train``, ``plan`` or ``eval`` command of the package with ``rest`` as its arguments."""
    from gensim_jax.provenance import set_command

    prog = prog or f"gensim-jax {command}"
    set_command(prog, [a for a in rest if a != "--debug"], sub=command)
    error_prog = prog
    if command == "eval" and rest and not rest[0].startswith("-"):
        from gensim_jax.commands.eval import PROTOCOLS

        if rest[0] in PROTOCOLS:
            error_prog = f"{prog} {rest[0]}"  # errors name the protocol as typed

    def run(argv: list) -> int:
        if command == "train":
            from gensim_jax.commands import train as train_command

            train_command.PROG = prog  # help, usage and errors name the command as typed
            fn = train_command.main
        elif command == "plan":
            from gensim_jax.commands.plan import main as fn
        elif command == "prepare-imagenet":
            from gensim_jax.commands import prepare_imagenet

            fn = lambda a: prepare_imagenet.main(a, prog)  # noqa: E731
        elif command == "score":
            from gensim_jax.commands.score import main as fn
        else:
            from gensim_jax.commands.eval import main as fn
        return int(fn(argv) or 0)

    return run_command(run, rest, error_prog)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``gensim-jax`` command; returns the exit status.

    Called without ``argv`` (the console script) it also sends native code's stdout to stderr
    (:func:`gensim_jax._quiet.native_stdout_to_stderr`), so stdout holds only the command's output.
    """
    if argv is None:
        _prepare_process()
    argv = list(sys.argv[1:] if argv is None else argv)
    # --debug may come before the command (gensim-jax --debug train ...) as well as anywhere after it
    leading_debug = False
    while argv and argv[0] == "--debug":
        leading_debug = True
        argv = argv[1:]
    if argv and argv[0] in FORWARDED:  # all of the rest, --help included, is for the command
        return _forward(argv[0], argv[1:] + (["--debug"] if leading_debug else []))
    debug = leading_debug or "--debug" in argv or debugging()
    return run_command(lambda rest: _main(rest, debug), argv, "gensim-jax", debug=debug)


def _version(_args) -> int:
    from gensim_jax.provenance import version_text

    print(version_text())
    return 0


def _main(argv: list, debug: bool = False) -> int:
    from gensim_jax.provenance import set_command

    set_command("gensim-jax", argv)
    parser = argparse.ArgumentParser(
        prog="gensim-jax",
        description="GenSim in JAX: models, devices, training.",
        epilog="--debug (anywhere) or GENSIM_JAX_DEBUG=1: show the traceback of an error.",
    )
    parser.add_argument(
        "--version", action="store_true", help="print the gensim-jax version, its git commit and the library versions"
    )
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("list-models", help="list the registered encoders").set_defaults(fn=_list_models)
    p_info = sub.add_parser("info", help="print the JAX backend, processes and devices")
    p_info.add_argument(
        "--distributed",
        action="store_true",
        help="call jax.distributed.initialize() first (multi-host jobs) and check an all-reduce over every device",
    )
    p_info.set_defaults(fn=_info)
    runs_command.add_parser(sub)
    new_experiment.add_parser(sub)
    for command, what in FORWARDED.items():  # listed for --help; main() forwards them before parsing
        p = sub.add_parser(
            command,
            help=f"{_FORWARDED_HELP[command]}; `gensim-jax {command} --help` lists its options",
        )
        p.add_argument("name", help=what)
        p.add_argument("rest", nargs=argparse.REMAINDER, help=f"options of gensim-jax {command}")
    args = parser.parse_args(runs_command.route(argv))
    if args.version:
        return _version(args)
    if args.command is None:
        commands = list(sub.choices)
        parser.error(f"a command is required: {', '.join(commands[:-1])} or {commands[-1]}")
    prog = " ".join(
        ["gensim-jax", args.command]
        + ([args.runs_command] if args.command == "runs" and args.runs_command != "list" else [])
    )
    return run_command(lambda _: args.fn(args), [], prog, debug=debug)


if __name__ == "__main__":
    sys.exit(main())
