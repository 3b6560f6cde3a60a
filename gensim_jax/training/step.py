"""The generic train and eval steps shared by every objective, with gradient accumulation.

:func:`train_step` differentiates an objective's pure ``(state, batch, rng) -> (loss, aux)`` with
respect to the parameters, stores the new BatchNorm statistics, applies the optax update and
returns scalar metrics.  The step's key is ``fold_in(state.rng, state.step)``, so a resumed run
draws the same random numbers as an uninterrupted one.

Gradient accumulation (``accum_steps = k``) splits the step batch into ``k`` micro-batches,
runs them sequentially (``lax.scan``, so memory is that of one micro-batch), averages gradients
and metrics, and applies ONE optimizer update.  Micro-batch ``i`` takes examples ``i, i + k,
i + 2k, ...``: with the batch sharded over the mesh's data axis, every device keeps its own rows
(no data moves between devices).  For losses that are means over independent terms (triplets,
cross entropy, per-anchor terms with partners inside the same micro-batch) of equal-size
micro-batches, the result equals one step on the whole batch.  All-pairs losses (GenSim
regression, NT-Xent, SupCon, SINCERE) are NOT decomposable: accumulation averages ``k`` losses,
each over the pairs inside one micro-batch of ``B / k`` examples, i.e. ``k (B/k)^2`` of the
``B^2`` pairs.  It has the same expectation per pair but fewer negatives per anchor; to enlarge
the set of pairs, add devices to the data axis instead (the global batch is one all-pairs batch).
BatchNorm likewise sees micro-batch statistics; its running statistics are updated ``k`` times.

Images cross from the host to the device as ``uint8`` (a quarter of the bytes of float32) and are
normalised inside the step (:func:`normalize_inputs`), as the experiment's ``preprocess`` names it:
the same name an export carries, so training and evaluation normalise alike.  With a device
augmentation (``augment``, a :class:`gensim_jax.data.device_augment.DeviceAugment`; ``data.augment =
"device"``) the host sends each example's ``uint8`` image at its load size and its ``augment_seed``, and
the step draws the random views first, inside the same program, before normalising them.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import optax

from gensim_jax.preprocessing import INPUT_PREPROCESSING, normalization_table
from gensim_jax.training.objectives import Objective
from gensim_jax.training.state import TrainState, step_key

Array = jax.Array

__all__ = [
    "train_step",
    "eval_step",
    "split_microbatches",
    "jit_train_step",
    "bind_objective",
    "make_train_step",
    "make_eval_step",
    "CPU_EIGEN_CONV_OPTIONS",
    "default_compiler_options",
    "INPUT_PREPROCESSING",
    "normalize_inputs",
]


#: XLA compiler options for CPU training of convolutional encoders: convolutions are compiled by
#: XLA's Eigen path instead of YNNPACK (which jaxlib 0.10 uses by default); dots and reductions stay
#: on YNNPACK.  Measured in docs/performance_log.md ("XLA CPU options").  :func:`make_train_step`
#: compiles a step for CPU devices with them by default (``compiler_options="auto"``); never pass
#: them for another platform (its compiler rejects ``xla_cpu_*`` options).
CPU_EIGEN_CONV_OPTIONS = {
    "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,LIBRARY_FUSION_TYPE_REDUCE",
}


def default_compiler_options(mesh=None) -> dict | None:
    """The compiler options a train step gets by default: :data:`CPU_EIGEN_CONV_OPTIONS` when it compiles
    for CPU devices (``mesh``'s, else JAX's default backend), else none (XLA's defaults on TPU and GPU).

    Example:
      >>> import jax
      >>> (default_compiler_options() is not None) == (jax.default_backend() == "cpu")
      True
    """
    platform = mesh.devices.flat[0].platform if mesh is not None else jax.default_backend()
    return dict(CPU_EIGEN_CONV_OPTIONS) if platform == "cpu" else None


def _resolve_compiler_options(compiler_options, mesh) -> dict | None:
    if isinstance(compiler_options, str):
        if compiler_options != "auto":
            raise ValueError(f"compiler_options must be a mapping, None or 'auto', got {compiler_options!r}")
        return default_compiler_options(mesh)
    return None if compiler_options is None else dict(compiler_options)


def normalize_inputs(batch: Mapping[str, Array], preprocess: str = "imagenet", keys=None) -> dict[str, Array]:
    """The ``uint8`` entries ``keys`` of ``batch`` (default: every ``uint8`` entry) as float32 normalised by
    ``preprocess``; other entries unchanged (the steps pass the objective's ``input_keys``: metadata
    stored as ``uint8``, e.g. binary features, stays as it is).

    ``imagenet``: ``(x / 255 - mean) / std`` per channel (``mean``/``std``:
    :data:`gensim_jax.models.torch_import.IMAGENET_MEAN` / ``IMAGENET_STD``), the inputs of the
    ImageNet architectures; ``unit``: ``x / 255``; ``none``: nothing.  Runs inside the jitted step, so
    a host sends images as ``uint8``.  The 256 levels of each channel are looked up in
    :func:`gensim_jax.preprocessing.normalization_table`, so the values equal the host's
    :func:`~gensim_jax.preprocessing.normalize_uint8` bit for bit.  ``imagenet`` needs 1 or 3
    channels (1 is broadcast to 3).

    Example:
      >>> import numpy as np
      >>> out = normalize_inputs({"image": np.full((1, 1, 1, 3), 255, np.uint8), "y": np.ones(1)}, "unit")
      >>> out["image"].dtype, float(out["image"].max()), out["y"].dtype
      (dtype('float32'), 1.0, dtype('float64'))
    """
    if preprocess not in INPUT_PREPROCESSING:
        raise ValueError(f"preprocess must be one of {INPUT_PREPROCESSING}, got {preprocess!r}")
    if preprocess == "none":
        return dict(batch)
    table = normalization_table(preprocess).reshape(-1)  # level l of channel c at c * 256 + l

    def norm(x):
        if jnp.result_type(x) != jnp.uint8:
            return x
        x = jnp.asarray(x)
        if preprocess == "unit":
            return jnp.take(table, x.astype(jnp.int32))
        if x.shape[-1] == 1:
            x = jnp.broadcast_to(x, x.shape[:-1] + (3,))
        elif x.shape[-1] != 3:
            raise ValueError(f"'imagenet' normalisation needs 1 or 3 channels, got an entry of shape {x.shape}")
        return jnp.take(table, x.astype(jnp.int32) + 256 * jnp.arange(3, dtype=jnp.int32))

    return {k: norm(v) if keys is None or k in keys else v for k, v in batch.items()}


def _check_objective(objective) -> None:
    if not isinstance(objective, Objective):
        raise TypeError(f"objective must be a gensim_jax.training.objectives.Objective, got {type(objective).__name__}")


def split_microbatches(batch: Mapping[str, Array], accum_steps: int) -> dict[str, Array]:
    """Reshape every ``(B, ...)`` leaf to ``(k, B/k, ...)``; micro-batch ``i`` holds rows ``i::k``.

    Raises ``ValueError`` when ``B`` is not divisible by ``accum_steps`` or the leaves disagree on ``B``.
    """
    sizes = {k: jnp.shape(v)[0] if jnp.ndim(v) else None for k, v in batch.items()}
    bs = set(sizes.values())
    if None in bs or len(bs) != 1:
        raise ValueError(f"every batch entry needs the same leading batch size; got {sizes}")
    b = bs.pop()
    if accum_steps < 1 or b % accum_steps:
        raise ValueError(f"batch size {b} is not divisible by accum_steps={accum_steps}")
    return {
        k: jnp.swapaxes(jnp.reshape(v, (b // accum_steps, accum_steps) + jnp.shape(v)[1:]), 0, 1)
        for k, v in batch.items()
    }


def _grads(state: TrainState, batch, objective, key, batch_stats):
    st = state.replace(batch_stats=batch_stats)

    def loss_fn(params):
        return objective(st, batch, key, params=params, train=True)

    (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    metrics = dict(aux["metrics"])
    metrics["loss"] = loss
    return grads, metrics, aux["batch_stats"]


def train_step(
    state: TrainState,
    batch: Mapping[str, Array],
    objective: Objective,
    accum_steps: int = 1,
    preprocess: str = "imagenet",
    augment: Callable | None = None,
) -> tuple[TrainState, dict[str, Array]]:
    """One optimizer step of ``objective`` on ``batch`` (pure; jit it, e.g. with :func:`make_train_step`).

    Args:
      state: the :class:`TrainState`.
      batch: dict of ``(B, ...)`` arrays (the global batch under a mesh).
      objective: an :class:`~gensim_jax.training.objectives.Objective`.
      accum_steps: number of micro-batches (static); see the module docstring for its semantics.
      preprocess: how ``uint8`` entries are normalised (static; :func:`normalize_inputs`).
      augment: optional ``augment(batch) -> batch`` applied first (static; e.g. a
        :class:`~gensim_jax.data.device_augment.DeviceAugment`, keyed by the batch's ``augment_seed``).

    Returns:
      ``(new_state, metrics)``; metrics are scalars: ``loss``, ``grad_norm`` and the objective's own
      (e.g. ``accuracy``), averaged over micro-batches.
    """
    _check_objective(objective)
    if augment is not None:
        batch = augment(batch)
    batch = normalize_inputs(batch, preprocess, objective.input_keys)
    key = step_key(state)
    if accum_steps == 1:
        grads, metrics, stats = _grads(state, batch, objective, key, state.batch_stats)
    else:
        micro = split_microbatches(batch, accum_steps)
        first = jax.tree.map(lambda v: v[0], micro)
        g0, m0, _ = jax.eval_shape(lambda: _grads(state, first, objective, key, state.batch_stats))
        zeros = lambda tree: jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), tree)  # noqa: E731

        def body(carry, xs):
            g_sum, m_sum, stats = carry
            i, mb = xs
            g, m, stats = _grads(state, mb, objective, jax.random.fold_in(key, i), stats)
            return (jax.tree.map(jnp.add, g_sum, g), jax.tree.map(jnp.add, m_sum, m), stats), None

        (g_sum, m_sum, stats), _ = jax.lax.scan(
            body, (zeros(g0), zeros(m0), state.batch_stats), (jnp.arange(accum_steps), micro)
        )
        grads = jax.tree.map(lambda g: g / accum_steps, g_sum)
        metrics = jax.tree.map(lambda m: m / accum_steps, m_sum)
    metrics["grad_norm"] = optax.global_norm(grads)
    return state.apply_gradients(grads, stats), metrics


def eval_step(
    state: TrainState, batch: Mapping[str, Array], objective: Objective, preprocess: str = "imagenet"
) -> dict[str, Array]:
    """The objective's loss and metrics in eval mode (running BatchNorm statistics, no update)."""
    _check_objective(objective)
    batch = normalize_inputs(batch, preprocess, objective.input_keys)
    loss, aux = objective(state, batch, step_key(state), train=False)
    metrics = dict(aux["metrics"])
    metrics["loss"] = loss
    return metrics


def jit_train_step(
    *,
    accum_steps: int = 1,
    mesh=None,
    state=None,
    fsdp: bool = False,
    donate: bool = True,
    compiler_options: Mapping[str, Any] | str | None = "auto",
    preprocess: str = "imagenet",
    augment: Callable | None = None,
) -> Callable:
    """The jitted ``step(state, batch, objective) -> (state, metrics)`` with the objective as an argument.

    The objective's array leaves (target tables, traced hyperparameters such as a loss weight) are
    inputs of the compiled program, so one compile serves every objective of the same structure
    (:class:`gensim_jax.training.runner.StepCache` shares it between runs).  Without ``mesh``: plain
    ``jax.jit`` with the state donated; ``compiler_options`` (XLA debug options) go to ``jax.jit``:
    ``"auto"`` (the default) is :func:`default_compiler_options` (:data:`CPU_EIGEN_CONV_OPTIONS` for
    CPU devices, none elsewhere), ``None`` XLA's defaults; ``preprocess`` normalises ``uint8`` entries
    (:func:`normalize_inputs`); ``augment`` (static) draws device augmentations first (:func:`train_step`).
    With ``mesh`` (:mod:`gensim_jax.parallel`):
    the batch on the data axes, the state replicated (or FSDP-sharded with ``fsdp=True``; ``state``,
    concrete or abstract, gives the shardings), the objective and metrics replicated.
    """

    if preprocess not in INPUT_PREPROCESSING:
        raise ValueError(f"preprocess must be one of {INPUT_PREPROCESSING}, got {preprocess!r}")

    def step(st, batch, obj):
        _check_objective(obj)
        return train_step(st, batch, obj, accum_steps, preprocess, augment)

    options = _resolve_compiler_options(compiler_options, mesh)
    kw = {} if options is None else {"compiler_options": options}
    if mesh is None:
        return jax.jit(step, donate_argnums=(0,) if donate else (), **kw)
    from gensim_jax import parallel

    if state is None:
        raise ValueError("a train step on a mesh needs state (concrete or abstract) to derive shardings")
    return parallel.jit_sharded(step, mesh, state, fsdp=fsdp, donate=donate, **kw)


def make_train_step(
    objective: Objective,
    *,
    accum_steps: int = 1,
    mesh=None,
    state=None,
    fsdp: bool = False,
    donate: bool = True,
    compiler_options: Mapping[str, Any] | str | None = "auto",
    preprocess: str = "imagenet",
) -> Callable[[TrainState, Any], tuple[TrainState, dict]]:
    """A jitted ``step(state, batch) -> (state, metrics)`` for ``objective`` (:func:`jit_train_step` bound to it).

    ``step.lower(state, batch)`` lowers the same program ahead of time (FLOPs for the model FLOP
    utilisation, :func:`gensim_jax.training.timing.compiled_flops`; memory).
    """
    _check_objective(objective)
    jitted = jit_train_step(
        accum_steps=accum_steps,
        mesh=mesh,
        state=state,
        fsdp=fsdp,
        donate=donate,
        compiler_options=compiler_options,
        preprocess=preprocess,
    )
    return bind_objective(jitted, objective)


def bind_objective(jitted: Callable, objective: Objective) -> Callable:
    """``step(state, batch) = jitted(state, batch, objective)``, with ``step.lower(state, batch)`` for AOT access."""

    def step(st, batch):
        return jitted(st, batch, objective)

    step.lower = lambda st, batch: jitted.lower(st, batch, objective)
    return step


def make_eval_step(
    objective: Objective, *, mesh=None, state=None, fsdp: bool = False, preprocess: str = "imagenet"
) -> Callable:
    """A jitted evaluation step ``(state, batch) -> metrics`` (sharded like :func:`make_train_step` when ``mesh`` is given)."""
    _check_objective(objective)
    eval_fn = functools.partial(eval_step, preprocess=preprocess)
    if mesh is None:
        jitted = jax.jit(eval_fn)
    else:
        from gensim_jax import parallel

        if state is None:
            raise ValueError("make_eval_step(mesh=...) needs state (concrete or abstract) to derive shardings")
        state_sh = parallel.state_shardings(state, mesh, fsdp=fsdp)
        rep = parallel.replicated(mesh)
        jitted = jax.jit(eval_fn, in_shardings=(state_sh, parallel.batch_sharding(mesh), rep), out_shardings=rep)
    return lambda st, batch: jitted(st, batch, objective)
