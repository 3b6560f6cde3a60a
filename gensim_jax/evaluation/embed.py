"""Embedding images with a gensim-jax encoder, in fixed-size jitted batches.

Every evaluation protocol takes embeddings, not models; this is the one bridge from a model
(:func:`gensim_jax.models.get_model`, :func:`gensim_jax.models.load_pretrained`) to them.
"""

from __future__ import annotations

from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["embed_images"]


def embed_images(model, variables: Mapping[str, Any], images, batch_size: int = 64) -> np.ndarray:
    """Penultimate-layer embeddings ``model.apply(variables, x, method="embed")`` of ``images``.

    The apply function is jitted once; the last batch is zero-padded to ``batch_size`` so that
    only one shape is ever compiled, and the padding rows are dropped (inference mode,
    ``train=False``, so BatchNorm uses its running statistics and padding cannot leak).

    Args:
      model: a flax encoder with an ``embed`` method (every model of :mod:`gensim_jax.models`).
      variables: its variables (``{"params": ..., "batch_stats": ...}``).
      images: ``(N, *model input shape)`` array, e.g. ``(N, 224, 224, 3)`` float32.
      batch_size: images per jitted call.

    Returns:
      ``(N, D)`` float32 numpy array.

    Example:
      >>> import jax
      >>> from gensim_jax.models import get_model
      >>> m = get_model("mlp", in_features=3, embed_dim=2)
      >>> v = m.init(jax.random.key(0), m.example_input())
      >>> embed_images(m, v, np.ones((5, 3), np.float32), batch_size=2).shape
      (5, 2)
    """
    x = np.asarray(images)
    if x.ndim < 2 or len(x) == 0:
        raise ValueError(f"images must be a non-empty batch (N, ...), got shape {x.shape}")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    batch_size = min(int(batch_size), len(x))
    fn = jax.jit(lambda v, b: model.apply(v, b, method="embed"))
    out = []
    for start in range(0, len(x), batch_size):
        b = x[start:start + batch_size]
        n = len(b)
        if n < batch_size:
            b = np.concatenate([b, np.zeros((batch_size - n, *b.shape[1:]), b.dtype)])
        out.append(np.asarray(fn(variables, jnp.asarray(b)), np.float32)[:n])
    return np.concatenate(out)
