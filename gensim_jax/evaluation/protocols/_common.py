"""Helpers shared by the ``python -m eval`` drivers: outputs (JSON, ``--workdir``), npz inputs, exports."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from gensim_jax.evaluation.embed import load_encoders, load_npz  # noqa: F401  (the drivers' inputs)
from gensim_jax.jsonable import to_jsonable


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


def run_info(encoder) -> dict:
    """What a run's JSON entry says about its export."""
    m = encoder.metadata
    return {
        "export": encoder.directory,
        "model": m.get("model"),
        "seed": m.get("seed"),
        "image_size": encoder.image_size,
        "preprocess": encoder.preprocess,
    }


def model_label(label: Optional[str], encoders) -> str:
    """The figure label: ``label`` or the exports' model name(s)."""
    if label:
        return label
    return "+".join(sorted({str(e.metadata.get("model")) for e in encoders}))


def mean_sem_dict(values) -> dict:
    """``{"mean", "sem", "runs"}`` over runs (axis 0); s.e.m. 0 for one run."""
    from gensim_jax.evaluation.statistics import mean_sem

    m, s = mean_sem(values)
    return {"mean": m, "sem": s, "runs": len(np.asarray(values))}
