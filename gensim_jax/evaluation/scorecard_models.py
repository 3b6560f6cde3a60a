"""Registry models as embedding functions for the report card (``gensim-jax score --model``).

:func:`model_embedder` turns a registry model, untrained or with a PyTorch checkpoint, read at a layer,
into ``uint8 images (N, S, S, 3) -> (N, D)``; :func:`model_layers` lists the layers it can read;
:func:`file_sha256` is the provenance of a checkpoint or an embeddings file. Re-exported by
:mod:`gensim_jax.evaluation.scorecard`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Callable, Optional

import numpy as np

__all__ = ["file_sha256", "model_embedder", "model_layers"]


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 hex digest of a file (a checkpoint's or an embeddings file's provenance), read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _layer_fn(model, layer: Optional[str]):
    """``(variables, x) -> (B, D)``: the model's embedding, its ``logits``, or a top-level submodule's output
    (feature maps averaged over space)."""
    import jax.numpy as jnp

    if layer in (None, "embedding"):
        return lambda v, x: model.apply(v, x, method="embed")
    if layer == "logits":
        return lambda v, x: model.apply(v, x)["logits"]

    def fn(v, x):
        _, state = model.apply(
            v,
            x,
            capture_intermediates=lambda mdl, method: method == "__call__" and mdl.name == layer,
            mutable=["intermediates"],
        )
        feats = state["intermediates"][layer]["__call__"][0]
        feats = feats.astype(jnp.float32)
        return feats.mean(axis=tuple(range(1, feats.ndim - 1))) if feats.ndim > 2 else feats

    return fn


def model_layers(variables) -> list:
    """The names ``--layer`` accepts for a model with ``variables``."""
    return ["embedding", "logits", *sorted(k for k in variables.get("params", {}) if k not in ("classifier",))]


def model_embedder(
    name: str,
    weights: Optional[str] = None,
    *,
    layer: Optional[str] = None,
    image_size: Optional[int] = None,
    seed: int = 0,
    batch_size: int = 64,
    variables=None,
    model=None,
) -> tuple[Callable, dict]:
    """``(embed_fn, info)`` of a registry model: untrained (``seed``) or with a PyTorch checkpoint ``weights``.

    ``embed_fn(uint8 (N, S, S, 3)) -> (N, D)`` ImageNet-normalises the images inside the jitted call
    (as training does) and reads ``layer``: ``"embedding"`` (default, the pooled penultimate
    features), ``"logits"``, or a top-level submodule (``V1`` ... ``IT`` of a CORnet, the blocks ``layer1_0`` ...
    ``layer4_1`` of a ResNet-18; an unknown name lists them), its feature maps averaged over space. A checkpoint that does not fit
    the architecture is :class:`~gensim_jax.models.torch_import.CheckpointMismatchError` (a ValueError).
    """
    import jax

    from gensim_jax.models import get_model, list_models
    from gensim_jax.training.step import normalize_inputs

    if model is None:
        if name not in list_models():
            raise ValueError(f"unknown model {name!r}; registered: {', '.join(list_models())}")
        if weights is not None:
            from gensim_jax.models.torch_import import load_pretrained

            if not Path(weights).is_file():
                raise FileNotFoundError(f"--weights {weights}: no such file (a PyTorch .pth/.pt or .safetensors)")
            model, variables = load_pretrained(name, weights)
        else:
            model = get_model(name)
    if len(getattr(model, "input_shape", ())) != 3:
        raise ValueError(f"model {name!r} does not take images (input shape {getattr(model, 'input_shape', None)})")
    if variables is None:
        variables = jax.jit(model.init)(jax.random.key(int(seed)), model.example_input(minimal=True))
    s = int(image_size or model.input_shape[0])
    if layer not in (None, "embedding", "logits") and layer not in variables.get("params", {}):
        raise ValueError(
            f"--layer {layer!r} is not a layer of {name}; choose from {', '.join(model_layers(variables))}"
        )
    if layer == "logits" and getattr(model, "num_classes", None) is None:
        raise ValueError(f"--layer logits: {name} has no classifier")
    read = _layer_fn(model, layer)
    apply = jax.jit(lambda v, b: read(v, normalize_inputs({"x": b}, "imagenet")["x"]))
    from gensim_jax.evaluation.embed import _embed_batches

    def embed_fn(images):
        x = np.asarray(images)
        if x.dtype != np.uint8 or x.shape[1:] != (s, s, 3):
            raise ValueError(f"expected uint8 images (N, {s}, {s}, 3), got {x.dtype} {x.shape}")
        # every batch padded to batch_size: one compiled shape, so an image's vector does not depend on how
        # the images were split into calls (scoring PNGs read back equals scoring the renders)
        return _embed_batches(apply, variables, x, int(batch_size), lambda b: b)

    info = {
        "model": name,
        "weights": None if weights is None else str(weights),
        "weights_sha256": None if weights is None else file_sha256(weights),
        "init_seed": None if weights is not None else int(seed),
        "layer": layer or "embedding",
        "image_size": s,
        "preprocess": "imagenet",
    }
    return embed_fn, info
