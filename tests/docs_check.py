"""Docs that run, part 2: how a command of the docs is checked with the product's own parsers (the
console script's and each module's argparse parser, stopped right after parsing) and sorted
(:func:`product_args`, :func:`check_command`, :func:`is_quick`); tests/test_docs.py says what each
kind of command must pass.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fnmatch
import importlib.util
import io
import json
import re
import runpy
import sys
from pathlib import Path
from typing import Optional

import tomllib

from tests.docs_extract import (
    ALL_COMMANDS,
    EXTERNAL,
    GPU_TOPOLOGY,
    PLACEHOLDER,
    ROOT,
    Command,
    split_commands,
    strip_wrappers,
)

# ---------------------------------------------------------------------------------------------
# the product's parsers, stopped after parsing


class _Parsed(BaseException):  # not an Exception: the CLI's error handler must let it through
    def __init__(self, parser, namespace):
        super().__init__("parsed")
        self.parser, self.namespace = parser, namespace


@contextlib.contextmanager
def _stop_after_parsing(usage: bool):
    """``ArgumentParser.parse_args`` parses (unless ``usage``) and raises :class:`_Parsed` with the parser."""
    original = argparse.ArgumentParser.parse_args

    def parse_args(self, args=None, namespace=None):
        if usage:
            raise _Parsed(self, None)
        raise _Parsed(self, original(self, args, namespace))

    argparse.ArgumentParser.parse_args = parse_args
    try:
        yield
    finally:
        argparse.ArgumentParser.parse_args = original


@contextlib.contextmanager
def _captured():
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


@contextlib.contextmanager
def _cli_state():
    """Run the CLI in-process without leaving its globals (command name, train PROG) changed."""
    from gensim_jax import provenance
    from gensim_jax.commands import train as train_cli

    saved = (json.dumps(provenance._COMMAND), train_cli.PROG)
    try:
        yield
    finally:
        state, train_cli.PROG = saved
        provenance._COMMAND.clear()
        provenance._COMMAND.update(json.loads(state))


def run_cli(args: list[str]) -> tuple[int, str, str]:
    """``gensim-jax ARGS`` in this process: ``(status, stdout, stderr)``."""
    from gensim_jax.commands import main as cli

    with _cli_state(), _captured() as (out, err):
        try:
            status = cli.main(args)
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return status, out.getvalue(), err.getvalue()


def parse_with_cli(args: list[str], usage: bool = False):
    """The parser (and namespace) the CLI builds for ``gensim-jax ARGS``; AssertionError on a parse error."""
    from gensim_jax.commands import main as cli

    with _cli_state(), _captured() as (_, err), _stop_after_parsing(usage):
        try:
            cli.main(args)
        except _Parsed as p:
            return p.parser, p.namespace
        except SystemExit as e:
            raise AssertionError(f"gensim-jax {' '.join(args)}: {err.getvalue().strip()} (exit {e.code})") from None
    raise AssertionError(f"gensim-jax {' '.join(args)} did not parse its arguments")


def parse_with_script(target: str, args: list[str], *, module: bool, usage: bool = False):
    """The parser of ``python -m TARGET ARGS`` / ``python TARGET ARGS``, run until it has parsed."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [target, *args]
    sys.path.insert(0, str(ROOT if module else (ROOT / target).parent))
    try:
        with _captured() as (_, err), _stop_after_parsing(usage):
            try:
                if module:
                    runpy.run_module(target, run_name="__main__", alter_sys=False)
                else:
                    runpy.run_path(str(ROOT / target), run_name="__main__")
            except _Parsed as p:
                return p.parser, p.namespace
            except SystemExit as e:
                raise AssertionError(f"{target} {' '.join(args)}: {err.getvalue().strip()} (exit {e.code})") from None
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    raise AssertionError(f"{target} parses no arguments (no argparse parser ran)")


def option_strings(parser) -> set:
    return set(parser._option_string_actions)


# ---------------------------------------------------------------------------------------------
# classification


def product_args(argv: tuple) -> Optional[tuple[str, list[str]]]:
    """``("cli", args)`` for the gensim-jax command, ``("module", [mod, *args])``, ``("script", ...)``,
    ``("code", [code])``, ``("make", args)``, ``("external", argv)``; None for an unknown program."""
    prog, rest = argv[0], list(argv[1:])
    name = prog.rsplit("/", 1)[-1]
    if name == "gensim-jax":
        return "cli", rest
    if name in ("python", "python3"):
        while rest[:1] and rest[0] in ("-X", "-W"):  # interpreter options
            rest = rest[2:]
        if not rest:
            return "external", list(argv)  # the interpreter itself (`python -X importtime`)
        if rest[:2] in (["-m", "train"], ["-m", "eval"]):
            assert (ROOT / rest[1] / "__main__.py").is_file(), f"python -m {rest[1]}: no {rest[1]}/__main__.py"
            return "cli", [rest[1], *rest[2:]]
        if rest[:2] == ["-m", "gensim_jax.commands"]:
            return "cli", rest[2:]
        if rest[:1] == ["-m"]:
            return "module", rest[1:]
        if rest[:1] == ["-c"]:
            return "code", rest[1:2]
        if rest and rest[0].endswith(".py"):
            return "script", rest
        return None
    if name == "make":
        return "make", rest
    if name in EXTERNAL:
        return "external", list(argv)
    return None


def is_usage(args: list[str]) -> bool:
    """A usage line: optional parts in brackets, ``...``, alternatives or an ALL-CAPS positional."""
    return any(
        ("=" not in a and (a.startswith("[") or a.endswith("]")))  # [--workdir DIR]; not arms=["simclr"]
        or "..." in a
        or a == "|"
        or (PLACEHOLDER.match(a) and (i == 0 or args[i - 1] not in ("--workdir", "--out", "--export", "--set")))
        for i, a in enumerate(args)
    )


def _without_placeholders(args: list[str], config_fields: dict) -> list[str]:
    """``args`` with placeholder values dropped: ``--set key=S`` checks ``key`` and drops it, ``--workdir DIR`` goes."""
    out, i, in_set = [], 0, False
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            in_set = a == "--set"
            if i + 1 < len(args) and PLACEHOLDER.match(args[i + 1]) and a in ("--workdir", "--out", "--export"):
                i += 2
                continue
        elif in_set and "=" in a:
            key, value = a.split("=", 1)
            if PLACEHOLDER.match(value):
                assert key in config_fields, f"--set {key}=...: {key} is not a config field"
                i += 1
                continue
        out.append(a)
        i += 1
    if out and out[-1] == "--set":
        out.pop()
    return [a for j, a in enumerate(out) if not (a == "--set" and (j + 1 == len(out) or out[j + 1].startswith("-")))]


def _experiment_fields(name: str) -> dict:
    from gensim_jax import experiments as registry
    from gensim_jax.config import field_paths

    return field_paths(registry.load(name).Config)


def _all_config_fields() -> set:
    from gensim_jax import experiments as registry
    from gensim_jax.config import flatten

    names: set = set()
    for name in registry.available():
        exp = registry.load(name)
        for config in exp.CONFIGS.values():
            names.update(flatten(dataclasses.asdict(config)))
    return names


def new_experiment_files() -> dict[str, str]:
    """``{NAME.py: kernel}`` of the files that the docs' ``gensim-jax new-experiment NAME [--kernel K]`` write."""
    from gensim_jax.commands.new_experiment import DEFAULT_KERNEL

    out = {}
    for c in ALL_COMMANDS:
        kind = product_args(c.argv)
        args = kind[1] if kind and kind[0] == "cli" else []
        if args[:1] == ["new-experiment"] and len(args) > 1 and not is_usage(args[1:]):
            out[f"{args[1]}.py"] = args[args.index("--kernel") + 1] if "--kernel" in args else DEFAULT_KERNEL
    return out


def check_train_or_plan(cmd: Command, args: list[str]) -> None:
    sub, rest = args[0], args[1:]
    if any(a in ("-h", "--help") for a in rest):
        return  # run by test_quick_commands_run
    if not rest or rest[0].startswith("-") or is_usage(rest):  # the command named, or a usage line
        parser, _ = parse_with_cli([sub], usage=True)
        for a in rest:
            if a.startswith("-"):
                assert a.split("=")[0] in option_strings(parser), f"{cmd.where}: {sub} has no option {a}"
        return
    experiment = rest[0]
    written = new_experiment_files()
    if experiment in written:  # a file the docs' `gensim-jax new-experiment` writes: written here, then checked
        import tempfile

        from gensim_jax.commands.new_experiment import write

        path = write(Path(experiment).stem, written[experiment], tempfile.mkdtemp(prefix="docs-new-experiment-"))
        rest = [str(path), *rest[1:]]
        fields = {}
    elif experiment.endswith(".py"):
        assert (ROOT / experiment).is_file() or experiment == "poisson_gamma.py", f"{cmd.where}: no {experiment}"
        if not (ROOT / experiment).is_file():
            return  # EXPERIMENTS.md's fork file: written and run by tests/training/test_experiments_doc.py
        rest = [str(ROOT / experiment), *rest[1:]]
        fields = {}
    else:
        from gensim_jax import experiments as registry

        assert experiment in registry.available(), f"{cmd.where}: no experiment {experiment!r}"
        fields = _experiment_fields(experiment)
    rest = _without_placeholders(rest, fields)
    if sub == "train":
        status, out, err = run_cli(["train", *rest, "--print-config"])
        assert status == 0, f"{cmd.where}: {cmd.source}\n{err.strip()}"
        printed = json.loads(out)
        assert printed["experiment"] == Path(experiment).stem
        if "--config" in rest:
            assert printed["config"] == rest[rest.index("--config") + 1]
        return
    status, out, err = run_cli(["plan", *rest, "--chips"])
    assert status == 0, f"{cmd.where}: {cmd.source}\n{err.strip()}"
    if "--topology" in rest:
        from gensim_jax.planning import parse_topology

        topology = rest[rest.index("--topology") + 1]
        parse_topology(topology)


def check_cli(cmd: Command, args: list[str]) -> None:
    if not args:  # the command named in prose
        parse_with_cli(["--help"], usage=True)
        return
    if args[0] in ("train", "plan"):
        check_train_or_plan(cmd, args)
    elif args[0] == "eval":
        if len(args) == 1 or args[1] in ("-h", "--help") or "--help" in args:
            return  # run by test_quick_commands_run
        from gensim_jax.commands.eval import PROTOCOLS

        if PLACEHOLDER.match(args[1]) or args[1].startswith("{") or args[1] == "...":
            return  # `python -m eval PROTOCOL ...`: the protocols are listed by --help, which runs
        assert args[1] in PROTOCOLS, f"{cmd.where}: no protocol {args[1]!r}; known: {', '.join(PROTOCOLS)}"
        usage = len(args) == 2 or is_usage(args[2:])  # `eval export` named, or a usage line
        parser, _ = parse_with_cli(list(args), usage=usage)
        if usage:
            for a in args[2:]:
                if a.startswith("-"):
                    assert a in option_strings(parser), f"{cmd.where}: eval {args[1]} has no option {a}"
    elif args[0] == "runs":
        if is_usage(args) or len(args) <= 2:  # `runs compare` named
            parse_with_cli(list(args[:1]) + ["compare", "DIR"])
            return
        _, ns = parse_with_cli(list(args))
        fields = _all_config_fields()
        for pattern in ns.config_fields:
            assert any(fnmatch.fnmatchcase(f, pattern) for f in fields), (
                f"{cmd.where}: --config-fields {pattern!r} matches no config field of any experiment "
                f"(fields are dotted: e.g. optim.learning_rate)"
            )
    elif args[0] in ("--version", "list-models", "info"):
        if args[0] == "info" and "--distributed" in args:
            parse_with_cli(list(args))
    elif args[0] in ("-h", "--help") or "--help" in args:
        return
    else:
        parser, _ = parse_with_cli(["--help"], usage=True)
        if not is_usage(args):
            parse_with_cli(list(args))


def makefile_targets() -> dict:
    """``target -> recipe lines`` (continuations joined) of the Makefile."""
    targets, current = {}, None
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    for line in text.split("\n"):
        m = re.match(r"^([A-Za-z][\w.-]*)\s*:(?!=)", line)
        if m:
            current = m.group(1)
            targets[current] = []
        elif line.startswith("\t") and current:
            targets[current].append(line.strip())
        elif line.strip() and not line.startswith("#"):
            current = None
    return targets


def check_make(cmd: Command, args: list[str]) -> None:
    text = (ROOT / "Makefile").read_text()
    targets = makefile_targets()
    for a in args:
        if "=" in a:
            var = a.split("=", 1)[0]
            assert f"$({var})" in text, f"{cmd.where}: make {a}: the Makefile does not use {var}"
        else:
            assert a in targets, f"{cmd.where}: make {a}: no such target; targets: {', '.join(targets)}"


def _find_module(name: str):
    sys.path.insert(0, str(ROOT))
    try:
        return importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return None
    finally:
        sys.path.remove(str(ROOT))


def check_module_or_script(cmd: Command, kind: str, args: list[str]) -> None:
    target, rest = args[0], args[1:]
    if kind == "module" and target == "pytest":  # not the product's: its plugins and test paths exist
        plugins = [rest[i + 1] for i, a in enumerate(rest[:-1]) if a == "-p"]
        for plugin in plugins:
            assert _find_module(plugin) is not None, f"{cmd.where}: no pytest plugin {plugin}"
        for a in rest:
            if a in ("tests", "gensim_jax") or (not a.startswith("-") and "/" in a):
                assert (ROOT / a.split("::")[0]).exists(), f"{cmd.where}: no test path {a}"
        return
    if kind == "module":
        spec = _find_module(target)
        assert spec is not None and spec.origin, f"{cmd.where}: no module {target}"
        source = Path(spec.origin).read_text()
    else:
        assert (ROOT / target).is_file(), f"{cmd.where}: no script {target}"
        source = (ROOT / target).read_text()
    if "argparse" not in source:  # no options to check, and running it would run it
        assert not rest, f"{cmd.where}: {target} takes no arguments (it has no argument parser), got {rest}"
        return
    usage = not rest or is_usage(rest)
    parser, _ = parse_with_script(target, rest, module=kind == "module", usage=usage)
    if usage:
        for a in rest:
            if a.startswith("-"):
                assert a in option_strings(parser), f"{cmd.where}: {target} has no option {a}"


def check_external(cmd: Command, argv: list[str]) -> None:
    if argv[0] == "gcloud" and any(a.startswith("--command=") for a in argv):
        inner = next(a for a in argv if a.startswith("--command="))[len("--command=") :]
        for _, _, words in split_commands(inner):
            check_command(dataclasses.replace(cmd, argv=tuple(strip_wrappers(words))))
    if argv[0] in ("pip", "pip3") and argv[1:2] == ["install"]:
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        for a in argv[2:]:  # gensim-jax[x], a checkout ./gensim-jax[x] or a wheel dist/gensim_jax-V-....whl[x]
            m = re.match(r"^(?:\S*/)?(?:gensim-jax|gensim_jax-\S+\.whl)(?:\[([^\]]*)\])?$", a)
            if m and m.group(1):
                for extra in m.group(1).split(","):
                    assert extra in extras, f"{cmd.where}: no extra {extra!r}; extras: {', '.join(extras)}"


def check_command(cmd: Command) -> None:
    kind = product_args(cmd.argv)
    assert kind is not None, f"{cmd.where}: {cmd.argv[0]!r} is neither a command of the product nor a known program"
    what, args = kind
    if what == "cli":
        check_cli(cmd, args)
    elif what == "make":
        check_make(cmd, args)
    elif what in ("module", "script"):
        check_module_or_script(cmd, what, args)
    elif what == "code":
        compile(args[0], cmd.where, "exec")
    else:
        check_external(cmd, args)
    # a GPU plan needs the CUDA compiler plug-in: the line that shows it (or the comment above it) says so
    if GPU_TOPOLOGY.search(cmd.source) and "plan" in cmd.source:
        assert "jax[cuda12]" in cmd.source + cmd.note, (
            f"{cmd.where}: planning for a GPU topology needs the CUDA compiler plug-in "
            "(gensim_jax.planning.topology imports jax_plugins.xla_cuda12); the line should say jax[cuda12]"
        )


def is_quick(cmd: Command) -> bool:
    kind = product_args(cmd.argv)
    if kind is None or kind[0] not in ("cli",):
        return False
    args = kind[1]
    if is_usage([a for a in args if a not in ("PROTOCOL", "EXPERIMENT")]):
        return False
    if "--distributed" in args:  # needs a cluster to join
        return False
    return args[:1] in (["--version"], ["list-models"], ["info"]) or any(a in ("-h", "--help") for a in args)
