"""Re-evaluating a ``spurious_digits`` training workdir (``gensim-jax eval spurious_digits``,
:mod:`gensim_jax.commands.eval.spurious_digits`): its exports by lambda."""

from __future__ import annotations

import re
from pathlib import Path


def find_exports(workdir: Path) -> dict[str, list[Path]]:
    """``{lambda (str): [export dirs in run order]}`` of a training workdir."""
    found: dict[str, list[tuple[int, Path]]] = {}
    for d in sorted(workdir.glob("lambda_*/run*/export")):
        lam = d.parent.parent.name[len("lambda_") :]
        m = re.fullmatch(r"run(\d+)", d.parent.name)
        if m and (d / "model.json").is_file():
            found.setdefault(f"{float(lam):g}", []).append((int(m.group(1)), d))
    return {lam: [d for _, d in sorted(runs)] for lam, runs in found.items()}
