"""Train an experiment: ``gensim-jax train EXPERIMENT [--config NAME] [--workdir DIR] [options]``.

In a checkout ``python -m train`` is the same command.  EXPERIMENT is a module of
:mod:`gensim_jax.experiments` or the path of a ``.py`` file that defines ``EXPERIMENT``.  Options:
``--set KEY=VALUE ...`` (any field of the experiment's Config by its dotted name: ``num_steps``,
``optim.learning_rate``, ``data.image_size``, ``objectives.simclr.temperature``, ...; values are JSON,
so lists are ``[16,8]``, strings need no quotes and ``null``, ``None`` or ``~`` is null; docs/EXPERIMENTS.md,
"Configs and --set"), ``--objective NAME`` (repeatable or a comma
list; sets ``arms``), ``--model NAME`` (sets ``model.name``), ``--print-config`` (print the resolved
config and exit), ``--resume`` (continue the run whose checkpoints are in the workdir).
Without ``--config`` the experiment's default (``paper``) is chosen, except on a machine without an
accelerator (JAX's backend is the CPU) when the experiment has smaller configs: there the paper run
(days of CPU) must be named, ``--config paper``, and the error says its size and the configs to try.
Multi-process runs: ``--coordinator HOST:PORT --num-processes P --process-id I``, or nothing on a
SLURM / TPU-pod / Open MPI cluster, whose environment ``jax.distributed`` reads.  Every argument is
checked before anything is built or compiled; a bad one is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Optional

from gensim_jax import experiments as registry
from gensim_jax.commands.overrides import parse_overrides
from gensim_jax.config import ConfigError, coerce, config_differences, describe_type, field_paths

HELP_FLAGS = ("-h", "--help")
PROG = "gensim-jax train"


def config_lines(experiment, indent: str = "    ") -> list:
    """One line per config of ``experiment``: its name and its note (``Experiment.NOTES``), the default marked."""
    width = max(map(len, experiment.CONFIGS), default=0)
    default = experiment.default_config()
    return [
        f"{indent}{name:<{width}}  {experiment.NOTES.get(name, '')}{' (default)' if name == default else ''}".rstrip()
        for name in experiment.CONFIGS
    ]


def experiments_epilog(available: dict, with_configs: bool = False) -> str:
    lines = ["experiments (gensim_jax/experiments/; or the path of a .py file that defines EXPERIMENT):"]
    width = max((len(n) for n in available), default=0)
    for name, path in available.items():
        lines.append(f"  {name:<{width}}  {registry.summary(path)}")
        if with_configs:  # imports the declarations (--help only)
            try:
                lines += config_lines(registry.load(name))
            except Exception as err:  # noqa: BLE001 - a broken declaration still gets listed
                lines.append(f"    [cannot be loaded: {type(err).__name__}: {err}]")
    lines.append(f"\n`{PROG} EXPERIMENT --help` lists that experiment's configs and config fields.")
    return "\n".join(lines)


def _fields_epilog(experiment, config_name: Optional[str] = None) -> str:
    """The configs and the (dotted) fields of ``experiment`` with the values of ``config_name`` (default: the default config)."""
    from gensim_jax.config import flatten

    types_ = field_paths(experiment.Config)
    name = config_name if config_name in experiment.CONFIGS else experiment.default_config()
    values = flatten(experiment.CONFIGS[name]) if name in experiment.CONFIGS else {}
    base = flatten(experiment.Config())
    lines = [
        f"{experiment.name} configs (--config NAME):",
        *config_lines(experiment, indent="  "),
        "",
        f"{experiment.name} config fields (--set KEY=VALUE) with the values of --config {name}"
        " (* differs from the base Config):",
    ]
    width = max(len(k) for k in types_)
    for key, tp in types_.items():
        value = values.get(key, base.get(key))
        mark = "*" if value != base.get(key) else " "
        lines.append(f" {mark}{key:<{width}}  {describe_type(tp)} = {value!r}")
    return "\n".join(lines)


def print_config(experiment, config_name: str, config) -> None:
    """``--print-config``: the resolved config (after ``--set``) as JSON, one field a line, on stdout."""
    from gensim_jax.jsonable import to_jsonable

    print(
        json.dumps(
            {"experiment": experiment.name, "config": config_name, **to_jsonable(dataclasses.asdict(config))}, indent=1
        )
    )


def build_parser(epilog: str) -> argparse.ArgumentParser:
    """The argument parser of ``gensim-jax train``."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__.split("\n\n")[0].replace("``", ""),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("experiment", metavar="EXPERIMENT", help="an experiment name or the path of a .py file")
    parser.add_argument("--config", default=None, help="config variant (default: paper, else the first)")
    parser.add_argument("--workdir", default=None, help="output directory (default: runs/EXPERIMENT-CONFIG)")
    parser.add_argument(
        "--set",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="override config fields (JSON values: 3, 1e-4, true, null (or None, ~), [16,8], text)",
    )
    parser.add_argument(
        "--objective",
        action="append",
        default=[],
        metavar="NAME",
        help="train these objectives (repeat, or a comma list; sets the config's `arms`)",
    )
    parser.add_argument("--model", default=None, metavar="NAME", help="encoder name (sets the config's `model.name`)")
    parser.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config (after --config, --set, --objective, --model) as JSON and exit",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bars or status lines: only warnings, errors and the closing summary",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run whose checkpoints are in the workdir (required when there are any)",
    )
    parser.add_argument(
        "--profile-steps",
        default=None,
        metavar="START:END",
        help="write a jax.profiler trace of these steps of every run (TensorBoard's profile tab)",
    )
    parser.add_argument(
        "--peak-tflops",
        type=float,
        default=None,
        metavar="T",
        help="one device's peak TFLOP/s for the model FLOP utilisation (default: the chip table's "
        "bf16 peak of the device, when it is a listed TPU or GPU)",
    )
    dist = parser.add_argument_group("multi-process runs (default: read the SLURM / TPU / Open MPI environment)")
    dist.add_argument("--coordinator", default=None, metavar="HOST:PORT", help="address of process 0's coordinator")
    dist.add_argument("--num-processes", type=int, default=None, metavar="P", help="number of processes")
    dist.add_argument("--process-id", type=int, default=None, metavar="I", help="this process's index in [0, P)")
    dist.add_argument(
        "--init-timeout",
        type=int,
        default=300,
        metavar="S",
        help="seconds to wait for every process to join (default 300)",
    )
    dist.add_argument(
        "--heartbeat-timeout",
        type=int,
        default=None,
        metavar="S",
        help="seconds after which a silent process counts as dead and the others stop (JAX: 100)",
    )
    return parser


def _objectives(args, experiment, types_: dict) -> tuple:
    names = [n.strip() for item in args.objective for n in item.split(",") if n.strip()]
    if not names:
        raise ConfigError("--objective needs at least one name")
    if "arms" not in types_:
        raise ConfigError(f"--objective does not apply to {experiment.name} (its Config has no `arms` field)")
    if experiment.OBJECTIVES:
        bad = [n for n in names if n not in experiment.OBJECTIVES]
        if bad:
            raise ConfigError(
                f"--objective: unknown objective(s) {', '.join(map(repr, bad))} for {experiment.name}; "
                f"known: {', '.join(experiment.OBJECTIVES)}"
            )
    if len(set(names)) != len(names):
        raise ConfigError(f"--objective: a name is given twice in {names}")
    return coerce("arms", names, types_["arms"])


def _model(args, experiment, types_: dict):
    if "model.name" not in types_:
        raise ConfigError(f"--model does not apply to {experiment.name} (its Config has no `model.name` field)")
    known = experiment.MODELS
    if known is None:
        default = experiment.Config().model.name
        from gensim_jax.models import list_models

        registered = list_models()
        known = registered if default in registered else None  # the field names registered encoders
    if known is not None and args.model not in known:
        raise ConfigError(f"--model: unknown model {args.model!r} for {experiment.name}; known: {', '.join(known)}")
    return coerce("model.name", args.model, types_["model.name"])


def resolve_config(args, experiment):
    """The experiment's config from the parsed arguments; :class:`ConfigError`/``ValueError`` on any problem."""
    if args.config not in experiment.CONFIGS:
        raise ConfigError(
            f"unknown config {args.config!r} for {experiment.name}; known: {', '.join(experiment.CONFIGS)}"
        )
    types_ = field_paths(experiment.Config)
    overrides = parse_overrides(experiment.Config, args.set, experiment=experiment.name)
    for flag, key, value in (("--objective", "arms", args.objective), ("--model", "model.name", args.model)):
        if value and key in overrides:
            raise ConfigError(f"{key} is given by both {flag} and --set")
    if args.objective:
        overrides["arms"] = _objectives(args, experiment, types_)
    if args.model is not None:
        overrides["model.name"] = _model(args, experiment, types_)
    return experiment.get_config(args.config, **overrides)


def find_checkpoints(workdir) -> list:
    """``[(checkpoint directory, [steps])]`` of every ``checkpoints/`` folder under ``workdir`` that holds a step.

    A step is a sub-directory named by an integer (orbax's finished checkpoints; a save that a killed
    process left unfinished is a ``<step>.orbax-checkpoint-tmp`` directory and does not count).
    """
    root = Path(workdir)
    if not root.is_dir():
        return []
    found = []
    for ck in sorted(p for p in root.rglob("checkpoints") if p.is_dir()):
        steps = sorted(int(c.name) for c in ck.iterdir() if c.is_dir() and c.name.isdigit())
        if steps:
            found.append((ck, steps))
    return found


def check_workdir(workdir: Path, resume: bool) -> list:
    """The checkpoints in ``workdir``; :class:`ConfigError` when there are some and ``resume`` is False."""
    found = find_checkpoints(workdir)
    if found and not resume:
        listing = "; ".join(f"{ck.relative_to(workdir)}: step {steps[-1]}" for ck, steps in found[:4])
        more = f" and {len(found) - 4} more" if len(found) > 4 else ""
        raise ConfigError(
            f"workdir {workdir} already holds checkpoints of a run ({listing}{more}); pass --resume "
            "to continue that run, or choose a new --workdir (or delete this one) to start over"
        )
    return found


def _warn_config_changes(workdir: Path, config) -> None:
    path = workdir / "config.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return
    saved = record.get("config") if isinstance(record.get("config"), dict) else record
    saved = {k: v for k, v in saved.items() if k != "experiment"}
    diffs = config_differences(saved, dataclasses.asdict(config))
    if diffs:
        changes = "; ".join(f"{k}: {json.dumps(a)} -> {json.dumps(b)}" for k, a, b in diffs)
        print(f"warning: --resume with a config that differs from {path}: {changes}", file=sys.stderr)


#: Configs offered instead of ``paper`` on a machine without an accelerator, when the experiment has them.
SMALL_CONFIGS = ("cpu_small", "demo")


def check_default_on_cpu(experiment, config_name: str, named: bool, config, backend: str) -> None:
    """:class:`ConfigError` when ``paper`` was chosen by default (``named`` False) on a machine without an
    accelerator (``backend == "cpu"``) and the experiment has another config: one line with the run's size,
    ``--config paper`` to run it anyway, and the small configs to try."""
    others = [c for c in experiment.CONFIGS if c != "paper"]
    if named or config_name != "paper" or backend != "cpu" or not others:
        return
    from gensim_jax.training.runner import describe_size

    small = [c for c in SMALL_CONFIGS if c in others] or others
    raise ConfigError(
        f"no --config given, and the default of {experiment.name}, paper, is {describe_size(experiment, config)}: "
        f"a run for GPUs/TPUs, and this machine has none (JAX's backend is cpu); try "
        f"{' or '.join(f'--config {c}' for c in small)}, or name --config paper to run it here anyway"
    )


def _initialize_distributed(args) -> None:
    explicit = [args.coordinator, args.num_processes, args.process_id]
    if any(v is not None for v in explicit) and not all(v is not None for v in explicit):
        raise ConfigError(
            "--coordinator, --num-processes and --process-id go together (or none, to read the cluster's environment)"
        )
    if args.num_processes is not None and not 0 <= args.process_id < args.num_processes:
        raise ConfigError(f"--process-id must lie in [0, {args.num_processes}), got {args.process_id}")
    from gensim_jax import parallel

    parallel.initialize_distributed(
        args.coordinator,
        args.num_processes,
        args.process_id,
        initialization_timeout=args.init_timeout,
        heartbeat_timeout_seconds=args.heartbeat_timeout,
    )


def _peak_flops(peak_tflops):
    """FLOP/s of one device for the MFU: the flag, else the chip table's bf16 peak of this device (None on a CPU)."""
    if peak_tflops is not None:
        return peak_tflops * 1e12
    import jax

    from gensim_jax.planning.chips import chip_for_device_kind

    chip = chip_for_device_kind(jax.devices()[0].device_kind)
    return chip.peak_bf16_flops if chip else None


def main(argv=None) -> int:
    """Entry point of ``gensim-jax train`` / ``python -m train``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    available = registry.available()
    asks_help = any(a in HELP_FLAGS for a in argv)
    epilog = experiments_epilog(available, with_configs=asks_help)
    parser = build_parser(epilog)
    if asks_help:
        chosen = next((a for a in argv if a in available or a.endswith(".py")), None)
        if chosen is not None:
            try:
                experiment = registry.load(chosen)
            except ValueError as err:
                parser.error(str(err))
            config_name = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--config"), None)
            config_name = config_name or next((a.split("=", 1)[1] for a in argv if a.startswith("--config=")), None)
            parser.epilog = _fields_epilog(experiment, config_name) + "\n\n" + epilog
    args = parser.parse_args(argv)
    try:
        experiment = registry.load(args.experiment)
        named = args.config is not None
        if args.config is None:
            args.config = experiment.default_config()
        workdir = Path(args.workdir or f"runs/{experiment.name}-{args.config}")
        config = resolve_config(args, experiment)
        if args.print_config:
            print_config(experiment, args.config, config)
            return 0
        found = check_workdir(workdir, args.resume)
        from gensim_jax.parallel import cpu_only_without_accelerators

        cpu_only_without_accelerators()  # no TPU start-up noise on a machine without one
        _initialize_distributed(args)
        from gensim_jax.training import runner

        runner.make_run_mesh(config)  # the mesh and the global batch against the devices, before any build
        from gensim_jax.training.profiling import ProfileWindow

        ProfileWindow.parse(args.profile_steps, workdir)  # checks START:END
        if args.peak_tflops is not None and not args.peak_tflops > 0:
            raise ConfigError(f"--peak-tflops must be positive, got {args.peak_tflops}")
        import jax

        check_default_on_cpu(experiment, args.config, named, config, jax.default_backend())
    except (ValueError, TypeError) as err:
        parser.error(str(err))

    is_main = jax.process_index() == 0
    if args.resume and is_main:
        if found:
            steps = ", ".join(f"{ck.relative_to(workdir)} at step {s[-1]}" for ck, s in found[:4])
            print(f"resuming {workdir}: {steps}", file=sys.stderr)
            _warn_config_changes(workdir, config)
        else:  # `make demo` passes --resume on a fresh clone too: continue if interrupted, else start
            why = "no such directory" if not workdir.exists() else "no checkpoint in it"
            print(f"--resume: nothing to resume in {workdir} ({why}); starting a new run there", file=sys.stderr)
    try:
        results = runner.train_and_evaluate(
            experiment,
            config,
            workdir,
            progress=not args.quiet,
            profile_steps=args.profile_steps,
            peak_flops_per_s=_peak_flops(args.peak_tflops),
        )
    except ValueError as err:  # a data or config problem found while building (missing dataset, bad batch size)
        from gensim_jax.commands.errors import debugging, error_line

        if debugging():
            raise
        line, status = error_line(f"{PROG} {experiment.name}", err)  # names a fork's file and line
        print(line, file=sys.stderr)
        return status
    if is_main:
        print_summary(experiment.format_table(results), results, Path(workdir))
    return 0


#: Lines of the experiment's table that the closing summary prints; the whole table goes to a file.
SUMMARY_LINES = 15


def headline(table: str, max_lines: int = SUMMARY_LINES) -> tuple:
    """``(lines, complete)``: the first Markdown table of ``table`` (with the lines before it), at most
    ``max_lines`` lines, and whether that is the whole of ``table``."""
    lines = table.strip("\n").splitlines()
    out, in_table = [], False
    for line in lines:
        is_row = line.lstrip().startswith("|")
        if in_table and not is_row:
            break
        in_table = in_table or is_row
        out.append(line)
        if len(out) == max_lines:
            break
    return out, len(out) == len(lines)


def print_summary(table: str, results: dict, workdir: Path) -> None:
    """The run's closing lines: the headline table (the whole table is written to ``workdir/results.md``
    when it is longer), the training time and the files written."""
    lines, complete = headline(table)
    path = workdir / "results.md"
    if not complete:
        path.write_text(table.rstrip("\n") + "\n")
    print()
    print("\n".join(lines))
    if not complete:
        print(f"... the whole table ({len(table.strip().splitlines())} lines): {path}")
    seconds = results.get("train_seconds")
    trained = f"trained in {seconds:.1f} s; " if isinstance(seconds, (int, float)) else ""
    outputs = sorted(str(p) for p in workdir.glob("*") if p.suffix in (".json", ".png", ".md"))
    print(f"\n{trained}wrote " + (", ".join(outputs) if outputs else str(workdir)))


if __name__ == "__main__":
    sys.exit(main())
