"""Encoders in Flax linen: ResNet-18..152, CORnet-Z/RT/S, LeNet-5, the Appendix H perceptron.

All models share one interface (:class:`~gensim_jax.models.heads.Encoder`): ``__call__(x,
train=False)`` returns ``{"embedding", "logits"?, "projection"?}``; ``method="embed"`` returns the
penultimate features. PyTorch checkpoints load with :func:`load_pretrained` (torch is imported only
when a ``.pth`` file is read). Importing this package never imports torch.
"""

from gensim_jax._extras import require

require("flax", "models")

from gensim_jax.models.cornet import CORnetRT, CORnetS, CORnetZ, cornet_rt, cornet_s, cornet_z
from gensim_jax.models.heads import Encoder, ProjectionHead, extend_classifier, param_count, replace_classifier
from gensim_jax.models.layers import Conv2d, max_pool
from gensim_jax.models.lenet import LeNet5, lenet5
from gensim_jax.models.mlp import TwoLayerPerceptron, two_layer_perceptron
from gensim_jax.models.registry import get_model, list_models, register_model
from gensim_jax.models.resnet import ResNet, resnet, resnet18, resnet34, resnet50, resnet101, resnet152
from gensim_jax.models.torch_import import (
    CheckpointMismatchError,
    fine_tuning_variables,
    load_pretrained,
    load_state_dict,
    normalize_imagenet,
    torch_to_flax,
)

__all__ = [
    "CORnetRT",
    "CORnetS",
    "CORnetZ",
    "CheckpointMismatchError",
    "Conv2d",
    "Encoder",
    "LeNet5",
    "ProjectionHead",
    "ResNet",
    "TwoLayerPerceptron",
    "cornet_rt",
    "cornet_s",
    "cornet_z",
    "extend_classifier",
    "fine_tuning_variables",
    "get_model",
    "lenet5",
    "list_models",
    "load_pretrained",
    "load_state_dict",
    "max_pool",
    "normalize_imagenet",
    "param_count",
    "register_model",
    "replace_classifier",
    "resnet",
    "resnet18",
    "resnet34",
    "resnet50",
    "resnet101",
    "resnet152",
    "torch_to_flax",
    "two_layer_perceptron",
]
