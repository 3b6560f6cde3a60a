"""Ahead-of-time plans of a training step for TPU and GPU topologies, without their hardware.

``plan_step(step_fn, abstract_args, topology="v5e:16x16")`` compiles the runner's step for the
target's compile-only devices and reports, per device, memory against the chip (fits or not, by how
much, which buffer dominates), FLOPs per step and per example, HBM bytes, the collectives and a
roofline estimate; :func:`max_global_batch` bisects over compiles for the largest batch that fits.
The chip table with the source of every figure is :data:`CHIPS`.  The TPU compiler comes from
``libtpu`` (``pip install 'gensim-jax[tpu]'``), the GPU compiler from ``jax[cuda12]``; both are
imported only when a topology needs them.  A :class:`PlanCache` (``plan_step(..., cache=...)``;
``gensim-jax plan`` uses one by default) keeps each compile's analyses, keyed by the lowered program
and the target, so an identical plan reuses them.
"""

from gensim_jax.planning.cache import PlanCache, default_cache_dir
from gensim_jax.planning.chips import CHIPS, Chip, chip_table_markdown, get_chip
from gensim_jax.planning.compile import CompiledStep, compile_step
from gensim_jax.planning.max_batch import max_global_batch
from gensim_jax.planning.plan import StepBuild, default_shardings, largest_intermediates, plan_step
from gensim_jax.planning.report import PlanReport, fmt_bytes
from gensim_jax.planning.roofline import roofline
from gensim_jax.planning.topology import PlannerSetupError, Topology, build_devices, parse_topology

__all__ = [
    "PlanCache",
    "default_cache_dir",
    "CHIPS",
    "Chip",
    "chip_table_markdown",
    "get_chip",
    "CompiledStep",
    "compile_step",
    "max_global_batch",
    "StepBuild",
    "default_shardings",
    "largest_intermediates",
    "plan_step",
    "PlanReport",
    "fmt_bytes",
    "roofline",
    "PlannerSetupError",
    "Topology",
    "build_devices",
    "parse_topology",
]
