"""The two-layer perceptron of paper Appendix H (Gaussian-mixture example): 2 -> 32 -> 1.

``phi(x) = W_2 relu(W_1 x + b_1) + b_2``; the output ``phi(x)`` is the (1-D) embedding trained with
the triplet loss of paper Eq. H1. The same module serves any width: ``in_features -> hidden ->
embed_dim``. PyTorch layout for imports: ``nn.Sequential(Linear, ReLU, Linear)``, i.e. keys
``0.weight, 0.bias, 2.weight, 2.bias``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from gensim_jax.models.heads import Encoder
from gensim_jax.models.layers import dense_kernel_init

Array = jax.Array
Dtype = Any

_TORCH_NAMES = {"hidden": "0", "output": "2"}


class TwoLayerPerceptron(Encoder):
    """Two-layer perceptron ``in_features -> hidden (ReLU) -> embed_dim`` (paper Appendix H).

    With the defaults (2 -> 32 -> 1) it has 129 parameters. No classifier by default.

    Attributes:
      in_features: input dimension (2).
      hidden: hidden width (32, Appendix H).
      embed_dim: output/embedding dimension (1).
      num_classes, projection_dims, projection_batchnorm: optional heads on the embedding.
      dtype, param_dtype: compute and parameter dtypes.

    Returns (``__call__(x)``, ``x`` ``(B, in_features)``): dict with ``"embedding"`` ``(B, embed_dim)``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> m = TwoLayerPerceptron()
      >>> v = m.init(jax.random.key(0), m.example_input())
      >>> m.apply(v, jnp.ones((5, 2)), method="embed").shape
      (5, 1)
    """

    in_features: int = 2
    hidden: int = 32
    embed_dim: int = 1
    num_classes: int | None = None
    projection_dims: Sequence[int] | None = None
    projection_batchnorm: bool = False
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32

    @property
    def input_shape(self) -> tuple[int, ...]:
        """``(in_features,)``."""
        return (self.in_features,)

    @property
    def min_input_shape(self) -> tuple[int, ...]:
        """Same as :attr:`input_shape`."""
        return (self.in_features,)

    @nn.compact
    def __call__(self, x: Array, train: bool = False) -> dict[str, Array]:
        """Forward pass; see the class docstring for shapes."""
        if x.ndim != 2 or x.shape[-1] != self.in_features:
            raise ValueError(f"x must have shape (B, in_features={self.in_features}), got {x.shape}")
        kw = dict(dtype=self.dtype, param_dtype=self.param_dtype, kernel_init=dense_kernel_init)
        h = nn.relu(nn.Dense(self.hidden, name="hidden", **kw)(x))
        return self.heads(nn.Dense(self.embed_dim, name="output", **kw)(h), train)

    @staticmethod
    def torch_module_name(path: Sequence[str]) -> str:
        """PyTorch ``nn.Sequential`` index (``0`` / ``2``) of a Flax path."""
        names = list(path)
        names[0] = _TORCH_NAMES.get(names[0], names[0])
        return ".".join(names)


def two_layer_perceptron(**kwargs: Any) -> TwoLayerPerceptron:
    """The Appendix H perceptron (2 -> 32 -> 1); ``kwargs`` override fields."""
    return TwoLayerPerceptron(**kwargs)
