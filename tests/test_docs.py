"""Docs that run (issue 32, item 5): every command and Python block of README.md and docs/ runs, or is checked.

What is extracted, from README.md, docs/*.md, docs/api/*.md and docs/results/*.md:

* Python blocks (```python): each document's blocks run in order in one fresh interpreter and one
  namespace (a page's blocks build on each other, as in a notebook), with the document's line
  numbers in tracebacks and a timeout.  A block preceded by ``<!-- docs-test: skip REASON -->`` is
  not run; marks are for what cannot run here (an accelerator, a cluster, a downloaded checkpoint),
  and a mark without a reason fails :func:`test_every_mark_is_a_skip_with_a_reason`.  README's
  ``<!-- docs-test: install -->`` and ``<!-- docs-test: quickstart -->`` blocks are no skips: they run,
  as written, in a clean virtual environment (:data:`RUN_ELSEWHERE`); here their commands are checked
  like every other.
* Shell commands: ```bash/```sh/```shell/```console blocks, untagged blocks whose lines are commands
  (``$ `` lines of a transcript), and inline `spans` of prose that start with one of the product's
  commands (``gensim-jax``, ``python -m train``, ``make``, ...).  Continuation lines are joined,
  ``for`` loops take their first value, ``{a,b}`` is expanded as the shell does, comments dropped.

What is checked, with the product's own machinery, never a copy of it:

* ``gensim-jax train`` / ``python -m train``: the command as written with ``--print-config``
  appended, through :func:`gensim_jax.commands.main.main`; ``--print-config`` parses with the real parser and
  resolves ``--config`` and every ``--set`` (unknown keys, wrong types and ranges fail) and exits
  before anything is built or trained.  Placeholders (``--set seed=S``) keep their key checked.
* ``gensim-jax plan``: the same with ``--chips`` (parses, resolves the config and the arm, prints the
  chip table without compiling: a real plan takes minutes), the ``--topology`` through
  :func:`gensim_jax.planning.parse_topology`; a line that names a GPU topology must say that it
  needs ``jax[cuda12]`` (the CUDA compiler plug-in the planner imports for GPU targets).
* ``gensim-jax eval``, ``runs compare``, ``python scripts/X.py``, ``python -m bench.X``, ...: parsed by
  the command's own argparse parser (its ``parse_args`` stopped right after parsing); ``--config-fields``
  patterns must name fields of some experiment's config; usage lines (``EXPERIMENT``, ``[--x]``)
  only name options that exist.
* ``make TARGET``: the target (and any ``VAR=``) exists in the Makefile.  ``pip install
  'gensim-jax[x,y]'``: the extras exist in pyproject.toml.
* Quick commands (``--version``, ``--help``, ``list-models``, ``info``) run, as the console script.
* Paths under ``runs/demo`` anywhere in the docs must match what ``make demo`` writes: the demo's
  recipe is read from the Makefile and run with one step, one run and a few images in a scratch
  directory, then every such path is globbed there and the commands that read the demo's outputs
  (``runs compare``, ``eval export``, a transcript's error line) run on it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fnmatch
import glob
import importlib.util
import io
import json
import os
import re
import runpy
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = sorted(
    [ROOT / "README.md"]
    + list((ROOT / "docs").glob("*.md"))
    + list((ROOT / "docs" / "api").glob("*.md"))
    + list((ROOT / "docs" / "results").glob("*.md"))
)
SHELL_LANGS = {"bash", "sh", "shell", "console"}
MARK = re.compile(r"<!--\s*docs-test:(.*?)-->", re.S)
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
# the product's commands: the first word of a command that this test checks
OWN = re.compile(r"^(\S*/)?(gensim-jax|python3?|make)$")
# programs a command may name that are not the product's (their own projects document them)
EXTERNAL = {"tensorboard", "tfds", "gcloud", "wait", "export", "cd", "pip", "pip3", ".", "source"}
#: marks of blocks that another test runs as they are written (not skips, so they need no reason)
RUN_ELSEWHERE = {
    "install": "run by tests/test_packaging.py (clean venv)",
    "quickstart": "run by tests/test_packaging.py (clean venv)",
}
WRAPPERS = {"srun", "nohup", "env"}
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(\.[a-z]+)?$")  # EXPERIMENT, DIR, S, FILE.json
GPU_TOPOLOGY = re.compile(r"\b(a100|h100|h200):\d")
DEMO_PATH = re.compile(r"runs/demo(?:/[^\s`'\"),;]*)?(?=[\s`'\"),;]|\.\s|\.$|$)")


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# ---------------------------------------------------------------------------------------------
# extraction


@dataclasses.dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the first line of code
    lang: str
    text: str
    mark: Optional[str]  # the docs-test mark right before the fence, if any

    @property
    def where(self) -> str:
        return f"{rel(self.path)}:{self.line}"


@dataclasses.dataclass(frozen=True)
class Command:
    path: Path
    line: int
    source: str  # the line(s) as written, comment included
    argv: tuple  # words of one simple command after expansion, wrappers removed
    kind: str  # "block", "transcript" or "inline"
    output: tuple = ()  # a transcript's output lines after the command
    note: str = ""  # the comment lines right above the command in its block

    @property
    def where(self) -> str:
        return f"{rel(self.path)}:{self.line}"

    @property
    def id(self) -> str:
        return f"{rel(self.path)}:{self.line}:{' '.join(self.argv)[:60]}"


def fenced_blocks(path: Path) -> list[Block]:
    lines = path.read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mark = MARK.search(lines[k]) if k >= 0 else None
        text = textwrap.dedent("\n".join(lines[i + 1 : j]))
        out.append(Block(path, i + 2, m.group(2), text, mark.group(1).strip() if mark else None))
        i = j + 1
    return out


def _first_word(line: str) -> str:
    words = line.split()
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]  # environment assignments
    return words[0] if words else ""


def _is_command_line(line: str) -> bool:
    word = _first_word(line)
    return bool(OWN.match(word)) or word in EXTERNAL or word in {"for", "timeout"} | WRAPPERS


def _brace_expand(word: str) -> list[str]:
    m = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if not m:
        return [word]
    return [x for alt in m.group(1).split(",") for x in _brace_expand(word[: m.start()] + alt + word[m.end() :])]


def _balanced(line: str) -> bool:
    try:
        shlex.split(line, comments=True)
    except ValueError:
        return False
    return True


def split_commands(text: str) -> list[tuple[int, str, list[str]]]:
    """``(line offset, source, words)`` of every simple command in shell ``text``.

    Joins ``\\`` continuations and ``for ... do ... done`` loops (the loop variable takes its first
    value), drops comments and redirections, splits at ``;``, ``&&``, ``||``, ``&`` and ``|``.
    """
    raw = text.split("\n")
    logical: list[tuple[int, str]] = []
    i = 0
    while i < len(raw):
        start, line = i, raw[i]
        while line.rstrip().endswith("\\") and i + 1 < len(raw):
            i += 1
            line = line.rstrip()[:-1] + " " + raw[i].strip()
        while not _balanced(line) and i + 1 < len(raw):  # a quoted argument over several lines
            i += 1
            line = line.rstrip().removesuffix("\\") + " " + raw[i].strip()
        if re.match(r"^\s*for\s", line) and not re.search(r"\bdone\b", line):
            while i + 1 < len(raw) and not re.search(r"\bdone\b", line):
                i += 1
                nxt = raw[i]
                while nxt.rstrip().endswith("\\") and i + 1 < len(raw):
                    i += 1
                    nxt = nxt.rstrip()[:-1] + " " + raw[i].strip()
                line = line.rstrip() + " ; " + nxt.strip()
        logical.append((start, line))
        i += 1
    out = []
    for offset, line in logical:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        line = re.sub(r"^\s*[A-Za-z_]\w*=\$\((.*)\)\s*$", r"\1", line)  # VAR=$(command): the command
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
        lex.whitespace_split = True
        lex.commenters = "#"
        try:
            tokens = list(lex)
        except ValueError as err:
            raise AssertionError(f"cannot split {line!r}: {err}") from None
        variables: dict = {}
        words: list[str] = []
        skip_next = False
        commands = []
        for tok in tokens + [";"]:
            if skip_next:
                skip_next = False
                continue
            if tok in (";", "&&", "||", "&", "|", ";;"):
                if words:
                    commands.append(words)
                words = []
                continue
            if tok in (">", ">>", "<", "2>", "&>"):
                skip_next = True
                continue
            if words == [] and tok in ("do", "done", "then", "fi"):
                continue
            words.append(tok)
        for words in commands:
            if words[0] == "for" and len(words) >= 4 and words[2] == "in":
                variables[words[1]] = words[3]
                continue
            expanded = []
            for w in words:
                for name, value in variables.items():
                    w = w.replace("$" + name, value)
                expanded.extend(_brace_expand(w))
            if expanded:
                out.append((offset, line.strip(), expanded))
    return out


def strip_wrappers(words: list[str]) -> list[str]:
    """The command without environment assignments, ``timeout N``, ``srun`` and the like."""
    words = list(words)
    while words:
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words.pop(0)
        elif words[0] == "timeout" and len(words) > 1:
            words = words[2:]
        elif words[0] in WRAPPERS:
            words.pop(0)
        else:
            break
    return words


def _comments_above(lines: list[str], offset: int) -> str:
    above = []
    for line in reversed(lines[:offset]):
        if not line.strip().startswith("#"):
            break
        above.append(line)
    return "\n".join(reversed(above))


def _commands_of_shell_text(path: Path, first_line: int, text: str, kind: str) -> list[Command]:
    lines = text.split("\n")
    return [
        Command(
            path, first_line + offset, source, tuple(strip_wrappers(words)), kind, (), _comments_above(lines, offset)
        )
        for offset, source, words in split_commands(text)
        if strip_wrappers(words)
    ]


def doc_commands(path: Path) -> list[Command]:
    out: list[Command] = []
    blocks = fenced_blocks(path)
    for b in blocks:
        lines = b.text.split("\n")
        if b.lang in SHELL_LANGS or (b.lang == "" and any(line.startswith("$ ") for line in lines)):
            if any(line.startswith("$ ") for line in lines):  # a transcript: $ lines, then their output
                for n, line in enumerate(lines):
                    if line.startswith("$ "):
                        output = []
                        for nxt in lines[n + 1 :]:
                            if nxt.startswith("$ "):
                                break
                            output.append(nxt)
                        for c in _commands_of_shell_text(path, b.line + n, line[2:], "transcript"):
                            out.append(dataclasses.replace(c, output=tuple(output)))
            else:
                out.extend(_commands_of_shell_text(path, b.line, b.text, "block"))
        elif b.lang == "" and lines and _is_command_line(next((x for x in lines if x.strip()), "")):
            # an untagged block of commands; an indented line that is not a command continues a usage line
            joined: list[str] = []
            for line in lines:
                after_backslash = joined and joined[-1].rstrip().endswith("\\")
                if joined and not after_backslash and line[:1].isspace() and not _is_command_line(line):
                    joined[-1] += " " + line.strip()
                    joined.append("")  # keeps the line numbers
                else:
                    joined.append(line)
            out.extend(_commands_of_shell_text(path, b.line, "\n".join(joined), "block"))
    # inline spans of the prose (outside fences)
    fenced = set()
    for b in blocks:
        fenced.update(range(b.line - 1, b.line + b.text.count("\n") + 1))
    for n, line in enumerate(path.read_text().split("\n"), start=1):
        if n in fenced:
            continue
        for span in re.findall(r"`([^`]+)`", line):
            if OWN.match(span.split()[0]):
                found = _commands_of_shell_text(path, n, span, "inline")
                # `a | b | c` alternatives and `cmd ... && next-step` sketches: the first command is the real one
                out.extend(found[:1] if ("..." in span or " | " in span) else found)
    return out


ALL_BLOCKS = [b for p in DOC_FILES for b in fenced_blocks(p)]
ALL_COMMANDS = [c for p in DOC_FILES for c in doc_commands(p)]


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


# ---------------------------------------------------------------------------------------------
# tests: extraction and marks


def test_the_docs_have_commands_and_blocks_to_check():
    langs = {b.lang for b in ALL_BLOCKS}
    assert "python" in langs and "bash" in langs
    assert len([c for c in ALL_COMMANDS if c.kind == "inline"]) > 20
    assert any(c.argv[:2] == ("make", "demo") for c in ALL_COMMANDS)


def test_extraction_joins_continuations_expands_loops_and_braces():
    text = (
        "for s in 3 4; do python -m train quadrilaterals --set seed=$s --workdir runs/q-s$s & done; wait\n"
        "python scripts/quadrilaterals_curve.py runs/q-s{0,1} \\\n    --label a  # comment\n"
        "CUDA_VISIBLE_DEVICES=-1 timeout 30 gensim-jax plan x > out.txt\n"
    )
    got = [(off, words) for off, _, words in split_commands(text)]
    assert got == [
        (0, ["python", "-m", "train", "quadrilaterals", "--set", "seed=3", "--workdir", "runs/q-s3"]),
        (0, ["wait"]),
        (1, ["python", "scripts/quadrilaterals_curve.py", "runs/q-s0", "runs/q-s1", "--label", "a"]),
        (3, ["CUDA_VISIBLE_DEVICES=-1", "timeout", "30", "gensim-jax", "plan", "x"]),
    ]
    assert strip_wrappers(got[3][1]) == ["gensim-jax", "plan", "x"]


def test_the_parser_stop_catches_a_wrong_option():
    with pytest.raises(AssertionError, match="unrecognized arguments: --no-such-flag"):
        parse_with_cli(["runs", "compare", "runs/x", "--no-such-flag"])
    _, ns = parse_with_cli(["runs", "compare", "runs/x", "--config-fields", "optim.*"])
    assert ns.config_fields == ["optim.*"] and ns.dirs == ["runs/x"]


def test_a_set_key_that_is_no_field_fails_print_config():
    cmd = Command(ROOT / "README.md", 1, "", ("gensim-jax", "train", "gaussian_mixture", "--set", "nope=1"), "inline")
    with pytest.raises(AssertionError, match="nope"):
        check_command(cmd)


def test_pip_install_lines_name_existing_extras_of_a_checkout_or_a_wheel():
    for target in ("./gensim-jax[nope]", "dist/gensim_jax-0.1.0-py3-none-any.whl[train,nope]", "gensim-jax[nope]"):
        cmd = Command(ROOT / "README.md", 1, "", ("pip", "install", target), "block")
        with pytest.raises(AssertionError, match="no extra 'nope'"):
            check_command(cmd)
    check_command(Command(ROOT / "README.md", 1, "", ("pip", "install", "./gensim-jax[train]"), "block"))


def mark_problems(path: Path) -> list[str]:
    """What is wrong with the ``docs-test`` marks of ``path``: each must be ``skip REASON`` (or a mark of
    :data:`RUN_ELSEWHERE`, alone) right before a block."""
    problems, text = [], path.read_text()
    for m in MARK.finditer(text):
        where = f"{path.name}:{text[: m.start()].count(chr(10)) + 1}"
        words = m.group(1).split()
        if len(words) == 1 and words[0] in RUN_ELSEWHERE:
            pass
        elif words[:1] != ["skip"]:
            problems.append(f"{where}: a docs-test mark is `skip REASON`, got {m.group(0)!r}")
        elif len(words) < 4:
            problems.append(f"{where}: a skip mark must say why the block cannot run here: {m.group(0)!r}")
        after = text[m.end() :].lstrip("\n").split("\n", 1)[0]
        if not after.strip().startswith("```"):
            problems.append(f"{where}: the mark is not right before a block")
    return problems


def test_every_mark_is_a_skip_with_a_reason():
    assert [p for path in DOC_FILES for p in mark_problems(path)] == []
    assert any(b.mark for b in ALL_BLOCKS)  # the marks are found where they are


def test_a_mark_without_a_reason_or_block_is_an_error(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text(
        "<!-- docs-test: skip -->\n```python\n1/0\n```\n\n<!-- docs-test: skip needs a GPU here -->\ntext\n\n"
        "<!-- docs-test: ignore because it is long -->\n```python\n1/0\n```\n"
        "<!-- docs-test: skip needs a downloaded checkpoint -->\n```python\n1/0\n```\n"
        "<!-- docs-test: install -->\n```bash\npip install gensim-jax\n```\n"
        "<!-- docs-test: quickstart now -->\n```bash\ngensim-jax --version\n```\n"
    )
    problems = mark_problems(doc)
    assert [p.split(":", 2)[1] for p in problems] == ["1", "6", "9", "21"], problems
    assert "say why" in problems[0] and "not right before" in problems[1] and "skip REASON" in problems[2]
    assert [b.mark for b in fenced_blocks(doc)] == [
        "skip",
        "ignore because it is long",
        "skip needs a downloaded checkpoint",
        "install",
        "quickstart now",
    ]


def test_print_config_validates_without_building_anything(tmp_path):
    workdir = tmp_path / "w"
    status, out, err = run_cli(
        ["train", "quadrilaterals", "--config", "demo", "--workdir", str(workdir), "--print-config"]
    )
    assert status == 0 and json.loads(out)["num_steps"] > 1 and not workdir.exists()
    status, _, err = run_cli(
        ["train", "quadrilaterals", "--config", "demo", "--set", "optim.learning_rate=-1", "--print-config"]
    )
    assert status == 2 and "learning_rate" in err


# ---------------------------------------------------------------------------------------------
# tests: commands


@pytest.mark.parametrize("cmd", ALL_COMMANDS, ids=lambda c: c.id)
def test_command_is_valid(cmd, request):
    if any("../shared/" in a for a in cmd.argv):  # a command over the reference data needs it beside the clone
        request.getfixturevalue("shared_dir")
    check_command(cmd)


QUICK = [c for c in ALL_COMMANDS if is_quick(c)]


@pytest.mark.slow  # the first one imports the train command (flax, optax, orbax)
@pytest.mark.parametrize("cmd", QUICK, ids=lambda c: c.id)
def test_quick_commands_run(cmd):
    """``--help``, ``--version``, ``list-models``, ``info`` as the docs write them, run in this process
    (the console script itself runs in tests/test_packaging.py and tests/commands)."""
    _, args = product_args(cmd.argv)
    if args[:2] == ["eval", "PROTOCOL"] or args[:2] == ["train", "EXPERIMENT"]:  # a usage line: one of them
        from gensim_jax import experiments as registry
        from gensim_jax.commands.eval import PROTOCOLS

        args = [args[0], next(iter(PROTOCOLS if args[0] == "eval" else registry.available())), *args[2:]]
    status, out, err = run_cli(args)
    assert status == 0, f"{cmd.where}: {cmd.source}\n{err[-2000:]}"
    assert out.strip()
    if cmd.output and args == ["--version"]:
        assert out.split()[0] == cmd.output[0].split()[0] == "gensim-jax"


# ---------------------------------------------------------------------------------------------
# tests: Python blocks

#: pages whose Python blocks a test of their own runs, in order, and checks what they leave behind: not run
#: here a second time
RUN_BY_OWN_TEST = {"docs/ADD_A_GENERATIVE_MODEL.md": "tests/testing/test_add_a_generative_model_doc.py"}
# pages with a Python block to run (a page whose every block is marked has nothing to run)
PY_FILES = sorted(
    {b.path for b in ALL_BLOCKS if b.lang == "python" and not (b.mark or "").startswith("skip")}
    - {ROOT / page for page in RUN_BY_OWN_TEST}
)
# Every page's blocks run in one fresh interpreter (a page's imports cost ~3 s of CPU; twelve interpreters
# spent most of their time importing jax, flax and optax again), each page in a namespace and a working
# directory of its own, in order, as a reader would run them; a page that fails is reported with its
# traceback and the next page still runs.
DRIVER = """
import json, os, sys, traceback
pages = json.load(open(sys.argv[1]))
failed = {}
for page, workdir, blocks in pages:
    os.chdir(workdir)
    ns = {"__name__": "__main__"}
    for line, text in blocks:
        print(f"running {page}:{line}", file=sys.stderr, flush=True)
        try:
            exec(compile("\\n" * (line - 1) + text, page, "exec"), ns)
        except BaseException:
            failed[page] = f"{page}:{line}\\n" + traceback.format_exc()[-3000:]
            break
json.dump(failed, open(sys.argv[2], "w"))
"""


@pytest.mark.slow
def test_python_blocks_run(tmp_path):
    pages = []
    for n, path in enumerate(PY_FILES):
        workdir = tmp_path / f"{n:02d}-{path.stem}"
        workdir.mkdir()
        runnable = [
            b for b in ALL_BLOCKS if b.path == path and b.lang == "python" and not (b.mark or "").startswith("skip")
        ]
        pages.append([str(path), str(workdir), [[b.line, b.text] for b in runnable]])
    assert len(pages) >= 10 and all(blocks for _, _, blocks in pages)
    spec, report = tmp_path / "pages.json", tmp_path / "failed.json"
    spec.write_text(json.dumps(pages))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(spec), str(report)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0 and report.is_file(), done.stderr[-4000:]
    failed = json.loads(report.read_text())
    assert not failed, "Python blocks of the docs that fail:\n\n" + "\n\n".join(failed.values())


def test_a_page_run_by_its_own_test_is_read_by_that_test():
    for page, test in RUN_BY_OWN_TEST.items():
        assert any(b.path == ROOT / page and b.lang == "python" for b in ALL_BLOCKS), page
        source = (ROOT / test).read_text()
        assert Path(page).name in source and "exec(" in source, f"{test} does not run {page}"


def test_the_blocks_driver_reports_a_failing_page_and_runs_the_next(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    pages = [
        ["docs/A.md", str(a), [[3, "x = 1"], [7, "open('here.txt', 'w').write(str(x))\nraise ValueError('boom')"]]],
        ["docs/B.md", str(b), [[2, "assert 'x' not in globals()\nopen('here.txt', 'w').write('b')"]]],
    ]
    spec, report = tmp_path / "pages.json", tmp_path / "failed.json"
    spec.write_text(json.dumps(pages))
    subprocess.run([sys.executable, "-c", DRIVER, str(spec), str(report)], check=True, timeout=60)
    failed = json.loads(report.read_text())
    assert list(failed) == ["docs/A.md"] and failed["docs/A.md"].startswith("docs/A.md:7\n")
    assert "ValueError: boom" in failed["docs/A.md"] and 'File "docs/A.md", line 8' in failed["docs/A.md"]
    # each page ran in its own directory and namespace
    assert (a / "here.txt").read_text() == "1" and (b / "here.txt").read_text() == "b"


# ---------------------------------------------------------------------------------------------
# tests: paths of make demo's outputs

DEMO_SET = [
    "num_steps=1",
    "num_runs=1",
    "optim.warmup_steps=0",
    "data.num_train_images=32",
    "eval.trials_per_condition=1",
]


def demo_path_mentions() -> list[tuple[str, str]]:
    """``(where, pattern)`` of every ``runs/demo/...`` path the docs name (prose, commands, comments)."""
    out = []
    for path in DOC_FILES:
        for n, line in enumerate(path.read_text().split("\n"), start=1):
            for m in DEMO_PATH.finditer(line):
                for p in _brace_expand(m.group(0).rstrip(".")):
                    out.append((f"{rel(path)}:{n}", p))
    return out


def run_demo_recipe(workdir: Path) -> list[list[str]]:
    """``make demo``'s recipe, as ``make -n`` expands it with this interpreter as ``PY``, run in ``workdir``
    with one step, one run and a few images (a line that is not a Python command runs in bash as it is)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    expanded = subprocess.run(
        ["make", "-s", "-n", "demo", f"PY={sys.executable}"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert expanded.returncode == 0, expanded.stderr
    ran = []
    for line in expanded.stdout.replace("\\\n", " ").splitlines():
        words = shlex.split(line)
        line_env = dict(env)
        while words and "=" in words[0] and not words[0].startswith("-"):  # VAR=value before the command
            name, value = words.pop(0).split("=", 1)
            line_env[name] = value
        if not words:
            continue
        if words[0] != sys.executable:
            words = ["bash", "-c", line]
        words = [str(ROOT / w) if w.endswith(".py") and (ROOT / w).is_file() else w for w in words]
        if words[1:3] == ["-m", "train"] or words[1:4] == ["-m", "gensim_jax.commands", "train"]:
            words += ["--set", *DEMO_SET]
        done = subprocess.run(words, cwd=workdir, env=line_env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"make demo's {line!r} with {DEMO_SET}: {done.stderr[-3000:]}"
        ran.append(words)
    return ran


@pytest.mark.slow
def test_demo_paths_match_what_make_demo_writes(tmp_path):
    ran = run_demo_recipe(tmp_path)
    assert len(ran) >= 2
    for where, pattern in demo_path_mentions():
        assert glob.glob(str(tmp_path / pattern)), (
            f"{where}: {pattern} matches nothing make demo writes; it writes "
            + ", ".join(sorted(rel_p for rel_p in _tree(tmp_path, depth=4)))
        )
    # the commands that read the demo's outputs run on them
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    script = Path(sys.executable).with_name("gensim-jax")
    cli = [str(script)] if script.exists() else [sys.executable, "-m", "gensim_jax.commands"]
    checked = 0
    for cmd in ALL_COMMANDS:
        if not any("runs/demo/" in a for a in cmd.argv) or is_usage(list(cmd.argv[1:])):
            continue
        kind, args = product_args(cmd.argv)
        if kind == "cli" and args[0] == "runs" or (kind == "cli" and args[0] == "eval"):
            expanded = [x for a in args for x in (sorted(glob.glob(str(tmp_path / a))) or [a])]
            argv = cli + [a.replace(str(tmp_path) + "/", "") for a in expanded]
        elif kind == "code":
            argv = [sys.executable, "-c", args[0]]
        else:
            continue
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        checked += 1
        if cmd.kind == "transcript" and cmd.output:
            shown = [line for line in cmd.output if line.strip()]
            got = (done.stdout + done.stderr).strip().split("\n")
            assert got[0] == shown[0] or "..." in shown[0], (
                f"{cmd.where}: the docs show {shown[0]!r}, it prints {got[0]!r}"
            )
        else:
            assert done.returncode == 0, f"{cmd.where}: {cmd.source}\n{done.stderr[-3000:]}"
            assert "matches no config field" not in done.stderr, f"{cmd.where}: {done.stderr}"
    assert checked >= 2


def _tree(root: Path, depth: int) -> list[str]:
    return [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if len(p.relative_to(root).parts) <= depth and "checkpoints" not in p.parts and "events" not in p.name
    ]


# ---------------------------------------------------------------------------------------------
# README as a front page (issue 38): short, the two set-up commands first, one command form, installs that work


def test_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; dated measurements belong in docs/"
    head = "\n".join(lines[:25])
    assert "make demo" in head and "make test" in head, "make demo and make test belong in README's first 25 lines"
    assert any(line.startswith("![") for line in lines[:40]), "the demo's figure belongs on README's first screen"


def test_one_command_form_in_readme_and_docs():
    """``python -m train`` / ``python -m eval`` exist only in a checkout (a pip user gets `No module named
    train`): README and docs name every command as the console script, ``gensim-jax ...``."""
    found = [
        f"{rel(path)}:{number}"
        for path in DOC_FILES
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"python3?\s+-m\s+(train|eval)\b|\.venv/bin/gensim-jax", line)
    ]
    assert not found, f"use `gensim-jax train` / `gensim-jax eval`: {found}"


def test_every_pip_install_in_readme_installs_from_a_path_a_wheel_or_a_url():
    """The package is not on the public index: `pip install gensim-jax` cannot work."""
    text = (ROOT / "README.md").read_text()
    installs = re.findall(r"pip install ([^`\n#]+)", text)
    assert installs
    for args in installs:
        targets = [a.strip("'\"") for a in shlex.split(args) if not a.startswith("-")]
        for target in targets:
            name = target.split("[")[0]
            local = name.startswith(("./", "../", "/", "~")) or name.endswith(".whl") or "://" in name
            assert local, f"README: pip install {args.strip()}: {target} is not a path, a wheel or a URL"
