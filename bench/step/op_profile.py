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
    if k == "conv" or "convolution" in low:
        return "convolution"
    if k == "dot" or low.startswith("dot"):
        return "dot"  # also YNNPACK fusions around a dot (ynn_fusion.N), e.g. the im2col products
    if k == "reduce" or "reduce" in low:
        return "reduction fusion"
    if k in ("copy", "transpose") or "copy" in low or "transpose" in low:
        return "copy / transpose"
    if k == "fusion" or "fusion" in low:
        return "elementwise fusion"
    return "other"


def _hlo_kinds(hlo_text: str) -> dict:
    """``{instruction name: kind}`` of the compiled HLO's instructions: ``conv`` (a convolution, a fusion
    around one, a cuDNN call), ``dot`` (a product, a fusion around one, a cuBLAS call), ``reduce`` (a
    fusion whose computation reduces), ``fusion``, ``custom`` (another library call), else the op's name
    (``copy``, ``transpose``, ...)."""
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
        # NAME = SHAPE OP(...), SHAPE one token or a tuple "(f32[..], u8[0]{0})"
        m = re.match(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(?:\([^=]*?\)|\S+)\s+([\w\-]+)\(", line)
        if not m:
            continue
        name, op = m.groups()
        if op in ("parameter", "constant", "get-tuple-element", "tuple", "bitcast"):
            continue  # no kernel of their own
        kinds[name] = op  # any other instruction is attributed too (a copy, a transpose, a sort)
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
        elif op == "custom-call":  # a GPU program's library calls: cuDNN convolutions, cuBLAS products
            target = re.search(r'custom_call_target="([^"]*)"', line)
            t = target.group(1).lower() if target else ""
            kinds[name] = "conv" if "conv" in t else "dot" if ("gemm" in t or "matmul" in t) else "custom"
    return kinds


def _instruction(event: dict, kinds: dict) -> str:
    """The HLO instruction a trace event ran: its name, else an ``hlo_op`` / ``long_name`` argument (GPU
    traces put the kernel's name first and the instruction in the arguments); '' when none is known."""
    name = event.get("name", "")
    if name in kinds:
        return name
    args = event.get("args") or {}
    for key in ("hlo_op", "long_name", "tf_op", "name"):
        value = str(args.get(key, "")).lstrip("%").split(" ")[0]
        if value in kinds:
            return value
    return ""


def summarize_trace(trace: dict, hlo: str, steps: int, top: int = 25) -> dict:
    """Seconds per step of every HLO instruction of ``hlo`` that ran in the Perfetto ``trace`` of ``steps``
    steps, summed by kind (the module docstring), with the ``top`` instructions, the ``top`` that are not
    convolutions or matrix products, and the ``top`` events that name no instruction (the runtime, the
    Python side, or kernels whose instruction the trace does not give). An instruction that shows on
    two lines of the trace at the same start time (a GPU's op line and its stream) counts once."""
    kinds = _hlo_kinds(hlo)
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e]
    by_op: dict = collections.defaultdict(float)
    unmatched: dict = collections.defaultdict(float)
    seen = set()
    for e in events:
        op = _instruction(e, kinds)
        if not op:
            unmatched[e.get("name", "")] += e["dur"] / 1e6 / steps
            continue
        if (op, e.get("ts")) in seen:
            continue
        seen.add((op, e.get("ts")))
        by_op[op] += e["dur"] / 1e6 / steps
    by_kind: dict = collections.defaultdict(float)
    for k, v in by_op.items():
        by_kind[_kind(k, kinds)] += v
    total = sum(by_op.values())
    ranked = sorted(by_op.items(), key=lambda kv: -kv[1])

    def rows(items):
        return [{"op": k, "kind": _kind(k, kinds), "s": v, "hlo": _describe(hlo, k)} for k, v in items[:top]]

    return {
        "op_seconds_per_step": total,
        "by_kind_s": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
        "by_kind_share": {k: v / total for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])} if total else {},
        "top_ops": rows(ranked),
        "top_other_ops": rows([kv for kv in ranked if _kind(kv[0], kinds) not in ("convolution", "dot")]),
        "num_ops_traced": len(by_op),
        "unmatched_events_s": dict(sorted(unmatched.items(), key=lambda kv: -kv[1])[:top]),
        "num_events": len(events),
    }


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
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        with jax.profiler.trace(tmp, create_perfetto_trace=True):
            for _ in range(steps):
                ours()
        wall = (time.perf_counter() - t0) / steps
        trace = read_trace(tmp)
    return {
        "bench": "profile_step",
        "model": model,
        "size": size,
        "batch": batch,
        "steps": steps,
        "compile_s": compile_s,
        "step_wall_s": wall,
        **summarize_trace(trace, hlo, steps, top),
    }


def read_trace(directory) -> dict:
    """The Perfetto trace (``*.trace.json.gz``) that ``jax.profiler.trace(directory, create_perfetto_trace=True)`` wrote."""
    files = list(Path(directory).rglob("*.trace.json.gz"))
    if not files:
        raise RuntimeError("the profiler wrote no Perfetto trace")
    return json.loads(gzip.decompress(files[0].read_bytes()))


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
