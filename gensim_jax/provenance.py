"""What produced a run: the gensim-jax version, the git commit, the library versions, the command.

:func:`provenance` is the record that ``config.json`` and ``results.json`` of every run carry under
``"provenance"``, and ``gensim-jax --version`` prints (:func:`version_text`)::

    {"gensim_jax": "0.1.0",
     "git": {"commit": "81e9a55...", "dirty": false, "root": "/home/me/gensim-jax"},   # or "not a checkout"
     "versions": {"python": "3.11.9", "jax": "0.4.35", "jaxlib": "0.4.35", "flax": "0.10.2",
                  "optax": "0.2.4", "orbax-checkpoint": "0.11.0", "tensorflow": null, ...},
     "command": "gensim-jax train quadrilaterals --config demo",
     "device_kinds": ["cpu"], "process_count": 1, "platform": "...", "host": "..."}

The git state is the one of the checkout the ``gensim_jax`` package is imported from (an editable
install or ``PYTHONPATH``), not of the working directory; a wheel installed in site-packages is
``"not a checkout"``.  Library versions come from the installed distributions' metadata, so nothing
is imported (TensorFlow costs seconds): ``None`` is a library that is not installed.

This module imports only the standard library; the device entries need JAX and are filled only when
JAX is already imported (a run always has it).
"""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence, Union

__all__ = [
    "provenance",
    "git_state",
    "library_versions",
    "version_text",
    "set_command",
    "command_line",
    "command_prefix",
    "LIBRARIES",
]

#: Distributions whose versions a run records: name in the record -> distribution names to try.
LIBRARIES = {
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
    "flax": ("flax",),
    "optax": ("optax",),
    "orbax-checkpoint": ("orbax-checkpoint",),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-macos", "tf-nightly"),
    "tensorflow-datasets": ("tensorflow-datasets",),
    "numpy": ("numpy",),
    "tensorboardX": ("tensorboardX",),
    "libtpu": ("libtpu", "libtpu-nightly"),
}

# How the running command was typed (set by the command-line front ends, see set_command).
_COMMAND: dict = {"prefix": {}, "argv": None}


def set_command(prefix: str, argv: Sequence[str], *, sub: Optional[str] = None) -> None:
    """Remember how the running command was typed, for hints and for the run's record.

    Args:
      prefix: the command as typed up to its arguments, e.g. ``"gensim-jax train"`` or ``"python -m eval"``.
      argv: its arguments.
      sub: the subcommand ``prefix`` stands for (``"train"``, ``"eval"``, ``"plan"``), for :func:`command_prefix`.
    """
    _COMMAND["argv"] = [*shlex.split(prefix), *map(str, argv)]
    if sub is not None:
        _COMMAND["prefix"][sub] = prefix


def command_prefix(sub: str, default: Optional[str] = None) -> str:
    """How the subcommand ``sub`` was typed: ``"gensim-jax train"``, ``"python -m train"``, ...

    Default (nothing recorded, e.g. a library call): ``default`` or ``"gensim-jax SUB"``.
    """
    return _COMMAND["prefix"].get(sub) or default or f"gensim-jax {sub}"


def command_line(extra: Sequence[str] = ()) -> Optional[str]:
    """The command line as typed (shell-quoted), with ``extra`` arguments appended unless present; None if unknown."""
    argv = _COMMAND["argv"]
    if argv is None:
        return None
    argv = list(argv) + [a for a in extra if a not in argv]
    return shlex.join(argv)


def _distribution_version(names: Sequence[str]) -> Optional[str]:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def library_versions() -> dict:
    """``{"python": ..., "jax": ..., "flax": ..., ...}``: installed versions (None: not installed); imports nothing."""
    out = {"python": platform.python_version()}
    out.update({key: _distribution_version(names) for key, names in LIBRARIES.items()})
    return out


def _git(root: Path, *args: str) -> Optional[str]:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.lru_cache(maxsize=8)
def git_state(package_dir: Union[str, Path, None] = None) -> Union[dict, str]:
    """``{"commit", "dirty", "root"}`` of the git checkout that holds the ``gensim_jax`` package, or a reason.

    ``dirty`` is True when tracked files differ from the commit (untracked files do not count).
    Returns ``"not a checkout"`` for an installed wheel (no ``.git`` around the package, or one whose
    top level does not hold this package) and ``"git not available"`` when git cannot be run.
    """
    pkg = Path(package_dir) if package_dir is not None else Path(__file__).resolve().parent
    root = pkg.parent
    if not any((p / ".git").exists() for p in (root, *root.parents)):
        return "not a checkout"
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None:
        return "git not available" if _git(root, "--version") is None else "not a checkout"
    if not (Path(top) / pkg.name).resolve() == pkg.resolve():  # some other repository around site-packages
        return "not a checkout"
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return "not a checkout"
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None, "root": top}


def package_version() -> str:
    """The version of the imported ``gensim_jax`` package."""
    from gensim_jax import __version__

    return __version__


def _devices() -> dict:
    jax = sys.modules.get("jax")
    if jax is None:
        return {}
    try:
        devs = jax.devices()
        return {
            "backend": jax.default_backend(),
            "device_kinds": sorted({d.device_kind for d in devs}),
            "device_count": len(devs),
            "process_count": jax.process_count(),
        }
    except Exception:  # noqa: BLE001 - a record must never fail on a backend that will not start
        return {}


def provenance() -> dict:
    """What produced this run (module docstring): versions, git state, command, devices, host."""
    return {
        "gensim_jax": package_version(),
        "git": git_state(),
        "versions": library_versions(),
        "command": command_line(),
        **_devices(),
        "platform": platform.platform(),
        "host": platform.node(),
    }


def short_commit(record: Optional[dict]) -> Optional[str]:
    """``"81e9a55"``, ``"81e9a55+dirty"``, ``"not a checkout"`` of a provenance record, None when it has none."""
    if not isinstance(record, dict):
        return None
    git = record.get("git")
    if isinstance(git, dict) and git.get("commit"):
        return str(git["commit"])[:7] + ("+dirty" if git.get("dirty") else "")
    return git if isinstance(git, str) else None


def version_text() -> str:
    """The text of ``gensim-jax --version``: this package, its checkout, and the library versions."""
    git = git_state()
    where = (
        f"git {git['commit'][:12]}{' (dirty)' if git.get('dirty') else ''} in {git['root']}"
        if isinstance(git, dict)
        else git
    )
    libs = ", ".join(f"{k} {v}" for k, v in library_versions().items() if v is not None)
    return f"gensim-jax {package_version()} ({where})\n{libs}"
