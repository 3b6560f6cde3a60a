"""The training state shared by every objective: parameters, BatchNorm statistics, optimizer, step, RNG.

:class:`TrainState` is a ``flax.struct`` dataclass, i.e. a pytree whose array leaves are ``step``,
``params``, ``batch_stats``, ``opt_state`` and ``rng``; the model's ``apply_fn`` and the optax
transformation ``tx`` are static fields (part of the tree structure, not leaves), so a state can be
passed through ``jax.jit``, sharded leaf by leaf and saved with orbax.

The RNG is stored as raw ``uint32`` key data (``jax.random.key_data``) so that it checkpoints and
shards like any other array; the step function derives a fresh key for step ``t`` with
``fold_in(key, t)``, which makes a resumed run draw exactly the random numbers of an uninterrupted one.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import optax

Array = jax.Array
PyTree = Any

__all__ = ["TrainState", "create_train_state", "step_key"]


@flax.struct.dataclass
class TrainState:
    """Everything a training step reads and writes.

    Attributes:
      step: scalar ``int32`` array, the number of optimizer updates applied so far.
      params: the model's ``params`` collection.
      batch_stats: the model's ``batch_stats`` collection (``{}`` for models without BatchNorm).
      opt_state: the optax state of ``tx``.
      rng: ``uint32`` key data of the run's base key (``jax.random.key_data`` of a typed key).
      apply_fn: the Flax ``model.apply`` (static).
      tx: the optax ``GradientTransformation`` (static).
    """

    step: Array
    params: PyTree
    batch_stats: PyTree
    opt_state: PyTree
    rng: Array
    apply_fn: Callable = flax.struct.field(pytree_node=False)
    tx: optax.GradientTransformation = flax.struct.field(pytree_node=False)

    @property
    def variables(self) -> dict:
        """The variables dict ``{"params": ..., "batch_stats": ...}`` for ``model.apply``."""
        if self.batch_stats:
            return {"params": self.params, "batch_stats": self.batch_stats}
        return {"params": self.params}

    def apply_gradients(self, grads: PyTree, batch_stats: Optional[PyTree] = None) -> "TrainState":
        """One optax update: ``params <- params + tx.update(grads)``, ``step <- step + 1``.

        Args:
          grads: pytree shaped like ``params``.
          batch_stats: new BatchNorm statistics (kept unchanged when ``None``).
        """
        updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
        params = optax.apply_updates(self.params, updates)
        return self.replace(
            step=self.step + 1,
            params=params,
            opt_state=opt_state,
            batch_stats=self.batch_stats if batch_stats is None else batch_stats,
        )


def step_key(state: TrainState) -> Array:
    """The typed PRNG key of the current step: ``fold_in(key(state.rng), state.step)``."""
    return jax.random.fold_in(jax.random.wrap_key_data(state.rng), state.step)


def create_train_state(
    model, tx: optax.GradientTransformation, rng, example_input=None, variables: Optional[dict] = None
) -> TrainState:
    """Initialise a :class:`TrainState` for a Flax ``model`` and an optax ``tx``.

    Args:
      model: a Flax linen module (e.g. ``gensim_jax.models.get_model("lenet5")``).
      tx: optax transformation, e.g. ``optax.adam(1e-3)``.
      rng: an integer seed, a typed key (``jax.random.key``) or raw key data; it is split into an
        initialisation key and the run's base key.
      example_input: ``(b, ...)`` array used by ``model.init`` (default ``model.example_input()``).
      variables: ready variables (e.g. from a PyTorch import) used instead of ``model.init``.

    Returns:
      A state at ``step = 0``.

    Example:
      >>> import optax
      >>> from gensim_jax.models import get_model
      >>> s = create_train_state(get_model("mlp"), optax.sgd(0.1), 0)
      >>> int(s.step)
      0
    """
    if isinstance(rng, (int, np.integer)):
        key = jax.random.key(int(rng))
    elif jnp.issubdtype(jnp.asarray(rng).dtype, jax.dtypes.prng_key):
        key = rng
    else:
        key = jax.random.wrap_key_data(jnp.asarray(rng, jnp.uint32))
    init_key, run_key = jax.random.split(key)
    if variables is None:
        if example_input is None:
            if not hasattr(model, "example_input"):
                raise ValueError("example_input is required for a model without example_input()")
            example_input = model.example_input()
        variables = jax.jit(model.init)(init_key, example_input)
    variables = dict(variables)
    if "params" not in variables:
        raise ValueError(f"variables must contain 'params', got collections {sorted(variables)}")
    params = variables["params"]
    batch_stats = variables.get("batch_stats", {})
    return TrainState(
        step=jnp.zeros((), jnp.int32),
        params=params,
        batch_stats=batch_stats,
        opt_state=tx.init(params),
        rng=jax.random.key_data(run_key),
        apply_fn=model.apply,
        tx=tx,
    )
