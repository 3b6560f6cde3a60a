"""Tiny exported encoders (LeNet-5 at 32 x 32, two seeds = two "training runs") for the driver tests."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from gensim_jax.models import get_model
from gensim_jax.training.export import export_variables

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)


def reference_embed(directory, images_grey) -> np.ndarray:
    """Embeddings computed by hand: grey -> 3 channels, normalisation as the export says, model.apply."""
    import json

    from gensim_jax.training.export import load_exported

    model, variables, meta = load_exported(directory)
    x = np.asarray(images_grey)
    x = x.astype(np.float32) / np.float32(255.0) if x.dtype == np.uint8 else x.astype(np.float32)
    x = np.repeat(x[..., None], 3, axis=-1)
    assert x.shape[1:3] == (meta["image_size"],) * 2
    if meta["preprocess"] == "imagenet":
        x = (x - IMAGENET_MEAN) / IMAGENET_STD
    out = jax.jit(lambda v, b: model.apply(v, b, train=False)["embedding"])(variables, x)
    assert json.loads((directory / "model.json").read_text())["model"] == "lenet5"
    return np.asarray(out, np.float64)


def random_variables(model, seed: int, size: int = 32) -> dict:
    """He-scaled normal weights of ``model``'s variable shapes, for models without BatchNorm (LeNet-5).

    ``eval_shape`` compiles nothing, which keeps the fixture cheap on a loaded CPU (``model.init``
    compiles every layer eagerly)."""
    shapes = jax.eval_shape(model.init, jax.random.key(0), np.zeros((1, size, size, 3), np.float32))
    rng = np.random.default_rng(seed)

    def draw(s):
        fan_in = int(np.prod(s.shape[:-1])) if len(s.shape) > 1 else 1
        scale = np.sqrt(2.0 / fan_in) if len(s.shape) > 1 else 0.1
        return (scale * rng.standard_normal(s.shape)).astype(s.dtype)

    return jax.tree_util.tree_map(draw, shapes)


@pytest.fixture(scope="session")
def exports(tmp_path_factory):
    """Two LeNet-5 exports (seeds 0 and 1; ImageNet normalisation and none), image size 32."""
    model = get_model("lenet5", num_classes=None)
    dirs = []
    for seed, pre in ((0, "imagenet"), (1, "none")):
        v = random_variables(model, seed)
        d = tmp_path_factory.mktemp(f"export{seed}")
        export_variables(
            d, v, model="lenet5", model_kwargs={"num_classes": None}, image_size=32, preprocess=pre, seed=seed
        )
        dirs.append(d)
    return dirs
