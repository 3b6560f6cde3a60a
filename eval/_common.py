"""Helpers shared by the ``python -m eval`` drivers: JSON output and npz inputs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np


def to_jsonable(obj):
    """Dataclasses, numpy scalars and arrays -> plain JSON types."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def emit(result, out: str | None) -> None:
    """Print ``result`` as JSON and also write it to ``out`` when given."""
    text = json.dumps(to_jsonable(result), indent=1)
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + "\n")


def load_npz(path: str, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Arrays ``keys`` of an ``.npz`` file (``ValueError`` naming the missing ones)."""
    with np.load(path, allow_pickle=False) as z:
        missing = [k for k in keys if k not in z.files]
        if missing:
            raise ValueError(f"{path}: missing arrays {missing}; it has {z.files}")
        return {k: z[k] for k in keys}
