"""The table of accelerator chips the planner knows, with the source of every figure.

Each :class:`Chip` carries per-chip peak dense bf16 FLOP/s, HBM capacity, HBM bandwidth and
interconnect bandwidth, and a ``sources`` dict that names, for every figure, the document it was
read from.  The figures are vendor peak numbers (datasheets, Cloud TPU documentation), not
measurements: a roofline built on them is a lower bound on step time.

Interconnect: for TPUs, the per-chip inter-chip-interconnect (ICI) bandwidth of the Cloud TPU
documentation (bidirectional, all ports).  For GPUs, NVLink bandwidth inside one host
(``interconnect_bytes_per_s``) and the per-GPU network bandwidth between hosts
(``network_bytes_per_s``: one InfiniBand NIC per GPU, as in the DGX reference systems); a topology
with more than one GPU host uses the network figure for its collectives.

Memory: the GPU datasheets' "80GB" / "141GB" are binary gigabytes (the driver reports 79.1 GiB of
85.1e9-byte devices on the A100, 84.9e9 bytes on the H100); the table stores 80 GiB and 141 GiB.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional

__all__ = ["Chip", "CHIPS", "get_chip", "chip_table_markdown", "chip_for_device_kind"]

GB = 1e9
GiB = 2**30
T = 1e12

_TPU_V4 = "Google Cloud, 'TPU v4' architecture page (cloud.google.com/tpu/docs/v4), key specifications table"
_TPU_V5E = "Google Cloud, 'TPU v5e' architecture page (cloud.google.com/tpu/docs/v5e), key chip specifications table"
_TPU_V5P = "Google Cloud, 'TPU v5p' architecture page (cloud.google.com/tpu/docs/v5p), key specifications table"
_TPU_V6E = "Google Cloud, 'TPU v6e' architecture page (cloud.google.com/tpu/docs/v6e), specifications table"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM column; nvidia.com/en-us/data-center/a100)"
_H100 = "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column, dense = half the 'with sparsity' figure; nvidia.com/en-us/data-center/h100)"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column, dense = half the 'with sparsity' figure; nvidia.com/en-us/data-center/h200)"
_DGX_A100 = "NVIDIA DGX A100 datasheet: 8 x 200 Gb/s HDR InfiniBand compute NICs for 8 GPUs (25 GB/s per GPU)"
_DGX_H100 = (
    "NVIDIA DGX H100/H200 datasheet: 8 x 400 Gb/s ConnectX-7 (NDR InfiniBand) compute NICs for 8 GPUs (50 GB/s per GPU)"
)


@dataclasses.dataclass(frozen=True)
class Chip:
    """One accelerator chip.

    Attributes:
      name: short name used in topology strings (``"v5e"``, ``"h100"``).
      full_name: vendor name.
      kind: ``"tpu"`` or ``"gpu"``.
      peak_bf16_flops: dense bf16 matrix FLOP/s per chip.
      hbm_bytes: memory per chip (bytes).
      hbm_bytes_per_s: memory bandwidth per chip (bytes/s).
      interconnect_bytes_per_s: chip-to-chip bandwidth per chip (TPU ICI; GPU NVLink), bytes/s.
      network_bytes_per_s: per-chip bandwidth between hosts for GPUs (None for TPUs, whose slices
        are one ICI domain).
      chips_per_host: chips per host (TPU VM / DGX-style server).
      sources: figure name -> where it comes from.
      notes: caveats.
    """

    name: str
    full_name: str
    kind: str
    peak_bf16_flops: float
    hbm_bytes: float
    hbm_bytes_per_s: float
    interconnect_bytes_per_s: float
    network_bytes_per_s: Optional[float]
    chips_per_host: int
    sources: Mapping[str, str]
    notes: str = ""

    def collective_bytes_per_s(self, hosts: int) -> float:
        """Bandwidth used for collectives: ICI/NVLink in one host (TPU: the whole slice), else the network."""
        if self.kind == "gpu" and hosts > 1 and self.network_bytes_per_s:
            return self.network_bytes_per_s
        return self.interconnect_bytes_per_s

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _tpu(name, full, flops, mem, bw, ici, per_host, src, notes=""):
    s = {
        "peak_bf16_flops": src,
        "hbm_bytes": src,
        "hbm_bytes_per_s": src,
        "interconnect_bytes_per_s": src,
        "chips_per_host": src,
    }
    return Chip(name, full, "tpu", flops, mem, bw, ici, None, per_host, s, notes)


CHIPS: dict[str, Chip] = {
    c.name: c
    for c in [
        _tpu(
            "v4",
            "Cloud TPU v4",
            275 * T,
            32 * GiB,
            1200 * GB,
            300 * GB,
            4,
            _TPU_V4,
            notes="ICI 300 GB/s per chip = 6 links x 50 GB/s as described for TPU v4 (Jouppi et al., ISCA 2023); "
            "the Cloud TPU v4 page lists no per-chip ICI figure. One v4 chip (2 TensorCores) is one JAX device.",
        ),
        _tpu(
            "v5e",
            "Cloud TPU v5e (v5 lite)",
            197 * T,
            16 * GiB,
            819 * GB,
            400 * GB,
            8,
            _TPU_V5E,
            notes="ICI 400 GB/s bidirectional per chip (= 1600 Gbps x 2 directions). The page says '16 GB'; taken as 16 GiB, "
            "of which the libtpu compiler reports 15.75 GiB usable.",
        ),
        _tpu(
            "v5p",
            "Cloud TPU v5p",
            459 * T,
            95 * GB,
            2765 * GB,
            600 * GB,
            4,
            _TPU_V5P,
            notes="ICI 4800 Gbps per chip = 600 GB/s.",
        ),
        _tpu(
            "v6e",
            "Cloud TPU v6e (Trillium)",
            918 * T,
            32 * GB,
            1638 * GB,
            800 * GB,
            8,
            _TPU_V6E,
            notes="ICI 800 GB/s bidirectional per chip.",
        ),
        Chip(
            "a100",
            "NVIDIA A100 80GB SXM",
            "gpu",
            312 * T,
            80 * GiB,
            2039 * GB,
            600 * GB,
            25 * GB,
            8,
            {
                "peak_bf16_flops": _A100,
                "hbm_bytes": _A100,
                "hbm_bytes_per_s": _A100,
                "interconnect_bytes_per_s": _A100 + ": NVLink 600 GB/s",
                "network_bytes_per_s": _DGX_A100,
                "chips_per_host": _DGX_A100,
            },
        ),
        Chip(
            "h100",
            "NVIDIA H100 80GB SXM",
            "gpu",
            989 * T,
            80 * GiB,
            3350 * GB,
            900 * GB,
            50 * GB,
            8,
            {
                "peak_bf16_flops": _H100 + ": 1979 TFLOPS with sparsity",
                "hbm_bytes": _H100,
                "hbm_bytes_per_s": _H100 + ": 3.35 TB/s",
                "interconnect_bytes_per_s": _H100 + ": NVLink 900 GB/s",
                "network_bytes_per_s": _DGX_H100,
                "chips_per_host": _DGX_H100,
            },
        ),
        Chip(
            "h200",
            "NVIDIA H200 141GB SXM",
            "gpu",
            989 * T,
            141 * GiB,
            4800 * GB,
            900 * GB,
            50 * GB,
            8,
            {
                "peak_bf16_flops": _H200 + ": 1979 TFLOPS with sparsity",
                "hbm_bytes": _H200,
                "hbm_bytes_per_s": _H200 + ": 4.8 TB/s",
                "interconnect_bytes_per_s": _H200 + ": NVLink 900 GB/s",
                "network_bytes_per_s": _DGX_H100,
                "chips_per_host": _DGX_H100,
            },
        ),
    ]
}


def get_chip(name: str) -> Chip:
    """The :class:`Chip` called ``name`` (case-insensitive); ``ValueError`` listing the known chips otherwise."""
    key = str(name).strip().lower()
    if key not in CHIPS:
        raise ValueError(f"unknown chip {name!r}; known chips: {', '.join(CHIPS)}")
    return CHIPS[key]


def chip_table_markdown() -> str:
    """The chip table as markdown (figures and, in a second table, their sources)."""
    rows = [
        "| chip | peak bf16 TFLOP/s | memory GB | HBM GB/s | interconnect GB/s | network GB/s per chip |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for c in CHIPS.values():
        net = f"{c.network_bytes_per_s / GB:.0f}" if c.network_bytes_per_s else "-"
        rows.append(
            f"| {c.name} | {c.peak_bf16_flops / T:.0f} | {c.hbm_bytes / GB:.1f} | {c.hbm_bytes_per_s / GB:.0f} "
            f"| {c.interconnect_bytes_per_s / GB:.0f} | {net} |"
        )
    rows += ["", "| chip | figure | source |", "|---|---|---|"]
    for c in CHIPS.values():
        for k, v in c.sources.items():
            rows.append(f"| {c.name} | {k} | {v} |")
        if c.notes:
            rows.append(f"| {c.name} | notes | {c.notes} |")
    return "\n".join(rows)


_DEVICE_KINDS = (
    ("v5 lite", "v5e"),
    ("v5e", "v5e"),
    ("v6 lite", "v6e"),
    ("v6e", "v6e"),
    ("v5p", "v5p"),
    ("tpu v5", "v5p"),
    ("tpu v4", "v4"),
    ("h200", "h200"),
    ("h100", "h100"),
    ("a100", "a100"),
)


def chip_for_device_kind(device_kind: str) -> Optional[Chip]:
    """The chip of the table whose name JAX's ``device.device_kind`` names (``"TPU v5 lite"`` -> v5e,
    ``"NVIDIA H100 80GB HBM3"`` -> h100), or None (a CPU, an unlisted chip).

    Example:
      >>> chip_for_device_kind("TPU v5 lite").name, chip_for_device_kind("cpu")
      ('v5e', None)
    """
    kind = str(device_kind).lower()
    for needle, name in _DEVICE_KINDS:
        if needle in kind:
            return get_chip(name)
    return None
