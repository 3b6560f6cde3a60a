"""Private input checks shared by the numeric kernels (beta-Bernoulli, Gaussian mixture, categorical).

Checks on *values* (alpha > 0, weights sum to one, labels in range) can only run on concrete arrays.
Under ``jax.jit`` / ``jax.grad`` / ``jax.vmap`` the arguments are tracers and the value checks are
skipped; shape checks always run because shapes are static.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def concrete_value(x: Any) -> np.ndarray | None:
    """Return ``x`` as a numpy array, or ``None`` when it is a JAX tracer (value unknown at trace time)."""
    if isinstance(x, jax.core.Tracer):
        return None
    try:
        return np.asarray(x)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return None


def check_positive(name: str, value: Any) -> None:
    """Raise ``ValueError`` naming ``name`` if a concrete ``value`` has an entry <= 0 or non-finite."""
    v = concrete_value(value)
    if v is None:
        return
    if not np.issubdtype(v.dtype, np.number):
        raise TypeError(f"{name} must be numeric, got dtype {v.dtype}")
    bad = ~(np.isfinite(v) & (v > 0))
    if np.any(bad):
        raise ValueError(
            f"{name} must be finite and > 0; got {v.ravel()[np.argmax(bad.ravel())]!r}"
            + (f" (shape {v.shape})" if v.ndim else "")
        )


def check_in_unit_interval(name: str, value: Any) -> None:
    """Raise ``ValueError`` naming ``name`` if a concrete ``value`` has entries outside [0, 1]."""
    v = concrete_value(value)
    if v is None:
        return
    if v.dtype == bool:
        return
    bad = ~((v >= 0) & (v <= 1))
    if np.any(bad):
        raise ValueError(
            f"{name} must have entries in [0, 1] (binary features); got {v.ravel()[np.argmax(bad.ravel())]!r} "
            f"in an array of shape {v.shape}"
        )


def check_min_ndim(name: str, shape: tuple[int, ...], ndim: int) -> None:
    if len(shape) < ndim:
        raise ValueError(f"{name} must have at least {ndim} dimension(s); got shape {shape}")


def check_ndim(name: str, shape: tuple[int, ...], ndim: int) -> None:
    if len(shape) != ndim:
        raise ValueError(f"{name} must have exactly {ndim} dimension(s); got shape {shape}")


def check_same_last_dim(name1: str, shape1: tuple[int, ...], name2: str, shape2: tuple[int, ...]) -> None:
    if shape1[-1] != shape2[-1]:
        raise ValueError(
            f"{name1} and {name2} must have the same last (feature) dimension; "
            f"got {name1}.shape={shape1} ({shape1[-1]}) and {name2}.shape={shape2} ({shape2[-1]})"
        )
