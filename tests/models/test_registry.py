"""Model registry by name."""

import flax.linen as nn
import pytest

from gensim_jax.models import CORnetS, ResNet, get_model, list_models, register_model


def test_registry_names_and_overrides():
    assert {
        "resnet18",
        "resnet34",
        "resnet50",
        "resnet101",
        "resnet152",
        "cornet_z",
        "cornet_rt",
        "cornet_s",
        "lenet5",
        "mlp",
    } <= set(list_models())
    m = get_model("resnet50", num_classes=11, projection_dims=(2048, 128))
    assert isinstance(m, ResNet) and m.block == "bottleneck" and tuple(m.stage_sizes) == (3, 4, 6, 3)
    assert m.num_classes == 11 and tuple(m.projection_dims) == (2048, 128)
    assert isinstance(get_model("cornet_s"), CORnetS)


def test_registry_errors_and_custom_models():
    with pytest.raises(ValueError, match="unknown model 'resnet9'"):
        get_model("resnet9")

    @register_model("test_tiny_dense")
    def _tiny(**kw):
        return nn.Dense(3, **kw)

    assert "test_tiny_dense" in list_models()
    assert get_model("test_tiny_dense").features == 3
    with pytest.raises(ValueError, match="already registered"):
        register_model("test_tiny_dense", _tiny)
    register_model("test_tiny_dense", _tiny, overwrite=True)
