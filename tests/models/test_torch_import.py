"""PyTorch checkpoint import: file formats, the reference CORnet layout, strictness, lazy torch."""

import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from gensim_jax.models import (
    CheckpointMismatchError,
    get_model,
    load_pretrained,
    load_state_dict,
    normalize_imagenet,
    torch_to_flax,
)
from tests._optional import HAS_TORCH, needs_torch

if HAS_TORCH:
    import torch

    from tests.reference.torch_models import RefCORnetZ, randomize_

from ._compare import assert_close_relative, flax_outputs, nchw_to_nhwc, torch_outputs

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cornet_z_ref():
    torch.manual_seed(0)
    return randomize_(RefCORnetZ(), seed=0)


def _leaves_equal(a, b):
    la, lb = jax.tree_util.tree_leaves_with_path(a), jax.tree_util.tree_leaves_with_path(b)
    assert [p for p, _ in la] == [p for p, _ in lb]
    for (p, x), (_, y) in zip(la, lb):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=str(p))


@pytest.mark.slow
@needs_torch
def test_reference_cornet_checkpoint_file_one_call(tmp_path, cornet_z_ref):
    """A file in the reference format ({'state_dict': {'module.' + key: ...}, 'epoch', 'optimizer'})
    loads with torch.load(weights_only=True) in one call and reproduces the reference outputs."""
    ckpt = {
        "epoch": 43,
        "arch": "CORnet-Z",
        "state_dict": {"module." + k: v for k, v in cornet_z_ref.state_dict().items()},
        "optimizer": {"state": {}, "param_groups": [{"lr": 0.01, "params": [0, 1]}]},
    }
    path = tmp_path / "cornet_z-5c427c9c.pth"
    torch.save(ckpt, path)
    model, variables = load_pretrained("cornet_z", path)
    x = np.random.default_rng(1).standard_normal((2, 3, 64, 64)).astype(np.float32)
    t_logits, t_emb = torch_outputs(cornet_z_ref, x)
    out = flax_outputs(model, variables, nchw_to_nhwc(x))
    assert_close_relative(out["logits"], t_logits, what="logits")
    emb = jax.jit(lambda v, x: model.apply(v, x, method="embed"))(variables, nchw_to_nhwc(x))
    assert_close_relative(emb, t_emb, what="embed")


@needs_torch
def test_safetensors_equals_pth(tmp_path, cornet_z_ref):
    from safetensors.torch import save_file

    sd = {k: v.contiguous() for k, v in cornet_z_ref.state_dict().items()}
    save_file(sd, str(tmp_path / "m.safetensors"))
    torch.save(sd, tmp_path / "m.pth")
    a = load_state_dict(tmp_path / "m.safetensors")
    b = load_state_dict(tmp_path / "m.pth")
    assert sorted(a) == sorted(b) == sorted(sd)
    for k in sd:
        np.testing.assert_array_equal(a[k], sd[k].numpy())
        np.testing.assert_array_equal(b[k], sd[k].numpy())
    model = get_model("cornet_z")
    _leaves_equal(torch_to_flax(model, a), torch_to_flax(model, b))


@needs_torch
def test_layout_conversion_is_explicit(cornet_z_ref):
    """Conv OIHW -> HWIO and linear (out, in) -> (in, out), checked entry by entry."""
    v = torch_to_flax(get_model("cornet_z"), cornet_z_ref.state_dict())
    w = cornet_z_ref.V2.conv.weight.detach().numpy()  # (O, I, kh, kw)
    k = np.asarray(v["params"]["V2"]["conv"]["kernel"])  # (kh, kw, I, O)
    assert k.shape == (3, 3, 64, 128)
    assert k[2, 0, 5, 7] == w[7, 5, 2, 0]
    lin = cornet_z_ref.decoder.linear.weight.detach().numpy()
    assert np.asarray(v["params"]["classifier"]["kernel"])[3, 11] == lin[11, 3]


@needs_torch
def test_strict_lists_missing_and_unexpected_keys(cornet_z_ref):
    model = get_model("cornet_z")
    sd = dict(cornet_z_ref.state_dict())
    del sd["V4.conv.bias"]
    sd["V5.conv.weight"] = torch.zeros(1)
    with pytest.raises(
        CheckpointMismatchError,
        match=r"missing key\(s\) \['V4.conv.bias'\].*"
        r"unexpected key\(s\) \['V5.conv.weight'\]",
    ):
        torch_to_flax(model, sd)
    with pytest.raises(CheckpointMismatchError, match=r"0 missing key\(s\) \[\], 1 unexpected"):
        torch_to_flax(model, {**cornet_z_ref.state_dict(), "V5.conv.weight": torch.zeros(1)})


@pytest.mark.slow
@needs_torch
def test_non_strict_initialises_missing_weights():
    from tests.reference.torch_models import ref_mlp

    torch.manual_seed(0)
    sd = dict(ref_mlp().state_dict())
    del sd["2.bias"]
    sd["3.weight"] = torch.ones(2)
    mlp = get_model("mlp")
    with pytest.raises(ValueError, match="needs rng"):
        torch_to_flax(mlp, sd, strict=False)
    with pytest.warns(UserWarning, match=r"\['2.bias'\].*\['3.weight'\]"):
        v = torch_to_flax(mlp, sd, strict=False, rng=jax.random.key(0))
    assert v["params"]["output"]["bias"].shape == (1,)
    np.testing.assert_array_equal(v["params"]["hidden"]["kernel"], sd["0.weight"].numpy().T)


@pytest.mark.slow
@needs_torch
def test_shape_mismatch_and_heads(cornet_z_ref):
    sd = cornet_z_ref.state_dict()
    with pytest.raises(CheckpointMismatchError, match="extend_classifier"):
        torch_to_flax(get_model("cornet_z", num_classes=11), sd)
    # num_classes=None deliberately drops the checkpoint's decoder
    v = torch_to_flax(get_model("cornet_z", num_classes=None), sd)
    assert "classifier" not in v["params"]
    # a projection head is not in any PyTorch checkpoint: it needs an rng and is initialised
    proj = get_model("cornet_z", projection_dims=(64, 16))
    with pytest.raises(ValueError, match="rng"):
        torch_to_flax(proj, sd)
    v = torch_to_flax(proj, sd, rng=jax.random.key(0))
    assert v["params"]["projector"]["dense_1"]["kernel"].shape == (64, 16)
    assert np.std(np.asarray(v["params"]["projector"]["dense_0"]["kernel"])) > 0


@needs_torch
def test_batchnorm_statistics_imported():
    """running_mean/var -> batch_stats mean/var; num_batches_tracked is ignored."""
    from tests.reference.torch_models import tv_resnet

    torch.manual_seed(0)
    ref = randomize_(tv_resnet(18), seed=4)
    sd = ref.state_dict()
    assert "bn1.num_batches_tracked" in sd
    v = torch_to_flax(get_model("resnet18"), sd)
    bs = v["batch_stats"]
    np.testing.assert_array_equal(
        bs["layer3_0"]["downsample_bn"]["var"], sd["layer3.0.downsample.1.running_var"].numpy()
    )
    np.testing.assert_array_equal(bs["layer1_1"]["bn2"]["mean"], sd["layer1.1.bn2.running_mean"].numpy())
    np.testing.assert_array_equal(v["params"]["layer1_1"]["bn2"]["scale"], sd["layer1.1.bn2.weight"].numpy())


@needs_torch
def test_load_state_dict_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_state_dict(tmp_path / "nope.pth")
    torch.save([1, 2, 3], tmp_path / "list.pth")
    with pytest.raises(ValueError, match="state dict"):
        load_state_dict(tmp_path / "list.pth")
    with pytest.raises(ValueError, match="only apply"):
        load_pretrained(get_model("mlp"), {}, hidden=3)


def test_normalize_imagenet():
    x = np.full((1, 2, 2, 3), 0.5, np.float32)
    y = np.asarray(normalize_imagenet(x))
    np.testing.assert_allclose(
        y[0, 0, 0], (0.5 - np.array([0.485, 0.456, 0.406])) / np.array([0.229, 0.224, 0.225]), rtol=1e-6
    )
    with pytest.raises(ValueError, match="3 channels"):
        normalize_imagenet(np.zeros((1, 3, 4, 4)))


@pytest.mark.slow
def test_importing_models_does_not_import_torch():
    code = (
        "import sys, gensim_jax.models as m; assert 'torch' not in sys.modules, 'torch imported'; "
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'; "
        "assert m.param_count is not None"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
