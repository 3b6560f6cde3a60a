"""A small parser of compiled (post-optimisation) HLO text: collectives, HBM traffic, matmul FLOPs.

The planner reads the per-device program that XLA compiled (``compiled.as_text()``) to find what
the compiler's own analyses do not give, or give differently on every backend:

* the collectives (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute) with
  the bytes of the array each moves, their replica-group size and the bytes a ring algorithm puts
  on each device's links (all-reduce ``2 (g-1)/g S``; all-gather / reduce-scatter / all-to-all
  ``(g-1)/g S`` with ``S`` the full, gathered array; collective-permute ``S``);
* an HBM traffic estimate: every top-level instruction (a fusion, a library call, a collective,
  a copy) reads its operands from and writes its result to device memory once; arrays the TPU
  compiler placed in on-chip memory (layout memory space ``S(1)``) are not counted;
* the FLOPs of matrix multiplications and convolutions (``dot``, ``convolution`` and the cuBLAS /
  cuDNN custom calls): ``2 x (output elements) x (contracted elements)``.  :func:`program_flops`
  adds the library calls' count to the compiler's cost analysis where that leaves them out (XLA's
  GPU cost analysis: 0.33 GFLOP counted per ResNet-50 training image on an H100 against about 24),
  and uses the count alone where the backend gives none (the compile-only GPU plug-in of jax 0.10).

The module sits in ``training`` because a run's MFU (:mod:`gensim_jax.training.timing`) and the
planner (:mod:`gensim_jax.planning`, which imports training) count FLOPs the same way.

Instructions inside a ``while`` body count ``known_trip_count`` times when the compiler recorded
it, else once.  These are estimates from the program text, not measurements.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from typing import Optional

__all__ = [
    "Instruction",
    "HloModule",
    "parse_hlo",
    "array_bytes",
    "Collective",
    "collectives",
    "hbm_bytes",
    "matmul_flops",
    "matmul_flops_by_kind",
    "ProgramFlops",
    "program_flops",
    "largest_arrays",
    "COLLECTIVE_OPS",
]

_DTYPE_BYTES = {
    "pred": 1,
    "s4": 0.5,
    "u4": 0.5,
    "s8": 1,
    "u8": 1,
    "s16": 2,
    "u16": 2,
    "s32": 4,
    "u32": 4,
    "s64": 8,
    "u64": 8,
    "f16": 2,
    "bf16": 2,
    "f32": 4,
    "f64": 8,
    "c64": 8,
    "c128": 16,
    "f8e4m3fn": 1,
    "f8e5m2": 1,
    "f8e4m3": 1,
    "f8e5m2fnuz": 1,
    "f8e4m3fnuz": 1,
    "f8e4m3b11fnuz": 1,
    "f4e2m1fn": 0.5,
    "f8e8m0fnu": 1,
    "token": 0,
}
_ARRAY = re.compile(r"\b(" + "|".join(sorted(_DTYPE_BYTES, key=len, reverse=True)) + r")\[([0-9,]*)\](\{[^{}]*\})?")
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\))?\s*->.*\{\s*$")
_INSTR = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_CALLS = re.compile(r"\b(body|condition|calls|to_apply|true_computation|false_computation)=%?([\w.\-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")

COLLECTIVE_OPS = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "collective-broadcast",
    "ragged-all-to-all",
)
_NO_TRAFFIC = {
    "parameter",
    "get-tuple-element",
    "tuple",
    "constant",
    "bitcast",
    "after-all",
    "partition-id",
    "replica-id",
    "while",
    "conditional",
    "call",
    "opt-barrier",
    "add-dependency",
    "domain",
    "iota",
}


@dataclasses.dataclass
class Instruction:
    name: str
    type_str: str
    opcode: str
    operands: list
    attrs: str
    computation: str


@dataclasses.dataclass
class HloModule:
    computations: dict  # name -> list[Instruction]
    entry: str
    fusion_bodies: set  # computations that are not kernels of their own: fusion bodies, async wrappers, reducers
    multiplier: dict  # computation -> how many times it runs per step (while trip counts)


def _match_paren(s: str, start: int) -> int:
    depth = 0
    for i in range(start, len(s)):
        c = s[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return len(s) - 1


def array_bytes(type_str: str, skip_memory_space: bool = False) -> float:
    """Total bytes of the arrays in an HLO type string (tuples summed).

    ``skip_memory_space``: leave out arrays whose layout names a non-default memory space
    (``S(n)``, n > 0: TPU on-chip memory).
    """
    total = 0.0
    for dt, dims, layout in _ARRAY.findall(type_str):
        if skip_memory_space and layout and re.search(r"S\([1-9]\d*\)", layout):
            continue
        n = 1
        for d in dims.split(","):
            if d:
                n *= int(d)
        total += n * _DTYPE_BYTES[dt]
    return total


def _tuple_elements(type_str: str) -> list[str]:
    s = type_str.strip()
    if not s.startswith("("):
        return [s]
    inner = s[1 : _match_paren(s, 0)]
    out, depth, cur = [], 0, ""
    for c in inner:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur)
    return [re.sub(r"/\*.*?\*/", "", e).strip() for e in out]


def _parse_instruction(line: str, comp: str) -> Optional[Instruction]:
    m = _INSTR.match(line)
    if not m:
        return None
    name, rest = m.group(2), m.group(3)
    if rest.startswith("("):
        end = _match_paren(rest, 0)
        type_str, rest = rest[: end + 1], rest[end + 1 :].lstrip()
    else:
        sp = rest.find(" ")
        if sp < 0:
            return None
        type_str, rest = rest[:sp], rest[sp + 1 :].lstrip()
    om = re.match(r"([a-z][a-z0-9\-]*)\(", rest)
    if not om:
        return None
    opcode = om.group(1)
    end = _match_paren(rest, om.end() - 1)
    operands = re.findall(r"%([\w.\-]+)", rest[om.end() : end])
    return Instruction(name, type_str, opcode, operands, rest[end + 1 :], comp)


def parse_hlo(text: str) -> HloModule:
    """Parse ``compiled.as_text()`` into computations, find the entry and the per-computation run counts."""
    comps: dict[str, list] = {}
    entry, cur = None, None
    for line in text.splitlines():
        if cur is None:
            m = _HEADER.match(line.strip())
            if m and not line.startswith(" "):
                cur = m.group(2)
                comps[cur] = []
                if m.group(1):
                    entry = cur
            continue
        if line.strip() == "}":
            cur = None
            continue
        ins = _parse_instruction(line, cur)
        if ins is not None:
            comps[cur].append(ins)
    if entry is None and comps:
        entry = list(comps)[-1]
    fusion_bodies = set()
    children = defaultdict(list)  # comp -> [(child, factor)]
    for cname, instrs in comps.items():
        for ins in instrs:
            trip = 1
            if ins.opcode == "while":
                t = re.search(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)', ins.attrs)
                trip = int(t.group(1)) if t else 1
            for kind, child in _CALLS.findall(ins.attrs):
                # fusion bodies, async wrappers and reducers do not run as kernels of their own
                if (ins.opcode in ("fusion", "async-start") and kind == "calls") or kind == "to_apply":
                    fusion_bodies.add(child)
                children[cname].append((child, trip if kind in ("body", "condition") else 1))
            for b in _BRANCHES.findall(ins.attrs):
                for child in re.findall(r"%?([\w.\-]+)", b):
                    children[cname].append((child, 1))
    mult = {entry: 1} if entry else {}
    stack = [entry] if entry else []
    while stack:
        c = stack.pop()
        for child, f in children.get(c, []):
            v = mult[c] * f
            if child in comps and mult.get(child, 0) < v:
                mult[child] = v
                stack.append(child)
    return HloModule(comps, entry, fusion_bodies, mult)


@dataclasses.dataclass
class Collective:
    """One collective of the compiled program.

    Attributes:
      op: ``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all`` or ``collective-permute``.
      name: the HLO instruction.
      shape: its result type (abbreviated).
      bytes: bytes of the full array the collective works on (all-gather: the gathered output;
        reduce-scatter: the input), per device, per execution.
      group_size: devices in one replica group.
      wire_bytes: bytes one device sends under a ring algorithm, per execution (see module doc).
      count: executions per step (while-loop trip count, else 1).
      op_name: the JAX operation it came from (metadata), when recorded.
    """

    op: str
    name: str
    shape: str
    bytes: float
    group_size: int
    wire_bytes: float
    count: int
    op_name: str = ""

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _group_size(attrs: str, num_devices: int) -> int:
    m = re.search(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}", attrs)
    if m:
        sizes = dict((k.strip("'\" "), int(v)) for k, v in re.findall(r"'?([\w]+)'?\s*=\s*(\d+)", m.group(1)))
        names = [x.strip("'\" ") for x in m.group(2).split(",") if x.strip()]
        g = 1
        for n in names:
            g *= sizes.get(n, 1)
        return max(g, 1)
    m = re.search(r"replica_groups=\[([0-9,]+)\]<=", attrs)
    if m:
        return int(m.group(1).split(",")[-1])
    m = re.search(r"replica_groups=\{\{([0-9,]*)\}", attrs)
    if m:
        return max(1, len([x for x in m.group(1).split(",") if x]))
    return num_devices


def _op_name(attrs: str) -> str:
    m = re.search(r'op_name="([^"]*)"', attrs)
    return m.group(1) if m else ""


def collectives(mod: HloModule, num_devices: int) -> list[Collective]:
    """The collectives of the program (duplicates of one collective in async wrappers counted once)."""
    seen, out = set(), []
    for cname, instrs in mod.computations.items():
        for ins in instrs:
            op = ins.opcode
            base = op[:-6] if op.endswith("-start") else op
            if base not in COLLECTIVE_OPS or op.endswith("-done"):
                continue
            ch = re.search(r"channel_id=(\d+)", ins.attrs)
            key = (base, ch.group(1)) if ch else (cname, ins.name)
            if key in seen:
                continue
            seen.add(key)
            t = ins.type_str
            if op.endswith("-start") and base != "all-reduce":
                els = _tuple_elements(t)  # async start: (operands, outputs, context...)
                t = els[1] if len(els) > 1 else t
            size = array_bytes(t)
            g = _group_size(ins.attrs, num_devices)
            if base == "reduce-scatter":
                size *= g
            if base == "all-reduce":
                wire = 2.0 * (g - 1) / g * size
            elif base == "collective-permute":
                wire = size
            else:
                wire = (g - 1) / g * size
            short = t if len(t) <= 80 else t[:77] + "..."
            out.append(
                Collective(
                    base,
                    ins.name,
                    re.sub(r"\{[^{}]*\}", "", short),
                    size,
                    g,
                    wire,
                    mod.multiplier.get(cname, 1),
                    _op_name(ins.attrs),
                )
            )
    return out


def _top_level(mod: HloModule):
    """(computation, instruction) pairs that run as separate kernels (not inside a fusion)."""
    for cname, instrs in mod.computations.items():
        if cname in mod.fusion_bodies or cname not in mod.multiplier:
            continue
        for ins in instrs:
            yield cname, ins


def hbm_bytes(mod: HloModule) -> float:
    """HBM traffic estimate: each top-level instruction reads its operands and writes its result once."""
    total = 0.0
    for cname, instrs in mod.computations.items():
        if cname in mod.fusion_bodies or cname not in mod.multiplier:
            continue
        shapes = {ins.name: ins.type_str for ins in instrs}
        for ins in instrs:
            if ins.opcode in _NO_TRAFFIC or ins.opcode.endswith("-done"):
                continue
            if re.search(r'custom_call_target="AsyncCollective(Start|Done)"', ins.attrs):
                continue
            b = array_bytes(ins.type_str, skip_memory_space=True)
            for o in ins.operands:
                if o in shapes:
                    b += array_bytes(shapes[o], skip_memory_space=True)
            total += b * mod.multiplier.get(cname, 1)
    return total


def _dims(type_str: str) -> list[int]:
    m = _ARRAY.search(type_str)
    return [int(d) for d in m.group(2).split(",") if d] if m else []


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def matmul_flops(mod: HloModule) -> float:
    """FLOPs of dots and convolutions (including cuBLAS / cuDNN custom calls): ``2 x out x contracted``."""
    return sum(matmul_flops_by_kind(mod))


def matmul_flops_by_kind(mod: HloModule) -> tuple[float, float]:
    """``(native, library)``: the :func:`matmul_flops` of XLA's own ``dot`` / ``convolution``
    instructions and of the cuBLAS / cuDNN custom calls."""
    native = library = 0.0
    for cname, instrs in mod.computations.items():
        if cname not in mod.multiplier:
            continue
        shapes = {ins.name: ins.type_str for ins in instrs}
        for ins in instrs:
            out_t = _tuple_elements(ins.type_str)[0]
            f = 0.0
            if ins.opcode == "dot" or (
                ins.opcode == "custom-call" and re.search(r'custom_call_target="__cublas', ins.attrs)
            ):
                m = re.search(r"lhs_contracting_dims=\{([0-9,]*)\}", ins.attrs)
                idx = [int(x) for x in m.group(1).split(",") if x] if m else None
                if idx is None:
                    m = re.search(r'"lhs_contracting_dimensions"\s*:\s*\[([^\]]*)\]', ins.attrs)
                    idx = [int(x.strip(' "')) for x in m.group(1).split(",") if x.strip()] if m else []
                lhs = _dims(shapes.get(ins.operands[0], "")) if ins.operands else []
                k = _prod(lhs[i] for i in idx if i < len(lhs))
                f = 2.0 * _prod(_dims(out_t)) * k
            elif ins.opcode == "convolution" or (
                ins.opcode == "custom-call" and re.search(r'custom_call_target="__cudnn\$conv', ins.attrs)
            ):
                m = re.search(r"dim_labels=([0-9a-z]+)_([0-9a-z]+)->([0-9a-z]+)", ins.attrs)
                if m and len(ins.operands) > 1:
                    # ``dim_labels`` describe the forward convolution y = conv(x, w); cuDNN's backward
                    # calls keep them: bw-input is dx = f(dy, w), bw-filter is dw = f(x, dy).  All three
                    # do the forward's multiply-adds: |y| x (|w| / output features), the kernel's
                    # input-feature dimension being already divided by feature_group_count.
                    target = re.search(r'custom_call_target="__cudnn\$(conv\w*)"', ins.attrs)
                    target = target.group(1) if target else "conv"
                    if target == "convBackwardInput":
                        y, kern = _dims(shapes.get(ins.operands[0], "")), _dims(shapes.get(ins.operands[1], ""))
                    elif target == "convBackwardFilter":
                        y, kern = _dims(shapes.get(ins.operands[1], "")), _dims(out_t)
                    else:
                        y, kern = _dims(out_t), _dims(shapes.get(ins.operands[1], ""))
                    klab = m.group(2)
                    o = kern[klab.index("o")] if "o" in klab and len(kern) == len(klab) else 1
                    f = 2.0 * _prod(y) * (_prod(kern) / max(o, 1))
            if ins.opcode == "custom-call":
                library += f * mod.multiplier[cname]
            else:
                native += f * mod.multiplier[cname]
    return native, library


@dataclasses.dataclass(frozen=True)
class ProgramFlops:
    """FLOPs of one compiled program on one device (:func:`program_flops`) and where the figure comes
    from: ``source`` names it; ``compiler`` and ``hlo`` are the two counts it was made of (None when
    absent)."""

    flops: Optional[float]
    source: str
    compiler: Optional[float]
    hlo: Optional[float]


def program_flops(compiled, mod: Optional[HloModule] = None) -> ProgramFlops:
    """The FLOPs of a compiled program (``jax.jit(f).lower(...).compile()``), library calls included.

    ``compiler`` is ``compiled.cost_analysis()["flops"]`` (when the backend gives one); ``hlo`` is
    :func:`matmul_flops` of ``compiled.as_text()`` (``2 x out x contracted`` over every dot,
    convolution and cuBLAS / cuDNN call, window taps over padding included).  The figure is:

    * the compiler's, when the program makes no library call (CPU, TPU) or when the compiler's figure
      is at least half of the library calls' count (then it counts them: the HLO count of a
      convolution can exceed the exact one by the taps over its padding, 46% for CORnet-Z at 32 px);
    * the compiler's plus the library calls' count when it is below that: it left them out (XLA's
      GPU cost analysis counts the fusions around cuDNN and cuBLAS calls but not the calls, 0.33 of
      about 24 GFLOP per ResNet-50 training image on an H100);
    * the HLO count when the backend gives no figure (the compile-only GPU plug-in of jax 0.10).

    For an SPMD program it is one device's share.  ``mod``: the program's text already parsed
    (:func:`parse_hlo`), to save a second parse.
    """
    compiler = None
    try:
        ca = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - some backends have no cost analysis
        ca = None
    if isinstance(ca, dict) and "flops" in ca:
        try:
            compiler = float(ca["flops"])
        except (TypeError, ValueError):
            compiler = None
    try:
        native, library = matmul_flops_by_kind(mod if mod is not None else parse_hlo(compiled.as_text()))
    except Exception:  # noqa: BLE001 - a program text this parser cannot read leaves the compiler's figure
        native = library = None
    counted = None if native is None else native + library
    if compiler is None:
        src = "counted from the compiled HLO (dots and convolutions, library calls included)"
        return ProgramFlops(counted, src if counted is not None else "", None, counted)
    if not library or compiler >= 0.5 * library:
        return ProgramFlops(compiler, "compiler cost analysis", compiler, counted)
    src = (
        f"compiler cost analysis ({compiler:.4g}, without library calls) + the cuBLAS/cuDNN calls counted "
        f"from the compiled HLO ({library:.4g})"
    )
    return ProgramFlops(compiler + library, src, compiler, counted)


def _all_instructions(mod: HloModule):
    for cname, instrs in mod.computations.items():
        if cname in mod.multiplier:
            for ins in instrs:
                yield cname, ins


def largest_arrays(mod: HloModule, k: int = 3, include_fused: bool = False) -> list[dict]:
    """The ``k`` largest arrays the program materialises in device memory (top-level results).

    ``include_fused``: also values computed inside fusions (kept in registers / on-chip memory,
    never whole in HBM): the per-device size of every intermediate of the program.
    """
    rows = []
    for _computation, ins in _all_instructions(mod) if include_fused else _top_level(mod):
        if ins.opcode in ("parameter", "tuple", "get-tuple-element", "bitcast", "constant") or ins.opcode.endswith(
            "-done"
        ):
            continue
        for el in _tuple_elements(ins.type_str):
            b = array_bytes(el, skip_memory_space=not include_fused)
            if b:
                rows.append(
                    {
                        "bytes": b,
                        "shape": re.sub(r"\{[^{}]*\}", "", el),
                        "instruction": ins.name,
                        "op_name": _op_name(ins.attrs),
                    }
                )
    rows.sort(key=lambda r: -r["bytes"])
    out, seen = [], set()
    for r in rows:
        key = (r["shape"], r["op_name"])
        if key in seen:
            continue
        seen.add(key)
        out.append(r)
        if len(out) == k:
            break
    return out
