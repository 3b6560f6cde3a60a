"""Train an experiment: ``python -m train EXPERIMENT [--config NAME] [--workdir DIR] [options]``.

Options: ``--set KEY=VALUE ...`` (any field of the experiment's Config; values are JSON, so lists
are ``[16,8]`` and strings need no quotes), ``--objective NAME`` (repeatable or a comma list; sets
``objectives``), ``--model NAME`` (sets ``model``), ``--resume`` (continue the run whose
checkpoints are in the workdir), ``--benchmark-dir DIR`` (geoclidean).  Every argument is checked
against the experiment's Config before anything is built or compiled.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from pathlib import Path

from train._config import (
    REQUIRED,
    ConfigError,
    coerce,
    config_differences,
    describe_type,
    discover_experiments,
    field_types,
    find_checkpoints,
    parse_overrides,
)

HELP_FLAGS = ("-h", "--help")


def _experiments_epilog(experiments: dict) -> str:
    lines = ["experiments (modules of train/ with " + ", ".join(REQUIRED) + "):"]
    width = max((len(n) for n in experiments), default=0)
    for exp in experiments.values():
        configs = f" [configs: {', '.join(exp.configs)}]" if exp.configs else ""
        lines.append(f"  {exp.name:<{width}}  {exp.summary}{configs}")
    lines.append("\n`python -m train EXPERIMENT --help` lists that experiment's config fields.")
    return "\n".join(lines)


def _fields_epilog(name: str, module) -> str:
    types_ = field_types(module.Config)
    defaults = {f.name: f.default for f in dataclasses.fields(module.Config)}
    lines = [f"{name} config fields (--set KEY=VALUE; defaults of the base Config):"]
    width = max(len(k) for k in types_)
    for key, tp in types_.items():
        lines.append(f"  {key:<{width}}  {describe_type(tp)} = {defaults[key]!r}")
    configs = getattr(module, "CONFIGS", None)
    if isinstance(configs, dict):
        lines.append(f"\nconfigs (--config): {', '.join(configs)}")
    return "\n".join(lines)


def _default_config(module) -> str:
    configs = getattr(module, "CONFIGS", None)
    if isinstance(configs, dict) and configs and "paper" not in configs:
        return next(iter(configs))
    return "paper"


def build_parser(experiments: dict, epilog: str) -> argparse.ArgumentParser:
    """The argument parser of ``python -m train`` for the discovered ``experiments``."""
    parser = argparse.ArgumentParser(prog="python -m train", description=__doc__.split("\n\n")[0].replace("``", ""),
                                     epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment", choices=sorted(experiments), metavar="EXPERIMENT",
                        help="one of: " + ", ".join(sorted(experiments)))
    parser.add_argument("--config", default=None, help="config variant (default: paper)")
    parser.add_argument("--workdir", default=None, help="output directory (default: runs/EXPERIMENT-CONFIG)")
    parser.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                        help="override config fields (JSON values: 3, 1e-4, true, null, [16,8], text)")
    parser.add_argument("--objective", action="append", default=[], metavar="NAME",
                        help="train these objectives (repeat, or a comma list; sets the config's `objectives`)")
    parser.add_argument("--model", default=None, metavar="NAME", help="encoder name (sets the config's `model`)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run whose checkpoints are in the workdir (required when there are any)")
    parser.add_argument("--benchmark-dir", default=None,
                        help="official Geoclidean benchmark directory, also evaluated (geoclidean only)")
    return parser


def _objectives(args, module, types_: dict, name: str) -> tuple:
    names = [n.strip() for item in args.objective for n in item.split(",") if n.strip()]
    if not names:
        raise ConfigError("--objective needs at least one name")
    if "objectives" not in types_:
        raise ConfigError(f"--objective does not apply to {name} (its Config has no `objectives` field)")
    known = getattr(module, "OBJECTIVES", None)
    if known is not None:
        bad = [n for n in names if n not in known]
        if bad:
            raise ConfigError(f"--objective: unknown objective(s) {', '.join(map(repr, bad))} for {name}; "
                              f"known: {', '.join(known)}")
    if len(set(names)) != len(names):
        raise ConfigError(f"--objective: a name is given twice in {names}")
    return coerce("objectives", names, types_["objectives"])


def _model(args, module, types_: dict, name: str):
    if "model" not in types_:
        raise ConfigError(f"--model does not apply to {name} (its Config has no `model` field)")
    known = getattr(module, "MODELS", None)
    if known is None:
        default = next(f.default for f in dataclasses.fields(module.Config) if f.name == "model")
        from gensim_jax.models import list_models

        registry = list_models()
        known = registry if default in registry else None  # the field names registered encoders
    if known is not None and args.model not in known:
        raise ConfigError(f"--model: unknown model {args.model!r} for {name}; known: {', '.join(known)}")
    return coerce("model", args.model, types_["model"])


def resolve_config(args, module, name: str):
    """The experiment's config from the parsed arguments; :class:`ConfigError`/``ValueError`` on any problem."""
    missing = [a for a in REQUIRED if not hasattr(module, a)]
    if missing:
        raise ConfigError(f"train/{name}.py is not a complete experiment: it lacks {', '.join(missing)}")
    configs = getattr(module, "CONFIGS", None)
    if isinstance(configs, dict) and args.config not in configs:
        raise ConfigError(f"unknown config {args.config!r} for {name}; known: {', '.join(configs)}")
    types_ = field_types(module.Config)
    overrides = parse_overrides(module.Config, args.set, experiment=name)
    for flag, key, value in (("--objective", "objectives", args.objective), ("--model", "model", args.model),
                             ("--benchmark-dir", "benchmark_dir", args.benchmark_dir)):
        if value and key in overrides:
            raise ConfigError(f"{key} is given by both {flag} and --set")
    if args.objective:
        overrides["objectives"] = _objectives(args, module, types_, name)
    if args.model is not None:
        overrides["model"] = _model(args, module, types_, name)
    if args.benchmark_dir is not None:
        if "benchmark_dir" not in types_:
            raise ConfigError(f"--benchmark-dir does not apply to {name}")
        overrides["benchmark_dir"] = args.benchmark_dir
    return module.get_config(args.config, **overrides)


def check_workdir(workdir: Path, resume: bool) -> list:
    """The checkpoints in ``workdir``; :class:`ConfigError` when there are some and ``resume`` is False."""
    found = find_checkpoints(workdir)
    if found and not resume:
        listing = "; ".join(f"{ck.relative_to(workdir)}: step {steps[-1]}" for ck, steps in found[:4])
        more = f" and {len(found) - 4} more" if len(found) > 4 else ""
        raise ConfigError(f"workdir {workdir} already holds checkpoints of a run ({listing}{more}); pass --resume "
                          "to continue that run, or choose a new --workdir (or delete this one) to start over")
    return found


def _warn_config_changes(workdir: Path, config) -> None:
    path = workdir / "config.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return
    saved = record.get("config") if isinstance(record.get("config"), dict) else record
    diffs = config_differences(saved, dataclasses.asdict(config))
    if diffs:
        changes = "; ".join(f"{k}: {json.dumps(a)} -> {json.dumps(b)}" for k, a, b in diffs)
        print(f"warning: --resume with a config that differs from {path}: {changes}", file=sys.stderr)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    experiments = discover_experiments()
    if not experiments:
        print("python -m train: no experiment modules found in train/", file=sys.stderr)
        return 2
    epilog = _experiments_epilog(experiments)
    if any(a in HELP_FLAGS for a in argv):
        chosen = next((a for a in argv if a in experiments), None)
        if chosen is not None:
            epilog = _fields_epilog(chosen, importlib.import_module(f"train.{chosen}")) + "\n\n" + epilog
    parser = build_parser(experiments, epilog)
    args = parser.parse_args(argv)

    name = args.experiment
    module = importlib.import_module(f"train.{name}")
    if args.config is None:
        args.config = _default_config(module)
    workdir = Path(args.workdir or f"runs/{name}-{args.config}")
    try:
        config = resolve_config(args, module, name)
        found = check_workdir(workdir, args.resume)
    except (ValueError, TypeError) as err:
        parser.error(str(err))
    if args.resume:
        if found:
            steps = ", ".join(f"{ck.relative_to(workdir)} at step {s[-1]}" for ck, s in found[:4])
            print(f"resuming {workdir}: {steps}", file=sys.stderr)
            _warn_config_changes(workdir, config)
        else:
            print(f"--resume: no checkpoint in {workdir}; starting a new run", file=sys.stderr)
    results = module.train_and_evaluate(config, workdir)
    print()
    print(module.format_table(results))
    seconds = results.get("train_seconds") if isinstance(results, dict) else None
    trained = f"trained in {seconds:.1f} s; " if isinstance(seconds, (int, float)) else ""
    outputs = sorted(str(p) for p in Path(workdir).glob("*") if p.suffix in (".json", ".png"))
    print(f"\n{trained}wrote " + (", ".join(outputs) if outputs else str(workdir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
