"""Input pipelines: indexed sources, stateless augmentations, pair/triplet/view builders, tfds data.

The only package of gensim-jax that imports TensorFlow, and only lazily: ``import
gensim_jax.data`` loads the numpy-only parts (:mod:`~gensim_jax.data.sources`,
:mod:`~gensim_jax.data.indexing`); the TensorFlow modules (:mod:`~gensim_jax.data.augment`,
:mod:`~gensim_jax.data.pipelines`, :mod:`~gensim_jax.data.spurious_digits`,
:mod:`~gensim_jax.data.imagenet`) are imported on first attribute access, with every GPU hidden
from TensorFlow (JAX owns the accelerators). ``gensim_jax.data.tf`` is that TensorFlow module
(imported on first access, GPUs hidden, start-up notices dropped): code outside the library that
needs TensorFlow next to JAX (benchmarks, scripts) takes it from here.
"""

from __future__ import annotations

import importlib

from gensim_jax.data.indexing import StreamIndex, derive_key, stateless_uniform
from gensim_jax.data.sources import (
    ArraySource,
    FunctionSource,
    GreyImageSource,
    GroupIndex,
    IndexedSource,
    SyntheticImageSource,
    gather,
    group_index,
)

_LAZY = {
    "augment": "gensim_jax.data.augment",
    "pipelines": "gensim_jax.data.pipelines",
    "spurious_digits": "gensim_jax.data.spurious_digits",
    "imagenet": "gensim_jax.data.imagenet",
    "labelled_batches": "gensim_jax.data.pipelines",
    "pair_batches": "gensim_jax.data.pipelines",
    "triplet_batches": "gensim_jax.data.pipelines",
    "view_batches": "gensim_jax.data.pipelines",
    "as_numpy": "gensim_jax.data.pipelines",
    "simclr_augment": "gensim_jax.data.augment",
    "SpuriousDigits": "gensim_jax.data.spurious_digits",
    "load_spurious_digits": "gensim_jax.data.spurious_digits",
    "imagenet_dataset": "gensim_jax.data.imagenet",
    "tf": "gensim_jax.data._tf",
}

__all__ = [
    "ArraySource",
    "FunctionSource",
    "GreyImageSource",
    "GroupIndex",
    "IndexedSource",
    "StreamIndex",
    "SyntheticImageSource",
    "derive_key",
    "gather",
    "group_index",
    "stateless_uniform",
    *_LAZY,
]


def __getattr__(name: str):
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'gensim_jax.data' has no attribute {name!r}")
    module = importlib.import_module(target)
    value = module if target.rsplit(".", 1)[1] == name else getattr(module, name)
    globals()[name] = value
    return value
