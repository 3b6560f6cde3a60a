"""The ``jax.pmap`` training step with explicit collectives (the alternative to the jitted mesh step).

Prepare its inputs with :func:`gensim_jax.parallel.replicate_for_pmap` and
:func:`gensim_jax.parallel.split_for_pmap`.  The mesh path (:func:`gensim_jax.training.step.jit_train_step`
on a :func:`gensim_jax.parallel.make_mesh`) is the one the runner uses: it gives global-batch BatchNorm.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from gensim_jax.training.objectives import forward
from gensim_jax.training.state import step_key

__all__ = ["pmap_train_step"]


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
