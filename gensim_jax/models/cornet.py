"""CORnet-Z, CORnet-RT and CORnet-S (Kubilius et al. 2019) in Flax linen, as the reference definitions.

The architectures follow the reference PyTorch code of the dicarlolab/CORnet repository (the
models whose pretrained checkpoints ``cornet_{z,rt,s}-<hash>.pth`` are published), with the same
module names, so those checkpoints import through :mod:`gensim_jax.models.torch_import`.
Four areas V1, V2, V4, IT and a decoder (global average pool -> ``decoder.linear``, here
``classifier``). The ``embedding`` is the pooled IT output (512-d).

* **CORnet-Z**: each area is ``conv`` (k x k, stride s, padding k//2, with bias) -> ReLU ->
  max-pool 3x3/2 (padding 1). V1 is 7x7 stride 2, V2/V4/IT 3x3 stride 1; 64, 128, 256, 512 channels.
* **CORnet-RT**: each area has an input path ``conv_input`` (k x k, stride s, with bias) ->
  ``norm_input`` (GroupNorm, 32 groups) -> ReLU, a recurrent state, and
  ``state <- relu(norm1(conv1(input + state)))`` (``conv1`` 3x3, no bias, GroupNorm 32).
  V1 is 7x7 stride 4, V2/V4/IT 3x3 stride 2. The areas are unrolled for ``times`` steps (5): at
  step 0 V1 sees the image and the higher areas see a zero input; at step t >= 1 every area takes
  the previous area's output of step t - 1 (V1 the image again). The decoder reads IT's last state.
* **CORnet-S**: V1 = ``conv1`` 7x7/2 (no bias) -> ``norm1`` -> ReLU -> max-pool 3x3/2 -> ``conv2``
  3x3 -> ``norm2`` -> ReLU. V2, V4, IT are recurrent bottleneck blocks with ``times`` 2, 4, 2 and
  128, 256, 512 output channels: ``x = conv_input(x)`` (1x1, no norm); for t in range(times):
  ``skip = norm_skip(skip(x))`` (1x1 stride 2) at t = 0 else ``x``; then
  ``conv1`` (1x1, 4x channels) -> ``norm1_t`` -> ReLU -> ``conv2`` (3x3, stride 2 at t = 0 else 1) ->
  ``norm2_t`` -> ReLU -> ``conv3`` (1x1 back) -> ``norm3_t``; ``x = relu(. + skip)``. The three
  convolutions are shared across time steps; each step has its own BatchNorms.

All tensors are NHWC. Parameters are float32; ``dtype=jnp.bfloat16`` computes in bfloat16.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from gensim_jax.models.heads import Encoder
from gensim_jax.models.layers import BN_EPSILON, Conv2d, batch_norm, conv_output_size, global_avg_pool, max_pool

Array = jax.Array
Dtype = Any

_AREAS = ("V1", "V2", "V4", "IT")


def _torch_module_name(path: Sequence[str]) -> str:
    names = list(path)
    if names and names[0] == "classifier":
        names[0] = "decoder.linear"
    return ".".join(names)


def _check_image(x: Array) -> None:
    if x.ndim != 4 or x.shape[-1] != 3:
        raise ValueError(f"x must be (B, H, W, 3) NHWC, got shape {x.shape}")


# ----------------------------------------------------------------------------------------------
# CORnet-Z
# ----------------------------------------------------------------------------------------------


class CORblockZ(nn.Module):
    """CORnet-Z area: ``maxpool3x3/2(relu(conv(x)))``, conv with bias and padding ``k // 2``."""

    out_channels: int
    kernel_size: int = 3
    stride: int = 1
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32

    @nn.compact
    def __call__(self, x: Array) -> Array:
        """``(B, H, W, C) -> (B, H', W', out_channels)``."""
        x = Conv2d(
            self.out_channels,
            self.kernel_size,
            stride=self.stride,
            padding=self.kernel_size // 2,
            use_bias=True,
            dtype=self.dtype,
            param_dtype=self.param_dtype,
            name="conv",
        )(x)
        return max_pool(nn.relu(x), 3, 2, 1)


class CORnetZ(Encoder):
    """CORnet-Z: four feed-forward conv/ReLU/max-pool areas and a linear decoder (2,071,656 params).

    Attributes:
      num_classes: decoder width (1000); ``None`` drops it.
      projection_dims, projection_batchnorm: optional projection MLP (see :mod:`heads`).
      dtype, param_dtype: compute and parameter dtypes.

    Returns: dict with ``"embedding"`` ``(B, 512)``, ``"logits"``, ``"projection"``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> m = CORnetZ(num_classes=5)
      >>> v = jax.jit(m.init)(jax.random.key(0), jnp.zeros((1, 64, 64, 3)))
      >>> jax.jit(m.apply)(v, jnp.zeros((2, 64, 64, 3)))["embedding"].shape
      (2, 512)
    """

    num_classes: int | None = 1000
    projection_dims: Sequence[int] | None = None
    projection_batchnorm: bool = False
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32

    @nn.compact
    def __call__(self, x: Array, train: bool = False) -> dict[str, Array]:
        """Forward pass (``train`` only matters for a BatchNorm projection head)."""
        _check_image(x)
        kw = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        x = CORblockZ(64, kernel_size=7, stride=2, name="V1", **kw)(x)
        x = CORblockZ(128, name="V2", **kw)(x)
        x = CORblockZ(256, name="V4", **kw)(x)
        x = CORblockZ(512, name="IT", **kw)(x)
        return self.heads(global_avg_pool(x), train)

    torch_module_name = staticmethod(_torch_module_name)


# ----------------------------------------------------------------------------------------------
# CORnet-RT
# ----------------------------------------------------------------------------------------------


class CORblockRT(nn.Module):
    """CORnet-RT area: ``state' = relu(norm1(conv1(relu(norm_input(conv_input(inp))) + state)))``.

    Called with ``inp=None`` it uses a zero input of the area's output shape (the reference's input
    to V2..IT at step 0); ``state=None`` means a zero state.
    """

    out_channels: int
    kernel_size: int = 3
    stride: int = 1
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32

    def setup(self) -> None:
        kw = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        self.conv_input = Conv2d(
            self.out_channels, self.kernel_size, stride=self.stride, padding=self.kernel_size // 2, use_bias=True, **kw
        )
        self.norm_input = nn.GroupNorm(num_groups=32, epsilon=BN_EPSILON, use_fast_variance=False, **kw)
        self.conv1 = Conv2d(self.out_channels, 3, padding=1, use_bias=False, **kw)
        self.norm1 = nn.GroupNorm(num_groups=32, epsilon=BN_EPSILON, use_fast_variance=False, **kw)

    def output_shape(self, in_shape: Sequence[int]) -> tuple[int, int, int, int]:
        """NHWC output shape for an input of NHWC shape ``in_shape``."""
        b, h, w = in_shape[:3]
        k, s, p = self.kernel_size, self.stride, self.kernel_size // 2
        return (b, conv_output_size(h, k, s, p), conv_output_size(w, k, s, p), self.out_channels)

    def __call__(self, inp: Array | None, state: Array | int, zero_shape: Sequence[int] | None = None) -> Array:
        """One step. ``inp``: ``(B, H, W, C)`` or ``None`` (then zeros of ``zero_shape``)."""
        if inp is None:
            dt = self.dtype if self.dtype is not None else jnp.float32
            inp = jnp.zeros(tuple(zero_shape), dt)
        else:
            inp = nn.relu(self.norm_input(self.conv_input(inp)))
        x = self.conv1(inp + state)
        return nn.relu(self.norm1(x))


class CORnetRT(Encoder):
    """CORnet-RT: four recurrent areas unrolled for ``times`` steps, GroupNorm (5,208,936 params).

    Attributes:
      times: number of unrolled time steps (reference: 5).
      num_classes, projection_dims, projection_batchnorm, dtype, param_dtype: as in :class:`CORnetZ`.

    Returns: dict with ``"embedding"`` ``(B, 512)`` (pooled IT state at the last step), ``"logits"``,
    ``"projection"``. Any input size works (the reference hard-codes 224x224 for its zero inputs).
    """

    times: int = 5
    num_classes: int | None = 1000
    projection_dims: Sequence[int] | None = None
    projection_batchnorm: bool = False
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32

    @nn.compact
    def __call__(self, x: Array, train: bool = False) -> dict[str, Array]:
        """Forward pass: the reference's time unrolling (see the module docstring)."""
        _check_image(x)
        if int(self.times) < 1:
            raise ValueError(f"times must be >= 1, got {self.times}")
        kw = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        blocks = [
            CORblockRT(64, kernel_size=7, stride=4, name="V1", **kw),
            CORblockRT(128, stride=2, name="V2", **kw),
            CORblockRT(256, stride=2, name="V4", **kw),
            CORblockRT(512, stride=2, name="IT", **kw),
        ]
        shapes = []
        shape = x.shape
        for blk in blocks:
            shape = blk.output_shape(shape)
            shapes.append(shape)
        # step 0: V1 sees the image, the other areas a zero input; all states start at zero
        outputs = [blocks[0](x, 0)] + [blk(None, 0, shapes[i + 1]) for i, blk in enumerate(blocks[1:])]
        states = list(outputs)
        for _ in range(1, int(self.times)):
            inputs = [x] + outputs[:-1]
            outputs = [blk(inp, st) for blk, inp, st in zip(blocks, inputs, states)]
            states = list(outputs)
        return self.heads(global_avg_pool(outputs[-1]), train)

    torch_module_name = staticmethod(_torch_module_name)


# ----------------------------------------------------------------------------------------------
# CORnet-S
# ----------------------------------------------------------------------------------------------


class CORblockS(nn.Module):
    """CORnet-S recurrent bottleneck area (weights shared over ``times``, one BatchNorm set per step)."""

    out_channels: int
    times: int = 1
    scale: int = 4
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32

    @nn.compact
    def __call__(self, inp: Array, train: bool = False) -> Array:
        """``(B, H, W, C) -> (B, ceil(H/2), ceil(W/2), out_channels)``."""
        kw = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        c, cs = self.out_channels, self.out_channels * self.scale
        conv_input = Conv2d(c, 1, name="conv_input", **kw)
        skip_conv = Conv2d(c, 1, stride=2, name="skip", **kw)
        conv1 = Conv2d(cs, 1, name="conv1", **kw)
        conv2 = Conv2d(cs, 3, padding=1, name="conv2", **kw)
        conv3 = Conv2d(c, 1, name="conv3", **kw)
        x = conv_input(inp)
        for t in range(int(self.times)):
            if t == 0:
                skip = batch_norm(train, name="norm_skip", **kw)(skip_conv(x))
                stride = 2
            else:
                skip = x
                stride = 1
            h = nn.relu(batch_norm(train, name=f"norm1_{t}", **kw)(conv1(x)))
            h = nn.relu(batch_norm(train, name=f"norm2_{t}", **kw)(conv2(h, stride=stride)))
            h = batch_norm(train, name=f"norm3_{t}", **kw)(conv3(h))
            x = nn.relu(h + skip)
        return x


class CORnetS(Encoder):
    """CORnet-S, the encoder of the quadrilateral experiment (paper Appendix L); 53,416,616 params.

    Attributes:
      times: recurrent steps of V2, V4, IT (reference: ``(2, 4, 2)``).
      num_classes: decoder width (1000; 1011 after adding the 11 shape classes); ``None`` drops it.
      projection_dims, projection_batchnorm, dtype, param_dtype: as in :class:`CORnetZ`.

    Returns: dict with ``"embedding"`` ``(B, 512)``, ``"logits"``, ``"projection"``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> m = CORnetS(num_classes=11)
      >>> v = jax.eval_shape(m.init, jax.random.key(0), jnp.zeros((1, 64, 64, 3)))
      >>> v["params"]["classifier"]["kernel"].shape
      (512, 11)
    """

    times: Sequence[int] = (2, 4, 2)
    num_classes: int | None = 1000
    projection_dims: Sequence[int] | None = None
    projection_batchnorm: bool = False
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32

    @nn.compact
    def __call__(self, x: Array, train: bool = False) -> dict[str, Array]:
        """Forward pass; BatchNorm uses batch statistics (and updates them) only when ``train``."""
        _check_image(x)
        if len(self.times) != 3 or any(int(t) < 1 for t in self.times):
            raise ValueError(f"times must be three positive ints (V2, V4, IT), got {tuple(self.times)}")
        kw = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        x = _CORnetSV1(name="V1", **kw)(x, train)
        for name, ch, t in zip(_AREAS[1:], (128, 256, 512), self.times):
            x = CORblockS(ch, times=int(t), name=name, **kw)(x, train)
        return self.heads(global_avg_pool(x), train)

    torch_module_name = staticmethod(_torch_module_name)


class _CORnetSV1(nn.Module):
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32

    @nn.compact
    def __call__(self, x: Array, train: bool) -> Array:
        kw = dict(dtype=self.dtype, param_dtype=self.param_dtype)
        x = Conv2d(64, 7, stride=2, padding=3, name="conv1", **kw)(x)
        x = nn.relu(batch_norm(train, name="norm1", **kw)(x))
        x = max_pool(x, 3, 2, 1)
        x = Conv2d(64, 3, padding=1, name="conv2", **kw)(x)
        return nn.relu(batch_norm(train, name="norm2", **kw)(x))


def cornet_z(**kwargs: Any) -> CORnetZ:
    """CORnet-Z with the reference configuration; ``kwargs`` override fields."""
    return CORnetZ(**kwargs)


def cornet_rt(**kwargs: Any) -> CORnetRT:
    """CORnet-RT with the reference configuration (``times=5``); ``kwargs`` override fields."""
    return CORnetRT(**kwargs)


def cornet_s(**kwargs: Any) -> CORnetS:
    """CORnet-S with the reference configuration (``times=(2, 4, 2)``); ``kwargs`` override fields."""
    return CORnetS(**kwargs)
