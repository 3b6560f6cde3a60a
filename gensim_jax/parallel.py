"""Device mesh, shardings and multi-host set-up.

Design (see docs/SCALING.md):

* One :class:`jax.sharding.Mesh` with two axes, ``("data", "fsdp")``.  The batch is split over
  BOTH axes (every device holds ``B / n_devices`` examples); parameters and optimizer state are
  replicated, or with ``fsdp=True`` each large leaf is split along one of its dimensions over
  the ``"fsdp"`` axis (ZeRO-3 style; XLA inserts the all-gathers and reduce-scatters).
* The train step is ONE ``jax.jit`` with ``in_shardings``/``out_shardings``.  Inside it the
  batch is a global array: the ``B x B`` similarity matrix of an all-pairs loss and the BatchNorm
  statistics are global-batch quantities, with no hand-written collective.
* Multi-host: :func:`initialize_distributed` calls ``jax.distributed.initialize()`` (which reads
  SLURM / TPU / Open MPI environments), each process loads its own rows of the global batch
  (:class:`HostShard`, the one definition of the per-process row arithmetic; the data pipelines'
  :class:`~gensim_jax.data.indexing.StreamIndex` and :func:`process_batch_slice` use it) and
  :func:`shard_batch` assembles the global array with ``jax.make_array_from_process_local_data``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Mapping, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

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
    "cpu_only_without_accelerators",
    "HostShard",
    "process_batch_slice",
    "gather_to_host",
    "device_summary",
    "global_batch_size",
]

DATA_AXES = ("data", "fsdp")

#: Leaves smaller than this many elements stay replicated under FSDP (not worth a collective).
FSDP_MIN_SIZE = 2**14


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


def leaf_sharding(
    shape: Sequence[int], mesh: Mesh, fsdp: bool = False, min_size: Optional[int] = None
) -> NamedSharding:
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
            raise ValueError(
                f"global batch size {global_b} (entry {k!r}) is not divisible by the {n} devices of the mesh"
            )
        out[k] = jax.make_array_from_process_local_data(sh, v, (global_b,) + v.shape[1:])
    return out


def jit_sharded(
    step: Callable,
    mesh: Mesh,
    state,
    *,
    fsdp: bool = False,
    donate: bool = True,
    compiler_options: Optional[Mapping[str, Any]] = None,
) -> Callable:
    """``jax.jit(step)`` for ``step(state, batch, objective) -> (state, metrics)`` on ``mesh``.

    The state keeps its sharding (:func:`state_shardings`), the batch is split over the data axes,
    the objective (tables) and the metrics are replicated; the state's buffers are donated.
    """
    st_sh = state_shardings(state, mesh, fsdp)
    rep = replicated(mesh)
    kw = {} if compiler_options is None else {"compiler_options": dict(compiler_options)}
    return jax.jit(
        step,
        in_shardings=(st_sh, batch_sharding(mesh), rep),
        out_shardings=(st_sh, rep),
        donate_argnums=(0,) if donate else (),
        **kw,
    )


def gather_to_host(tree):
    """Every leaf of ``tree`` as a host numpy array, whatever its sharding, in any number of processes.

    Fully addressable leaves are copied (``device_get``); a leaf replicated over devices of several
    processes is read from a local copy; a leaf sharded across processes (FSDP) is all-gathered
    (``multihost_utils.process_allgather``, a collective: every process must call this together).
    """
    from jax.experimental import multihost_utils

    def one(x):
        if not isinstance(x, jax.Array):
            return np.asarray(x)
        if x.is_fully_addressable:
            return np.asarray(jax.device_get(x))
        if x.is_fully_replicated:
            return np.asarray(x.addressable_data(0))
        return np.asarray(multihost_utils.process_allgather(x, tiled=True))

    return jax.tree.map(one, tree)


# --------------------------------------------------------------------------------------------
# Multi-host
# --------------------------------------------------------------------------------------------


def _cluster_environment() -> bool:
    """Whether the environment describes a run of several processes: Open MPI, a JAX or Megascale
    coordinator, SLURM with more than one task, or a TPU pod slice (several TPU workers; a one-host
    TPU VM also names its one worker)."""
    env = os.environ
    if any(env.get(k) for k in ("OMPI_COMM_WORLD_SIZE", "JAX_COORDINATOR_ADDRESS", "MEGASCALE_COORDINATOR_ADDRESS")):
        return True
    if env.get("SLURM_NTASKS", "1") not in ("", "1"):
        return True
    return "," in env.get("TPU_WORKER_HOSTNAMES", "")


#: Device nodes of TPU chips: ``/dev/accel*`` (v2-v4, v5p) and numbered ``/dev/vfio/N`` (v5e, v6e).
TPU_DEVICE_GLOBS = ("/dev/accel*", "/dev/vfio/[0-9]*")
#: Modules of JAX's GPU plug-ins; when one is installed JAX chooses its platform itself.
GPU_PLUGIN_MODULES = ("jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm60_plugin", "jax_rocm7_plugin")


def cpu_only_without_accelerators(environ=None, device_globs=TPU_DEVICE_GLOBS, gpu_plugins=GPU_PLUGIN_MODULES) -> bool:
    """Restrict JAX to the CPU when ``libtpu`` is installed but the machine has no TPU and no GPU plug-in.

    With ``libtpu`` installed (it is in the locked environment, for ``gensim-jax plan``), JAX's
    start-up on a machine without TPU chips initialises the TPU backend anyway, which prints a
    page of warnings and an ``INVALID_ARGUMENT`` line before falling back to the CPU. This sets
    ``jax_platforms = "cpu"`` (before any backend starts) when ``JAX_PLATFORMS`` is unset, no TPU
    device node exists and no GPU plug-in is installed; anything else is left to JAX. The train and
    eval commands call it; ``gensim-jax plan`` does not (it compiles for TPUs through ``libtpu``).

    Returns:
      whether it restricted JAX to the CPU.
    """
    import glob
    import importlib.util

    env = os.environ if environ is None else environ
    if env.get("JAX_PLATFORMS") or env.get("JAX_PLATFORM_NAME"):
        return False
    if any(glob.glob(g) for g in device_globs):
        return False
    if any(importlib.util.find_spec(m) is not None for m in gpu_plugins):
        return False
    if importlib.util.find_spec("libtpu") is None:
        return False
    try:  # too late once a backend has started (e.g. a second call in one process): leave it
        from jax._src import xla_bridge

        if xla_bridge.backends_are_initialized():
            return False
    except (ImportError, AttributeError):
        pass
    jax.config.update("jax_platforms", "cpu")
    return True


def initialize_distributed(
    coordinator_address: Optional[str] = None,
    num_processes: Optional[int] = None,
    process_id: Optional[int] = None,
    local_device_ids=None,
    *,
    force: bool = False,
    initialization_timeout: Optional[int] = None,
    heartbeat_timeout_seconds: Optional[int] = None,
) -> dict:
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
    multi_env = _cluster_environment()
    if (explicit or multi_env or force) and not jax.distributed.is_initialized():
        kwargs = {
            k: v
            for k, v in dict(
                coordinator_address=coordinator_address,
                num_processes=num_processes,
                process_id=process_id,
                local_device_ids=local_device_ids,
                initialization_timeout=initialization_timeout,
                heartbeat_timeout_seconds=heartbeat_timeout_seconds,
            ).items()
            if v is not None
        }
        jax.distributed.initialize(**kwargs)
    return {
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "local_devices": jax.local_device_count(),
        "devices": jax.device_count(),
    }


@dataclasses.dataclass(frozen=True)
class HostShard:
    """This process's share of every global batch: the rows an experiment's batches build.

    Process ``index`` of ``count`` feeds rows ``[index b, (index + 1) b)`` of every global batch of
    ``global_batch`` rows, ``b = global_batch / count`` (:attr:`batch`); :func:`shard_batch`
    assembles the global array from every process's rows.  A source builds only those rows, so host
    work per process falls as processes are added, and the set of examples in a global batch does
    not depend on ``count``: row ``j`` of global batch ``s`` is stream position
    ``s * global_batch + j`` (:meth:`positions`), which the data pipelines
    (:mod:`gensim_jax.data.pipelines`, ``process_index`` / ``process_count``) and
    :class:`~gensim_jax.data.indexing.StreamIndex` follow.  This class is the one place that
    arithmetic is written; it is re-exported as ``gensim_jax.training.HostShard``.

    Example:
      >>> shard = HostShard(index=1, count=2, global_batch=8)
      >>> shard.batch, shard.rows, shard.positions(3).tolist()
      (4, slice(4, 8, None), [28, 29, 30, 31])
    """

    index: int = 0
    count: int = 1
    global_batch: int = 1

    def __post_init__(self):
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"need 0 <= index < count, got index={self.index}, count={self.count}")
        if self.global_batch < 1 or self.global_batch % self.count:
            raise ValueError(
                f"the global batch ({self.global_batch}) must be a positive multiple of the {self.count} processes"
            )

    @classmethod
    def of_this_process(cls, global_batch: int) -> "HostShard":
        """The shard of the calling process (``jax.process_index()`` of ``jax.process_count()``)."""
        return cls(jax.process_index(), jax.process_count(), int(global_batch))

    @property
    def batch(self) -> int:
        """Rows this process builds per global batch."""
        return self.global_batch // self.count

    @property
    def rows(self) -> slice:
        """This process's rows of a global batch."""
        return slice(self.index * self.batch, (self.index + 1) * self.batch)

    def positions(self, step: int) -> np.ndarray:
        """``(batch,)`` int64 global stream positions of this process's rows of global batch ``step`` (>= 0)."""
        if int(step) < 0:
            raise ValueError(f"step must be non-negative, got {step}")
        start = int(step) * self.global_batch + self.index * self.batch
        return np.arange(start, start + self.batch, dtype=np.int64)

    @property
    def pipeline_kwargs(self) -> dict:
        """``batch_size``, ``process_index``, ``process_count`` for :mod:`gensim_jax.data.pipelines` builders."""
        return {"batch_size": self.batch, "process_index": self.index, "process_count": self.count}


def process_batch_slice(
    global_batch_size: int, process_index: Optional[int] = None, process_count: Optional[int] = None
) -> slice:
    """The rows ``[start, stop)`` of the global batch that this process loads (:attr:`HostShard.rows`).

    ``process_index`` and ``process_count`` default to the calling process's.  Raises ``ValueError``
    when the global batch is not a positive multiple of the process count.
    """
    pi = jax.process_index() if process_index is None else process_index
    pc = jax.process_count() if process_count is None else process_count
    return HostShard(int(pi), int(pc), int(global_batch_size)).rows


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
