"""The largest global batch that fits on a topology: doubling, then bisection over compiles."""

from __future__ import annotations

import time
from typing import Callable, Optional

from gensim_jax.planning.topology import Topology, build_devices, parse_topology

__all__ = ["max_global_batch"]


def max_global_batch(
    build: Callable,
    topology: str | Topology,
    *,
    fsdp: int = 1,
    start: Optional[int] = None,
    limit: int = 1 << 24,
    rel_tol: float = 1 / 16,
    experiment: str = "",
    config: str = "",
    cache=None,
) -> dict:
    """Largest global batch ``B`` (a multiple of the device count) whose step fits in the chips' memory.

    Doubles ``B`` from ``start`` (default: one example per device) until a compile does not fit (or
    ``limit``), then bisects in multiples of the device count until the bracket is within
    ``rel_tol`` of its lower end.  "Fits" is the :class:`~gensim_jax.planning.report.PlanReport`'s
    verdict (the compiler's memory analysis against the chip table, or the compiler's own
    out-of-memory refusal).

    Args:
      build: ``build(global_batch, fsdp) -> StepBuild`` (the step, abstract args, shardings).
      topology: target, e.g. ``"v5e:4x4"``.
      fsdp: size of the FSDP mesh axis (1: none; the device count: parameters split over all devices).
      cache: a :class:`~gensim_jax.planning.cache.PlanCache` for the trial compiles (a repeated search
        reuses them), or None.

    Returns:
      ``{"max_global_batch", "per_device", "fsdp", "topology", "fits_at_limit", "trials": [{global_batch, fits,
      memory_per_device_bytes, compile_seconds}], "seconds"}``; ``max_global_batch`` is 0 when even one
      example per device does not fit.
    """
    from gensim_jax.planning.plan import plan_step

    topo = parse_topology(topology) if isinstance(topology, str) else topology
    n = topo.num_devices
    devs = build_devices(topo)
    trials = []
    t0 = time.perf_counter()

    def fits(b: int) -> bool:
        sb = build(b, fsdp)
        rep = plan_step(
            sb.fn,
            sb.args,
            topology=topo,
            shardings=sb.shardings,
            fsdp=fsdp,
            donate_argnums=sb.donate_argnums,
            devices=devs,
            experiment=experiment,
            config=config,
            cache=cache,
        )
        trials.append(
            {
                "global_batch": b,
                "fits": rep.fits,
                "memory_per_device_bytes": rep["memory_per_device_bytes"],
                "compile_seconds": rep["compile_seconds"],
                "reused_compile": bool((rep.get("compile_cache") or {}).get("reused")),
            }
        )
        return rep.fits

    b = max(n, (start // n) * n if start else n)
    if not fits(b):
        lo, hi = 0, b
    else:
        lo = b
        hi = None
        while hi is None:
            nb = lo * 2
            if nb > limit:
                break
            if fits(nb):
                lo = nb
            else:
                hi = nb
    if hi is not None:
        while hi - lo > n and (lo == 0 or (hi - lo) > rel_tol * lo):
            mid = ((lo + hi) // 2 // n) * n
            if mid <= lo:
                break
            if fits(mid):
                lo = mid
            else:
                hi = mid
    return {
        "max_global_batch": lo,
        "per_device": lo // n,
        "fsdp": fsdp,
        "topology": topo.name,
        "fits_at_limit": hi is None,
        "upper_bound_that_failed": hi,
        "trials": trials,
        "seconds": time.perf_counter() - t0,
    }
