"""The ``gensim-jax`` console command (a thin front end).

``gensim-jax --version``              the gensim-jax version, its git commit (in a checkout) and the library versions
``gensim-jax list-models``            registered encoders (``gensim_jax.models.list_models``)
``gensim-jax info``                   JAX backend, processes and devices (after multi-host set-up)
``gensim-jax train EXPERIMENT ...``   train an experiment (:mod:`gensim_jax.experiments.cli`; in a checkout
                                      ``python -m train`` is the same); ``gensim-jax train --help`` lists them
``gensim-jax plan EXPERIMENT ...``    compile its step for a TPU / GPU topology: memory, FLOPs, step time
``gensim-jax eval PROTOCOL ...``      evaluate exports (:mod:`gensim_jax.evaluation.cli`; = ``python -m eval``)
``gensim-jax runs compare DIR...``    final metrics of several runs as a table, loss curves as a PNG

Everything after ``train``/``eval``/``plan`` (``--help`` included) goes to that command unchanged, so
they work from an installed wheel, outside any checkout.

Errors: every command runs under :func:`run_command`, so an error a user can cause (a missing
extra, a missing or damaged export, checkpoint or data directory, a bad config value, an unreadable
file) ends as ONE line on stderr, ``COMMAND: error: WHAT (FIX)``, with exit status 2 (1 for an
internal error, which also says how to get the traceback).  ``--debug`` anywhere on the command
line, or ``GENSIM_JAX_DEBUG=1``, shows the traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Callable, Optional, Sequence

__all__ = ["main", "run_command", "error_line", "DEBUG_ENV"]

#: Environment variable that makes every command show tracebacks (as ``--debug`` does).
DEBUG_ENV = "GENSIM_JAX_DEBUG"

#: Top-level modules of the optional dependencies -> the extra that installs them (for an ImportError
#: raised by a library rather than by :func:`gensim_jax._extras.require`).
_EXTRA_OF_MODULE = {
    "flax": "models",
    "optax": "train",
    "orbax": "train",
    "tqdm": "train",
    "tensorboardX": "train",
    "tensorflow": "data",
    "tensorflow_datasets": "data",
    "sklearn": "eval",
    "matplotlib": "eval",
    "PIL": "eval",
    "torch": "torch",
    "safetensors": "torch",
    "nltk": "wordnet",
}


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def error_line(prog: str, err: BaseException) -> tuple[str, int]:
    """``(message, exit status)`` for an exception that ended the command ``prog`` (see the module docstring)."""
    if isinstance(err, ImportError):
        name = (getattr(err, "name", None) or "").split(".")[0]
        msg = str(err)
        if "comes with pip install" not in msg and name in _EXTRA_OF_MODULE:
            msg = f"{name} is not installed; it comes with pip install 'gensim-jax[{_EXTRA_OF_MODULE[name]}]'"
        return f"{prog}: error: {_one_line(msg)}", 2
    if isinstance(err, OSError) and not str(err).startswith(("[Errno", "Errno")) and str(err):
        return f"{prog}: error: {_one_line(err)}", 2
    if isinstance(err, OSError):  # e.g. [Errno 13] Permission denied: 'x': name the file and the reason
        what = err.filename if err.filename is not None else ""
        reason = err.strerror or type(err).__name__
        return f"{prog}: error: {what}{': ' if what else ''}{reason}", 2
    if isinstance(err, SyntaxError):  # an experiment file given by path
        where = ":".join(str(x) for x in (err.filename, err.lineno) if x is not None)
        return f"{prog}: error: {where}: {err.msg} (a syntax error in that file)", 2
    # the package's own error classes (CheckpointRestoreError, ...) are raised on purpose, with a message
    own = type(err).__module__.startswith("gensim_jax.")
    if own or isinstance(err, (ValueError, TypeError, KeyError, LookupError)):
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        return f"{prog}: error: {_one_line(msg)}", 2
    how = f"--debug or {DEBUG_ENV}=1"
    return (
        f"{prog}: internal error: {type(err).__name__}: {_one_line(err)} (run again with {how} for the traceback)",
        1,
    )


@contextlib.contextmanager
def _one_line_usage_errors():
    """Make argparse's errors one line (``PROG: error: MESSAGE (see PROG --help)``) instead of usage + error."""

    def error(self, message):  # noqa: ANN001 - argparse's signature
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")

    original = argparse.ArgumentParser.error
    argparse.ArgumentParser.error = error
    try:
        yield
    finally:
        argparse.ArgumentParser.error = original


def run_command(
    fn: Callable[[list], Optional[int]], argv: Sequence[str], prog: str, *, debug: Optional[bool] = None
) -> int:
    """Run ``fn(argv)`` as the command ``prog``; any exception ends as one line on stderr and a non-zero status.

    ``--debug`` in ``argv`` (removed before ``fn`` sees it) or ``GENSIM_JAX_DEBUG=1`` lets the
    exception propagate with its traceback.  ``SystemExit`` (argparse, ``--help``) passes through,
    argparse's errors shortened to one line; Ctrl-C is exit status 130 with one line.
    """
    argv = list(argv)
    if debug is None:
        debug = "--debug" in argv or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    argv = [a for a in argv if a != "--debug"]
    with _one_line_usage_errors():
        try:
            return int(fn(argv) or 0)
        except SystemExit:
            raise
        except KeyboardInterrupt:
            if debug:
                raise
            print(f"{prog}: interrupted", file=sys.stderr, flush=True)
            return 130
        except Exception as err:  # noqa: BLE001 - the point: no traceback for the user
            if debug:
                raise
            line, status = error_line(prog, err)
            print(line, file=sys.stderr, flush=True)
            return status


def report_plan(
    run: Callable, experiment: str, config, *, arm, overrides: Sequence[str], as_json: bool, chips: bool = False
) -> int:
    """Run ``run(out)`` (a ``gensim-jax plan`` report written to ``out``) and say what was planned.

    The report gains the arm that was compiled, the ``--set`` overrides as given and the resolved
    config: JSON fields ``arm``, ``overrides`` and ``resolved_config`` (``config`` stays the config's
    name); in text, a line before the report and the config's fields after it.
    """
    import dataclasses
    import io

    from gensim_jax.jsonable import to_jsonable

    buf = io.StringIO()
    status = run(buf)
    text = buf.getvalue()
    if status != 0 or chips:
        sys.stdout.write(text)
        return status
    resolved = to_jsonable(dataclasses.asdict(config) if dataclasses.is_dataclass(config) else dict(config))
    overrides = list(overrides)
    if as_json:
        report = json.loads(text)
        report.update(arm=arm, overrides=overrides, resolved_config=resolved)
        print(json.dumps(report))
        return status
    print(f"planned {experiment}, arm {arm}; --set overrides: {' '.join(overrides) if overrides else 'none'}")
    sys.stdout.write(text)
    print("\nresolved config:")
    from gensim_jax.training.config import flatten

    fields = flatten(resolved)  # dotted names through the sections, as --set takes them
    width = max((len(k) for k in fields), default=0)
    for key, value in fields.items():
        print(f"  {key:<{width}}  {json.dumps(value)}")
    return status


def _prepare_process() -> None:
    """Settings of a command-line process: native stdout to stderr (Gloo), quieter TensorFlow, one-line warnings."""
    import warnings

    from gensim_jax._quiet import native_stdout_to_stderr, quiet_libtpu_env

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    quiet_libtpu_env()  # no libtpu start-up errors on a machine without TPUs (before JAX is imported)
    native_stdout_to_stderr()
    # a warning is one line, "warning: MESSAGE", not the file, line and source of the warn() call
    warnings.formatwarning = lambda message, category, *args, **kwargs: f"warning: {_one_line(message)}\n"


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
                f"--distributed: jax.distributed.initialize() found no cluster to join ({_one_line(err)}); run it "
                "inside a SLURM, TPU-pod or Open MPI job, or leave --distributed out"
            ) from err
    print(json.dumps(parallel.device_summary(), indent=2))
    return 0


def _runs_compare(args) -> int:
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
    "prepare-imagenet": "one-time records of ImageNet resized to a load size (docs/PERFORMANCE.md, JPEG input)",
    "score": "the human-alignment report card of any vision encoder (oddball, hierarchy, Geoclidean, odd-one-out)",
}


def _prepare_imagenet(argv: list, prog: str) -> int:
    """``gensim-jax prepare-imagenet``: :func:`gensim_jax.data.prepared.prepare_records` from the command line."""
    from gensim_jax.data import prepared

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Write tfds imagenet2012 resized to a fixed load size as TFRecords (once; see "
        "gensim_jax.data.prepared).",
    )
    parser.add_argument("--data-dir", required=True, help="tfds data directory holding the prepared imagenet2012")
    parser.add_argument("--out", required=True, help="output directory of the records")
    parser.add_argument("--split", default="train", help="tfds split (default: train)")
    parser.add_argument("--load-size", type=int, default=256, help="side of the stored square images (default 256)")
    parser.add_argument("--format", choices=prepared.FORMATS, default="jpeg", help="jpeg (re-encoded) or raw uint8")
    parser.add_argument("--quality", type=int, default=90, help="JPEG quality (default 90)")
    parser.add_argument("--examples-per-file", type=int, default=10_000)
    parser.add_argument("--max-examples", type=int, help="stop after this many examples")
    args = parser.parse_args(argv)
    entry = prepared.prepare_records(
        args.data_dir,
        args.out,
        split=args.split,
        load_size=args.load_size,
        fmt=args.format,
        quality=args.quality,
        examples_per_file=args.examples_per_file,
        max_examples=args.max_examples,
    )
    gb = entry["imagenet_train_bytes"] / 1e9
    print(
        f"{entry['examples']} images, {entry['bytes_per_image'] / 1e3:.1f} kB each "
        f"({gb:.1f} GB for ImageNet-1k's {prepared.IMAGENET_TRAIN_IMAGES:,} training images) in {args.out}"
    )
    return 0


def _forward(command: str, rest: Sequence[str], prog: Optional[str] = None) -> int:
    """Run the ``train``, ``plan`` or ``eval`` command of the package with ``rest`` as its arguments."""
    from gensim_jax.provenance import set_command

    prog = prog or f"gensim-jax {command}"
    set_command(prog, [a for a in rest if a != "--debug"], sub=command)
    error_prog = prog
    if command == "eval" and rest and not rest[0].startswith("-"):
        from gensim_jax.evaluation.cli import PROTOCOLS

        if rest[0] in PROTOCOLS:
            error_prog = f"{prog} {rest[0]}"  # errors name the protocol as typed

    def run(argv: list) -> int:
        if command == "train":
            from gensim_jax.experiments import cli as train_cli

            train_cli.PROG = prog  # help, usage and errors name the command as typed
            fn = train_cli.main
        elif command == "plan":
            from gensim_jax.experiments.cli import plan_main as fn
        elif command == "prepare-imagenet":
            fn = lambda a: _prepare_imagenet(a, prog)  # noqa: E731
        elif command == "score":
            from gensim_jax.evaluation.score_cli import main as fn
        else:
            from gensim_jax.evaluation.cli import main as fn
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
    if argv and argv[0] in FORWARDED:  # all of the rest, --help included, is for the command
        return _forward(argv[0], argv[1:])
    debug = "--debug" in argv or os.environ.get(DEBUG_ENV, "") not in ("", "0")
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
    p_cmp.set_defaults(fn=_runs_compare)
    for command, what in FORWARDED.items():  # listed for --help; main() forwards them before parsing
        p = sub.add_parser(
            command,
            help=f"{_FORWARDED_HELP[command]}; `gensim-jax {command} --help` lists its options",
        )
        p.add_argument("name", help=what)
        p.add_argument("rest", nargs=argparse.REMAINDER, help=f"options of gensim-jax {command}")
    args = parser.parse_args(argv)
    if args.version:
        return _version(args)
    if args.command is None:
        parser.error("a command is required: list-models, info, train, plan, eval or runs")
    prog = " ".join(["gensim-jax", args.command] + ([args.runs_command] if args.command == "runs" else []))
    return run_command(lambda _: args.fn(args), [], prog, debug=debug)


if __name__ == "__main__":
    sys.exit(main())
