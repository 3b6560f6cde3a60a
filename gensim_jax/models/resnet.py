"""ResNet-18/34/50/101/152 (He et al. 2016) in Flax linen, layer for layer as torchvision's.

The architecture is torchvision's ``resnet*`` ("ResNet v1.5": the stride of a bottleneck block sits
on its 3x3 convolution), so a torchvision state dict imports unchanged through
:mod:`gensim_jax.models.torch_import`:

* stem: ``conv1`` 7x7/2 (padding 3, no bias) -> ``bn1`` -> ReLU -> max-pool 3x3/2 (padding 1);
* ``layer1..layer4`` of ``stage_sizes`` blocks with 64, 128, 256, 512 base widths, stride 2 at the
  first block of layers 2-4; a block whose shape changes has a projected skip
  ``downsample`` = 1x1 conv (stride s, no bias) -> BN;
* global average pool -> ``embedding`` (512-d for 18/34, 2048-d for 50/101/152) -> ``classifier``
  (torchvision's ``fc``).

Flax module names mirror torchvision's (``layer1_0`` is ``layer1.0``, ``downsample_conv`` /
``downsample_bn`` are ``downsample.0`` / ``downsample.1``, ``classifier`` is ``fc``).
NHWC input. Parameters are float32; ``dtype=jnp.bfloat16`` runs the arithmetic in bfloat16.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from gensim_jax.models.heads import Encoder
from gensim_jax.models.layers import Conv2d, batch_norm, global_avg_pool, max_pool

Array = jax.Array
Dtype = Any


class BasicBlock(nn.Module):
    """torchvision ``BasicBlock``: ``relu(bn2(conv2(relu(bn1(conv1(x))))) + skip(x))``, expansion 1."""

    planes: int
    stride: int = 1
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    expansion = 1

    @nn.compact
    def __call__(self, x: Array, train: bool = False) -> Array:
        """``(B, H, W, C) -> (B, H/s, W/s, planes)``."""
        kw = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        out = Conv2d(self.planes, 3, stride=self.stride, padding=1, name="conv1", **kw)(x)
        out = nn.relu(batch_norm(train, name="bn1", **kw)(out))
        out = Conv2d(self.planes, 3, padding=1, name="conv2", **kw)(out)
        out = batch_norm(train, name="bn2", **kw)(out)
        return nn.relu(out + _shortcut(x, self.planes * self.expansion, self.stride, train, kw))


class Bottleneck(nn.Module):
    """torchvision ``Bottleneck`` (v1.5): 1x1 -> 3x3 (stride s) -> 1x1 (x4 channels), projected skip."""

    planes: int
    stride: int = 1
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    expansion = 4

    @nn.compact
    def __call__(self, x: Array, train: bool = False) -> Array:
        """``(B, H, W, C) -> (B, H/s, W/s, 4 * planes)``."""
        kw = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        out = Conv2d(self.planes, 1, name="conv1", **kw)(x)
        out = nn.relu(batch_norm(train, name="bn1", **kw)(out))
        out = Conv2d(self.planes, 3, stride=self.stride, padding=1, name="conv2", **kw)(out)
        out = nn.relu(batch_norm(train, name="bn2", **kw)(out))
        out = Conv2d(self.planes * self.expansion, 1, name="conv3", **kw)(out)
        out = batch_norm(train, name="bn3", **kw)(out)
        return nn.relu(out + _shortcut(x, self.planes * self.expansion, self.stride, train, kw))


def _shortcut(x: Array, out_channels: int, stride: int, train: bool, kw: dict) -> Array:
    """Identity, or torchvision's ``downsample`` (1x1 conv stride s + BN) when the shape changes."""
    if stride == 1 and x.shape[-1] == out_channels:
        return x
    y = Conv2d(out_channels, 1, stride=stride, name="downsample_conv", **kw)(x)
    return batch_norm(train, name="downsample_bn", **kw)(y)


_BLOCKS = {"basic": BasicBlock, "bottleneck": Bottleneck}


class ResNet(Encoder):
    """ResNet encoder with an embedding output, a replaceable classifier and an optional projection head.

    Attributes:
      stage_sizes: blocks per stage, e.g. ``(3, 4, 6, 3)`` for ResNet-50.
      block: ``"basic"`` (ResNet-18/34) or ``"bottleneck"`` (ResNet-50/101/152).
      num_classes: classifier width (1000 for ImageNet); ``None`` drops the classifier.
      projection_dims: widths of the projection MLP (e.g. ``(2048, 128)``), or ``None``.
      projection_batchnorm: BatchNorm inside the projection MLP.
      dtype: compute dtype (``jnp.bfloat16`` for mixed precision); parameters stay float32.
      param_dtype: parameter dtype.

    Returns (``__call__(x, train=False)``, ``x`` of shape ``(B, H, W, 3)``, H, W >= 32):
      dict with ``"embedding"`` ``(B, 512 * expansion)``, ``"logits"`` ``(B, num_classes)``,
      ``"projection"`` ``(B, projection_dims[-1])`` (the last two when configured).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> model = ResNet(stage_sizes=(1, 1, 1, 1), block="basic", num_classes=10)
      >>> v = jax.jit(model.init)(jax.random.key(0), jnp.zeros((1, 32, 32, 3)))  # one compile, not one per op
      >>> jax.jit(model.apply)(v, jnp.zeros((2, 32, 32, 3)))["logits"].shape
      (2, 10)
    """

    stage_sizes: Sequence[int] = (2, 2, 2, 2)
    block: str = "basic"
    num_classes: int | None = 1000
    projection_dims: Sequence[int] | None = None
    projection_batchnorm: bool = False
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32

    @nn.compact
    def __call__(self, x: Array, train: bool = False) -> dict[str, Array]:
        """Forward pass; see the class docstring for shapes."""
        if self.block not in _BLOCKS:
            raise ValueError(f"block must be one of {sorted(_BLOCKS)}, got {self.block!r}")
        if len(self.stage_sizes) != 4:
            raise ValueError(f"stage_sizes must have 4 entries, got {tuple(self.stage_sizes)}")
        if x.ndim != 4 or x.shape[-1] != 3:
            raise ValueError(f"x must be (B, H, W, 3) NHWC, got shape {x.shape}")
        kw = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        block_cls = _BLOCKS[self.block]
        h = Conv2d(64, 7, stride=2, padding=3, name="conv1", **kw)(x)
        h = nn.relu(batch_norm(train, name="bn1", **kw)(h))
        h = max_pool(h, 3, 2, 1)
        for stage, n_blocks in enumerate(self.stage_sizes):
            for i in range(n_blocks):
                stride = 2 if (stage > 0 and i == 0) else 1
                h = block_cls(64 * 2**stage, stride=stride, name=f"layer{stage + 1}_{i}", **kw)(h, train)
        return self.heads(global_avg_pool(h), train)

    @staticmethod
    def torch_module_name(path: Sequence[str]) -> str:
        """torchvision module name of the Flax module at ``path`` (e.g. ``layer1_0/downsample_bn``)."""
        names = []
        for seg in path:
            m = re.fullmatch(r"(layer\d+)_(\d+)", seg)
            if m:
                names.append(f"{m.group(1)}.{m.group(2)}")
            elif seg == "downsample_conv":
                names.append("downsample.0")
            elif seg == "downsample_bn":
                names.append("downsample.1")
            elif seg == "classifier" and len(names) == 0:
                names.append("fc")
            else:
                names.append(seg)
        return ".".join(names)


_DEPTHS = {
    18: ((2, 2, 2, 2), "basic"),
    34: ((3, 4, 6, 3), "basic"),
    50: ((3, 4, 6, 3), "bottleneck"),
    101: ((3, 4, 23, 3), "bottleneck"),
    152: ((3, 8, 36, 3), "bottleneck"),
}


def resnet(depth: int, **kwargs: Any) -> ResNet:
    """ResNet of a standard ``depth`` (18, 34, 50, 101, 152); ``kwargs`` override ResNet fields.

    ``stage_sizes`` may be overridden too (small CPU variants keep the depth's block type).

    Example:
      >>> resnet(50, num_classes=11).stage_sizes
      (3, 4, 6, 3)
      >>> resnet(18, stage_sizes=(1, 1, 1, 1)).stage_sizes
      (1, 1, 1, 1)
    """
    if depth not in _DEPTHS:
        raise ValueError(f"depth must be one of {sorted(_DEPTHS)}, got {depth}")
    stages, block = _DEPTHS[depth]
    kwargs = {"stage_sizes": stages, "block": block, **kwargs}
    kwargs["stage_sizes"] = tuple(kwargs["stage_sizes"])
    return ResNet(**kwargs)


def resnet18(**kwargs: Any) -> ResNet:
    """ResNet-18 (11,689,512 parameters with the 1000-way classifier)."""
    return resnet(18, **kwargs)


def resnet34(**kwargs: Any) -> ResNet:
    """ResNet-34 (21,797,672 parameters with the 1000-way classifier)."""
    return resnet(34, **kwargs)


def resnet50(**kwargs: Any) -> ResNet:
    """ResNet-50 (25,557,032 parameters with the 1000-way classifier); the Geoclidean/ImageNet encoder."""
    return resnet(50, **kwargs)


def resnet101(**kwargs: Any) -> ResNet:
    """ResNet-101 (44,549,160 parameters with the 1000-way classifier)."""
    return resnet(101, **kwargs)


def resnet152(**kwargs: Any) -> ResNet:
    """ResNet-152 (60,192,808 parameters with the 1000-way classifier)."""
    return resnet(152, **kwargs)
