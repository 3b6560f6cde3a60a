"""The one random-state convention of the stimulus generators (DESIGN.md, "Determinism")."""

from __future__ import annotations

import numpy as np


def as_generator(rng) -> np.random.Generator:
    """``rng`` itself if it is a numpy ``Generator``, ``default_rng(rng)`` for an int seed."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise ValueError(f"rng must be a numpy Generator or an int seed, got {type(rng).__name__}")
