"""Timing plumbing shared by the benchmarks.

``compare`` times our function and a reference in the same process, alternating the two (ours
first on even rounds, the reference first on odd rounds) so that slow drift of a shared machine
hits both equally, and reports medians.  The first call of ours (which includes XLA compilation)
is timed separately as ``compile_s`` and excluded, as are ``warmup`` further calls of each.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from typing import Callable, Optional, Sequence

import jax
import numpy as np


def block(x):
    """Wait for every JAX array in ``x`` (a pytree) and return it."""
    return jax.block_until_ready(x)


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def compare(
    ours: Callable[[], object],
    reference: Callable[[], object],
    repeats: int = 7,
    warmup: int = 1,
    compile_s: Optional[float] = None,
    torch_threads: Sequence[int] = (),
) -> dict:
    """Median seconds of ``ours()`` and ``reference()``, alternated.

    Both callables must finish their work before returning (call :func:`block` on JAX results;
    PyTorch on CPU is synchronous).  ``compile_s``: the time of the first (compiling) call of
    ours, if the caller already made it; otherwise the first call here is timed as such.

    ``torch_threads``: run the reference under each of these ``torch.set_num_threads`` settings
    (set outside the timed region), alternated with ours; ``reference_s`` is then the *fastest*
    setting's median (the conservative comparison), and every setting's median is reported.  On
    this shared, oversubscribed 2-core machine PyTorch's 2-thread OpenMP pool often waits on a
    descheduled worker at every barrier, so 1 thread can be much faster than 2.
    """
    if compile_s is None:
        compile_s = _timed(ours)
    settings = list(torch_threads) or [None]

    def set_threads(k):
        if k is not None:
            import torch

            torch.set_num_threads(k)

    for _ in range(warmup):
        ours()
        for k in settings:
            set_threads(k)
            reference()
    t_ours: list[float] = []
    t_ref: dict = {k: [] for k in settings}
    for r in range(repeats):
        order = settings if r % 2 == 0 else settings[::-1]
        if r % 2 == 0:
            t_ours.append(_timed(ours))
        for k in order:
            set_threads(k)
            t_ref[k].append(_timed(reference))
        if r % 2 == 1:
            t_ours.append(_timed(ours))
    medians = {k: statistics.median(v) for k, v in t_ref.items()}
    best = min(medians, key=medians.get)
    set_threads(settings[-1] if None not in settings else None)
    out = {
        "ours_s": statistics.median(t_ours),
        "reference_s": medians[best],
        "compile_s": compile_s,
        "ours_min_s": min(t_ours),
        "reference_min_s": min(t_ref[best]),
        "repeats": repeats,
    }
    if torch_threads:
        out["reference_threads"] = best
        out["reference_s_by_threads"] = {str(k): sig(v) for k, v in medians.items()}
    return out


def time_one(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> dict:
    """Median seconds of ``fn()`` alone (first call timed as ``first_s``)."""
    first = _timed(fn)
    for _ in range(warmup):
        fn()
    ts = [_timed(fn) for _ in range(repeats)]
    return {"median_s": statistics.median(ts), "min_s": min(ts), "first_s": first, "repeats": repeats}


def record(
    bench: str,
    params: dict,
    timing: dict,
    reference: str,
    target: float,
    *,
    higher_is_better: bool = False,
    note: Optional[str] = None,
    **extra,
) -> dict:
    """One result line.  ``ratio = ours_s / reference_s``; the target is met when
    ``ratio <= target`` (or, with ``higher_is_better``, when ``1 / ratio >= target``)."""
    ratio = timing["ours_s"] / timing["reference_s"]
    met = (1.0 / ratio >= target) if higher_is_better else (ratio <= target)
    out = {
        "bench": bench,
        "params": params,
        "ours_s": sig(timing["ours_s"]),
        "reference": reference,
        "reference_s": sig(timing["reference_s"]),
        "ratio": float(f"{ratio:.4g}"),
        "target": (f"speedup >= {target}" if higher_is_better else f"ratio <= {target}"),
        "met": bool(met),
        "compile_s": sig(timing.get("compile_s", 0.0)),
        "repeats": timing.get("repeats"),
        "ours_min_s": sig(timing["ours_min_s"]) if "ours_min_s" in timing else None,
        "reference_min_s": sig(timing["reference_min_s"]) if "reference_min_s" in timing else None,
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    for key in ("reference_threads", "reference_s_by_threads"):
        if key in timing:
            out[key] = timing[key]
    if higher_is_better:
        out["speedup"] = float(f"{1.0 / ratio:.4g}")
    if note:
        out["note"] = note
    out.update(extra)
    return out


def sig(x: float, digits: int = 4) -> float:
    """``x`` rounded to ``digits`` significant digits (JSON-friendly)."""
    return float(f"{x:.{digits}g}")


def emit(line: dict) -> None:
    print(json.dumps(line), flush=True)


def machine() -> dict:
    import torch

    return {
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "jax": jax.__version__,
        "jax_backend": jax.default_backend(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


#: ``torch.set_num_threads`` settings every PyTorch reference is timed under (the brief's 2, and 1).
TORCH_THREADS = (2, 1)


def first_call(fn: Callable[[], object]) -> tuple[object, float]:
    """``(fn(), seconds)`` for the first (compiling) call."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def setup_torch(threads: int = 2):
    import torch

    torch.set_num_threads(threads)
    return torch
