"""``gensim-jax plan EXPERIMENT [--config NAME] [--set ...] [--objective ARM] --topology T``.

:func:`main` resolves ``EXPERIMENT --config NAME --set ...`` (as ``gensim-jax train`` does) into a
``build(global_batch, fsdp) -> StepBuild`` (the runner's step, the abstract state/batch/objective,
its shardings) and the config's global batch, then calls :func:`run_plan_command`, which compiles it
for the topology with :mod:`gensim_jax.planning` and prints the report; :func:`report_plan` adds the
arm, the overrides and the resolved config.  Errors are one line on stderr and exit status 2.

A plan talks and stops: :func:`announce` says on stderr what is compiled for which topology before
the compile starts, the compile runs under :func:`gensim_jax.commands.heartbeat.run_with_heartbeat`
(the elapsed time on stderr while XLA works), and Ctrl-C or SIGTERM ends it within a second with one
line and exit status 130 / 143 (:func:`gensim_jax.commands.heartbeat.interrupt_exits`; libtpu is
asked not to install its own signal handlers, :data:`NO_LIBTPU_SIGNAL_HANDLERS`).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from typing import Callable, Optional, Sequence, TextIO

from gensim_jax import experiments as registry
from gensim_jax.commands.heartbeat import interrupt_exits, run_with_heartbeat
from gensim_jax.commands.train import experiments_epilog, resolve_config
from gensim_jax.config import ConfigError
from gensim_jax.planning.cache import plan_cache_from_env
from gensim_jax.planning.chips import chip_table_markdown
from gensim_jax.planning.max_batch import max_global_batch
from gensim_jax.planning.plan import plan_step
from gensim_jax.planning.report import fmt_bytes
from gensim_jax.planning.topology import PlannerSetupError, has_compiler, parse_topology

__all__ = ["add_plan_arguments", "announce", "main", "report_plan", "run_plan_command"]

PROG = "gensim-jax plan"
#: Appended to ``LIBTPU_INIT_ARGS``: libtpu installs no failure-signal handlers of its own, so a
#: SIGTERM during a compile is handled by :func:`gensim_jax.commands.heartbeat.interrupt_exits` (one
#: line) instead of libtpu's abseil handler (``*** SIGTERM received ... stack trace``).
NO_LIBTPU_SIGNAL_HANDLERS = "--install_signal_handlers=false"


def _without_libtpu_signal_handlers() -> None:
    """Add :data:`NO_LIBTPU_SIGNAL_HANDLERS` to ``LIBTPU_INIT_ARGS`` (read when libtpu loads, before any compile)."""
    import os

    flags = os.environ.get("LIBTPU_INIT_ARGS", "")
    if "install_signal_handlers" not in flags:
        os.environ["LIBTPU_INIT_ARGS"] = f"{flags} {NO_LIBTPU_SIGNAL_HANDLERS}".strip()


def announce(args, experiment: str, arm: str, global_batch: int, err: Optional[TextIO] = None) -> Optional[str]:
    """Print what ``plan`` compiles, for which topology, on ``err``; returns the heartbeat's label.

    ``None`` (and nothing printed) for ``--chips``, a missing topology, one that does not parse, one
    whose compiler is not installed, or a batch or FSDP axis that its devices do not divide:
    :func:`run_plan_command` then stops at once with its one-line error, and that line is all of stderr.
    """
    if args.chips or not args.topology:
        return None
    try:
        topo = parse_topology(args.topology)
    except ValueError:
        return None
    n = topo.num_devices
    if not has_compiler(topo) or (not args.max_batch and (global_batch % n or args.fsdp < 1 or n % args.fsdp)):
        return None
    unit = "chips" if topo.chip.kind == "tpu" else "GPUs"
    what = f"{experiment} --config {args.config} (arm {arm})"
    where = f"{topo.name} ({topo.num_devices} {unit}"
    if args.max_batch:
        line = f"searching the largest global batch of {what} on {where}; one compile per trial)"
    else:
        fsdp = f", fsdp axis {args.fsdp}" if args.fsdp > 1 else ""
        line = f"compiling {what} for {where}, global batch {global_batch:,}{fsdp})"
    print(f"{PROG}: {line} ...", file=err or sys.stderr, flush=True)
    return f"{PROG}: {'searching' if args.max_batch else 'compiling'}"


def add_plan_arguments(parser) -> None:
    """Add the ``plan`` options to an ``argparse`` (sub)parser."""
    parser.add_argument("--topology", default=None, help="target, e.g. v5e:16x16, v4:2x2x2, h100:8x8 (hosts x GPUs)")
    parser.add_argument("--batch-size", type=int, default=None, help="global batch (default: the config's)")
    parser.add_argument("--fsdp", type=int, default=1, help="size of the FSDP mesh axis (1: parameters replicated)")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument(
        "--max-batch",
        action="store_true",
        help="bisect over compiles for the largest global batch that fits, with and without FSDP",
    )
    parser.add_argument("--chips", action="store_true", help="print the chip table with the source of every figure")
    parser.add_argument(
        "--cache-dir",
        default=None,
        metavar="DIR",
        help="where compiles are kept for reuse (default: $GENSIM_JAX_PLAN_CACHE, else "
        "$XDG_CACHE_HOME/gensim-jax/plans or ~/.cache/gensim-jax/plans)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="compile even when an identical plan was compiled before, and keep nothing "
        "(GENSIM_JAX_PLAN_CACHE=off does the same)",
    )


def run_plan_command(
    build: Callable,
    global_batch: int,
    *,
    topology: Optional[str],
    fsdp: int = 1,
    as_json: bool = False,
    max_batch: bool = False,
    chips: bool = False,
    experiment: str = "",
    config: str = "",
    out: Optional[TextIO] = None,
    err: Optional[TextIO] = None,
    cache=None,
) -> int:
    """Plan ``build(global_batch, fsdp)`` on ``topology`` and print the report; returns the exit status.

    Bad input (unknown topology, a batch the device count does not divide, a missing compiler
    plugin) prints one line on ``err`` and returns 2.  With ``max_batch`` the report is the
    bisection's result without and with FSDP over all devices.  ``cache``: a
    :class:`~gensim_jax.planning.cache.PlanCache` (an identical program for the same target reuses its
    stored compile; the report says so), or None.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        if chips:
            print(chip_table_markdown(), file=out)
            return 0
        if not topology:
            raise ValueError("--topology is required, e.g. --topology v5e:4x4 or --topology h100:8x8 (hosts x GPUs)")
        topo = parse_topology(topology)
        if max_batch:
            res = {}
            for f in (1, topo.num_devices):
                res["fsdp" if f > 1 else "no_fsdp"] = max_global_batch(
                    build, topo, fsdp=f, start=global_batch, experiment=experiment, config=config, cache=cache
                )
            if as_json:
                print(
                    json.dumps(
                        {"topology": topo.name, "experiment": experiment, "config": config, **res}, default=float
                    ),
                    file=out,
                )
            else:
                for k, r in res.items():
                    what = " ".join(x for x in (experiment, config and f"--config {config}") if x)
                    print(
                        f"{topo.name} {what}, {k.replace('_', ' ')} (fsdp axis {r['fsdp']}): "
                        f"largest global batch that fits {r['max_global_batch']:,} ({r['per_device']:,} per device); "
                        f"{len(r['trials'])} compiles in {r['seconds']:.0f} s"
                        + (
                            f" ({sum(t['reused_compile'] for t in r['trials'])} reused from the cache)"
                            if any(t["reused_compile"] for t in r["trials"])
                            else ""
                        )
                        + ("; still fits at the search limit" if r["fits_at_limit"] else ""),
                        file=out,
                    )
                    for t in r["trials"]:
                        print(
                            f"  B={t['global_batch']:>9,}  {'fits' if t['fits'] else 'does not fit':<13} "
                            f"{fmt_bytes(t['memory_per_device_bytes'])} per device",
                            file=out,
                        )
            return 0
        sb = build(global_batch, fsdp)
        rep = plan_step(
            sb.fn,
            sb.args,
            topology=topo,
            shardings=sb.shardings,
            fsdp=fsdp,
            donate_argnums=sb.donate_argnums,
            experiment=experiment,
            config=config,
            cache=cache,
        )
        print(rep.to_json() if as_json else rep.to_text(), file=out)
        return 0
    except (ValueError, PlannerSetupError) as e:
        print(f"gensim-jax plan: {str(e).splitlines()[0]}", file=err)
        return 2


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
    from gensim_jax.config import flatten

    fields = flatten(resolved)  # dotted names through the sections, as --set takes them
    width = max((len(k) for k in fields), default=0)
    for key, value in fields.items():
        print(f"  {key:<{width}}  {json.dumps(value)}")
    return status


def main(argv=None) -> int:
    """Entry point of ``gensim-jax plan EXPERIMENT [--config NAME] [--set ...] [--objective ARM] --topology T``.

    Compiles the runner's own training step (:func:`gensim_jax.training.runner.abstract_step_inputs`)
    for a TPU or GPU topology without its hardware and prints the memory / FLOPs / collectives /
    roofline report (:mod:`gensim_jax.planning`).  Errors are one line on stderr and exit status 2.
    """
    from gensim_jax import planning

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="gensim-jax plan",
        description=main.__doc__.removeprefix("Entry point of ").split("\n\n")[0].replace("``", ""),
        epilog=experiments_epilog(registry.available()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("experiment", metavar="EXPERIMENT", help="an experiment name or the path of a .py file")
    parser.add_argument("--config", default=None, help="config variant (default: paper, else the first)")
    parser.add_argument(
        "--set",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="override config fields, as for train",
    )
    parser.add_argument("--objective", default=None, metavar="ARM", help="the arm to plan (default: the first)")
    add_plan_arguments(parser)
    args = parser.parse_args(argv)
    _without_libtpu_signal_handlers()
    stage = {"what": ""}  # the parenthesis of the line that a Ctrl-C prints
    with interrupt_exits(PROG, what=lambda: stage["what"]) as take_back:
        return _plan(args, planning, stage, take_back)


def _plan(args, planning, stage: dict, take_back: Callable[[], None]) -> int:
    """The body of :func:`main` after the flags: resolve the config, say what is compiled, compile, report."""
    try:
        experiment = registry.load(args.experiment)
        args.config = args.config or experiment.default_config()
        args.model = None
        arm = args.objective
        args.objective = []
        config = resolve_config(args, experiment)
        if arm is not None and arm not in experiment.arms(config):
            raise ConfigError(
                f"--objective {arm!r} is not an arm of this config; arms: "
                f"{', '.join(map(str, experiment.arms(config)))}"
            )
    except (ValueError, TypeError) as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    from gensim_jax.training import runner

    arm_name = arm if arm is not None else str(experiment.arms(config)[0])
    global_batch = args.batch_size or config.batch_size
    label = announce(args, experiment.name, arm_name, global_batch)

    def build(global_batch: int, fsdp: int):
        fn, inputs = runner.abstract_step_inputs(experiment, config, arm, global_batch)
        return planning.StepBuild(fn=fn, args=inputs)

    def run(out) -> int:
        errors = io.StringIO()  # printed after the progress line is gone
        plan = lambda: run_plan_command(  # noqa: E731
            build,
            global_batch,
            topology=args.topology,
            fsdp=args.fsdp,
            as_json=args.json,
            max_batch=args.max_batch,
            chips=args.chips,
            experiment=experiment.name,
            config=args.config,
            out=out,
            err=errors,
            cache=plan_cache_from_env(args.cache_dir, enabled=not args.no_cache),
        )
        if label is None:  # --chips, or a topology that run_plan_command rejects in one line
            status = plan()
            sys.stderr.write(errors.getvalue())
            return status
        stage["what"] = "the compile was cancelled"
        try:
            return run_with_heartbeat(plan, label, take_back=take_back)
        finally:
            stage["what"] = ""
            sys.stderr.write(errors.getvalue())

    return report_plan(
        run,
        experiment.name,
        config,
        arm=arm_name,
        overrides=args.set,
        as_json=args.json,
        chips=args.chips,
    )
