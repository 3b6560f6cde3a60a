"""Optimizers and learning-rate schedules from a config's ``optim`` section (``--set optim.KEY=VALUE``).

:func:`make_optimizer` turns the fields of :class:`OptimConfig` (every
:class:`~gensim_jax.training.experiment.TrainConfig`'s ``optim``) into one optax transformation:

============  ====================================================================================
optimizer     ``adam`` (Kingma & Ba 2015), ``adamw`` (decoupled weight decay, Loshchilov & Hutter
              2019), ``sgd`` (heavy-ball ``momentum``; ``weight_decay`` added to the gradient as L2),
              ``lars`` (layer-wise trust ratio, You et al. 2017; the large-batch SimCLR optimizer)
schedule      ``constant``; ``warmup_cosine``: linear warm-up from 0 over ``warmup_steps``, then
              cosine decay to ``min_learning_rate`` at the last step (Loshchilov & Hutter 2017)
clipping      ``grad_clip_norm``: gradients rescaled to that global norm before the update
============  ====================================================================================

The learning rate is injected as an optimizer *hyperparameter* (``optax.inject_hyperparams``): it lives
in the optimizer state, so :func:`current_learning_rate` reads the value a step used, and the
transformation itself is static and identical for every run of a sweep over seeds.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import jax.numpy as jnp
import optax

__all__ = [
    "OptimConfig",
    "OPTIMIZERS",
    "SCHEDULES",
    "make_schedule",
    "make_optimizer",
    "current_learning_rate",
    "check_optimizer_fields",
]

OPTIMIZERS = ("adam", "adamw", "sgd", "lars")
SCHEDULES = ("constant", "warmup_cosine")


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """The ``optim`` section of every config (``--set optim.learning_rate=3e-4``).

    Attributes:
      optimizer: ``adam``, ``adamw``, ``sgd`` or ``lars`` (see the module docstring).
      learning_rate: the peak learning rate (an arm's ``objectives.<arm>.learning_rate`` overrides it).
      schedule: ``constant`` or ``warmup_cosine``.
      warmup_steps: linear warm-up steps of ``warmup_cosine``.
      min_learning_rate: the rate ``warmup_cosine`` decays to at the last step.
      momentum: heavy-ball momentum of ``sgd`` and ``lars``.
      weight_decay: decoupled (``adamw``, ``lars``) or L2 (``sgd``) weight decay.
      grad_clip_norm: gradients rescaled to this global norm before the update (None: no clipping).
    """

    optimizer: str = "adam"
    learning_rate: float = 1e-3
    schedule: str = "constant"
    warmup_steps: int = 0
    min_learning_rate: float = 0.0
    momentum: float = 0.9
    weight_decay: float = 0.0
    grad_clip_norm: Optional[float] = None


def _optim_section(config: Any) -> OptimConfig:
    """``config.optim`` of a :class:`~gensim_jax.training.experiment.TrainConfig`, or ``config`` itself."""
    return getattr(config, "optim", config)


def check_optimizer_fields(config: Any) -> None:
    """``ValueError`` naming the dotted field (``optim.NAME``) when a field of the ``optim`` section is out of range.

    ``config``: a :class:`~gensim_jax.training.experiment.TrainConfig` or its :class:`OptimConfig`.
    """
    o = _optim_section(config)
    if o.optimizer not in OPTIMIZERS:
        raise ValueError(f"optim.optimizer must be one of {OPTIMIZERS}, got {o.optimizer!r}")
    if not o.learning_rate > 0:
        raise ValueError(f"optim.learning_rate must be positive, got {o.learning_rate}")
    if o.schedule not in SCHEDULES:
        raise ValueError(f"optim.schedule must be one of {SCHEDULES}, got {o.schedule!r}")
    if o.warmup_steps < 0:
        raise ValueError(f"optim.warmup_steps must be >= 0, got {o.warmup_steps}")
    if o.min_learning_rate < 0:
        raise ValueError(f"optim.min_learning_rate must be >= 0, got {o.min_learning_rate}")
    if o.weight_decay < 0:
        raise ValueError(f"optim.weight_decay must be >= 0, got {o.weight_decay}")
    if not 0 <= o.momentum < 1:
        raise ValueError(f"optim.momentum must lie in [0, 1), got {o.momentum}")
    if o.grad_clip_norm is not None and not o.grad_clip_norm > 0:
        raise ValueError(f"optim.grad_clip_norm must be positive (or null), got {o.grad_clip_norm}")


def make_schedule(
    name: str, learning_rate: float, num_steps: int, *, warmup_steps: int = 0, min_learning_rate: float = 0.0
) -> optax.Schedule:
    """The learning rate as a function of the step.

    ``constant``: ``lr``.  ``warmup_cosine``: ``lr * t / warmup`` for ``t < warmup``, then
    ``m + (lr - m) (1 + cos(pi (t - warmup) / (T - warmup))) / 2`` with ``m = min_learning_rate``
    and ``T = num_steps``.

    Example:
      >>> s = make_schedule("warmup_cosine", 1.0, 10, warmup_steps=2)
      >>> [round(float(s(t)), 3) for t in (0, 1, 2, 6, 10)]
      [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be positive, got {learning_rate}")
    if name == "constant":
        return optax.constant_schedule(learning_rate)
    if name == "warmup_cosine":
        if warmup_steps >= max(num_steps, 1):
            raise ValueError(f"warmup_steps={warmup_steps} must be smaller than the run's {num_steps} steps")
        return optax.warmup_cosine_decay_schedule(
            0.0, learning_rate, warmup_steps, max(num_steps, 1), end_value=min_learning_rate
        )
    raise ValueError(f"schedule must be one of {SCHEDULES}, got {name!r}")


def _base(optimizer: str, learning_rate, *, momentum: float, weight_decay: float) -> optax.GradientTransformation:
    if optimizer == "adam":
        return optax.adam(learning_rate)
    if optimizer == "adamw":
        return optax.adamw(learning_rate, weight_decay=weight_decay)
    if optimizer == "sgd":
        sgd = optax.sgd(learning_rate, momentum=momentum or None)
        return optax.chain(optax.add_decayed_weights(weight_decay), sgd) if weight_decay else sgd
    if optimizer == "lars":
        return optax.lars(learning_rate, weight_decay=weight_decay, momentum=momentum)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")


def make_optimizer(config: Any, num_steps: int, learning_rate: Optional[float] = None) -> optax.GradientTransformation:
    """The optax transformation of ``config`` (a :class:`TrainConfig` or its :class:`OptimConfig`) for a run of ``num_steps``.

    ``learning_rate`` overrides ``optim.learning_rate`` (an arm's own rate, ``objectives.<arm>.learning_rate``).
    The peak rate and the schedule's step count are baked into the returned transformation, so build
    it once and reuse it for every run that shares them: the transformation is a static part of the
    train state, and an equal one lets every run reuse the compiled step.

    Example:
      >>> tx = make_optimizer(OptimConfig(optimizer="sgd", learning_rate=0.1, momentum=0.0), 100)
      >>> import jax.numpy as jnp
      >>> p = {"w": jnp.ones(2)}
      >>> u, _ = tx.update({"w": jnp.ones(2)}, tx.init(p), p)
      >>> u["w"].tolist()
      [-0.10000000149011612, -0.10000000149011612]
    """
    o = _optim_section(config)
    check_optimizer_fields(o)
    lr = o.learning_rate if learning_rate is None else learning_rate
    schedule = make_schedule(
        o.schedule, lr, num_steps, warmup_steps=o.warmup_steps, min_learning_rate=o.min_learning_rate
    )

    def build(learning_rate):
        return _base(o.optimizer, learning_rate, momentum=o.momentum, weight_decay=o.weight_decay)

    tx = optax.inject_hyperparams(build)(learning_rate=schedule)
    if o.grad_clip_norm is not None:
        tx = optax.chain(optax.clip_by_global_norm(o.grad_clip_norm), tx)
    return tx


def current_learning_rate(opt_state) -> Optional[jnp.ndarray]:
    """The learning rate stored by ``inject_hyperparams`` in ``opt_state`` (the last step's), or None."""
    states = opt_state if isinstance(opt_state, tuple) and not hasattr(opt_state, "hyperparams") else (opt_state,)
    for s in states:
        hp = getattr(s, "hyperparams", None)
        if isinstance(hp, dict) and "learning_rate" in hp:
            return hp["learning_rate"]
    return None
