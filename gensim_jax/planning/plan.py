"""``plan_step``: compile a train step for a target topology and report memory, FLOPs, collectives, roofline.

The step is the runner's own ``step(state, batch, objective) -> (state, metrics)`` (not jitted);
``abstract_args`` are ``jax.ShapeDtypeStruct`` pytrees (the state from
``jax.eval_shape(create_train_state, ...)``, the batch shapes, the objective, abstract or concrete).
The mesh is :func:`gensim_jax.parallel.make_mesh` over the target's compile-only devices, and the
shardings default to those of :func:`gensim_jax.parallel.jit_sharded` (state by
:func:`~gensim_jax.parallel.state_shardings`, batch over the data axes, objective and metrics
replicated); a runner with other shardings passes ``shardings(mesh) -> (in_shardings, out_shardings)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence

import jax
import numpy as np

from gensim_jax.planning.compile import CompiledStep, compile_step, per_device_bytes
from gensim_jax.planning.report import PlanReport
from gensim_jax.planning.roofline import roofline
from gensim_jax.planning.topology import Topology, build_devices, parse_topology

__all__ = ["StepBuild", "default_shardings", "plan_step", "global_batch_of", "largest_intermediates"]


@dataclasses.dataclass
class StepBuild:
    """Everything :func:`plan_step` needs for one (global batch, FSDP) point; returned by ``build`` callables.

    Attributes:
      fn: the step function, ``fn(*args)``.
      args: abstract arguments.
      shardings: ``mesh -> (in_shardings, out_shardings)``, or None for :func:`default_shardings`.
      donate_argnums: donated arguments (the state).
    """

    fn: Callable
    args: tuple
    shardings: Optional[Callable] = None
    donate_argnums: tuple = (0,)


def default_shardings(args: Sequence[Any], fsdp: bool) -> Callable:
    """The shardings of :func:`gensim_jax.parallel.jit_sharded` for ``(state, batch, objective)`` args."""
    from gensim_jax import parallel

    def make(mesh):
        st_sh = parallel.state_shardings(args[0], mesh, fsdp)
        rep = parallel.replicated(mesh)
        return (st_sh, parallel.batch_sharding(mesh), rep), (st_sh, rep)

    return make


def global_batch_of(batch) -> int:
    """The leading dimension shared by every leaf of ``batch`` (ValueError if they disagree)."""
    sizes = {int(np.shape(x)[0]) for x in jax.tree.leaves(batch) if np.ndim(x) > 0}
    if len(sizes) != 1:
        raise ValueError(f"every batch entry needs the same leading (batch) dimension; got {sorted(sizes)}")
    return sizes.pop()


def _walk(jaxpr, rows):
    from jax._src import source_info_util

    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            aval = getattr(v, "aval", None)
            if aval is None or not hasattr(aval, "shape"):
                continue
            try:
                b = float(np.prod(aval.shape, dtype=np.float64)) * np.dtype(aval.dtype).itemsize
            except TypeError:
                continue
            rows.append(
                {
                    "bytes_global": b,
                    "shape": f"{aval.dtype}{list(aval.shape)}",
                    "primitive": eqn.primitive.name,
                    "source": source_info_util.summarize(eqn.source_info),
                }
            )
        for p in eqn.params.values():
            for sub in p if isinstance(p, (list, tuple)) else [p]:
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    _walk(inner, rows)


def largest_intermediates(fn: Callable, args: Sequence[Any], k: int = 3) -> list[dict]:
    """The ``k`` largest values of the traced step (global shapes, before partitioning), with their source line."""
    closed = jax.make_jaxpr(fn)(*args)
    rows: list = []
    _walk(closed.jaxpr, rows)
    rows.sort(key=lambda r: -r["bytes_global"])
    out, seen = [], set()
    for r in rows:
        key = (r["shape"], r["source"])
        if key not in seen:
            seen.add(key)
            out.append(r)
        if len(out) == k:
            break
    return out


def _state_groups(state) -> dict:
    if all(hasattr(state, a) for a in ("params", "opt_state")):
        return {
            "params": state.params,
            "opt_state": state.opt_state,
            "batch_stats": getattr(state, "batch_stats", {}),
            "step_and_rng": [getattr(state, "step", None), getattr(state, "rng", None)],
        }
    return {"state": state}


def _sharding_groups(state, st_sh) -> dict:
    if all(hasattr(state, a) for a in ("params", "opt_state")) and hasattr(st_sh, "params"):
        return {
            "params": st_sh.params,
            "opt_state": st_sh.opt_state,
            "batch_stats": st_sh.batch_stats,
            "step_and_rng": [st_sh.step, st_sh.rng],
        }
    return {"state": st_sh}


def plan_step(
    step_fn: Callable,
    abstract_args: Sequence[Any],
    *,
    topology: str | Topology,
    shardings: Optional[Callable] = None,
    fsdp: int = 1,
    donate_argnums: Sequence[int] = (0,),
    devices: Optional[list] = None,
    experiment: str = "",
    config: str = "",
    keep_hlo: bool = False,
    cache=None,
) -> PlanReport:
    """Compile ``step_fn(*abstract_args)`` for ``topology`` and build the :class:`PlanReport`.

    Args:
      step_fn: ``step(state, batch, objective) -> (state, metrics)``, not jitted.
      abstract_args: ``(state, batch, objective)`` as ``jax.ShapeDtypeStruct`` pytrees (concrete arrays work too).
      topology: e.g. ``"v5e:16x16"``, ``"h100:8x8"`` (see :mod:`gensim_jax.planning.topology`).
      shardings: ``mesh -> (in_shardings, out_shardings)``; default :func:`default_shardings`.
      fsdp: size of the mesh's ``fsdp`` axis (1: parameters replicated; ``> 1``: FSDP over that many devices).
      donate_argnums: donated arguments, as in the runner.
      devices: compile-only devices already built for ``topology`` (saves rebuilding them in a loop).
      experiment, config: names shown in the report.
      cache: a :class:`~gensim_jax.planning.cache.PlanCache`: an identical program for the same target
        (and compiler) reuses the stored analyses instead of compiling; the report's ``compile_cache``
        says which happened.  None (the default): always compile, nothing stored.

    Raises:
      ValueError: unknown topology; global batch not divisible by the device count; bad ``fsdp``.
      PlannerSetupError: the target's compiler (libtpu / CUDA plugin) is not installed.
    """
    from gensim_jax import parallel

    topo = parse_topology(topology) if isinstance(topology, str) else topology
    # concrete arrays (e.g. an objective's tables) live on this host's devices: keep only shape and dtype
    args = tuple(
        jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype) if hasattr(x, "dtype") else x, a)
        for a in abstract_args
    )
    if len(args) < 2:
        raise ValueError("abstract_args must be (state, batch, ...)")
    gb = global_batch_of(args[1])
    n = topo.num_devices
    if gb % n:
        lo, hi = (gb // n) * n, (gb // n + 1) * n
        raise ValueError(
            f"global batch {gb} is not divisible by the {n} devices of {topo.name}; "
            f"use a multiple of {n} (e.g. {lo or hi} or {hi})"
        )
    if fsdp < 1 or n % fsdp:
        raise ValueError(f"fsdp={fsdp} must divide the {n} devices of {topo.name}")
    devs = build_devices(topo) if devices is None else devices
    mesh = parallel.make_mesh(data=n // fsdp, fsdp=fsdp, devices=devs)
    make = shardings or default_shardings(args, fsdp > 1)
    in_sh, out_sh = make(mesh)
    target = None
    if cache is not None:
        from gensim_jax.planning.cache import target_description

        target = target_description(topo, devs)
    comp: CompiledStep = compile_step(
        step_fn,
        args,
        in_sh,
        out_sh,
        num_devices=n,
        donate_argnums=donate_argnums,
        keep_hlo=keep_hlo,
        cache=cache,
        target=target,
    )
    comp.platform = topo.platform

    # the inputs, per device, by what they are
    groups = {}
    if isinstance(in_sh, (tuple, list)) and len(in_sh) == len(args):
        for k, v in zip(_state_groups(args[0]).items(), _sharding_groups(args[0], in_sh[0]).values()):
            name, tree = k
            groups[name] = per_device_bytes(tree, v) if jax.tree.leaves(tree) else 0.0
        names = ["batch", "objective"] + [f"arg{i}" for i in range(3, len(args))]
        for name, a, s in zip(names, args[1:], in_sh[1:]):
            groups[name] = per_device_bytes(a, s) if jax.tree.leaves(a) else 0.0
    largest_jaxpr = []
    if comp.oom is not None:
        largest_jaxpr = largest_intermediates(step_fn, args)
    return PlanReport.build(
        topo=topo,
        global_batch=gb,
        fsdp=fsdp,
        compiled=comp,
        inputs=groups,
        largest_intermediates=largest_jaxpr,
        experiment=experiment,
        config=config,
        roofline_fn=roofline,
        cache_dir=None if cache is None else str(cache.directory),
    )
