"""Where a training step's time goes: a per-op profile of the ResNet-50 / CORnet-S step (issue 25).

Builds the step of ``bench/step/training_step.py`` (the library's ``make_train_step``, Adam, CrossEntropy,
float32, the CPU compiler options), runs it once (compile), then traces ``--steps`` steps with
``jax.profiler`` (a Perfetto trace) and sums the time of every XLA op (thunk) by kind:

* ``convolution``: convolutions (forward and both gradients), Eigen or YNNPACK;
* ``dot``: matrix products (the classifier, 1x1 convolutions, im2col products; with the YNNPACK
  fusions around them);
* ``reduction fusion``: fusions that reduce (BatchNorm mean/variance and their gradients, the
  loss, the global pool);
* ``elementwise fusion``: the other fusions (BatchNorm normalise/scale, ReLU, their gradients,
  the Adam update);
* ``copy / transpose``: layout changes;
* ``other``: the rest (the while/conditional bodies count their contents).

Each kind's share is per-op wall time on the executing threads (ops of the two cores overlap, so the
sum can exceed the step). Also prints the top ops by time, with the HLO op name metadata.

Usage: python -m bench.step.op_profile [--model resnet50] [--size 64] [--batch 32] [--steps 2] [--top 25] [--quick]
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
import tempfile
import time
from pathlib import Path

import jax
import numpy as np


def _kind(name: str, hlo_kinds: dict) -> str:
    k = hlo_kinds.get(name, "")
    low = name.lower()
    if "convolution" in low or "conv" in k:
        return "convolution"
    if low.startswith("dot") or k == "dot":
        return "dot"  # also YNNPACK fusions around a dot (ynn_fusion.N), e.g. the im2col products
    if k == "reduce" or "reduce" in low:
        return "reduction fusion"
    if "copy" in low or "transpose" in low:
        return "copy / transpose"
    if "fusion" in low or k == "fusion":
        return "elementwise fusion"
    return "other"


def _hlo_kinds(hlo_text: str) -> dict:
    """``{instruction name: kind}`` from the compiled HLO: convolution / dot / reduce (a fusion whose
    computation reduces) / fusion."""
    kinds = {}
    comps: dict = {}
    current = None
    for line in hlo_text.splitlines():
        m = re.match(r"^\s*(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
        if m and "=" not in line.split("{")[0]:
            current = m.group(1)
            comps[current] = []
            continue
        if current is not None:
            comps[current].append(line)
    reduces = {c for c, body in comps.items() if any(" reduce(" in ln or "reduce-window(" in ln for ln in body)}
    convs = {c for c, body in comps.items() if any(" convolution(" in ln for ln in body)}
    dots = {c for c, body in comps.items() if any(" dot(" in ln for ln in body)}
    for line in hlo_text.splitlines():
        m = re.match(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*\S+\s+([\w\-]+)\(", line)
        if not m:
            continue
        name, op = m.groups()
        if op == "convolution":
            kinds[name] = "conv"
        elif op == "dot":
            kinds[name] = "dot"
        elif op == "fusion":
            called = re.search(r"calls=%?([\w.\-]+)", line)
            c = called.group(1) if called else ""
            kinds[name] = "conv" if c in convs else "dot" if c in dots else "reduce" if c in reduces else "fusion"
        elif op in ("reduce", "reduce-window"):
            kinds[name] = "reduce"
    return kinds


def _describe(hlo_text: str, name: str) -> str:
    """The result shape, operand shapes, window and ``op_name`` of instruction ``name`` (shortened)."""
    m = re.search(r"^\s*(?:ROOT\s+)?%?" + re.escape(name) + r"\s*=\s*(.*)$", hlo_text, re.M)
    if not m:
        return ""
    line = m.group(1)
    shape = line.split(" ", 1)[0]
    window = re.search(r"window=\{[^}]*\}", line)
    dims = re.search(r"dim_labels=\S+", line)
    op_name = re.search(r'op_name="([^"]*)"', line)
    operands = re.findall(r"(f32\[[\d,]*\]\{[\d,]*\})\s*%", line)
    parts = [shape, " x ".join(operands[:2]), window.group(0) if window else "", dims.group(0) if dims else ""]
    parts.append(op_name.group(1)[-90:] if op_name else "")
    return " ".join(p for p in parts if p)


def profile(
    model: str = "resnet50", size: int = 64, batch: int = 32, steps: int = 2, top: int = 25, quick: bool = False
) -> dict:
    """The per-kind and per-op seconds of one step (``quick``: the tiny variants of bench/step/training_step.py)."""
    from bench.step.training_step import _batch, _OursStep

    x, y = _batch(batch, size)
    ours = _OursStep(model, size, x, y, quick=quick)
    t0 = time.perf_counter()
    ours()
    compile_s = time.perf_counter() - t0
    hlo = ours.step.lower(ours.state, ours.batch).compile().as_text()
    kinds = _hlo_kinds(hlo)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        with jax.profiler.trace(tmp, create_perfetto_trace=True):
            for _ in range(steps):
                ours()
        wall = (time.perf_counter() - t0) / steps
        files = list(Path(tmp).rglob("*.trace.json.gz"))
        if not files:
            raise RuntimeError("the profiler wrote no Perfetto trace")
        trace = json.loads(gzip.decompress(files[0].read_bytes()))
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e]
    by_op: dict = collections.defaultdict(float)
    for e in events:
        by_op[e["name"]] += e["dur"] / 1e6 / steps
    known = {k: v for k, v in by_op.items() if k in kinds}
    by_kind: dict = collections.defaultdict(float)
    for k, v in known.items():
        by_kind[_kind(k, kinds)] += v
    total = sum(known.values())
    top_ops = sorted(known.items(), key=lambda kv: -kv[1])[:top]
    return {
        "bench": "profile_step",
        "model": model,
        "size": size,
        "batch": batch,
        "steps": steps,
        "compile_s": compile_s,
        "step_wall_s": wall,
        "op_seconds_per_step": total,
        "by_kind_s": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
        "by_kind_share": {k: v / total for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])} if total else {},
        "top_ops": [{"op": k, "kind": _kind(k, kinds), "s": v, "hlo": _describe(hlo, k)} for k, v in top_ops],
        "num_ops_traced": len(known),
        "unmatched_events_s": dict(
            sorted(((k, v) for k, v in by_op.items() if k not in kinds), key=lambda kv: -kv[1])[:top]
        ),
        "num_events": len(events),
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet50", choices=("resnet50", "cornet_s", "cornet_z"))
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--quick", action="store_true", help="the tiny model variants (a smoke run)")
    a = p.parse_args(argv)
    r = profile(a.model, a.size, a.batch, a.steps, a.top, a.quick)
    print(json.dumps(r, default=float))
    print(
        f"\n{a.model} {a.size}px batch {a.batch}: step {r['step_wall_s']:.3f} s wall, ops {r['op_seconds_per_step']:.3f} s"
    )
    for k, v in r["by_kind_s"].items():
        print(f"  {k:20s} {v:8.3f} s  {100 * r['by_kind_share'][k]:5.1f}%")
    print("  events that are not HLO ops (runtime, threads, the Python side):")
    for k, v in list(r["unmatched_events_s"].items())[:10]:
        print(f"  {v * 1e3:8.1f} ms  {k[:100]}")
    for o in r["top_ops"]:
        print(f"  {o['s'] * 1e3:8.1f} ms  {o['kind']:20s} {o['op']}  {o['hlo'][:220]}")


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
