"""gensim_jax.commands is the only package that knows argparse, and nothing below it imports it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gensim_jax"

#: The one module outside commands/ that may import it: the deprecated alias of commands.main, kept so that
#: console scripts written by an earlier install (``from gensim_jax.cli import main``) keep working.
ALIAS = PACKAGE / "cli.py"


def _imports(path: Path) -> set:
    """Every module ``path`` imports (``import a.b``: ``a.b``; ``from a import b``: ``a`` and ``a.b``), from its source."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _library_modules() -> list:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "commands" not in p.relative_to(PACKAGE).parts and p != ALIAS]


def test_the_scan_sees_the_layers():
    mods = {p.relative_to(PACKAGE).as_posix() for p in _library_modules()}
    assert {"config.py", "runs.py", "training/runner.py", "evaluation/scorecard.py", "planning/plan.py"} <= mods
    assert "argparse" in _imports(PACKAGE / "commands" / "train.py")  # the check below can see an argparse import


def test_no_library_module_imports_argparse_or_the_commands():
    bad = {}
    for path in _library_modules():
        found = sorted(
            m for m in _imports(path) if m == "argparse" or m.startswith(("argparse.", "gensim_jax.commands"))
        )
        if found:
            bad[path.relative_to(PACKAGE).as_posix()] = found
    assert bad == {}


def test_the_config_module_imports_nothing_of_gensim_jax():
    assert sorted(m for m in _imports(PACKAGE / "config.py") if m.split(".")[0] == "gensim_jax") == []
