"""Target topologies: parse ``CHIP:SHAPE`` names and build abstract (compile-only) devices.

Names:

* TPU slices, as in Cloud TPU accelerator topologies: ``v5e:4x4`` (16 chips), ``v5e:16x16``,
  ``v6e:2x2``, ``v4:2x2x2``, ``v5p:2x2x1``.  The product of the dimensions is the chip count.
* GPU clusters: ``h100:8x8`` is 8 hosts of 8 GPUs (64 GPUs), ``a100:1x8`` or ``a100:8`` one host of
  8 GPUs, ``h200:4x8``.

Building devices needs the compiler for the target, never its hardware: TPU topologies come from
``libtpu`` (``jax.experimental.topologies.get_topology_desc(platform="tpu")``); GPU topologies from
the CUDA plugin with a ``GpuTargetConfigProto`` in text form that describes the GPU model
(:func:`gpu_target_config`; written here from the vendor figures, in the format of XLA's
``xla/backends/gpu/target_config/specs``).  Both imports are lazy; a missing plugin raises
:class:`PlannerSetupError` with one line naming the fix.
"""

from __future__ import annotations

import dataclasses
import os
import re

from gensim_jax.planning.chips import Chip, get_chip

__all__ = [
    "Topology",
    "PlannerSetupError",
    "parse_topology",
    "build_devices",
    "gpu_target_config",
    "COMPILER_MODULES",
    "has_compiler",
]

#: The modules that bring each platform's compiler: libtpu, or JAX's CUDA plugin (jax[cuda12] or jax[cuda13]).
COMPILER_MODULES = {"tpu": ("libtpu",), "cuda": ("jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13")}

# The CUDA plugin checks the CUDA driver when JAX first initialises its backends; on a machine without
# a GPU that check fails and the plugin is dropped.  Planning only compiles, so skip the check (this
# must happen before the first JAX computation of the process: import this module early).
os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")


class PlannerSetupError(RuntimeError):
    """The compiler for a target is not installed (one line naming the fix)."""


@dataclasses.dataclass(frozen=True)
class Topology:
    """A parsed target topology.

    Attributes:
      name: the string as given (normalised to lower case).
      chip: the :class:`~gensim_jax.planning.chips.Chip`.
      shape: TPU: the slice's chip grid; GPU: ``(hosts, gpus_per_host)``.
      num_devices: number of chips (= JAX devices).
      hosts: number of hosts.
    """

    name: str
    chip: Chip
    shape: tuple[int, ...]
    num_devices: int
    hosts: int

    @property
    def platform(self) -> str:
        return "tpu" if self.chip.kind == "tpu" else "cuda"


_NAME = re.compile(r"^\s*([a-z0-9]+)\s*:\s*(\d+(?:x\d+)*)\s*$")


def parse_topology(name: str) -> Topology:
    """Parse ``"v5e:4x4"``, ``"v4:2x2x2"``, ``"h100:8x8"`` (hosts x GPUs per host) or ``"h100:8"``.

    Raises:
      ValueError: one line naming the accepted forms and chips.
    """
    s = str(name).strip().lower()
    m = _NAME.match(s)
    if not m:
        raise ValueError(
            f"cannot parse topology {name!r}: expected CHIP:SHAPE such as 'v5e:4x4', 'v4:2x2x2' "
            f"or 'h100:8x8' (8 hosts x 8 GPUs)"
        )
    chip = get_chip(m.group(1))
    dims = tuple(int(d) for d in m.group(2).split("x"))
    if any(d < 1 for d in dims):
        raise ValueError(f"topology {name!r} has a zero dimension")
    n = 1
    for d in dims:
        n *= d
    if chip.kind == "tpu":
        if chip.name in ("v4", "v5p") and len(dims) != 3:
            raise ValueError(f"{chip.name} slices are 3-D (e.g. '{chip.name}:2x2x1'), got {name!r}")
        if chip.name in ("v5e", "v6e") and len(dims) != 2:
            raise ValueError(f"{chip.name} slices are 2-D (e.g. '{chip.name}:4x4'), got {name!r}")
        hosts = max(1, -(-n // chip.chips_per_host))
        return Topology(s, chip, dims, n, hosts)
    if len(dims) == 1:
        dims = (1, dims[0])
    if len(dims) != 2:
        raise ValueError(f"GPU topologies are HOSTSxGPUS (e.g. '{chip.name}:8x8'), got {name!r}")
    if dims[1] > 8:
        raise ValueError(f"{name!r}: at most 8 GPUs per host (NVLink island); write e.g. '{chip.name}:16x8'")
    return Topology(s, chip, dims, n, dims[0])


# --------------------------------------------------------------------------------------------
# GPU target descriptions (GpuTargetConfigProto text) written from the vendor figures
# --------------------------------------------------------------------------------------------

# name: (device_description_str, SM count, FP32 lanes per SM, compute capability, boost clock GHz,
#        memory bytes as the driver reports it, memory bandwidth bytes/s, L2 bytes, shared memory per SM)
_GPU_SPECS = {
    "a100": ("NVIDIA A100-SXM4-80GB", 108, 64, (8, 0), 1.41, 85_100_068_864, 2_039_040_000_000, 40 * 2**20, 167_936),
    "h100": ("NVIDIA H100 80GB HBM3", 132, 128, (9, 0), 1.98, 84_942_979_072, 3_352_320_000_000, 50 * 2**20, 233_472),
    "h200": (
        "NVIDIA H200 141GB HBM3e",
        132,
        128,
        (9, 0),
        1.98,
        151_397_597_184,
        4_800_000_000_000,
        50 * 2**20,
        233_472,
    ),
}


def gpu_target_config(chip: str) -> str:
    """A ``stream_executor.GpuTargetConfigProto`` in text form for ``chip`` (``a100``, ``h100``, ``h200``).

    Only the fields the XLA GPU compiler needs to compile without a GPU: SM count, clocks, memory
    size and bandwidth, L2 and shared memory sizes, compute capability, cuDNN version.
    """
    if chip not in _GPU_SPECS:
        raise ValueError(f"no GPU target description for {chip!r}; known: {', '.join(_GPU_SPECS)}")
    desc, sms, fpus, (major, minor), clock, mem, bw, l2, smem = _GPU_SPECS[chip]
    return f"""gpu_device_info {{
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_core: {smem}
  threads_per_core_limit: 2048
  core_count: {sms}
  fpus_per_core: {fpus}
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: {bw}
  l2_cache_size: {l2}
  clock_rate_ghz: {clock}
  device_memory_size: {mem}
  shared_memory_per_block_optin: {smem - 1024}
  cuda_compute_capability {{ major: {major} minor: {minor} }}
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}}
platform_name: "CUDA"
dnn_version_info {{ major: 9 minor: 1 }}
device_description_str: "{desc}"
"""


def _quiet_libtpu_env() -> None:
    """On a machine without TPUs, tell libtpu not to look for them (it would print a page of warnings);
    :func:`gensim_jax._quiet.quiet_libtpu_env`. On a TPU VM nothing is set, so the local TPUs keep working."""
    from gensim_jax._quiet import quiet_libtpu_env

    quiet_libtpu_env()


def _tpu_devices(topo: Topology) -> list:
    # compile-only use: several processes (pytest workers, parallel plans) may load libtpu at once
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    _quiet_libtpu_env()
    try:
        import libtpu  # noqa: F401
    except ImportError:
        raise PlannerSetupError(
            f"planning for {topo.name} needs the TPU compiler (libtpu), which is not installed: "
            "pip install 'gensim-jax[tpu]'"
        ) from None
    from jax.experimental import topologies

    dims = "x".join(str(d) for d in topo.shape)
    # v4 chips have two TensorCores that JAX drives as one device ("megacore"), as on real v4 slices
    kw = {"chip_config_name": "megacore"} if topo.chip.name == "v4" else {}
    try:
        desc = topologies.get_topology_desc(topology_name=f"{topo.chip.name}:{dims}", platform="tpu", **kw)
    except Exception as e:  # libtpu rejects shapes it does not support
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"libtpu does not accept topology {topo.name!r}: {msg}") from None
    return list(desc.devices)


def _gpu_devices(topo: Topology) -> list:
    import importlib

    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
    for plugin in COMPILER_MODULES["cuda"]:
        try:
            importlib.import_module(plugin)
            break
        except ImportError:
            continue
    else:
        raise PlannerSetupError(
            f"planning for {topo.name} needs the XLA CUDA compiler plugin, which is not installed: "
            "pip install 'jax[cuda12]' (the same version as jax; no GPU is needed)"
        ) from None
    from jax.experimental import topologies

    hosts, per_host = topo.shape
    try:
        desc = topologies.get_topology_desc(
            platform="cuda", target_config=gpu_target_config(topo.chip.name), topology=f"1x{hosts}x{per_host}"
        )
    except Exception as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PlannerSetupError(
            f"the CUDA plugin could not describe {topo.name!r} ({msg}); on a machine without a GPU "
            "start the process with JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 (and CUDA_VISIBLE_DEVICES=-1), "
            "and install jax[cuda12] at the version of jax"
        ) from None
    return list(desc.devices)


def has_compiler(topo: Topology) -> bool:
    """Whether one of :data:`COMPILER_MODULES` of ``topo``'s platform is installed (looked up, not loaded:
    no library starts). :func:`build_devices` raises :class:`PlannerSetupError` where it is not."""
    import importlib.util

    for name in COMPILER_MODULES[topo.platform]:
        try:
            if importlib.util.find_spec(name) is not None:
                return True
        except (ImportError, ValueError):  # a parent package missing, or a module set to None in sys.modules
            continue
    return False


def build_devices(topo: Topology | str) -> list:
    """Compile-only JAX devices of ``topo`` (a :class:`Topology` or its name)."""
    if isinstance(topo, str):
        topo = parse_topology(topo)
    devs = _tpu_devices(topo) if topo.chip.kind == "tpu" else _gpu_devices(topo)
    if len(devs) != topo.num_devices:
        raise ValueError(
            f"topology {topo.name!r} should have {topo.num_devices} devices, the compiler built {len(devs)}"
        )
    return devs
