"""Building blocks shared by the encoders: PyTorch-faithful convolution, pooling and normalisation.

Every layer here reproduces the arithmetic of its PyTorch counterpart exactly (symmetric explicit
padding, ``-inf`` padded max-pooling, BatchNorm with ``eps=1e-5`` and PyTorch's momentum 0.1), so
that weights imported from a PyTorch checkpoint give the same outputs. Data layout is NHWC and
kernels are HWIO, as usual in JAX.

The one documented difference: in train mode PyTorch's BatchNorm updates ``running_var`` with the
*unbiased* batch variance (divide by ``n - 1``), Flax with the biased one (divide by ``n``). The
batch-normalised activations themselves, and ``running_mean``, agree.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax.linen.dtypes import promote_dtype

Dtype = Any
Array = jax.Array

#: PyTorch ``kaiming_normal_(mode="fan_out", nonlinearity="relu")``, the init of torchvision ResNets.
conv_kernel_init = nn.initializers.variance_scaling(2.0, "fan_out", "normal")
#: PyTorch ``nn.Linear``'s default weight init: uniform on ``+-1/sqrt(fan_in)``.
dense_kernel_init = nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform")
#: PyTorch's default weight init of ``nn.Linear`` *and* ``nn.Conv2d``: ``kaiming_uniform_(a=sqrt(5))``,
#: i.e. ``U(-b, b)`` with ``b = gain * sqrt(3 / fan_in)``, ``gain = sqrt(2 / (1 + a^2)) = sqrt(1/3)``, so
#: ``b = 1 / sqrt(fan_in)`` and variance ``1 / (3 fan_in)``. ``fan_in`` is ``in_features`` for a Dense
#: kernel ``(in, out)`` and ``k * k * in_channels`` for an HWIO conv kernel (flax's ``fan_in`` counts
#: the receptive field, as PyTorch's ``_calculate_fan_in_and_fan_out`` does).
torch_default_kernel_init = dense_kernel_init


def torch_default_bias_init(fan_in: int) -> Callable[..., Array]:
    """PyTorch's default bias init of ``nn.Linear`` / ``nn.Conv2d``: ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``.

    A bias initializer sees only the bias's shape, so the layer's ``fan_in`` (``in_features``, or
    ``k * k * in_channels`` for a convolution) is passed here.

    Example:
      >>> import jax
      >>> b = torch_default_bias_init(25)(jax.random.key(0), (1000,))
      >>> bool(abs(b).max() <= 0.2)
      True
    """
    fan_in = int(fan_in)
    if fan_in < 1:
        raise ValueError(f"fan_in must be a positive int, got {fan_in}")
    bound = 1.0 / fan_in**0.5

    def init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return init


#: PyTorch BatchNorm defaults: ``momentum=0.1`` means ``running = 0.9 * running + 0.1 * batch``.
BN_MOMENTUM = 0.9
BN_EPSILON = 1e-5


class Conv2d(nn.Module):
    """2-D convolution with PyTorch's symmetric explicit padding (NHWC input, HWIO kernel).

    Computes ``y[b, i, j, o] = sum_{u, v, c} x_pad[b, s*i + u, s*j + v, c] K[u, v, c, o] (+ bias[o])``
    with ``x_pad`` zero-padded by ``padding`` on every side, exactly as ``torch.nn.Conv2d``. The stride
    may be overridden per call, so one set of weights can be applied at two strides (CORnet-S shares
    its convolution weights across time steps but strides only at the first step).

    Attributes:
      features: output channels ``O``.
      kernel_size: square kernel size ``k``.
      stride: default stride ``s``.
      padding: zero padding ``p`` on each side (PyTorch's ``padding=p``).
      use_bias: add a learned bias.
      dtype: compute dtype (e.g. ``jnp.bfloat16``); parameters stay ``param_dtype``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> conv = Conv2d(8, kernel_size=3, stride=2, padding=1)
      >>> v = conv.init(jax.random.key(0), jnp.ones((1, 32, 32, 3)))
      >>> conv.apply(v, jnp.ones((1, 32, 32, 3))).shape
      (1, 16, 16, 8)
    """

    features: int
    kernel_size: int
    stride: int = 1
    padding: int = 0
    use_bias: bool = False
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32
    kernel_init: Callable[..., Array] = conv_kernel_init
    bias_init: Callable[..., Array] = nn.initializers.zeros

    @nn.compact
    def __call__(self, x: Array, stride: int | None = None) -> Array:
        """Convolve ``x`` of shape ``(B, H, W, C)``; returns ``(B, H', W', features)``.

        ``H' = floor((H + 2p - k) / s) + 1`` with ``s = stride`` if given, else ``self.stride``.
        """
        if x.ndim != 4:
            raise ValueError(f"Conv2d expects x of shape (B, H, W, C), got shape {x.shape}")
        k = self.kernel_size
        kernel = self.param("kernel", self.kernel_init, (k, k, x.shape[-1], self.features), self.param_dtype)
        bias = self.param("bias", self.bias_init, (self.features,), self.param_dtype) if self.use_bias else None
        x, kernel, bias = promote_dtype(x, kernel, bias, dtype=self.dtype)
        s = self.stride if stride is None else stride
        p = self.padding
        y = strided_conv(x, kernel, s, p)
        if bias is not None:
            y = y + bias
        return y


#: A convolution whose output has at most this many pixels (``H' * W'``) is computed as patches of the
#: padded input times the reshaped kernel, one matrix product (im2col; the same sums, hence the same
#: values up to float rounding).  XLA:CPU runs convolutions onto a tiny output pathologically slowly:
#: ResNet-50 layer 4's stride-1 3x3 convolutions on a 2 x 2 map (512 channels, batch 32, value and both
#: gradients) took 0.55 s, as im2col 0.011 s; CORnet-S IT's (2048 channels, batch 8) 8.9 s -> 0.20 s;
#: the strided 4 x 4 -> 2 x 2 ones 0.73-0.83 s -> 0.21 s (they used to be a stride-1 convolution
#: subsampled, itself 15x faster than the strided convolution).  At a 4 x 4 output the direct
#: convolution is as fast (0.011 s), at 16 x 16 faster, hence the threshold.  docs/PERFORMANCE.md.
IM2COL_MAX_OUTPUT_PIXELS = 4
#: The former name of the threshold (the tiny-output rule first subsampled a stride-1 convolution).
SUBSAMPLE_MAX_OUTPUT_PIXELS = IM2COL_MAX_OUTPUT_PIXELS


def strided_conv(x: Array, kernel: Array, stride: int, padding: int) -> Array:
    """``y[b, i, j, o] = sum_{u, v, c} x_pad[b, s*i + u, s*j + v, c] K[u, v, c, o]`` (NHWC, HWIO).

    The convolution of :class:`Conv2d` with symmetric zero padding ``padding``.  On XLA:CPU, for a
    ``1 x 1`` kernel or an output of at most :data:`IM2COL_MAX_OUTPUT_PIXELS` pixels, it is evaluated
    as one matrix product of the ``k * k`` shifted (strided) windows of the padded input, concatenated
    over channels, with the kernel reshaped to ``(k * k * C, O)``: for ``1 x 1`` the (subsampled) input
    as a ``(B H' W', C)`` matrix.  The products and their gradients need none of the layout
    transposes XLA:CPU puts around a convolution's kernel gradient (ResNet-50's training step 0.67 ->
    0.61 s at 64 px and batch 32, 2.23 -> 1.72 s at 224 px and batch 8: ``bench/step/conv_forms.py``).  The
    same sums; a static choice on shapes, and ``lax.platform_dependent`` on the platform the program
    is lowered for, so a TPU or GPU program, and the planner's compile for one, keeps the convolution.

    Args:
      x: ``(B, H, W, C)``.  kernel: ``(k, k, C, O)``.  stride, padding: ints.
    Returns:
      ``(B, H', W', O)`` with ``H' = floor((H + 2p - k) / s) + 1``.
    """
    s, p = int(stride), int(padding)
    kh, kw = kernel.shape[0], kernel.shape[1]
    pads = ((p, p), (p, p))
    dn = ("NHWC", "HWIO", "NHWC")
    h_out = conv_output_size(x.shape[1], kh, s, p)
    w_out = conv_output_size(x.shape[2], kw, s, p)

    def direct(x, kernel):
        return jax.lax.conv_general_dilated(x, kernel, window_strides=(s, s), padding=pads, dimension_numbers=dn)

    if h_out * w_out > IM2COL_MAX_OUTPUT_PIXELS and not kh == kw == 1:
        return direct(x, kernel)

    def im2col(x, kernel):
        b, c, o = x.shape[0], x.shape[3], kernel.shape[3]
        xp = jnp.pad(x, ((0, 0), (p, p), (p, p), (0, 0))) if p else x
        span_h, span_w = s * (h_out - 1) + 1, s * (w_out - 1) + 1
        windows = [xp[:, u : u + span_h : s, v : v + span_w : s, :] for u in range(kh) for v in range(kw)]
        cols = windows[0] if len(windows) == 1 else jnp.concatenate(windows, axis=-1)  # (B, H', W', k*k*C)
        y = cols.reshape(b * h_out * w_out, kh * kw * c) @ kernel.reshape(kh * kw * c, o)
        return y.reshape(b, h_out, w_out, o)

    # chosen when the program is lowered for its platform: im2col on XLA:CPU only (a TPU or GPU runs the
    # convolution well, and im2col would multiply the padding's zeros too)
    return jax.lax.platform_dependent(x, kernel, cpu=im2col, default=direct)


def conv_output_size(size: int, kernel_size: int, stride: int, padding: int) -> int:
    """Spatial output size of a convolution/pooling: ``floor((size + 2p - k) / s) + 1``."""
    return (size + 2 * padding - kernel_size) // stride + 1


def max_pool(x: Array, kernel_size: int = 3, stride: int = 2, padding: int = 1) -> Array:
    """``torch.nn.MaxPool2d(kernel_size, stride, padding)`` on NHWC input (padding acts as ``-inf``).

    The value is ``nn.max_pool``'s (``lax.reduce_window`` max).  On XLA:CPU the program is
    :func:`window_max_pool`, whose gradient is routed without XLA's select-and-scatter (slow on the
    CPU: 23 ms of a 48-px CORnet-Z step's V1 pooling); it is bitwise the same gradient (same tie
    rule, same order of sums).  A TPU or GPU program, and the planner's compile for one, keeps
    ``reduce_window`` and its select-and-scatter gradient (``lax.platform_dependent``, chosen when the
    program is lowered).

    Args:
      x: ``(B, H, W, C)``, floating point.
    Returns:
      ``(B, H', W', C)`` with ``H' = floor((H + 2p - k) / s) + 1``.

    Example:
      >>> import jax.numpy as jnp
      >>> max_pool(jnp.arange(16.0).reshape(1, 4, 4, 1), 3, 2, 1)[0, :, :, 0]
      Array([[ 5.,  7.],
             [13., 15.]], dtype=float32)
    """
    k, s, p = int(kernel_size), int(stride), int(padding)

    def reduce_window(x):
        return nn.max_pool(x, (k, k), strides=(s, s), padding=((p, p), (p, p)))

    if not jnp.issubdtype(x.dtype, jnp.floating):
        return reduce_window(x)
    return jax.lax.platform_dependent(x, cpu=lambda x: window_max_pool(x, k, s, p), default=reduce_window)


def _max_pool_windows(x: Array, k: int, s: int, p: int) -> tuple[Array, Array]:
    """The maximum over the ``k * k`` strided windows of the ``-inf``-padded ``x``, and per output the
    index ``u * k + v`` of the window element whose derivative it takes.

    The index follows XLA's select-and-scatter for ``reduce_window`` max (its select function is
    ``>=``): walking the window in row-major order, the current choice is kept while ``current >=
    candidate`` and replaced otherwise -- the first maximum, except that a NaN choice is always
    replaced (NaN ``>=`` anything is false).  The value is the NaN-propagating ``lax.max``."""
    b, h, w, c = x.shape
    h_out, w_out = conv_output_size(h, k, s, p), conv_output_size(w, k, s, p)
    if h_out < 1 or w_out < 1:
        raise ValueError(f"max_pool: kernel {k}, stride {s}, padding {p} leave no output for a {h} x {w} input")
    xp = jnp.pad(x, ((0, 0), (p, p), (p, p), (0, 0)), constant_values=-jnp.inf) if p else x
    span_h, span_w = s * (h_out - 1) + 1, s * (w_out - 1) + 1
    y = chosen = idx = None
    for n in range(k * k):
        u, v = divmod(n, k)
        win = xp[:, u : u + span_h : s, v : v + span_w : s, :]
        if y is None:
            y, chosen, idx = win, win, jnp.zeros(win.shape, jnp.int32)
        else:
            switch = ~(chosen >= win)
            chosen = jnp.where(switch, win, chosen)
            idx = jnp.where(switch, jnp.int32(n), idx)
            y = jax.lax.max(y, win)
    return y, idx


def window_max_pool(x: Array, kernel_size: int, stride: int, padding: int) -> Array:
    """Max pooling as ``k * k`` strided slices, with the gradient of ``jax.grad(lax.reduce_window max)``.

    ``y[b, i, j, c] = max_{u, v < k} x_pad[b, s*i + u, s*j + v, c]`` with ``x_pad`` padded by ``-inf``
    (``torch.nn.MaxPool2d`` / ``nn.max_pool``).  **Tie rule**: the derivative of each output is that
    of the *first* maximal element of its window in row-major window order ``(u, v)`` (padding
    included in the order; a padded ``-inf`` wins only in a window with no larger real element, and
    its gradient is dropped).  This is the element XLA's select-and-scatter picks for ``jax.grad`` of
    ``reduce_window`` max: its select is ``>=``, so the current choice is kept at a tie (and a NaN
    choice is replaced by the next element; the value is NaN all the same).  The transposed JVP sums overlapping windows'
    contributions in the same order, so the float32 and float64 gradients are bitwise equal
    (tests/models/test_max_pool.py).

    The JVP is ``t_out = select_n(index, t_window_0, ..., t_window_{k*k-1})``: one ``int32`` index per
    output saved for the backward pass, whose transpose is ``k * k`` masked strided pads summed, a
    loop fusion on XLA:CPU (the 48-px CORnet-Z V1 pool's VJP 36 -> 4.5 ms: docs/PERFORMANCE.md).
    ``jax.jit``, ``jax.vmap``, ``jax.jvp`` and ``jax.grad`` (any order) work.

    **bfloat16 and float16** are pooled in float32 (their values are exact there, so the value and the
    tie rule are the same) and the overlapping windows' contributions to the gradient are summed in
    float32, then rounded once to the input's type. Select-and-scatter rounds after each addition, so
    the two gradients differ in the last place where an element is the chosen maximum of three or more
    windows (5,159 of 1,179,648 elements at CORnet-Z V1's bfloat16 ReLU map, batch 32, random
    cotangents). Summed in bfloat16 the gradient was select-and-scatter's bit for bit, but 2.0-4.2x
    slower than it on 2 CPU cores; in float32 it takes 0.15-0.27 of its time (V2: 22.4 and 1.3 ms
    against 5.3 and 4.9 ms; ``python -m bench.step.max_pool --dtype bfloat16``,
    docs/bench_results/2026-11-29_max_pool_bf16_before.jsonl and ``_after.jsonl``).

    Args:
      x: ``(B, H, W, C)`` floating point.  kernel_size, stride, padding: static ints ``k, s, p``.
    Returns:
      ``(B, H', W', C)`` with ``H' = floor((H + 2p - k) / s) + 1``.
    """
    if x.dtype in (jnp.bfloat16, jnp.float16):
        return _window_max_pool(x.astype(jnp.float32), kernel_size, stride, padding).astype(x.dtype)
    return _window_max_pool(x, kernel_size, stride, padding)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3))
def _window_max_pool(x: Array, kernel_size: int, stride: int, padding: int) -> Array:
    """:func:`window_max_pool` with the JVP below (any floating type; the wrapper widens 16-bit floats)."""
    return _max_pool_windows(x, int(kernel_size), int(stride), int(padding))[0]


@_window_max_pool.defjvp
def _window_max_pool_jvp(kernel_size, stride, padding, primals, tangents):
    (x,), (t,) = primals, tangents
    k, s, p = int(kernel_size), int(stride), int(padding)
    y, idx = _max_pool_windows(x, k, s, p)
    tp = jnp.pad(t, ((0, 0), (p, p), (p, p), (0, 0))) if p else t
    h_out, w_out = y.shape[1], y.shape[2]
    span_h, span_w = s * (h_out - 1) + 1, s * (w_out - 1) + 1
    windows = [tp[:, u : u + span_h : s, v : v + span_w : s, :] for u in range(k) for v in range(k)]
    t_out = windows[0] if len(windows) == 1 else jax.lax.select_n(idx, *windows)
    return y, t_out


def global_avg_pool(x: Array) -> Array:
    """``AdaptiveAvgPool2d(1)`` + flatten: mean over H and W, ``(B, H, W, C) -> (B, C)``."""
    return jnp.mean(x, axis=(1, 2))


def batch_norm(train: bool, *, name: str, dtype: Dtype | None, param_dtype: Dtype = jnp.float32) -> nn.BatchNorm:
    """A ``flax.linen.BatchNorm`` configured like ``torch.nn.BatchNorm2d`` (eps 1e-5, momentum 0.1).

    In train mode it normalises by batch statistics and updates ``batch_stats`` (when that
    collection is mutable); in eval mode it uses the running statistics and updates nothing.
    Statistics are reduced in float32 even under bfloat16 compute.
    """
    return nn.BatchNorm(
        use_running_average=not train,
        momentum=BN_MOMENTUM,
        epsilon=BN_EPSILON,
        dtype=dtype,
        param_dtype=param_dtype,
        use_fast_variance=False,
        name=name,
    )
