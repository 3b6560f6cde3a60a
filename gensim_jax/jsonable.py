"""``to_jsonable``: results, configs and metrics as plain JSON types (one definition for the package)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

import numpy as np

__all__ = ["to_jsonable"]


def to_jsonable(obj):
    """Dataclasses, mappings, sequences, numpy / JAX scalars and arrays and paths -> plain JSON types.

    Example:
      >>> to_jsonable({"a": np.float32(0.5), "b": (1, np.arange(2))})
      {'a': 0.5, 'b': [1, [0, 1]]}
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if isinstance(obj, (np.generic, np.ndarray)) or hasattr(obj, "__array__"):
        a = np.asarray(obj)
        return a.item() if a.ndim == 0 else a.tolist()
    return obj
