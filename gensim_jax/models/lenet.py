"""LeNet-5 for 32x32 RGB images, the encoder of thesis 003 (digits on CIFAR backgrounds).

Thesis 003, Sec. 3.2: LeNet with ReLU activations, 2x2 pooling and three fully connected layers,
62,006 parameters in all, the last layer 10-way. That count pins the layout down to the classic
LeNet-5 on 3-channel 32x32 input (the layout of PyTorch's CIFAR-10 tutorial network):

``conv1`` 5x5, 3 -> 6 -> ReLU -> max-pool 2 -> ``conv2`` 5x5, 6 -> 16 -> ReLU -> max-pool 2 ->
flatten (400) -> ``fc1`` 120 -> ReLU -> ``fc2`` 84 -> ReLU -> ``classifier`` 10 (PyTorch ``fc3``).

The embedding is the 84-d penultimate layer (thesis 003 puts its similarity loss on it). Features are
flattened in channel-major (C, H, W) order, as ``torch.flatten`` does on NCHW, so the PyTorch
weights import without permutation.

Initialisation: by default the convolutions use the ResNet-style ``kaiming_normal(fan_out)`` of
:data:`~gensim_jax.models.layers.conv_kernel_init`, the dense layers PyTorch's ``U(+-1/sqrt(fan_in))``,
and every bias is 0. ``torch_init=True`` gives exactly PyTorch's default initialisation of a freshly
built ``nn.Conv2d`` / ``nn.Linear`` network (what thesis 003's PyTorch LeNet starts from): weights
and biases of all five layers ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, ``fan_in`` = ``k * k * C_in``
(convolutions) or ``in_features`` (dense). The classifier follows; a projection head keeps its own
init.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from gensim_jax.models.heads import Encoder
from gensim_jax.models.layers import (
    Conv2d,
    conv_kernel_init,
    dense_kernel_init,
    max_pool,
    torch_default_bias_init,
    torch_default_kernel_init,
)

Array = jax.Array
Dtype = Any

_TORCH_NAMES = {"classifier": "fc3"}


class LeNet5(Encoder):
    """LeNet-5 encoder (62,006 parameters with the 10-way classifier, thesis 003 Sec. 3.2).

    Attributes:
      num_classes: classifier width (10 digits); ``None`` drops it.
      projection_dims, projection_batchnorm: optional projection MLP on the 84-d embedding.
      torch_init: PyTorch's default ``nn.Conv2d`` / ``nn.Linear`` initialisation (module docstring).
      dtype, param_dtype: compute and parameter dtypes.

    Returns (``__call__(x, train=False)``, ``x`` ``(B, 32, 32, 3)``): dict with ``"embedding"``
    ``(B, 84)``, ``"logits"`` ``(B, num_classes)``, ``"projection"``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> m = LeNet5()
      >>> v = jax.jit(m.init)(jax.random.key(0), m.example_input())
      >>> jax.jit(m.apply)(v, jnp.zeros((4, 32, 32, 3)))["logits"].shape
      (4, 10)
    """

    num_classes: int | None = 10
    projection_dims: Sequence[int] | None = None
    projection_batchnorm: bool = False
    torch_init: bool = False
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32

    @property
    def input_shape(self) -> tuple[int, ...]:
        """``(32, 32, 3)``: LeNet-5 takes 32x32 RGB images only."""
        return (32, 32, 3)

    @property
    def min_input_shape(self) -> tuple[int, ...]:
        """Same as :attr:`input_shape`."""
        return (32, 32, 3)

    @nn.compact
    def __call__(self, x: Array, train: bool = False) -> dict[str, Array]:
        """Forward pass; see the class docstring for shapes."""
        if x.ndim != 4 or x.shape[1:] != (32, 32, 3):
            raise ValueError(f"LeNet5 expects x of shape (B, 32, 32, 3), got {x.shape}")
        kw = dict(dtype=self.dtype, param_dtype=self.param_dtype)

        def inits(fan_in: int, kernel_init) -> dict:
            if self.torch_init:
                return dict(kernel_init=torch_default_kernel_init, bias_init=torch_default_bias_init(fan_in))
            return dict(kernel_init=kernel_init, bias_init=nn.initializers.zeros)

        h = Conv2d(6, 5, use_bias=True, name="conv1", **inits(5 * 5 * x.shape[-1], conv_kernel_init), **kw)(x)
        h = max_pool(nn.relu(h), 2, 2, 0)
        h = Conv2d(16, 5, use_bias=True, name="conv2", **inits(5 * 5 * h.shape[-1], conv_kernel_init), **kw)(h)
        h = max_pool(nn.relu(h), 2, 2, 0)
        h = jnp.transpose(h, (0, 3, 1, 2)).reshape(h.shape[0], -1)  # (C, H, W) order, like torch
        h = nn.relu(nn.Dense(120, name="fc1", **inits(h.shape[-1], dense_kernel_init), **kw)(h))
        h = nn.relu(nn.Dense(84, name="fc2", **inits(h.shape[-1], dense_kernel_init), **kw)(h))
        return self.heads(h, train)

    @staticmethod
    def torch_module_name(path: Sequence[str]) -> str:
        """PyTorch module name (``conv1``, ``conv2``, ``fc1``, ``fc2``, ``fc3``) of a Flax path."""
        names = list(path)
        names[0] = _TORCH_NAMES.get(names[0], names[0])
        return ".".join(names)


def lenet5(**kwargs: Any) -> LeNet5:
    """LeNet-5 of thesis 003; ``kwargs`` override fields."""
    return LeNet5(**kwargs)
