"""Accelerator acceptance run, one command: ``make accel-check`` (``python -m bench.runner.accelerator``).

On a machine with a GPU or TPU it checks, with nothing installed by hand:

(a) **loss curves**: each experiment's small config (``cpu_small``, else its default) trains
    ``--steps`` (20) steps of its first arm on the CPU (``jax.devices("cpu")``); before each step the
    CPU's state is copied to the accelerator, which takes the same step from the same state and batch
    (:func:`one_step_deviations`). Each step's loss must agree, float32 within ``F32_RTOL`` (matmuls
    and convolutions at ``precision="highest"`` so TF32 does not enter) and bfloat16 within
    ``BF16_RTOL`` (``max_t |a_t - b_t| / max(|b_t|, 1)``); the update's deviation and that of two
    free-running curves (which a chaotic config such as quadrilaterals ``cpu_small`` amplifies from
    5e-7 at step 1 to 5e-2 at step 20 with equal programs) are reported beside it;
(b) **paper steps**: the first ``--paper-steps`` (50) steps of each ``paper`` config, on synthetic
    batches of the config's batch spec (the data of a paper config is not needed for timing): compile
    time, median step time, images/s, FLOPs per step (XLA's cost analysis of the compiled step),
    MFU against the chip's dense bf16 peak, peak device memory, each against what the planner
    (``gensim_jax.planning.plan_step``, the code of ``gensim-jax plan``) predicts for this device:
    its memory and its roofline step time. A paper batch that the planner says does not fit one
    device is halved until it does (the line says which batch ran);
(c) **several devices**: with more than one local device, the small config on a mesh over all of
    them against one device (float32 tolerance).

Output: one JSON line per measurement on stdout (``--out FILE`` also writes them), then a Markdown
table (``--table FILE`` also writes it) for docs/PERFORMANCE.md. Exit status 1 when a comparison
misses its tolerance (``--strict``), else 0.

Without an accelerator (a CPU-only machine) ``--smoke`` runs the same code with small sizes: the
"accelerator" is a second CPU device when there is one (``XLA_FLAGS=--xla_force_host_platform_device_count=2``)
and else the same CPU device again, the paper step is the small config's step (a paper config
compiles for minutes on a CPU) for 3 steps, and the planner's roofline is absent (no chip in its
table; memory is still the compiler's). ``tests/bench/runner/test_accelerator.py`` runs it in ``make test``
so the command cannot rot.

Usage::

    python -m bench.runner.accelerator                          # all experiments, full sizes
    python -m bench.runner.accelerator --experiments gaussian_mixture quadrilaterals --steps 20 --paper-steps 50
    python -m bench.runner.accelerator --smoke --experiments gaussian_mixture
    python -m bench.runner.accelerator --out accel.jsonl --table accel.md
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

if __package__ in (None, ""):  # ``python bench/runner/accelerator.py``
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import jax
import numpy as np

#: Largest relative deviation of two float32 loss curves (accelerator vs CPU; several devices vs one).
F32_RTOL = 2e-2
#: The same for bfloat16 compute (parameters, optimizer and loss stay float32).
BF16_RTOL = 1e-1
#: The small config of each experiment, in order of preference.
SMALL_CONFIGS = ("cpu_small",)
#: Experiments whose paper config needs data that is not on the machine are still timed: the paper
#: step runs on synthetic batches of its batch spec.

__all__ = ["F32_RTOL", "BF16_RTOL", "loss_curve", "compare_curves", "paper_step", "main", "markdown_table"]


# ----------------------------------------------------------------------------- devices


def accelerator_and_cpu(smoke: bool) -> tuple[jax.Device, jax.Device, str]:
    """``(accelerator, cpu, note)``: the default backend's first device and the first CPU device.

    With no accelerator: ``smoke`` uses a second CPU device (or the first again) as the stand-in; without
    ``smoke`` it is an error (the full run means nothing on a CPU).
    """
    cpu = jax.devices("cpu")
    default = jax.devices()
    if default[0].platform != "cpu":
        return default[0], cpu[0], ""
    if not smoke:
        raise SystemExit(
            "bench.runner.accelerator: no GPU or TPU here (jax.devices() is CPU only); use --smoke for the CPU smoke run"
        )
    stand_in = cpu[1] if len(cpu) > 1 else cpu[0]
    return stand_in, cpu[0], f"smoke: no accelerator; {stand_in} stands in for it"


def _mesh(devices: Sequence[jax.Device]):
    from gensim_jax import parallel

    return parallel.make_mesh(data=len(devices), fsdp=1, devices=list(devices))


def _device_name(devices: Sequence[jax.Device]) -> str:
    d = devices[0]
    kind = getattr(d, "device_kind", d.platform)
    return f"{len(devices)}x {kind}" if len(devices) > 1 else f"{d.platform}:{d.id} ({kind})"


# ----------------------------------------------------------------------------- experiments


def _small_config_name(experiment) -> str:
    for name in SMALL_CONFIGS:
        if name in experiment.CONFIGS:
            return name
    return experiment.default_config()


def _build(experiment, config, arm: str, seed: int, global_batch: Optional[int] = None):
    """``(step, state, objective, spec)``: the runner's step (``abstract_step_inputs``) and a concrete
    initial state built like the runner's (the experiment's initial variables, the config's optimizer)."""
    from gensim_jax.training.runner import abstract_step_inputs
    from gensim_jax.training.state import create_train_state

    step, (abstract_state, batch, _) = abstract_step_inputs(experiment, config, arm, global_batch=global_batch)
    spec = experiment.arm(arm, config, None)
    state = create_train_state(spec.model, abstract_state.tx, jax.random.key(seed), variables=spec.init_variables(seed))
    state = state.replace(apply_fn=abstract_state.apply_fn)  # the compute-dtype model, as the runner trains
    return step, state, spec.objective, batch


def _jit_on(step, mesh, state):
    from gensim_jax import parallel

    return parallel.jit_sharded(step, mesh, state, fsdp=False, donate=True)


def loss_curve(
    experiment, config, arm: str, devices: Sequence[jax.Device], num_steps: int, batches: list, seed: int = 0
) -> dict:
    """Train ``num_steps`` steps of ``arm`` on a mesh over ``devices`` with the given host batches; the
    per-step losses and the seconds (compile included in ``first_step_s``)."""
    from gensim_jax import parallel

    mesh = _mesh(devices)
    step, state, objective, _ = _build(experiment, config, arm, seed)
    state = parallel.place_state(state, mesh)
    jitted = _jit_on(step, mesh, state)
    losses, times = [], []
    for i in range(num_steps):
        batch = parallel.shard_batch(batches[i % len(batches)], mesh)
        t0 = time.perf_counter()
        state, metrics = jitted(state, batch, objective)
        losses.append(float(jax.device_get(metrics["loss"])))
        times.append(time.perf_counter() - t0)
    return {
        "losses": losses,
        "first_step_s": times[0],
        "step_s": statistics.median(times[1:]) if len(times) > 1 else times[0],
    }


def compare_curves(a: Sequence[float], b: Sequence[float]) -> float:
    """``max_t |a_t - b_t| / max(|b_t|, 1)``; ``inf`` when a value is not finite in one curve only."""
    worst = 0.0
    for x, y in zip(a, b):
        if not (math.isfinite(x) and math.isfinite(y)):
            if math.isfinite(x) != math.isfinite(y):
                return float("inf")
            continue
        worst = max(worst, abs(x - y) / max(abs(y), 1.0))
    return worst


def one_step_deviations(
    experiment, config, arm: str, accel: jax.Device, cpu: jax.Device, num_steps: int, batches: list, seed: int = 0
) -> dict:
    """Each step from the same state: the CPU trains ``num_steps`` steps; before each, its state is copied
    to the accelerator, which takes that one step too.  Returns the per-step loss deviation
    ``|a_t - b_t| / max(|b_t|, 1)`` and the update's relative deviation ``||Δa_t - Δb_t|| / ||Δb_t||``
    (Δ: the step's change of the parameters).

    Unlike :func:`compare_curves` of two free-running curves, this does not let a chaotic config (Adam's
    first steps amplify rounding, so two equal programs drift apart over 20 steps) hide or fake a real
    difference: each step is compared from identical inputs.
    """
    from gensim_jax import parallel

    mesh_a, mesh_c = _mesh([accel]), _mesh([cpu])
    step, state, objective, _ = _build(experiment, config, arm, seed)
    state = parallel.place_state(state, mesh_c)
    on_cpu = parallel.jit_sharded(step, mesh_c, state, fsdp=False, donate=False)
    on_acc = parallel.jit_sharded(step, mesh_a, parallel.place_state(state, mesh_a), fsdp=False, donate=False)
    loss_dev, update_dev = [], []
    flat = lambda t: np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in jax.tree.leaves(t)])  # noqa: E731
    for i in range(num_steps):
        host = batches[i % len(batches)]
        state_a = parallel.place_state(state, mesh_a)
        new_a, m_a = on_acc(state_a, parallel.shard_batch(host, mesh_a), objective)
        new_c, m_c = on_cpu(state, parallel.shard_batch(host, mesh_c), objective)
        la, lc = float(jax.device_get(m_a["loss"])), float(jax.device_get(m_c["loss"]))
        loss_dev.append(abs(la - lc) / max(abs(lc), 1.0) if math.isfinite(la) and math.isfinite(lc) else float("inf"))
        p0, pa, pc = (
            flat(jax.device_get(state.params)),
            flat(jax.device_get(new_a.params)),
            flat(jax.device_get(new_c.params)),
        )
        du = np.linalg.norm(pc - p0)
        update_dev.append(float(np.linalg.norm(pa - pc) / du) if du > 0 else 0.0)
        state = new_c
    return {"loss_deviation": loss_dev, "update_deviation": update_dev}


_BATCHES: dict = {}


def _host_batches(experiment, config, arm: str, seed: int, num: int) -> list:
    """The first ``num`` host batches of ``arm`` (prepared once per experiment, config and arm: the compute
    dtype does not change the data)."""
    import dataclasses

    key = (experiment.name, json.dumps(dataclasses.asdict(dataclasses.replace(config, dtype="float32")), default=str))
    key += (str(arm), seed, num)
    if key not in _BATCHES:
        _BATCHES[key] = _load_batches(experiment, config, arm, seed, num)
    return _BATCHES[key]


def _load_batches(experiment, config, arm: str, seed: int, num: int) -> list:
    from gensim_jax.training.experiment import HostShard

    data = experiment.prepare(config)
    out = []
    # one process: its shard is the whole global batch
    for batch in experiment.arm(arm, config, data).batches(seed, HostShard.of_this_process(config.batch_size))(0):
        out.append({k: np.asarray(v) for k, v in batch.items()})
        if len(out) >= num:
            break
    if not out:
        raise RuntimeError(f"{experiment.name}: the batches of {arm!r} are empty")
    return out


def check_loss_curves(name: str, steps: int, accel, cpu, dtypes=("float32", "bfloat16"), note: str = "") -> list:
    """(a): one line per dtype, accelerator vs CPU on the small config."""
    from gensim_jax import experiments

    exp = experiments.load(name)
    cfg_name = _small_config_name(exp)
    lines = []
    for dtype in dtypes:
        config = exp.get_config(cfg_name, num_steps=steps, dtype=dtype)
        arm = exp.arms(config)[0]
        try:
            batches = _host_batches(exp, config, arm, config.seed, steps)
        except Exception as e:  # noqa: BLE001 - e.g. a dataset that is not on this machine
            lines.append(_skip("accel_loss_curve", name, cfg_name, f"no batches: {type(e).__name__}: {e}"))
            break
        precision = "highest" if dtype == "float32" else None
        ctx = jax.default_matmul_precision(precision) if precision else contextlib.nullcontext()
        with ctx:
            on_accel = loss_curve(exp, config, arm, [accel], steps, batches, seed=config.seed)
            on_cpu = loss_curve(exp, config, arm, [cpu], steps, batches, seed=config.seed)
            each = one_step_deviations(exp, config, arm, accel, cpu, steps, batches, seed=config.seed)
        curve_dev = compare_curves(on_accel["losses"], on_cpu["losses"])
        dev = max(each["loss_deviation"])
        tol = F32_RTOL if dtype == "float32" else BF16_RTOL
        lines.append(
            {
                "bench": "accel_loss_curve",
                "experiment": name,
                "config": cfg_name,
                "arm": str(arm),
                "dtype": dtype,
                "matmul_precision": precision or "default",
                "steps": steps,
                "global_batch": int(config.batch_size),
                "device": _device_name([accel]),
                "reference_device": _device_name([cpu]),
                "losses": on_accel["losses"],
                "reference_losses": on_cpu["losses"],
                # the acceptance: each step's loss from the same state (one_step_deviations)
                "max_rel_deviation": dev,
                "one_step_loss_deviation": each["loss_deviation"],
                "one_step_update_deviation": each["update_deviation"],
                # the free-running curves' deviation, for information (chaotic configs amplify rounding)
                "curve_max_rel_deviation": curve_dev,
                "tolerance": tol,
                "met": bool(dev <= tol),
                "first_step_s": on_accel["first_step_s"],
                "step_s": on_accel["step_s"],
                "reference_first_step_s": on_cpu["first_step_s"],
                "reference_step_s": on_cpu["step_s"],
                **({"note": note} if note else {}),
            }
        )
    return lines


def check_multi_device(name: str, steps: int, devices: Sequence[jax.Device]) -> dict:
    """(c): the small config on a mesh over all ``devices`` against the first device alone (float32)."""
    from gensim_jax import experiments

    exp = experiments.load(name)
    cfg_name = _small_config_name(exp)
    if len(devices) < 2:
        return _skip("accel_multi_device", name, cfg_name, f"one device ({_device_name(devices)})")
    config = exp.get_config(cfg_name, num_steps=steps)
    n = len(devices)
    if config.batch_size % n:
        return _skip("accel_multi_device", name, cfg_name, f"global batch {config.batch_size} does not divide over {n}")
    arm = exp.arms(config)[0]
    batches = _host_batches(exp, config, arm, config.seed, steps)
    with jax.default_matmul_precision("highest"):
        many = loss_curve(exp, config, arm, devices, steps, batches, seed=config.seed)
        one = loss_curve(exp, config, arm, devices[:1], steps, batches, seed=config.seed)
    dev = compare_curves(many["losses"], one["losses"])
    return {
        "bench": "accel_multi_device",
        "experiment": name,
        "config": cfg_name,
        "arm": str(arm),
        "num_devices": n,
        "device": _device_name(devices),
        "steps": steps,
        "global_batch": int(config.batch_size),
        "losses": many["losses"],
        "reference_losses": one["losses"],
        "max_rel_deviation": dev,
        "tolerance": F32_RTOL,
        "met": bool(dev <= F32_RTOL),
        "step_s": many["step_s"],
        "reference_step_s": one["step_s"],
    }


def _skip(bench: str, name: str, cfg: str, why: str) -> dict:
    return {"bench": bench, "experiment": name, "config": cfg, "skipped": why, "met": True}


# ----------------------------------------------------------------------------- (b) paper steps


def _synthetic_batch(abstract_batch: dict, seed: int) -> dict:
    """Host arrays of the batch spec: floats uniform in [0, 1), ``uint8`` (images) uniform on 0..255, other
    integers 0 (ids, labels), booleans True (a full mask)."""
    rng = np.random.default_rng(seed)
    out = {}
    for k, s in abstract_batch.items():
        dt = np.dtype(s.dtype)
        if dt == np.bool_:
            out[k] = np.ones(s.shape, dt)
        elif np.issubdtype(dt, np.floating):
            out[k] = rng.random(s.shape, dtype=np.float32).astype(dt)
        elif dt == np.uint8:
            out[k] = rng.integers(0, 256, s.shape, dtype=np.uint8)
        else:
            out[k] = np.zeros(s.shape, dt)
    return out


def _chip_topology(device: jax.Device):
    """The planner's one-device topology of ``device`` (None for a CPU or a chip not in the table)."""
    from gensim_jax.planning import parse_topology
    from gensim_jax.planning.chips import chip_for_device_kind

    chip = chip_for_device_kind(getattr(device, "device_kind", ""))
    if chip is None:
        return None
    if chip.kind == "gpu":
        return parse_topology(f"{chip.name}:1x1")
    return parse_topology(f"{chip.name}:1x1x1" if chip.name in ("v4", "v5p") else f"{chip.name}:1x1")


def plan_for_device(step, abstract_args, device: jax.Device) -> dict:
    """What the planner predicts for ``step`` on this one device (the compile uses the device itself).

    With a chip of the planner's table: :func:`gensim_jax.planning.plan_step`'s memory, fit and roofline.
    Without one (a CPU): the compiler's memory and FLOPs from :func:`gensim_jax.planning.compile_step`
    on the same shardings, and no roofline.
    """
    from gensim_jax.planning import compile_step, default_shardings, plan_step

    topo = _chip_topology(device)
    if topo is not None:
        rep = plan_step(step, abstract_args, topology=topo, devices=[device]).as_dict()
        roof = rep.get("roofline") or {}
        return {
            "chip": rep["chip"],
            "memory_bytes": rep["memory_per_device_bytes"],
            "memory_capacity_bytes": rep["memory_capacity_bytes"],
            "fits": rep["fits"],
            "flops_per_step": rep["flops_per_step"],
            "step_s": roof.get("step_seconds"),
            "bound": roof.get("bound"),
            "peak_flops_per_s": roof.get("peak_flops_per_s") or rep["chip_figures"]["peak_bf16_flops"],
            "compile_s": rep["compile_seconds"],
        }
    args = tuple(jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype), a) for a in abstract_args)
    mesh = _mesh([device])
    in_sh, out_sh = default_shardings(args, False)(mesh)
    comp = compile_step(step, args, in_sh, out_sh, num_devices=1)
    return {
        "chip": None,
        "memory_bytes": comp.memory.get("total_bytes"),
        "memory_capacity_bytes": None,
        "fits": None,
        "flops_per_step": comp.flops,
        "step_s": None,
        "bound": None,
        "peak_flops_per_s": None,
        "compile_s": comp.compile_seconds,
    }


def _peak_memory(device: jax.Device) -> Optional[int]:
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if not stats:
        return None
    return int(stats.get("peak_bytes_in_use", stats.get("bytes_in_use", 0))) or None


def _in_use(device: jax.Device) -> Optional[int]:
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    return int(stats["bytes_in_use"]) if stats and "bytes_in_use" in stats else None


def time_steps(compiled, state, batches: Sequence, objective, steps: int) -> tuple:
    """``(state, metrics, seconds)``: ``steps`` synchronised steps of ``compiled``, alternating ``batches``;
    the seconds of all but the first tenth (at least the first step), which warm caches and allocators."""
    times = []
    metrics = None
    for i in range(steps):
        t0 = time.perf_counter()
        state, metrics = compiled(state, batches[i % len(batches)], objective)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - t0)
    return state, metrics, times[min(len(times) - 1, max(1, steps // 10)) :]


def paper_step(name: str, steps: int, device: jax.Device, smoke: bool = False) -> dict:
    """(b): ``steps`` steps of ``name``'s paper config (``smoke``: its small config) on ``device``."""
    from gensim_jax import experiments, parallel

    exp = experiments.load(name)
    cfg_name = _small_config_name(exp) if smoke else exp.default_config()
    config = exp.get_config(cfg_name)
    arm = exp.arms(config)[0]
    gb = int(config.batch_size)
    step, abstract_args = _abstract(exp, config, arm, gb)
    plan = plan_for_device(step, abstract_args, device)
    halvings = 0
    while plan["fits"] is False and gb > 1:
        gb //= 2
        halvings += 1
        step, abstract_args = _abstract(exp, config, arm, gb)
        plan = plan_for_device(step, abstract_args, device)
    mesh = _mesh([device])
    step, state, objective, abstract_batch = _build(exp, config, arm, config.seed, global_batch=gb)
    state = parallel.place_state(state, mesh)
    jitted = _jit_on(step, mesh, state)
    batches = [parallel.shard_batch(_synthetic_batch(abstract_batch, s), mesh) for s in range(2)]
    jax.block_until_ready((state, batches))
    mem_before = _peak_memory(device), _in_use(device)  # state and batches placed, nothing compiled
    t0 = time.perf_counter()
    compiled = jitted.lower(state, batches[0], objective).compile()
    compile_s = time.perf_counter() - t0
    mem_compiled = _peak_memory(device)  # on a GPU: convolution autotuning's trial buffers count here
    state, metrics, warm = time_steps(compiled, state, batches, objective, steps)
    step_s = statistics.median(warm)
    flops = plan["flops_per_step"]
    peak = plan["peak_flops_per_s"]
    mem = _peak_memory(device)
    line = {
        "bench": "accel_paper_step",
        "experiment": name,
        "config": cfg_name + (" (smoke stand-in for paper)" if smoke and cfg_name != "paper" else ""),
        "arm": str(arm),
        "dtype": config.dtype,
        "device": _device_name([device]),
        "global_batch": gb,
        "batch_halved": halvings,
        "steps": steps,
        "compile_s": compile_s,
        "step_s": step_s,
        "step_s_min": min(warm),
        "images_per_s": gb / step_s,
        "flops_per_step": flops,
        "flops_per_s": None if flops is None else flops / step_s,
        "peak_flops_per_s": peak,
        "mfu": None if (flops is None or not peak) else flops / step_s / peak,
        "memory_peak_bytes": mem,  # the device's peak since the process started (see --isolate)
        # where the peak came from: before the compile (state + batches), after it (a GPU compile
        # autotunes convolutions on trial buffers), after the steps; bytes in use once they ran
        "memory_peak_before_compile_bytes": mem_before[0],
        "memory_in_use_before_compile_bytes": mem_before[1],
        "memory_peak_after_compile_bytes": mem_compiled,
        "memory_in_use_after_steps_bytes": _in_use(device),
        "compilation_cache": jax.config.jax_compilation_cache_dir or None,
        "predicted": plan,
        "step_vs_predicted": None if not plan["step_s"] else step_s / plan["step_s"],
        "memory_vs_predicted": None if not (mem and plan["memory_bytes"]) else mem / plan["memory_bytes"],
        "loss_finite": bool(np.isfinite(float(jax.device_get(metrics["loss"])))),
        "met": True,  # a measurement, not a pass/fail check
    }
    return line


def _paper_step_in_subprocess(name: str, steps: int, smoke: bool) -> dict:
    """:func:`paper_step` in a fresh Python process (its own device memory peak); its JSON line."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "lines.jsonl"
        cmd = [sys.executable, "-m", "bench.runner.accelerator", "--experiments", name, "--skip", "curves", "multi"]
        cmd += ["--paper-steps", str(steps), "--isolate", "no", "--out", str(out)] + (["--smoke"] if smoke else [])
        proc = subprocess.run(
            cmd, cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=1800, check=False
        )
        lines = [json.loads(t) for t in out.read_text().splitlines()] if out.exists() else []
    found = [ln for ln in lines if ln.get("bench") == "accel_paper_step"]
    if not found:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the paper step's process exited {proc.returncode}: {tail[0]}")
    return found[0]


def _abstract(exp, config, arm, gb):
    from gensim_jax.training.runner import abstract_step_inputs

    return abstract_step_inputs(exp, config, arm, global_batch=gb)


# ----------------------------------------------------------------------------- report


def _fmt(x, spec: str = ".3g") -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return format(x, spec)


def markdown_table(lines: Sequence[dict]) -> str:
    """Three Markdown tables (loss curves, paper steps, several devices) for docs/PERFORMANCE.md."""
    out = []
    curves = [ln for ln in lines if ln.get("bench") == "accel_loss_curve"]
    if curves:
        out += [
            "| experiment | config | dtype | steps | device | vs | each step from the same state: max loss dev. | "
            "max update dev. | free-running curves: max dev. | tolerance | met |",
            "|---|---|---|---:|---|---|---:|---:|---:|---:|---|",
        ]
        for ln in curves:
            if "skipped" in ln:
                out.append(f"| {ln['experiment']} | {ln['config']} | - | - | - | - | skipped: {ln['skipped']} | | |")
                continue
            out.append(
                f"| {ln['experiment']} | {ln['config']} | {ln['dtype']} | {ln['steps']} | {ln['device']} | "
                f"{ln['reference_device']} | {_fmt(ln['max_rel_deviation'], '.2e')} | "
                f"{_fmt(max(ln.get('one_step_update_deviation') or [float('nan')]), '.2e')} | "
                f"{_fmt(ln.get('curve_max_rel_deviation'), '.2e')} | {ln['tolerance']:g} | "
                f"{'yes' if ln['met'] else '**no**'} |"
            )
        out.append("")
    steps = [ln for ln in lines if ln.get("bench") == "accel_paper_step"]
    if steps:
        out += [
            "| experiment | config | device | batch | compile s | step ms | images/s | GFLOP/step | MFU | "
            "memory GiB | predicted step ms | predicted memory GiB | step / predicted | memory / predicted |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        gib = 2**30
        for ln in steps:
            if "skipped" in ln:
                out.append(f"| {ln['experiment']} | {ln['config']} | skipped: {ln['skipped']} |" + " |" * 11)
                continue
            p = ln["predicted"]
            out.append(
                f"| {ln['experiment']} | {ln['config']} | {ln['device']} | {ln['global_batch']} | "
                f"{_fmt(ln['compile_s'], '.1f')} | {_fmt(1e3 * ln['step_s'], '.1f')} | {_fmt(ln['images_per_s'], '.0f')} | "
                f"{_fmt(None if ln['flops_per_step'] is None else ln['flops_per_step'] / 1e9, '.1f')} | "
                f"{_fmt(ln['mfu'], '.1%')} | "
                f"{_fmt(None if ln['memory_peak_bytes'] is None else ln['memory_peak_bytes'] / gib, '.2f')} | "
                f"{_fmt(None if p['step_s'] is None else 1e3 * p['step_s'], '.1f')} | "
                f"{_fmt(None if p['memory_bytes'] is None else p['memory_bytes'] / gib, '.2f')} | "
                f"{_fmt(ln['step_vs_predicted'], '.2f')} | {_fmt(ln['memory_vs_predicted'], '.2f')} |"
            )
        out.append("")
    multi = [ln for ln in lines if ln.get("bench") == "accel_multi_device"]
    if multi:
        out += [
            "| experiment | config | devices | max rel. deviation vs one device | tolerance | met |",
            "|---|---|---|---:|---:|---|",
        ]
        for ln in multi:
            if "skipped" in ln:
                out.append(f"| {ln['experiment']} | {ln['config']} | skipped: {ln['skipped']} | | | |")
                continue
            out.append(
                f"| {ln['experiment']} | {ln['config']} | {ln['device']} | {_fmt(ln['max_rel_deviation'], '.2e')} | "
                f"{ln['tolerance']:g} | {'yes' if ln['met'] else '**no**'} |"
            )
        out.append("")
    return "\n".join(out)


def _emit(line: dict, sink, quiet: bool = False) -> None:
    text = json.dumps(line, default=float)
    if not quiet:
        print(text, flush=True)
    if sink is not None:
        sink.write(text + "\n")
        sink.flush()


def run(quick: bool = False, experiments_: Optional[Sequence[str]] = None) -> list[dict]:
    """The lines of a run (``quick``: the CPU smoke mode on one experiment); for ``bench.run_all``."""
    argv = ["--smoke", "--experiments", *(experiments_ or ["gaussian_mixture"])] if quick else []
    lines: list = []
    main(argv, collect=lines, quiet=True)  # bench.run_all prints the lines
    return lines


def main(argv=None, collect: Optional[list] = None, quiet: bool = False) -> int:
    from gensim_jax import experiments

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", nargs="+", default=None, help="default: every registered experiment")
    parser.add_argument("--steps", type=int, default=None, help="steps of the loss curves (20; smoke 3)")
    parser.add_argument("--paper-steps", type=int, default=None, help="steps of each paper config (50; smoke 3)")
    parser.add_argument("--smoke", action="store_true", help="CPU smoke mode: small sizes, a CPU stands in")
    parser.add_argument("--skip", nargs="*", default=(), choices=("curves", "paper", "multi"), help="parts to skip")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"], choices=["float32", "bfloat16"])
    parser.add_argument("--out", default=None, help="also write the JSON lines to this file")
    parser.add_argument("--table", default=None, help="also write the Markdown table to this file")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a comparison misses its tolerance")
    parser.add_argument(
        "--isolate",
        choices=("auto", "yes", "no"),
        default="auto",
        help="run each paper step in its own process, so the device's peak memory is that step's "
        "(auto: yes on an accelerator, no in the CPU smoke mode)",
    )
    args = parser.parse_args(argv)
    if args.isolate != "no" and "paper" not in args.skip:
        # the paper steps run in child processes, so this one must not take 75% of the device's memory up
        # front (XLA's default) before the first child starts: on an H100 (80 GB) the geoclidean paper step
        # (10.6 GiB) ran out of memory in a child after the loss curves. Read when the backend starts.
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    steps = args.steps or (3 if args.smoke else 20)
    paper_steps = args.paper_steps or (3 if args.smoke else 50)
    names = args.experiments or list(experiments.available())
    accel, cpu, note = accelerator_and_cpu(args.smoke)
    backend_devices = jax.devices(accel.platform)

    lines = collect if collect is not None else []
    sink = open(args.out, "w") if args.out else None  # noqa: SIM115 - closed below
    try:

        def emit(line):
            lines.append(line)
            _emit(line, sink, quiet)

        emit(
            {
                "bench": "accel_machine",
                "backend": jax.default_backend(),
                "devices": [str(d) for d in jax.devices()],
                "device_kind": getattr(accel, "device_kind", accel.platform),
                "jax": jax.__version__,
                "smoke": args.smoke,
                "note": note,
                "load_avg": [round(x, 2) for x in os.getloadavg()],
                "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "f32_rtol": F32_RTOL,
                "bf16_rtol": BF16_RTOL,
                "met": True,
            }
        )
        for name in names:
            if "curves" not in args.skip:
                for line in check_loss_curves(name, steps, accel, cpu, tuple(args.dtypes), note):
                    emit(line)
            if "paper" not in args.skip:
                isolate = args.isolate == "yes" or (args.isolate == "auto" and accel.platform != "cpu")
                try:
                    if isolate:
                        emit(_paper_step_in_subprocess(name, paper_steps, args.smoke))
                    else:
                        emit(paper_step(name, paper_steps, accel, smoke=args.smoke))
                except Exception as e:  # noqa: BLE001 - one experiment's failure must not hide the others
                    emit({**_skip("accel_paper_step", name, "paper", f"{type(e).__name__}: {e}"), "met": False})
            if "multi" not in args.skip:
                emit(check_multi_device(name, steps, backend_devices))
    finally:
        if sink is not None:
            sink.close()
    table = markdown_table(lines)
    if not quiet:
        print(table)
    if args.table:
        Path(args.table).write_text(table + "\n")
    missed = sum(not ln.get("met", True) for ln in lines)
    return 1 if (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
