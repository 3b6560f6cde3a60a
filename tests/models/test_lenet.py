"""LeNet-5 of thesis 003: 62,006 parameters, equivalence with the PyTorch definition, PyTorch's default init, jit."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from gensim_jax.models import LeNet5, lenet5, load_pretrained, param_count
from gensim_jax.models.layers import torch_default_bias_init
from tests._optional import HAS_TORCH, needs_torch

if HAS_TORCH:
    import torch

    from tests.reference.torch_models import RefLeNet5, n_params, randomize_

from ._compare import assert_close_relative, flax_outputs, nchw_to_nhwc, random_variables


@needs_torch
def test_lenet_parameter_count_is_thesis_value():
    """Thesis 003 Sec. 3.2 reports 62,006 parameters; the PyTorch definition agrees."""
    model = lenet5()
    v = jax.eval_shape(lambda: model.init(jax.random.key(0), model.example_input()))
    assert param_count(v) == 62_006 == n_params(RefLeNet5())


@needs_torch
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
@pytest.mark.slow
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


@functools.lru_cache(maxsize=None)
def _init(torch_init: bool, seed: int) -> dict:
    model = lenet5(torch_init=torch_init)
    # rbg keys: the jitted init compiles ~4x faster on a CPU than with threefry (Experiment.init_variables)
    return jax.jit(model.init)(jax.random.key(seed, impl="rbg"), model.example_input())["params"]


def _torch_init_params(seed: int = 0) -> dict:
    """``{torch name: (flax array, fan_in)}`` of a LeNet-5 built with ``torch_init=True``."""
    params = _init(True, seed)
    out = {}
    for layer, leaves in params.items():
        kernel = np.asarray(leaves["kernel"])
        fan_in = int(np.prod(kernel.shape[:-1]))  # HWIO: k * k * C_in; Dense (in, out): in
        for name, value in leaves.items():
            out[LeNet5.torch_module_name([layer, "weight" if name == "kernel" else name])] = (np.asarray(value), fan_in)
    return out


@pytest.mark.slow
def test_lenet_torch_init_is_uniform_on_inverse_sqrt_fan_in():
    """PyTorch's default init: weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)), variance 1/(3 fan_in)."""
    got = _torch_init_params()
    assert {k: v[1] for k, v in got.items() if k.endswith("weight")} == {
        "conv1.weight": 75,
        "conv2.weight": 150,
        "fc1.weight": 400,
        "fc2.weight": 120,
        "fc3.weight": 84,
    }
    for name, (value, fan_in) in got.items():
        bound = 1.0 / np.sqrt(fan_in)
        assert np.abs(value).max() <= bound, name
        ks = stats.kstest(value.ravel(), stats.uniform(loc=-bound, scale=2 * bound).cdf)
        assert ks.pvalue > 1e-3, (name, ks)
        if value.size >= 400:  # weights: the variance of U(-b, b) is b^2 / 3
            np.testing.assert_allclose(value.var(), bound**2 / 3, rtol=0.15, err_msg=name)
            assert np.abs(value).max() > 0.95 * bound, name
    # the default init is unchanged: zero biases, kaiming-normal(fan_out) convolutions
    default = _init(False, 0)
    assert all(not np.any(default[k]["bias"]) for k in default)
    assert np.abs(default["conv1"]["kernel"]).max() > 1 / np.sqrt(75)
    with pytest.raises(ValueError, match="fan_in"):
        torch_default_bias_init(0)


@pytest.mark.slow
@needs_torch
def test_lenet_torch_init_matches_a_fresh_torch_lenet():
    """Same support and distribution as the parameters of a freshly built ``RefLeNet5`` (nn.Conv2d / nn.Linear)."""
    torch.manual_seed(0)
    ref = {k: v.numpy() for k, v in RefLeNet5().state_dict().items()}
    got = _torch_init_params()
    assert sorted(got) == sorted(ref)
    for name, (value, fan_in) in got.items():
        bound = 1.0 / np.sqrt(fan_in)
        assert np.abs(ref[name]).max() <= bound, name  # torch's bound is our formula
        if ref[name].size >= 400:
            assert np.abs(ref[name]).max() > 0.95 * bound, name
        ks = stats.ks_2samp(value.ravel(), ref[name].ravel())
        assert ks.pvalue > 1e-3, (name, ks)
