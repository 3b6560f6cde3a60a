"""Model registry: configs name encoders by string (``"resnet50"``, ``"cornet_s"``, ...).

Research forks add their own encoder with :func:`register_model`; every registered factory takes
keyword overrides of the model's fields (``num_classes``, ``projection_dims``, ``dtype``, ...).

Example:
    >>> model = get_model("resnet18", num_classes=11)
    >>> model.num_classes
    11
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.linen as nn

from gensim_jax.models import cornet, lenet, mlp, resnet

_REGISTRY: dict[str, Callable[..., nn.Module]] = {}


def register_model(name: str, factory: Callable[..., nn.Module] | None = None, *, overwrite: bool = False) -> Any:
    """Register ``factory`` under ``name``; usable as ``register_model("x", f)`` or as a decorator.

    Raises ``ValueError`` if the name is taken (unless ``overwrite=True``).
    """

    def _register(f: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        if not isinstance(name, str) or not name:
            raise ValueError(f"model name must be a non-empty string, got {name!r}")
        if name in _REGISTRY and not overwrite:
            raise ValueError(f"model name {name!r} is already registered")
        _REGISTRY[name] = f
        return f

    return _register if factory is None else _register(factory)


def get_model(name: str, **kwargs: Any) -> nn.Module:
    """Build the registered model ``name`` with field overrides ``kwargs``.

    Raises ``ValueError`` naming the known models when ``name`` is unknown.
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown model {name!r}; known models: {list_models()}")
    return _REGISTRY[name](**kwargs)


def list_models() -> list[str]:
    """Sorted names of all registered models."""
    return sorted(_REGISTRY)


for _name, _factory in {
    "resnet18": resnet.resnet18,
    "resnet34": resnet.resnet34,
    "resnet50": resnet.resnet50,
    "resnet101": resnet.resnet101,
    "resnet152": resnet.resnet152,
    "cornet_z": cornet.cornet_z,
    "cornet_rt": cornet.cornet_rt,
    "cornet_s": cornet.cornet_s,
    "lenet5": lenet.lenet5,
    "mlp": mlp.two_layer_perceptron,
}.items():
    register_model(_name, _factory)
