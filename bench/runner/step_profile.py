"""Where the runner's training step spends its device time: a per-op profile against the roofline (issue 41, item 5).

Builds an experiment's step exactly as ``python -m bench.runner.accelerator`` times its paper steps (the
runner's step and initial state, a synthetic batch of the config's batch spec, one device, donated
state), compiles it, times ``--steps`` steps (median after the first tenth), then traces
``--trace-steps`` more with ``jax.profiler`` and sums the time of every HLO instruction
(:func:`bench.step.op_profile.summarize_trace`): by kind (convolution, dot, reduction fusion,
elementwise fusion, copy / transpose), the top instructions, and the top ones that are neither
convolutions nor matrix products (batch-norm statistics, elementwise passes, layout changes).

Beside it, the roofline of this step on this chip, counted as ``gensim-jax plan`` counts it: the FLOPs
and HBM bytes per step of the compiled program (:func:`program_counts`), the times they need at the chip's peak FLOP/s and HBM
bandwidth (``t_compute = FLOPs / peak``, ``t_memory = bytes / bandwidth``, the step's floor is the larger),
and what the measured step achieves of each (``achieved_hbm_bytes_per_s = bytes / step_s``, its
fraction of the chip's bandwidth). A memory-bound step whose achieved bandwidth is far from the
chip's spends its time in many small passes; one near it needs fewer bytes, not faster kernels.

On a GPU, XLA runs a step's kernels through command buffers by default, and a profile then sees one
call where the kernels were: ``--attribute`` sets ``--xla_gpu_enable_command_buffer=`` in ``XLA_FLAGS``
before the backend starts, so that each kernel is attributed to its instruction (the timed steps then
run without command buffers too; the line says so). A configuration to compare (batch, dtype, XLA
flags) is a second run of the command with other ``--set`` values, ``--batch`` or ``XLA_FLAGS``.

Output: one JSON line (``--out FILE`` appends it), then a readable summary. ``--smoke`` runs the same
code on the CPU with the experiment's small config for 2 + 1 steps (``tests/bench/runner/test_step_profile.py``).

Usage::

    python -m bench.runner.step_profile --set dtype=bfloat16 --attribute          # ResNet-50 paper step, bf16
    python -m bench.runner.step_profile --set dtype=bfloat16 --batch 512
    python -m bench.runner.step_profile --experiment quadrilaterals --smoke
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

if __package__ in (None, ""):  # ``python bench/runner/step_profile.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

COMMAND_BUFFERS_OFF = "--xla_gpu_enable_command_buffer="


def attribute_kernels(environ: Optional[dict] = None) -> bool:
    """Add :data:`COMMAND_BUFFERS_OFF` to ``XLA_FLAGS`` unless it names command buffers already; True when
    it was added. Must run before JAX starts its backend (the flags are read once)."""
    env = os.environ if environ is None else environ
    flags = env.get("XLA_FLAGS", "")
    if "xla_gpu_enable_command_buffer" in flags:
        return False
    env["XLA_FLAGS"] = f"{flags} {COMMAND_BUFFERS_OFF}".strip()
    return True


def profile_runner_step(
    experiment: str = "imagenet_hierarchy",
    config_name: Optional[str] = None,
    overrides: Sequence[str] = (),
    batch: Optional[int] = None,
    steps: int = 20,
    trace_steps: int = 3,
    top: int = 20,
    smoke: bool = False,
) -> dict:
    """The profile line of ``experiment``'s step (module docstring) on the first device of the default backend."""
    import jax

    from bench.runner import accelerator as acc
    from gensim_jax import experiments, parallel
    from gensim_jax.commands.overrides import parse_overrides
    from gensim_jax.planning.chips import chip_for_device_kind

    if steps < 1 or trace_steps < 0:
        raise ValueError(f"steps must be >= 1 and trace_steps >= 0, got {steps} and {trace_steps}")
    exp = experiments.load(experiment)
    cfg_name = config_name or (acc._small_config_name(exp) if smoke else exp.default_config())
    config = exp.get_config(cfg_name, **parse_overrides(exp.Config, list(overrides), experiment=exp.name))
    arm = exp.arms(config)[0]
    gb = int(batch or config.batch_size)
    device = jax.devices()[0]
    mesh = acc._mesh([device])
    step, state, objective, abstract_batch = acc._build(exp, config, arm, config.seed, global_batch=gb)
    state = parallel.place_state(state, mesh)
    jitted = acc._jit_on(step, mesh, state)
    batches = [parallel.shard_batch(acc._synthetic_batch(abstract_batch, s), mesh) for s in range(2)]
    t0 = time.perf_counter()
    compiled = jitted.lower(state, batches[0], objective).compile()
    compile_s = time.perf_counter() - t0
    state, metrics, warm = acc.time_steps(compiled, state, batches, objective, steps)
    step_s = statistics.median(warm)
    hlo_text = compiled.as_text()  # a ResNet-50 program's text is large: read once, for both
    ops, trace_error = _traced_ops(compiled, hlo_text, state, batches, objective, trace_steps, top)
    flops, hbm_bytes, counts = program_counts(compiled, hlo_text)
    return {
        "bench": "runner_step_profile",
        "experiment": exp.name,
        "config": cfg_name,
        "overrides": list(overrides),
        "arm": str(arm),
        "dtype": config.dtype,
        "device": acc._device_name([device]),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "global_batch": gb,
        "compile_s": compile_s,
        "steps": steps,
        "step_s": step_s,
        "step_s_min": min(warm),
        "images_per_s": gb / step_s,
        "loss_finite": bool(jax.numpy.isfinite(metrics["loss"])),
        "roofline": {
            **roofline_line(flops, hbm_bytes, step_s, chip_for_device_kind(getattr(device, "device_kind", ""))),
            **counts,
        },
        "trace_steps": trace_steps,
        "trace_error": trace_error,
        "device_busy_fraction": ops["op_seconds_per_step"] / step_s if (step_s and trace_steps) else None,
        **ops,
    }


def _traced_ops(
    compiled, hlo_text: str, state, batches, objective, trace_steps: int, top: int
) -> tuple[dict, Optional[str]]:
    """:func:`bench.step.op_profile.summarize_trace` of ``trace_steps`` more steps, and None; with no steps
    to trace, or when the profiler fails (a GPU without CUPTI, say), empty figures and the reason, so that
    the timing and the roofline still come out."""
    import jax

    from bench.step.op_profile import read_trace, summarize_trace

    if trace_steps == 0:
        return summarize_trace({}, "", 1, top), None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            with jax.profiler.trace(tmp, create_perfetto_trace=True):
                for i in range(trace_steps):
                    state, metrics = compiled(state, batches[i % 2], objective)
                jax.block_until_ready(metrics)
            trace = read_trace(tmp)
    except Exception as err:  # the profile is the optional part of the line
        return summarize_trace({}, "", 1, top), f"{type(err).__name__}: {err}"[:500]
    return summarize_trace(trace, hlo_text, trace_steps, top), None


def program_counts(compiled, hlo_text: Optional[str] = None) -> tuple:
    """``(flops, hbm_bytes, sources)`` of the compiled step, counted as ``gensim-jax plan`` counts them:
    :func:`gensim_jax.training.hlo.program_flops` (XLA's GPU cost analysis leaves out the cuDNN and cuBLAS
    calls, two thirds of a ResNet-50 step's FLOPs; they are counted from the HLO) and
    :func:`gensim_jax.training.hlo.hbm_bytes` (each kernel reads its operands and writes its result once),
    beside XLA's own ``bytes accessed`` where the backend gives one."""
    from gensim_jax.training import hlo

    mod = hlo.parse_hlo(compiled.as_text() if hlo_text is None else hlo_text)
    fl = hlo.program_flops(compiled, mod)
    try:
        cost = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - a backend without a cost analysis
        cost = None
    cost = (cost[0] if cost else {}) if isinstance(cost, (list, tuple)) else (cost or {})
    xla_bytes = cost.get("bytes accessed")
    return (
        fl.flops,
        hlo.hbm_bytes(mod),
        {
            "flops_source": fl.source,
            "hbm_bytes_source": "the compiled HLO: each kernel reads its operands and writes its result once",
            "xla_bytes_accessed": None if xla_bytes is None else float(xla_bytes),
        },
    )


def roofline_line(flops, hbm_bytes, step_s: float, chip) -> dict:
    """The step's FLOPs and HBM bytes (:func:`program_counts`) against ``chip``'s peaks
    (a :class:`gensim_jax.planning.chips.Chip`; None, e.g. a CPU: the achieved rates alone)."""
    out = {
        "chip": None if chip is None else chip.name,
        "flops_per_step": flops,
        "hbm_bytes_per_step": hbm_bytes,
        "achieved_flops_per_s": None if flops is None else flops / step_s,
        "achieved_hbm_bytes_per_s": None if hbm_bytes is None else hbm_bytes / step_s,
    }
    if chip is not None:
        t_compute = None if flops is None else flops / chip.peak_bf16_flops
        t_memory = None if hbm_bytes is None else hbm_bytes / chip.hbm_bytes_per_s
        floors = [t for t in (t_compute, t_memory) if t is not None]
        out.update(
            peak_flops_per_s=chip.peak_bf16_flops,
            hbm_bytes_per_s=chip.hbm_bytes_per_s,
            t_compute_s=t_compute,
            t_memory_s=t_memory,
            bound=None if len(floors) < 2 else ("memory" if t_memory >= t_compute else "compute"),
            step_over_floor=step_s / max(floors) if floors else None,
            hbm_fraction=None if hbm_bytes is None else hbm_bytes / step_s / chip.hbm_bytes_per_s,
            mfu=None if flops is None else flops / step_s / chip.peak_bf16_flops,
        )
    return out


def summary(line: dict) -> str:
    """The profile line as a few readable lines."""
    r = line["roofline"]
    out = [
        f"{line['experiment']} {line['config']} {line['dtype']} batch {line['global_batch']} on {line['device']}: "
        f"step {line['step_s'] * 1e3:.1f} ms ({line['images_per_s']:,.0f} img/s), compile {line['compile_s']:.0f} s",
    ]
    if r.get("hbm_bytes_per_step") is not None and r.get("flops_per_step") is not None:
        out.append(
            f"  per step: {r['flops_per_step'] / 1e9:,.1f} GFLOP and {r['hbm_bytes_per_step'] / 1e9:.2f} GB of memory "
            f"traffic per step; achieved {r['achieved_hbm_bytes_per_s'] / 1e9:,.0f} GB/s"
            + (
                f" = {100 * r['hbm_fraction']:.0f}% of HBM, MFU {100 * r['mfu']:.0f}%; floor "
                f"{1e3 * max(r['t_compute_s'], r['t_memory_s']):.1f} ms ({r['bound']}-bound), step {r['step_over_floor']:.2f}x it"
                if r.get("bound") is not None
                else ""
            )
        )
    if line.get("trace_error"):
        out.append(f"  no profile: {line['trace_error']}")
        return "\n".join(out)
    if not line["trace_steps"]:
        return "\n".join(out)
    busy = line.get("device_busy_fraction")
    out.append(
        f"  ops {line['op_seconds_per_step'] * 1e3:.1f} ms a step over {line['num_ops_traced']} instructions"
        + ("" if busy is None else f" ({100 * busy:.0f}% of the step)")
    )
    for k, v in line["by_kind_s"].items():
        out.append(f"  {k:20s} {v * 1e3:8.2f} ms  {100 * line['by_kind_share'][k]:5.1f}%")
    out.append("  largest instructions that are not convolutions or products:")
    for o in line["top_other_ops"][:10]:
        out.append(f"  {o['s'] * 1e3:8.2f} ms  {o['kind']:20s} {o['op']}  {o['hlo'][:160]}")
    if not line["num_ops_traced"]:
        out.append("  no event named an instruction; the largest events:")
        for k, v in list(line["unmatched_events_s"].items())[:10]:
            out.append(f"  {v * 1e3:8.2f} ms  {k[:120]}")
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--experiment", default="imagenet_hierarchy")
    p.add_argument("--config", default=None, help="default: the experiment's default (paper); --smoke: its small one")
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="config overrides, as gensim-jax train")
    p.add_argument("--batch", type=int, default=None, help="global batch (default: the config's)")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--trace-steps", type=int, default=3, help="steps to trace (0: timing and roofline only)")
    p.add_argument("--top", type=int, default=20)
    p.add_argument("--attribute", action="store_true", help="GPU: command buffers off, so kernels name their ops")
    p.add_argument("--smoke", action="store_true", help="the small config, 2 steps, 1 traced (a CPU run)")
    p.add_argument("--out", default=None, help="append the JSON line to this file")
    a = p.parse_args(argv)
    if a.attribute:
        attribute_kernels()
    if a.smoke:
        a.steps, a.trace_steps = min(a.steps, 2), min(a.trace_steps, 1)
    line = profile_runner_step(a.experiment, a.config, a.set, a.batch, a.steps, a.trace_steps, a.top, a.smoke)
    line["command_buffers_off"] = COMMAND_BUFFERS_OFF in line["xla_flags"]
    text = json.dumps(line, default=float)
    print(text)
    if a.out:
        with open(a.out, "a") as f:
            f.write(text + "\n")
    print(summary(line), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
