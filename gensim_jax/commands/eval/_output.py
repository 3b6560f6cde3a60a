"""What every ``gensim-jax eval PROTOCOL`` command shares: its name as typed, ``--workdir``/``--out``, the JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable, Optional

from gensim_jax.jsonable import to_jsonable

__all__ = ["add_output_arguments", "emit", "finish", "prog", "typed"]


def prog(protocol: str) -> str:
    """The command name of a protocol as the user typed it: ``gensim-jax eval oddball`` or ``python -m eval oddball``."""
    from gensim_jax.provenance import command_prefix

    return f"{command_prefix('eval')} {protocol}"


def typed(text: str) -> str:
    """``text`` (a docstring, a hint) with ``python -m eval`` / ``python -m train`` named as the user types them."""
    from gensim_jax.provenance import command_prefix

    return text.replace("python -m eval", command_prefix("eval")).replace("python -m train", command_prefix("train"))


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """``--workdir DIR`` (writes ``DIR/<protocol>.json`` and ``DIR/<protocol>.png``) and ``--out FILE``."""
    p.add_argument(
        "--workdir", default=None, help="write <workdir>/<protocol>.json and the figure <workdir>/<protocol>.png"
    )
    p.add_argument("--out", default=None, help="also write the JSON to this file")


def emit(result, out: str | None) -> None:
    """Print ``result`` as JSON and also write it to ``out`` when given."""
    text = json.dumps(to_jsonable(result), indent=1)
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + "\n")


def finish(result, args, protocol: str, plot: Optional[Callable[[str], object]] = None) -> int:
    """Print the JSON, write ``--out``, and with ``--workdir`` write ``<protocol>.json`` and the figure.

    ``plot(path)`` draws the protocol's figure to ``path`` (called only with ``--workdir``).
    """
    emit(result, args.out)
    if args.workdir:
        wd = Path(args.workdir)
        wd.mkdir(parents=True, exist_ok=True)
        (wd / f"{protocol}.json").write_text(json.dumps(to_jsonable(result), indent=1) + "\n")
        if plot is not None:
            plot(str(wd / f"{protocol}.png"))
    return 0
