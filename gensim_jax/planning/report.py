"""The plan report: per-device memory against the chip, FLOPs, HBM bytes, collectives, roofline (text and JSON)."""

from __future__ import annotations

import dataclasses
import json
from typing import Callable, Optional

__all__ = ["PlanReport", "fmt_bytes"]


def fmt_bytes(b: Optional[float]) -> str:
    """``1536 -> '1.50 KiB'``; None -> '-'."""
    if b is None:
        return "-"
    b = float(b)
    sign = "-" if b < 0 else ""
    b = abs(b)
    for unit, f in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= f:
            return f"{sign}{b / f:.2f} {unit}"
    return f"{sign}{b:.0f} B"


def _fmt_num(x: Optional[float]) -> str:
    if x is None:
        return "-"
    for unit, f in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= f:
            return f"{x / f:.3g} {unit}"
    return f"{x:.3g}"


def _ms(t: float) -> str:
    return f"{t * 1e3:.3g} ms"


_LABELS = {
    "params": "parameters",
    "opt_state": "optimizer state",
    "batch_stats": "BatchNorm statistics",
    "step_and_rng": "step counter and RNG",
    "state": "train state",
    "batch": "batch",
    "objective": "objective (target tables)",
    "temporaries": "temporaries (activations, gradients, B x B matrices)",
    "outputs": "outputs not aliased to inputs",
    "code": "generated code",
}

PROVENANCE = {
    "compiler": [
        "memory per device and its parts: argument / output / aliased / temporary / code bytes "
        "(XLA memory_analysis of the compiled executable; the split of the arguments into parameters, "
        "optimizer state, batch and tables is computed from their shapes and shardings)",
        "fits / does not fit when the compiler itself refused the program (out of memory)",
        "FLOPs per device (XLA cost_analysis) where the backend gives them",
        "the collectives and their array sizes (read from the compiled HLO)",
    ],
    "estimates": [
        "FLOPs when the backend gives no cost analysis (GPU): matmuls and convolutions counted from "
        "the compiled HLO, elementwise work left out",
        "HBM bytes: each top-level kernel of the compiled HLO reads its operands and writes its result "
        "once (TPU on-chip buffers excluded)",
        "collective bytes on the wire: ring algorithm, all-reduce 2(g-1)/g, all-gather / "
        "reduce-scatter (g-1)/g of the full array",
        "chip figures: vendor peak numbers from the chip table (sources in `gensim-jax plan --chips`)",
        "step time and examples/s: roofline max(FLOPs/peak, HBM bytes/bandwidth) + collective "
        "bytes/interconnect bandwidth, a lower bound on time",
    ],
}


@dataclasses.dataclass
class PlanReport:
    """The result of :func:`gensim_jax.planning.plan_step`.  ``as_dict()`` is the JSON form."""

    data: dict
    hlo_text: str = dataclasses.field(default="", repr=False)

    @property
    def fits(self) -> bool:
        return bool(self.data["fits"])

    def __getitem__(self, k):
        return self.data[k]

    def get(self, k, default=None):
        return self.data.get(k, default)

    @classmethod
    def build(
        cls,
        *,
        topo,
        global_batch: int,
        fsdp: int,
        compiled,
        inputs: dict,
        largest_intermediates: list,
        experiment: str,
        config: str,
        roofline_fn: Callable,
        cache_dir: Optional[str] = None,
    ) -> "PlanReport":
        chip = topo.chip
        n = topo.num_devices
        capacity = float(chip.hbm_bytes)
        breakdown = {k: float(v) for k, v in inputs.items()}
        mem = compiled.memory
        if compiled.oom is None:
            breakdown["temporaries"] = float(mem.get("temp_size_in_bytes", 0))
            breakdown["outputs"] = float(mem.get("output_size_in_bytes", 0) - mem.get("alias_size_in_bytes", 0))
            breakdown["code"] = float(mem.get("generated_code_size_in_bytes", 0))
            total = float(mem.get("total_bytes", sum(breakdown.values())))
            fits = total <= capacity
        else:
            breakdown["temporaries"] = float(compiled.oom_required_bytes or 0.0)
            total = sum(breakdown.values())
            if compiled.oom_available_bytes:  # the compiler's own usable-memory figure
                capacity = float(compiled.oom_available_bytes)
            fits = False
        dominant = max(breakdown, key=lambda k: breakdown[k])
        dom = {"buffer": dominant, "label": _LABELS.get(dominant, dominant), "bytes": breakdown[dominant]}
        if dominant == "temporaries":
            if compiled.largest_arrays:
                a = compiled.largest_arrays[0]
                dom["largest_array"] = {"shape": a["shape"], "bytes_per_device": a["bytes"], "op_name": a["op_name"]}
            elif largest_intermediates:
                a = largest_intermediates[0]
                dom["largest_array"] = {
                    "shape": a["shape"] + " (global shape)",
                    "bytes_global": a["bytes_global"],
                    "primitive": a["primitive"],
                    "source": a["source"],
                }
        flops = compiled.flops
        coll_bytes = sum(c.wire_bytes * c.count for c in compiled.collectives)
        hbm = compiled.hbm_bytes_estimate
        roof = None
        if flops is not None and hbm is not None:
            roof = roofline_fn(flops, hbm, coll_bytes, chip, topo.hosts, global_batch)
        d = {
            "experiment": experiment,
            "config": config,
            "topology": topo.name,
            "chip": chip.name,
            "chip_full_name": chip.full_name,
            "platform": topo.platform,
            "num_devices": n,
            "hosts": topo.hosts,
            "global_batch": global_batch,
            "per_device_batch": global_batch // n,
            "fsdp": fsdp,
            "compile_seconds": compiled.compile_seconds,
            # None: no cache; else whether this plan reused a stored compile (then compile_seconds is
            # that compile's time) and when that compile ran
            "compile_cache": None
            if cache_dir is None
            else {
                "reused": bool(compiled.reused),
                "compiled_at": compiled.compiled_at,
                "key": compiled.cache_key,
                "directory": cache_dir,
            },
            "compiler_error": compiled.oom,
            "memory_per_device_bytes": total,
            "memory_capacity_bytes": capacity,
            "memory_breakdown_bytes": breakdown,
            "compiler_memory_analysis": mem,
            "fits": fits,
            "margin_bytes": capacity - total,
            "dominant_buffer": dom,
            "largest_arrays": compiled.largest_arrays,
            "largest_values_including_fused": compiled.largest_values,
            "flops_per_device": flops,
            "flops_per_step": None if flops is None else flops * n,
            "flops_per_example": None if flops is None else flops * n / global_batch,
            "flops_source": compiled.flops_source,
            "matmul_flops_per_device_hlo": compiled.matmul_flops,
            "hbm_bytes_per_device": hbm,
            "compiler_bytes_accessed_per_device": compiled.bytes_accessed,
            "compiler_optimal_seconds": compiled.compiler_seconds_estimate,
            "collectives": [c.as_dict() for c in compiled.collectives],
            "collective_bytes_per_device": coll_bytes,
            "roofline": roof,
            "chip_figures": {
                "peak_bf16_flops": chip.peak_bf16_flops,
                "hbm_bytes": chip.hbm_bytes,
                "hbm_bytes_per_s": chip.hbm_bytes_per_s,
                "interconnect_bytes_per_s": chip.interconnect_bytes_per_s,
                "network_bytes_per_s": chip.network_bytes_per_s,
                "sources": dict(chip.sources),
            },
            "provenance": PROVENANCE,
        }
        return cls(d, compiled.hlo_text)

    def as_dict(self) -> dict:
        return self.data

    def to_json(self, **kw) -> str:
        return json.dumps(self.data, default=float, **kw)

    def fit_line(self) -> str:
        d = self.data
        dom = d["dominant_buffer"]
        if d["fits"]:
            return (
                f"fits: {fmt_bytes(d['memory_per_device_bytes'])} of {fmt_bytes(d['memory_capacity_bytes'])} per device "
                f"({fmt_bytes(d['margin_bytes'])} to spare); largest part: {dom['label']} ({fmt_bytes(dom['bytes'])})"
            )
        extra = ""
        la = dom.get("largest_array")
        if la:
            where = la.get("op_name") or la.get("source") or ""
            extra = f"; largest array {la['shape']}" + (f" from {where}" if where else "")
        return (
            f"does not fit: needs {fmt_bytes(d['memory_per_device_bytes'])} per device, "
            f"{fmt_bytes(-d['margin_bytes'])} over the {fmt_bytes(d['memory_capacity_bytes'])} of a {d['chip']} chip; "
            f"dominated by {dom['label']} ({fmt_bytes(dom['bytes'])}){extra}"
        )

    def to_text(self) -> str:
        """The report as text (its first line says whether the step was compiled or a compile reused)."""
        d = self.data
        L = []
        title = " ".join(x for x in (d["experiment"], d["config"] and f"--config {d['config']}") if x)
        L.append(
            f"plan {title} on {d['topology']}: {d['num_devices']} x {d['chip_full_name']} ({d['hosts']} host(s)), "
            f"global batch {d['global_batch']} ({d['per_device_batch']} per device), "
            f"fsdp axis {d['fsdp']}; {compile_line(d)}"
        )
        L.append("")
        L.append("memory per device [compiler]")
        for k, v in d["memory_breakdown_bytes"].items():
            L.append(f"  {_LABELS.get(k, k):<55} {fmt_bytes(v):>12}")
        L.append(f"  {'total':<55} {fmt_bytes(d['memory_per_device_bytes']):>12}")
        L.append(f"  {'chip memory':<55} {fmt_bytes(d['memory_capacity_bytes']):>12}")
        L.append("  " + self.fit_line())
        if d["compiler_error"]:
            L.append(f"  compiler: {d['compiler_error']}")
        if d["largest_arrays"]:
            L.append(
                "  largest arrays in the compiled program: "
                + "; ".join(f"{a['shape']} ({fmt_bytes(a['bytes'])})" for a in d["largest_arrays"])
            )
        if d["flops_per_device"] is not None:
            L.append("")
            src = "compiler" if d["flops_source"].startswith("compiler") else "estimate"
            L.append(f"FLOPs [{src}: {d['flops_source']}]")
            L.append(
                f"  per device per step {_fmt_num(d['flops_per_device'])}FLOP, per step {_fmt_num(d['flops_per_step'])}FLOP, "
                f"per example {_fmt_num(d['flops_per_example'])}FLOP"
            )
            L.append(
                f"HBM bytes per device per step [estimate from the HLO] {fmt_bytes(d['hbm_bytes_per_device'])}"
                + (
                    f"; compiler's cost analysis says {fmt_bytes(d['compiler_bytes_accessed_per_device'])}"
                    if d["compiler_bytes_accessed_per_device"] is not None
                    else ""
                )
            )
        if d["collectives"] or d["compiler_error"] is None:
            L.append("")
            L.append(
                f"collectives [compiler HLO; wire bytes: ring estimate] {len(d['collectives'])}, "
                f"{fmt_bytes(d['collective_bytes_per_device'])} per device per step on the wire"
            )
            for c in sorted(d["collectives"], key=lambda c: -c["wire_bytes"] * c["count"])[:12]:
                L.append(
                    f"  {c['op']:<18} {c['shape'][:44]:<44} {fmt_bytes(c['bytes']):>11} group {c['group_size']:<4}"
                    f" x{c['count']}  {c['op_name'][-40:]}"
                )
        r = d["roofline"]
        if r:
            L.append("")
            L.append("roofline [estimate from the chip table]")
            L.append(
                f"  compute {_ms(r['compute_seconds'])}, HBM {_ms(r['memory_seconds'])}, "
                f"collectives {_ms(r['collective_seconds'])} -> step >= {_ms(r['step_seconds'])} "
                f"({r['bound']}-bound), <= {r['examples_per_second']:,.0f} examples/s"
            )
        L.append("")
        L.append("from the compiler: " + "; ".join(PROVENANCE["compiler"]) + ".")
        L.append("estimates: " + "; ".join(PROVENANCE["estimates"]) + ".")
        return "\n".join(L)


def compile_line(d: dict) -> str:
    """``compiled in X s`` or ``reused a compile from <date> (it took X s)``, from a report's fields."""
    cache = d.get("compile_cache") or {}
    if cache.get("reused"):
        when = (cache.get("compiled_at") or "an earlier plan").replace("T", " ").replace("+00:00", " UTC")
        return f"reused a compile from {when} (it took {d['compile_seconds']:.1f} s; cache {cache.get('directory')})"
    return f"compiled in {d['compile_seconds']:.1f} s"
