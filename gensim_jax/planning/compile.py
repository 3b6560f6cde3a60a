"""Lower and compile a step for a target topology without its hardware, and read what the compiler reports.

:func:`compile_step` takes the step function (not jitted), abstract arguments
(``jax.ShapeDtypeStruct`` pytrees) and shardings on a mesh of compile-only devices
(:func:`gensim_jax.planning.topology.build_devices`), compiles it with ``jax.jit(...).lower().compile()``
and returns a :class:`CompiledStep` holding:

* from the compiler: ``memory_analysis()`` (per-device argument, output, aliased, temporary and code
  bytes), ``cost_analysis()`` (FLOPs and bytes accessed per device, when the backend gives them;
  the XLA GPU compiler gives none) and, when the compiler refuses the program for lack of memory,
  its message;
* from the compiled HLO text (:mod:`gensim_jax.training.hlo`): the collectives with their bytes,
  an HBM-traffic estimate, the matmul/convolution FLOPs and the largest arrays.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
from typing import Any, Callable, Optional, Sequence

import jax
import numpy as np

from gensim_jax.training import hlo

__all__ = ["CompiledStep", "compile_step", "per_device_bytes", "parse_oom"]


@dataclasses.dataclass
class CompiledStep:
    """What one ahead-of-time compile says about a step (all figures per device).

    ``oom`` is the compiler's out-of-memory message when it refused the program (then the memory,
    cost and HLO fields are empty and ``oom_required_bytes`` / ``oom_available_bytes`` are parsed
    from the message where it states them).
    """

    platform: str
    num_devices: int
    compile_seconds: float
    memory: dict = dataclasses.field(default_factory=dict)
    cost: dict = dataclasses.field(default_factory=dict)
    flops: Optional[float] = None
    flops_source: str = ""
    bytes_accessed: Optional[float] = None
    hbm_bytes_estimate: Optional[float] = None
    matmul_flops: Optional[float] = None
    collectives: list = dataclasses.field(default_factory=list)
    largest_arrays: list = dataclasses.field(default_factory=list)
    largest_values: list = dataclasses.field(default_factory=list)
    compiler_seconds_estimate: Optional[float] = None
    oom: Optional[str] = None
    oom_required_bytes: Optional[float] = None
    oom_available_bytes: Optional[float] = None
    hlo_text: str = dataclasses.field(default="", repr=False)
    #: True when these figures come from a :class:`~gensim_jax.planning.cache.PlanCache` entry (no compile
    #: ran; ``compile_seconds`` is then the time of the compile that made the entry).
    reused: bool = False
    #: When the compile behind these figures ran (ISO 8601, UTC); None when not cached.
    compiled_at: Optional[str] = None
    #: The cache key (program + target), when a cache was used.
    cache_key: Optional[str] = None


_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _size(s: str) -> float:
    m = re.match(r"([0-9.]+)\s*([KMGT]?)i?B?", s.strip())
    return float(m.group(1)) * _UNITS[m.group(2)] if m else float("nan")


def parse_oom(msg: str) -> tuple[Optional[float], Optional[float]]:
    """(required, available) bytes from an XLA out-of-memory message, where it states them."""
    m = re.search(r"\(([0-9.]+[KMGT]?)\)\s*exceeds available HBM\s*\(([0-9.]+[KMGT]?)\)", msg)
    if m:
        return _size(m.group(1)), _size(m.group(2))
    m = re.search(r"Used\s+([0-9.]+[KMGT]?)\s+of\s+([0-9.]+[KMGT]?)\s+hbm", msg)
    if m:
        return _size(m.group(1)), _size(m.group(2))
    return None, None


def _is_oom(e: BaseException) -> bool:
    s = str(e)
    return "RESOURCE_EXHAUSTED" in s or "Ran out of memory" in s or "out of memory" in s.lower()


def per_device_bytes(tree, shardings) -> float:
    """Bytes one device holds of ``tree`` (abstract or concrete arrays) under ``shardings`` (a matching pytree
    or one sharding for all leaves)."""
    leaves = jax.tree.leaves(tree)
    if isinstance(shardings, jax.sharding.Sharding):
        shs = [shardings] * len(leaves)
    else:
        shs = jax.tree.leaves(shardings, is_leaf=lambda x: isinstance(x, jax.sharding.Sharding))
        if len(shs) != len(leaves):
            raise ValueError(f"{len(leaves)} leaves but {len(shs)} shardings")
    total = 0.0
    for x, sh in zip(leaves, shs):
        shape = tuple(np.shape(x))
        local = sh.shard_shape(shape) if shape else ()
        total += float(np.prod(local, dtype=np.float64)) * np.dtype(jax.numpy.result_type(x)).itemsize
    return total


@contextlib.contextmanager
def _without_persistent_cache():
    """No entry of JAX's persistent compilation cache written in the block (``JAX_COMPILATION_CACHE_DIR``
    set by the user or the test session): a program compiled for abstract devices (a topology, no
    client) can be written but not read back, so the next plan of the same step would warn for every
    entry it found. JAX decides once per process whether the cache is used, so the block raises the
    minimum compile time an entry needs instead of turning the cache off."""
    key = "jax_persistent_cache_min_compile_time_secs"
    before = getattr(jax.config, key)
    jax.config.update(key, float("inf"))
    try:
        yield
    finally:
        jax.config.update(key, before)


def compile_step(
    fn: Callable,
    args: Sequence[Any],
    in_shardings,
    out_shardings,
    *,
    num_devices: int,
    donate_argnums: Sequence[int] = (0,),
    keep_hlo: bool = False,
    cache=None,
    target: Optional[dict] = None,
) -> CompiledStep:
    """Compile ``jax.jit(fn, in_shardings, out_shardings, donate_argnums).lower(*args)`` for the devices of
    the shardings' mesh and collect the compiler's analyses (see the module docstring).

    An out-of-memory refusal by the compiler is returned in ``oom`` rather than raised; any other
    compile error propagates.

    With a ``cache`` (:class:`~gensim_jax.planning.cache.PlanCache`) and the ``target``'s description
    (:func:`~gensim_jax.planning.cache.target_description`), the program is lowered, and an entry for
    (its StableHLO text, ``target``) is returned without compiling (``reused`` set); otherwise the
    compile runs and its analyses are stored under that key.
    """
    jitted = jax.jit(fn, in_shardings=in_shardings, out_shardings=out_shardings, donate_argnums=tuple(donate_argnums))
    t0 = time.perf_counter()
    lowered = jitted.lower(*args)
    platform = ""
    key = None
    if cache is not None:
        key = cache.key(lowered.as_text(), target or {})
        hit = cache.load(key, need_hlo=keep_hlo)
        if hit is not None:
            return hit
    result = _compile_lowered(lowered, t0, platform, num_devices, keep_hlo or key is not None)
    if key is not None:
        cache.store(key, result, hlo_text=result.hlo_text)
        if not keep_hlo:
            result.hlo_text = ""
    return result


def _compile_lowered(lowered, t0: float, platform: str, num_devices: int, keep_hlo: bool) -> CompiledStep:
    try:
        with _without_persistent_cache():
            compiled = lowered.compile()
    except Exception as e:  # noqa: BLE001 - XLA raises JaxRuntimeError / XlaRuntimeError
        if not _is_oom(e):
            raise
        req, avail = parse_oom(str(e))
        first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
        return CompiledStep(
            platform=platform,
            num_devices=num_devices,
            compile_seconds=time.perf_counter() - t0,
            oom=first,
            oom_required_bytes=req,
            oom_available_bytes=avail,
        )
    dt = time.perf_counter() - t0
    out = CompiledStep(platform=platform, num_devices=num_devices, compile_seconds=dt)
    ma = compiled.memory_analysis()
    if ma is not None:
        mem = {
            k: int(getattr(ma, k))
            for k in (
                "argument_size_in_bytes",
                "output_size_in_bytes",
                "alias_size_in_bytes",
                "temp_size_in_bytes",
                "generated_code_size_in_bytes",
            )
        }
        mem["total_bytes"] = (
            mem["argument_size_in_bytes"]
            + mem["output_size_in_bytes"]
            - mem["alias_size_in_bytes"]
            + mem["temp_size_in_bytes"]
            + mem["generated_code_size_in_bytes"]
        )
        out.memory = mem
    ca = compiled.cost_analysis()  # a dict (or None where the backend gives none)
    if ca:
        out.cost = {
            k: float(v) for k, v in ca.items() if k in ("flops", "bytes accessed", "transcendentals", "optimal_seconds")
        }
        if "bytes accessed" in ca:
            out.bytes_accessed = float(ca["bytes accessed"])
        if "optimal_seconds" in ca:
            out.compiler_seconds_estimate = float(ca["optimal_seconds"])
    text = compiled.as_text()
    mod = hlo.parse_hlo(text)
    out.collectives = hlo.collectives(mod, num_devices)
    out.hbm_bytes_estimate = hlo.hbm_bytes(mod)
    out.matmul_flops = hlo.matmul_flops(mod)
    out.largest_arrays = hlo.largest_arrays(mod)
    out.largest_values = hlo.largest_arrays(mod, include_fused=True)
    fl = hlo.program_flops(compiled, mod)
    out.flops, out.flops_source = fl.flops, fl.source
    if keep_hlo:
        out.hlo_text = text
    return out
