"""Roofline estimate of one step from FLOPs, HBM bytes and collective bytes per device.

``step_time >= max(FLOPs / peak, HBM bytes / HBM bandwidth) + collective bytes / interconnect bandwidth``

(compute and memory traffic overlap at best; collectives are counted as not overlapped, a
conservative choice for the all-gathers an all-pairs loss waits on).  Peak figures are the chip
table's (:mod:`gensim_jax.planning.chips`): dense bf16 peak, so a float32 program is estimated
too fast.  The result is a lower bound on step time and an upper bound on examples per second.
"""

from __future__ import annotations

from gensim_jax.planning.chips import Chip

__all__ = ["roofline"]


def roofline(
    flops: float, hbm_bytes: float, collective_bytes: float, chip: Chip, hosts: int, global_batch: int
) -> dict:
    """The roofline terms (seconds), the bound step time and the examples/s it implies.

    Args:
      flops: FLOPs per device per step.
      hbm_bytes: HBM bytes read and written per device per step.
      collective_bytes: bytes each device sends in collectives per step (ring model).
      chip: the target chip; hosts: number of hosts (GPU collectives across hosts use the network).
      global_batch: examples per step over all devices.
    """
    if global_batch <= 0:
        raise ValueError(f"global_batch must be positive, got {global_batch}")
    bw = chip.collective_bytes_per_s(hosts)
    t_compute = flops / chip.peak_bf16_flops
    t_memory = hbm_bytes / chip.hbm_bytes_per_s
    t_comm = collective_bytes / bw
    t = max(t_compute, t_memory) + t_comm
    bound = "compute" if t_compute >= t_memory else "memory"
    if t_comm > max(t_compute, t_memory):
        bound = "communication"
    return {
        "compute_seconds": t_compute,
        "memory_seconds": t_memory,
        "collective_seconds": t_comm,
        "step_seconds": t,
        "bound": bound,
        "examples_per_second": global_batch / t if t > 0 else float("inf"),
        "peak_flops_per_s": chip.peak_bf16_flops,
        "hbm_bytes_per_s": chip.hbm_bytes_per_s,
        "collective_bytes_per_s": bw,
    }
