"""ResNet: equivalence with a torchvision-layout PyTorch ResNet, parameter counts, jit/train/bf16."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax.models import get_model, load_pretrained, param_count, resnet, torch_to_flax
from tests._optional import HAS_TORCH, needs_torch

if HAS_TORCH:
    import torch

    from tests.reference.torch_models import randomize_, tv_resnet

from ._compare import assert_close_relative, flax_outputs, nchw_to_nhwc, torch_outputs


@pytest.fixture(scope="module")
def resnet18_pair():
    """A random PyTorch ResNet-18 (11 classes, random BN statistics) and its Flax import."""
    torch.manual_seed(18)
    ref = randomize_(tv_resnet(18, num_classes=11), seed=18)
    model = resnet(18, num_classes=11)
    return ref, model, torch_to_flax(model, ref.state_dict())


@pytest.mark.slow
@pytest.mark.parametrize("depth,batch", [(18, 2), (50, 1)])
@needs_torch
def test_resnet_matches_torchvision_layout(depth, batch, tmp_path):
    """Logits and embeddings equal the PyTorch model's at 224x224 (random weights and BN stats).
    ResNet-50 goes through a safetensors file and the one-call loader."""
    torch.manual_seed(depth)
    ref = randomize_(tv_resnet(depth), seed=depth)
    x = np.random.default_rng(depth).standard_normal((batch, 3, 224, 224)).astype(np.float32)
    t_logits, t_emb = torch_outputs(ref, x)
    if depth == 50:
        from safetensors.torch import save_file

        save_file(ref.state_dict(), str(tmp_path / "resnet50.safetensors"))
        model, variables = load_pretrained("resnet50", tmp_path / "resnet50.safetensors")
    else:
        model = get_model(f"resnet{depth}")
        variables = torch_to_flax(model, ref.state_dict())
    out = flax_outputs(model, variables, nchw_to_nhwc(x))
    chex.assert_shape(out["embedding"], (batch, 512 if depth == 18 else 2048))
    chex.assert_shape(out["logits"], (batch, 1000))
    assert_close_relative(out["logits"], t_logits, what="logits")
    assert_close_relative(out["embedding"], t_emb, what="embedding")


@pytest.mark.slow
@pytest.mark.parametrize("depth", [18, 34, 50, 101, 152])
@needs_torch
def test_resnet_parameter_count_equals_torch(depth):
    with torch.device("meta"):
        n_torch = sum(p.numel() for p in tv_resnet(depth).parameters())
    model = resnet(depth)
    v = jax.eval_shape(lambda: model.init(jax.random.key(0), model.example_input(1, minimal=True)))
    assert param_count(v) == n_torch


@pytest.mark.slow
@needs_torch
def test_resnet_train_mode_matches_torch_and_updates_batchnorm(resnet18_pair):
    """Jitted train mode = PyTorch train mode (batch statistics); running means update as PyTorch's;
    jitted eval mode leaves the statistics untouched."""
    ref, model, v = resnet18_pair
    x = np.random.default_rng(5).standard_normal((4, 3, 64, 64)).astype(np.float32)
    train = jax.jit(lambda v, x: model.apply(v, x, train=True, mutable=["batch_stats"]))
    evalf = jax.jit(lambda v, x: model.apply(v, x, train=False, mutable=["batch_stats"]))
    xh = nchw_to_nhwc(x)
    with jax.default_matmul_precision("highest"):
        out_t, upd_t = train(v, xh)
        out_e, upd_e = evalf(v, xh)
    chex.assert_tree_all_finite((out_t, out_e, upd_t))
    chex.assert_trees_all_equal(upd_e["batch_stats"], v["batch_stats"])

    ref_t = tv_resnet(18, num_classes=11)
    ref_t.load_state_dict(ref.state_dict())
    ref_t.train()
    with torch.no_grad():
        t_logits = ref_t(torch.from_numpy(x)).numpy()
    assert_close_relative(out_t["logits"], t_logits, what="train-mode logits")
    sd = ref_t.state_dict()
    for tname, fpath in [
        ("bn1", ("bn1",)),
        ("layer2.0.downsample.1", ("layer2_0", "downsample_bn")),
        ("layer4.1.bn2", ("layer4_1", "bn2")),
    ]:
        stats = upd_t["batch_stats"]
        for p in fpath:
            stats = stats[p]
        np.testing.assert_allclose(stats["mean"], sd[tname + ".running_mean"].numpy(), rtol=1e-4, atol=1e-5)
        assert not np.allclose(stats["mean"], ref.state_dict()[tname + ".running_mean"].numpy())


@pytest.mark.slow
@needs_torch
def test_resnet_bfloat16_compute_float32_params(resnet18_pair):
    """bfloat16 compute: jitted train mode keeps float32 statistics; eval outputs are float32 and
    close to the float32 PyTorch reference."""
    ref, m32, v = resnet18_pair
    m16 = m32.clone(dtype=jnp.bfloat16)
    x = np.random.default_rng(2).standard_normal((2, 3, 32, 32)).astype(np.float32)

    @jax.jit
    def both(v, x):
        return m16.apply(v, x, train=True, mutable=["batch_stats"]), m16.apply(v, x)

    (out_t, upd), out16 = both(v, nchw_to_nhwc(x))
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(upd))
    chex.assert_tree_all_finite((out_t, upd))
    t_logits, t_emb = torch_outputs(ref, x)
    assert out16["logits"].dtype == out16["embedding"].dtype == jnp.float32
    assert_close_relative(out16["logits"], t_logits, rtol=0.05, what="bf16 logits")
    assert_close_relative(out16["embedding"], t_emb, rtol=0.05, what="bf16 embedding")


def test_resnet_projection_head_shapes():
    model = resnet(18, num_classes=None, projection_dims=(128, 32))
    v = jax.eval_shape(lambda: model.init(jax.random.key(0), model.example_input(2, minimal=True)))
    out = jax.eval_shape(lambda v: model.apply(v, jnp.zeros((2, 64, 64, 3))), v)
    assert set(out) == {"embedding", "projection"}
    assert out["projection"].shape == (2, 32) and out["embedding"].shape == (2, 512)


def test_resnet_rejects_bad_input():
    model = resnet(18)
    with pytest.raises(ValueError, match="NHWC"):
        jax.eval_shape(lambda: model.init(jax.random.key(0), jnp.zeros((1, 3, 32, 32))))
    with pytest.raises(ValueError, match="depth"):
        resnet(20)
