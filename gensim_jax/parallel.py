"""Device mesh, shardings, multi-host set-up and the ``pmap`` compatibility path.

Design (see docs/SCALING.md):

* One :class:`jax.sharding.Mesh` with two axes, ``("data", "fsdp")``.  The batch is split over
  BOTH axes (every device holds ``B / n_devices`` examples); parameters and optimizer state are
  replicated, or with ``fsdp=True`` each large leaf is split along one of its dimensions over
  the ``"fsdp"`` axis (ZeRO-3 style; XLA inserts the all-gathers and reduce-scatters).
* The train step is ONE ``jax.jit`` with ``in_shardings``/``out_shardings``.  Inside it the
  batch is a global array: the ``B x B`` similarity matrix of an all-pairs loss and the BatchNorm
  statistics are global-batch quantities, with no hand-written collective.
* :func:`pmap_train_step` is the explicit alternative: each device embeds its shard, the
  outputs and metadata are ``lax.all_gather``-ed, every device evaluates the global loss, and
  gradients are ``lax.pmean``-ed.  It gives the same numbers as the jit path for models without
  BatchNorm (the encoders' BatchNorm layers have no ``axis_name``, so under pmap they normalise
  by per-device statistics; use the jit path for BatchNorm models).
* Multi-host: :func:`initialize_distributed` calls ``jax.distributed.initialize()`` (which reads
  SLURM / TPU / Open MPI environments), each process loads its own slice of the global batch
  (:func:`process_batch_slice`) and :func:`shard_batch` assembles the global array with
  ``jax.make_array_from_process_local_data``.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

__all__ = [
    "DATA_AXES",
    "FSDP_MIN_SIZE",
    "make_mesh",
    "batch_sharding",
    "replicated",
    "leaf_sharding",
    "state_shardings",
    "place_state",
    "shard_batch",
    "jit_sharded",
    "initialize_distributed",
    "process_batch_slice",
    "pmap_train_step",
    "replicate_for_pmap",
    "unreplicate",
    "split_for_pmap",
    "device_summary",
    "global_batch_size",
]

DATA_AXES = ("data", "fsdp")

#: Leaves smaller than this many elements stay replicated under FSDP (not worth a collective).
FSDP_MIN_SIZE = 2 ** 14


def make_mesh(data: int = -1, fsdp: int = 1, devices: Optional[Sequence] = None) -> Mesh:
    """A ``(data, fsdp)`` device mesh.

    Args:
      data: size of the data axis; -1 uses all remaining devices.
      fsdp: size of the parameter-sharding axis (1: parameters replicated).
      devices: devices to use (default ``jax.devices()``, all processes).

    Returns:
      ``Mesh`` with axis names ``("data", "fsdp")``.

    Example:
      >>> mesh = make_mesh()           # all devices on the data axis
      >>> mesh.axis_names
      ('data', 'fsdp')
    """
    devs = list(jax.devices() if devices is None else devices)
    n = len(devs)
    if fsdp < 1 or n % fsdp:
        raise ValueError(f"fsdp={fsdp} must be a positive divisor of the {n} devices")
    if data == -1:
        data = n // fsdp
    if data < 1 or data * fsdp != n:
        raise ValueError(f"mesh data={data} x fsdp={fsdp} does not match the {n} devices")
    # jax.make_mesh orders devices by topology (ICI rings on TPU, NVLink islands on GPU); the axes
    # are re-wrapped as a plain Mesh so that they are "auto" axes (sharding by propagation)
    arr = jax.make_mesh((data, fsdp), DATA_AXES, devices=devs).devices
    return Mesh(arr, DATA_AXES)


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """Leading (batch) axis split over all devices (``("data", "fsdp")``), other axes replicated."""
    return NamedSharding(mesh, P(DATA_AXES))


def replicated(mesh: Mesh) -> NamedSharding:
    """Fully replicated over the mesh."""
    return NamedSharding(mesh, P())


def leaf_sharding(shape: Sequence[int], mesh: Mesh, fsdp: bool = False, min_size: Optional[int] = None) -> NamedSharding:
    """Sharding of one parameter-like leaf: replicated, or split on its largest divisible axis over ``"fsdp"``.

    A leaf is split only when ``fsdp`` is set, the axis has more than one device, the leaf has at
    least ``min_size`` (default :data:`FSDP_MIN_SIZE`) elements, and one of its dimensions is divisible by the axis size (the
    largest such dimension is chosen).  Adam's moments have the parameters' shapes and so get the
    same sharding.
    """
    k = mesh.shape["fsdp"]
    min_size = FSDP_MIN_SIZE if min_size is None else min_size
    if not fsdp or k == 1 or int(np.prod(shape, dtype=np.int64)) < min_size:
        return replicated(mesh)
    dims = [i for i in np.argsort(shape)[::-1] if shape[i] % k == 0]
    if not dims:
        return replicated(mesh)
    spec = [None] * len(shape)
    spec[int(dims[0])] = "fsdp"
    return NamedSharding(mesh, P(*spec))


def state_shardings(state, mesh: Mesh, fsdp: bool = False, min_size: Optional[int] = None):
    """A pytree of shardings for a :class:`~gensim_jax.training.state.TrainState` (concrete or abstract).

    ``params`` and ``opt_state`` follow :func:`leaf_sharding`; ``batch_stats``, ``step`` and ``rng``
    are replicated.
    """
    rep = replicated(mesh)
    by_shape = lambda x: leaf_sharding(jnp.shape(x), mesh, fsdp, min_size)  # noqa: E731
    return state.replace(
        step=rep,
        rng=rep,
        params=jax.tree.map(by_shape, state.params),
        opt_state=jax.tree.map(by_shape, state.opt_state),
        batch_stats=jax.tree.map(lambda _: rep, state.batch_stats),
    )


def place_state(state, mesh: Mesh, fsdp: bool = False):
    """``jax.device_put`` the state onto the mesh with :func:`state_shardings`."""
    return jax.device_put(state, state_shardings(state, mesh, fsdp))


def shard_batch(batch: Mapping[str, Any], mesh: Mesh) -> dict[str, jax.Array]:
    """Turn this process's part of the batch into global arrays split over the data axes.

    Each process passes its own ``(B / num_processes, ...)`` rows (on one host: the whole batch);
    ``jax.make_array_from_process_local_data`` assembles the global ``(B, ...)`` array.  The global
    batch size must be divisible by the number of devices.
    """
    sh = batch_sharding(mesh)
    n = mesh.devices.size
    out = {}
    for k, v in batch.items():
        v = np.asarray(v)
        if v.ndim == 0:
            raise ValueError(f"batch[{k!r}] is a scalar; every batch entry needs a leading batch axis")
        global_b = v.shape[0] * jax.process_count()
        if global_b % n:
            raise ValueError(f"global batch size {global_b} (entry {k!r}) is not divisible by the {n} devices of the mesh")
        out[k] = jax.make_array_from_process_local_data(sh, v, (global_b,) + v.shape[1:])
    return out


def jit_sharded(step: Callable, mesh: Mesh, state, *, fsdp: bool = False, donate: bool = True) -> Callable:
    """``jax.jit(step)`` for ``step(state, batch, objective) -> (state, metrics)`` on ``mesh``.

    The state keeps its sharding (:func:`state_shardings`), the batch is split over the data axes,
    the objective (tables) and the metrics are replicated; the state's buffers are donated.
    """
    st_sh = state_shardings(state, mesh, fsdp)
    rep = replicated(mesh)
    return jax.jit(step, in_shardings=(st_sh, batch_sharding(mesh), rep), out_shardings=(st_sh, rep),
                   donate_argnums=(0,) if donate else ())


# --------------------------------------------------------------------------------------------
# Multi-host
# --------------------------------------------------------------------------------------------

_CLUSTER_ENV = ("SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "JAX_COORDINATOR_ADDRESS", "TPU_WORKER_HOSTNAMES",
                "MEGASCALE_COORDINATOR_ADDRESS")


def initialize_distributed(coordinator_address: Optional[str] = None, num_processes: Optional[int] = None,
                           process_id: Optional[int] = None, local_device_ids=None, *, force: bool = False,
                           initialization_timeout: Optional[int] = None,
                           heartbeat_timeout_seconds: Optional[int] = None) -> dict:
    """Join a multi-process JAX run (``jax.distributed.initialize``) when there is one.

    Must run before anything touches a device.  With explicit arguments, or when the environment
    describes a cluster (SLURM with more than one task, Open MPI, ``JAX_COORDINATOR_ADDRESS``, a TPU
    pod slice), it calls ``jax.distributed.initialize`` (which auto-detects SLURM and TPU when
    arguments are omitted); on a single machine it does nothing.  Calling it twice is harmless.

    ``initialization_timeout`` (seconds every process waits for all the others to join; JAX's
    default 300) and ``heartbeat_timeout_seconds`` (after which a silent process is declared dead
    and the others are stopped with an error; JAX's default 100) bound the waits on a dead peer.
    On CPU, cross-process collectives use gloo (``jax_cpu_collectives_implementation``, the default
    of jax 0.10).

    Returns:
      ``{"process_index", "process_count", "local_devices", "devices"}``.
    """
    explicit = coordinator_address is not None or num_processes is not None or process_id is not None
    multi_env = any(os.environ.get(k) for k in _CLUSTER_ENV)
    if os.environ.get("SLURM_NTASKS") == "1" and not explicit:
        multi_env = any(os.environ.get(k) for k in _CLUSTER_ENV if k != "SLURM_NTASKS")
    if (explicit or multi_env or force) and not jax.distributed.is_initialized():
        kwargs = {k: v for k, v in dict(coordinator_address=coordinator_address, num_processes=num_processes,
                                        process_id=process_id, local_device_ids=local_device_ids,
                                        initialization_timeout=initialization_timeout,
                                        heartbeat_timeout_seconds=heartbeat_timeout_seconds).items()
                  if v is not None}
        jax.distributed.initialize(**kwargs)
    return {"process_index": jax.process_index(), "process_count": jax.process_count(),
            "local_devices": jax.local_device_count(), "devices": jax.device_count()}


def process_batch_slice(global_batch_size: int, process_index: Optional[int] = None,
                        process_count: Optional[int] = None) -> slice:
    """The rows ``[start, stop)`` of the global batch that this process loads.

    Raises ``ValueError`` when the global batch does not split evenly over processes.
    """
    pi = jax.process_index() if process_index is None else process_index
    pc = jax.process_count() if process_count is None else process_count
    if global_batch_size % pc:
        raise ValueError(f"global batch size {global_batch_size} is not divisible by {pc} processes")
    per = global_batch_size // pc
    return slice(pi * per, (pi + 1) * per)


# --------------------------------------------------------------------------------------------
# pmap path
# --------------------------------------------------------------------------------------------


def replicate_for_pmap(tree, n: Optional[int] = None):
    """Stack ``n`` copies of every leaf (leading device axis) for ``jax.pmap``."""
    n = jax.local_device_count() if n is None else n
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + jnp.shape(x)), tree)


def unreplicate(tree):
    """The first device's copy of a pmapped pytree."""
    return jax.tree.map(lambda x: x[0], tree)


def split_for_pmap(batch: Mapping[str, Any], n: Optional[int] = None) -> dict:
    """Reshape every ``(B, ...)`` entry to ``(n, B/n, ...)``: device ``d`` gets rows ``d B/n .. (d+1) B/n``."""
    n = jax.local_device_count() if n is None else n
    out = {}
    for k, v in batch.items():
        v = jnp.asarray(v)
        if v.ndim == 0 or v.shape[0] % n:
            raise ValueError(f"batch[{k!r}] with shape {v.shape} cannot be split over {n} devices")
        out[k] = v.reshape((n, v.shape[0] // n) + v.shape[1:])
    return out


def pmap_train_step(objective, axis_name: str = "devices", donate: bool = True) -> Callable:
    """A ``jax.pmap`` train step with explicit collectives, equal to the jit path without BatchNorm.

    On each device: embed the local shard; ``lax.all_gather(tiled=True)`` the per-input outputs and
    the batch metadata (device order = global row order); evaluate the objective's global loss;
    differentiate.  The transpose of ``all_gather`` sums the cotangents of all devices' copies of
    the loss, so each device's gradient is ``n`` times its share and ``lax.pmean`` over devices
    gives exactly the gradient of the global loss.  BatchNorm running statistics are averaged.

    Args:
      objective: an :class:`~gensim_jax.training.objectives.Objective`.
      axis_name: the pmap axis name.

    Returns:
      ``step(state_replicated, batch_split) -> (state_replicated, metrics_replicated)``; prepare the
      inputs with :func:`replicate_for_pmap` and :func:`split_for_pmap`.
    """
    from gensim_jax.training.objectives import forward
    from gensim_jax.training.state import step_key

    def step(state, batch):
        key = step_key(state)
        gather = lambda x: jax.lax.all_gather(x, axis_name, tiled=True)  # noqa: E731
        global_batch = jax.tree.map(gather, dict(batch))

        def loss_fn(params):
            inputs = {k: batch[k] for k in objective.input_keys}
            outs, stats = forward(state.apply_fn, params, state.batch_stats, inputs, train=True, rng=key)
            outs = jax.tree.map(gather, outs)
            loss, metrics = objective.loss(outs, global_batch, key)
            return loss, (metrics, stats)

        (loss, (metrics, stats)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        grads = jax.lax.pmean(grads, axis_name)
        stats = jax.lax.pmean(stats, axis_name)
        metrics = dict(metrics)
        metrics["loss"] = loss
        metrics["grad_norm"] = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(grads)))
        return state.apply_gradients(grads, stats), metrics

    return jax.pmap(step, axis_name=axis_name, donate_argnums=(0,) if donate else ())


def device_summary() -> dict:
    """Backend, process and device counts, and device kinds (for ``gensim-jax info`` and run records)."""
    devs = jax.devices()
    return {
        "backend": jax.default_backend(),
        "jax_version": jax.__version__,
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "device_count": len(devs),
        "local_device_count": jax.local_device_count(),
        "device_kinds": sorted({d.device_kind for d in devs}),
    }


def global_batch_size(per_device: int) -> int:
    """``per_device`` times the number of devices of all processes."""
    return int(per_device) * jax.device_count()
