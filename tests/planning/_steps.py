"""Small steps to plan in the tests: a two-layer perceptron under the all-pairs GenSim regression."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gensim_jax.models.mlp import TwoLayerPerceptron
from gensim_jax.planning import StepBuild
from gensim_jax.training import objectives as ob
from gensim_jax.training.state import create_train_state
from gensim_jax.training.step import train_step

IN, HIDDEN, EMBED, CLASSES = 64, 256, 128, 10


def mlp_state(in_features=IN, hidden=HIDDEN, embed=EMBED):
    model = TwoLayerPerceptron(in_features=in_features, hidden=hidden, embed_dim=embed)
    return jax.eval_shape(
        lambda: create_train_state(model, optax.adam(1e-3), 0, example_input=jnp.zeros((1, in_features)))
    )


def all_pairs_build(in_features=IN, hidden=HIDDEN, embed=EMBED):
    """``build(global_batch, fsdp)`` for the all-pairs GenSim regression on a class-table target."""
    state = mlp_state(in_features, hidden, embed)
    objective = ob.GenSimRegression(target=ob.TableTarget.create(np.eye(CLASSES) - 1.0), input_key="x")

    def build(global_batch, fsdp=1):
        batch = {
            "x": jax.ShapeDtypeStruct((global_batch, in_features), jnp.float32),
            "label": jax.ShapeDtypeStruct((global_batch,), jnp.int32),
        }
        return StepBuild(train_step, (state, batch, objective))

    return build
