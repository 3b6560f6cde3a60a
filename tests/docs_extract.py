"""Docs that run, part 1: what is extracted from README.md and docs/ (the blocks and commands that
tests/test_docs.py runs or checks; its docstring says what and how).

:data:`ALL_BLOCKS` are the fenced blocks of every page (:func:`fenced_blocks`), :data:`ALL_COMMANDS`
every shell command, transcript line and inline span that starts with one of the product's commands
(:func:`doc_commands`: continuations joined, ``for`` loops at their first value, ``{a,b}`` expanded,
comments dropped).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import textwrap
from pathlib import Path
from typing import Optional

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
