"""The Appendix H two-layer perceptron (2 -> 32 -> 1)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax.models import load_pretrained, param_count, two_layer_perceptron
from tests._optional import HAS_TORCH, needs_torch

if HAS_TORCH:
    import torch

    from tests.reference.torch_models import n_params, ref_mlp

from ._compare import random_variables


@pytest.mark.slow
@needs_torch
def test_mlp_parameter_count():
    model = two_layer_perceptron()
    v = model.init(jax.random.key(0), model.example_input())
    assert param_count(v) == 129 == n_params(ref_mlp())


@needs_torch
def test_mlp_matches_numpy_and_torch():
    torch.manual_seed(0)
    ref = ref_mlp()
    x = np.random.default_rng(0).normal(3.0, 2.0, size=(64, 2)).astype(np.float32)
    model, v = load_pretrained("mlp", ref.state_dict())
    phi = np.asarray(jax.jit(model.apply)(v, x)["embedding"])
    # explicit numpy: W2 relu(W1 x + b1) + b2 with the PyTorch (out, in) weights
    sd = {k: t.detach().numpy().astype(np.float64) for k, t in ref.state_dict().items()}
    h = np.maximum(x @ sd["0.weight"].T + sd["0.bias"], 0.0)
    np.testing.assert_allclose(phi, h @ sd["2.weight"].T + sd["2.bias"], rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        np.testing.assert_allclose(phi, ref(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-6)
    chex.assert_shape(phi, (64, 1))


@pytest.mark.slow
def test_mlp_grad_and_vmap():
    model = two_layer_perceptron()
    v = random_variables(model, seed=0)
    x = jax.random.normal(jax.random.key(1), (8, 2))
    g = jax.jit(jax.grad(lambda p: jnp.sum(model.apply({"params": p}, x)["embedding"] ** 2)))(v["params"])
    chex.assert_tree_all_finite(g)
    # the gradient wrt the output bias is 2 * sum(phi), computed from the forward pass
    phi = jax.jit(model.apply)(v, x)["embedding"]
    np.testing.assert_allclose(g["output"]["bias"], 2 * np.sum(phi, axis=0), rtol=1e-5)
    per = jax.jit(jax.vmap(lambda xi: model.apply(v, xi[None])["embedding"][0]))(x)
    chex.assert_trees_all_close(per, phi, rtol=1e-6)


def test_mlp_rejects_wrong_width():
    model = two_layer_perceptron()
    with pytest.raises(ValueError, match="in_features=2"):
        model.init(jax.random.key(0), jnp.zeros((4, 3)))
