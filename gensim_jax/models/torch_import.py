"""Import PyTorch checkpoints (torchvision ResNets, the reference CORnets, LeNet-5, the MLP) into Flax.

PyTorch is optional: nothing here imports ``torch`` at module import time. ``.pth``/``.pt`` files are
read with ``torch.load(path, map_location="cpu", weights_only=True)`` (no arbitrary pickle code is
run) inside :func:`load_state_dict`; ``.safetensors`` files are read with safetensors' numpy API,
which needs no torch at all.

Conversion rules (Flax leaf <- PyTorch key), module names given by each model's
``torch_module_name``:

* ``Conv2d`` ``kernel`` ``(kh, kw, I, O)`` <- ``weight`` ``(O, I, kh, kw)`` transposed (OIHW -> HWIO);
* ``Dense`` ``kernel`` ``(I, O)`` <- ``weight`` ``(O, I)`` transposed; ``bias`` <- ``bias``;
* BatchNorm/GroupNorm ``scale``/``bias`` <- ``weight``/``bias``; ``batch_stats`` ``mean``/``var`` <-
  ``running_mean``/``running_var``; ``num_batches_tracked`` is ignored.

Reference CORnet checkpoints are dicts ``{"state_dict": {...}, ...}`` saved from a
``DataParallel`` model: the ``state_dict`` entry is taken and the ``module.`` prefixes are removed.
Import is strict by default: every checkpoint key must be used and every model weight found, else
a :class:`CheckpointMismatchError` lists the missing and unexpected keys.

Example (one call, then embed):

    model, variables = load_pretrained("cornet_s", "cornet_s-1d3f7974.pth")
    emb = model.apply(variables, normalize_imagenet(images), method="embed")   # (B, 512)
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import traverse_util

from gensim_jax._extras import require
from gensim_jax.models.heads import ProjectionHead
from gensim_jax.models.registry import get_model
from gensim_jax.preprocessing import IMAGENET_MEAN, IMAGENET_STD

_PARAM_LEAF = {"kernel": "weight", "scale": "weight", "bias": "bias"}
_STAT_LEAF = {"mean": "running_mean", "var": "running_var"}
_IGNORED_SUFFIXES = ("num_batches_tracked",)
#: Flax top-level modules that PyTorch checkpoints never contain; always freshly initialised.
_NEW_HEADS = ("projector",)


class CheckpointMismatchError(ValueError):
    """A checkpoint's keys or shapes do not match the model (strict import)."""


def _to_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch.Tensor, converted without importing torch here
        value = value.detach().cpu()
        if str(value.dtype) in ("torch.bfloat16", "torch.float16"):
            value = value.float()
        return value.numpy()
    return np.asarray(value)


def load_state_dict(source: str | os.PathLike | Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Read a PyTorch state dict as ``{key: numpy array}``.

    Args:
      source: a path to a ``.safetensors`` file (read with ``safetensors.numpy``, no torch needed),
        a path to any other file written by ``torch.save`` (read with ``torch.load(...,
        weights_only=True)``; needs torch), or an in-memory mapping of tensors/arrays.
        A checkpoint dict with a ``"state_dict"`` entry (the reference CORnet format) is unwrapped;
        leading ``module.`` prefixes (``DataParallel``) are stripped.
    Returns:
      Flat dict of numpy arrays keyed by PyTorch parameter/buffer names.
    """
    if isinstance(source, Mapping):
        raw: Any = source
    else:
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"checkpoint file not found: {path}")
        if path.endswith(".safetensors"):
            load_file = require("safetensors.numpy", "torch").load_file
            raw = load_file(path)
        else:
            try:
                import torch
            except ImportError as err:
                raise ImportError(
                    f"reading {path!r} needs PyTorch (pip install 'gensim-jax[torch]'), or convert the "
                    "checkpoint to .safetensors, which loads without it"
                ) from err
            raw = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(raw, Mapping) and "state_dict" in raw and isinstance(raw["state_dict"], Mapping):
        raw = raw["state_dict"]
    if not isinstance(raw, Mapping):
        raise ValueError(f"checkpoint does not hold a state dict (got {type(raw).__name__})")
    out = {}
    for key, value in raw.items():
        k = str(key)
        while k.startswith("module."):
            k = k[len("module.") :]
        out[k] = _to_numpy(value)
    return out


def _torch_key(model: nn.Module, collection: str, path: tuple[str, ...]) -> str:
    module_name = model.torch_module_name(path[:-1])
    leaf = path[-1]
    table = _PARAM_LEAF if collection == "params" else _STAT_LEAF
    if collection not in ("params", "batch_stats") or leaf not in table:
        raise ValueError(f"no PyTorch name for Flax variable {collection}/{'/'.join(path)}")
    return f"{module_name}.{table[leaf]}"


def _convert(value: np.ndarray, target_shape: tuple[int, ...]) -> np.ndarray:
    if value.ndim == 4:  # conv OIHW -> HWIO
        value = np.transpose(value, (2, 3, 1, 0))
    elif value.ndim == 2 and len(target_shape) == 2:  # linear (out, in) -> (in, out)
        value = value.T
    return value


def torch_to_flax(
    model: nn.Module, state_dict: Mapping[str, Any], *, strict: bool = True, rng: jax.Array | None = None
) -> dict[str, Any]:
    """Convert a PyTorch state dict into the Flax variables of ``model``.

    Args:
      model: a :mod:`gensim_jax.models` encoder (it knows its PyTorch module names).
      state_dict: PyTorch state dict (tensors or arrays); see :func:`load_state_dict`.
      strict: raise :class:`CheckpointMismatchError` listing missing and unexpected keys (default).
        With ``strict=False`` they produce a warning and missing weights are initialised from ``rng``.
      rng: ``jax.random`` key to initialise weights a PyTorch checkpoint cannot hold (the projection
        head, when ``projection_dims`` is set) or, non-strict, missing ones.
    Returns:
      ``{"params": ..., "batch_stats": ...}`` (``batch_stats`` when the model has BatchNorm), float
      arrays in the model's ``param_dtype``.

    A model built with ``num_classes=None`` deliberately drops the classifier, so the checkpoint's
    classifier weights are then not "unexpected". A checkpoint whose classifier width differs from
    ``num_classes`` is a shape error: load with the checkpoint's width, then use
    :func:`gensim_jax.models.extend_classifier` or :func:`~gensim_jax.models.replace_classifier`.
    """
    if not hasattr(model, "torch_module_name"):
        raise TypeError(
            f"{type(model).__name__} does not define torch_module_name(path); it cannot be imported from PyTorch"
        )
    if not isinstance(state_dict, Mapping):
        raise TypeError(
            f"state_dict must be a mapping of names to tensors, got {type(state_dict).__name__}; "
            "use load_state_dict(path) for files"
        )
    sd = {k[len("module.") :] if k.startswith("module.") else k: v for k, v in state_dict.items()}
    template = jax.eval_shape(lambda: model.init(jax.random.key(0), model.example_input(1, minimal=True)))
    flat = traverse_util.flatten_dict(template)

    mapping: dict[tuple[str, ...], str] = {}
    fresh: list[tuple[str, ...]] = []
    for key in flat:
        collection, path = key[0], key[1:]
        if path[0] in _NEW_HEADS:
            fresh.append(key)
        else:
            mapping[key] = _torch_key(model, collection, path)

    expected = set(mapping.values())
    used = {k for k in sd if not k.endswith(_IGNORED_SUFFIXES)}
    if getattr(model, "num_classes", 0) is None:
        head = model.torch_module_name(("classifier",))
        used = {k for k in used if not k.startswith(head + ".")}
    missing = sorted(expected - used)
    unexpected = sorted(used - expected)
    if missing or unexpected:
        msg = (
            f"checkpoint does not match {type(model).__name__}: "
            f"{len(missing)} missing key(s) {missing}, {len(unexpected)} unexpected key(s) {unexpected}"
        )
        if strict:
            raise CheckpointMismatchError(msg)
        if missing and rng is None:
            raise ValueError(msg + "; strict=False needs rng= to initialise the missing weights")
        warnings.warn(msg + " (strict=False: missing weights are freshly initialised)", stacklevel=2)

    out: dict[tuple[str, ...], Any] = {}
    bad_shapes = []
    for key, tkey in mapping.items():
        if tkey not in sd:
            fresh.append(key)
            continue
        spec = flat[key]
        value = _convert(_to_numpy(sd[tkey]), spec.shape)
        if value.shape != spec.shape:
            bad_shapes.append(f"{tkey}: checkpoint {tuple(value.shape)} (converted) vs model {spec.shape}")
            continue
        out[key] = jnp.asarray(value, dtype=spec.dtype)
    if bad_shapes:
        raise CheckpointMismatchError(
            f"shape mismatch importing into {type(model).__name__} ({len(bad_shapes)}): {bad_shapes}. "
            "For a different number of classes, import with the checkpoint's num_classes and use "
            "extend_classifier / replace_classifier."
        )
    if fresh:
        if rng is None:
            names = sorted("/".join(k) for k in fresh)
            raise ValueError(
                f"{len(fresh)} weight(s) are not in the checkpoint and need rng= to be "
                f"initialised: {names[:8]}{' ...' if len(names) > 8 else ''}"
            )
        if all(k[1] == "projector" for k in fresh):
            # only the projection head is new: initialise it alone (cheap), not the whole model
            head = ProjectionHead(
                tuple(model.projection_dims),
                use_batchnorm=model.projection_batchnorm,
                dtype=model.dtype,
                param_dtype=model.param_dtype,
            )
            dim = flat[("params", "projector", "dense_0", "kernel")].shape[0]
            init_head = traverse_util.flatten_dict(head.init(rng, jnp.zeros((1, dim), jnp.float32)))
            init = {(k[0], "projector", *k[1:]): val for k, val in init_head.items()}
        else:
            init = traverse_util.flatten_dict(model.init(rng, model.example_input(1, minimal=True)))
        for key in fresh:
            out[key] = init[key]
    return traverse_util.unflatten_dict(out)


def load_pretrained(
    model: str | nn.Module,
    source: str | os.PathLike | Mapping[str, Any],
    *,
    strict: bool = True,
    rng: jax.Array | None = None,
    **model_kwargs: Any,
) -> tuple[nn.Module, dict[str, Any]]:
    """Build a model (by registry name or instance) and load a PyTorch checkpoint into it: one call.

    Args:
      model: registry name (``"resnet50"``, ``"cornet_s"``, ...) or a model instance.
      source: checkpoint path (``.pth``/``.pt`` via torch, ``.safetensors`` without) or state dict.
      strict, rng: see :func:`torch_to_flax`.
      **model_kwargs: fields for the registry factory (e.g. ``projection_dims=(2048, 128)``,
        ``dtype=jnp.bfloat16``); only with a name.
    Returns:
      ``(model, variables)``; embed with ``model.apply(variables, x, method="embed")``.
    """
    if isinstance(model, str):
        model = get_model(model, **model_kwargs)
    elif model_kwargs:
        raise ValueError(f"model_kwargs {sorted(model_kwargs)} only apply when model is a registry name")
    return model, torch_to_flax(model, load_state_dict(source), strict=strict, rng=rng)


def fine_tuning_variables(
    name: str,
    source: str | os.PathLike | Mapping[str, Any],
    model_kwargs: Mapping[str, Any],
    seed: int,
    *,
    new_classes: int | None = None,
    pretrained_classes: int = 1000,
) -> dict[str, Any]:
    """Variables of the checkpoint ``source`` for ``get_model(name, **model_kwargs)``, to fine-tune.

    The checkpoint is read with its ``pretrained_classes``-way read-out (non-strict when the model
    adds a projection head, whose parameters are fresh from ``seed``); with ``new_classes`` that
    many classes are appended to the read-out (:func:`~gensim_jax.models.extend_classifier`, as
    Appendix L adds the 11 shapes to ImageNet's 1,000), else the read-out is dropped.
    """
    from gensim_jax.models.heads import extend_classifier

    key = jax.random.key(seed)
    kw = {**model_kwargs, "num_classes": pretrained_classes}
    _, variables = load_pretrained(name, source, strict=kw.get("projection_dims") is None, rng=key, **kw)
    variables = dict(variables)
    if new_classes:
        return extend_classifier(variables, new_classes, jax.random.fold_in(key, 1))
    params = dict(variables["params"])
    params.pop("classifier", None)
    variables["params"] = params
    return variables


def normalize_imagenet(images: jax.Array) -> jax.Array:
    """The ImageNet input normalisation the torchvision and CORnet checkpoints were trained with.

    Args:
      images: ``(..., H, W, 3)`` RGB in ``[0, 1]`` (NHWC).
    Returns:
      ``(images - mean) / std`` per channel, same shape.
    """
    images = jnp.asarray(images)
    if images.shape[-1] != 3:
        raise ValueError(f"images must be NHWC RGB with 3 channels last, got shape {images.shape}")
    return (images - jnp.asarray(IMAGENET_MEAN)) / jnp.asarray(IMAGENET_STD)
