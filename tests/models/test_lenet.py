"""LeNet-5 of thesis 003: 62,006 parameters, equivalence with the PyTorch definition, jit."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from gensim_jax.models import lenet5, load_pretrained, param_count
from tests.reference.torch_models import RefLeNet5, n_params, randomize_

from ._compare import assert_close_relative, flax_outputs, nchw_to_nhwc, random_variables


def test_lenet_parameter_count_is_thesis_value():
    """Thesis 003 Sec. 3.2 reports 62,006 parameters; the PyTorch definition agrees."""
    model = lenet5()
    v = jax.eval_shape(lambda: model.init(jax.random.key(0), model.example_input()))
    assert param_count(v) == 62_006 == n_params(RefLeNet5())


def test_lenet_matches_torch():
    torch.manual_seed(0)
    ref = randomize_(RefLeNet5())
    x = np.random.default_rng(0).standard_normal((5, 3, 32, 32)).astype(np.float32)
    with torch.no_grad():
        t_logits, t_emb = ref(torch.from_numpy(x)).numpy(), ref.embed(torch.from_numpy(x)).numpy()
    model, v = load_pretrained("lenet5", ref.state_dict())
    out = flax_outputs(model, v, nchw_to_nhwc(x))
    chex.assert_shape(out["embedding"], (5, 84))
    assert_close_relative(out["logits"], t_logits, what="logits")
    assert_close_relative(out["embedding"], t_emb, what="embedding")


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_lenet_jit_train_and_eval(dtype):
    model = lenet5(dtype=dtype, projection_dims=(32, 8))
    x = jax.random.uniform(jax.random.key(1), (3, 32, 32, 3))
    v = random_variables(model, seed=1)
    f = jax.jit(model.apply, static_argnames="train")
    out_t, out_e = f(v, x, train=True), f(v, x, train=False)
    chex.assert_trees_all_close(out_t, out_e)  # no BatchNorm: train and eval agree
    chex.assert_shape([out_e["logits"], out_e["projection"]], [(3, 10), (3, 8)])
    assert out_e["logits"].dtype == jnp.float32


def test_lenet_rejects_wrong_size():
    with pytest.raises(ValueError, match="32, 32, 3"):
        lenet5().init(jax.random.key(0), jnp.zeros((1, 28, 28, 3)))
