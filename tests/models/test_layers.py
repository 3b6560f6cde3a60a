"""models.layers.strided_conv: the im2col form of tiny outputs and of 1 x 1 kernels equals the direct convolution.

Independent computation: ``jax.lax.conv_general_dilated`` with ``window_strides=(s, s)`` (the
direct form), values and both gradients, on shapes on both sides of the output-size threshold.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax.models.layers import SUBSAMPLE_MAX_OUTPUT_PIXELS, conv_output_size, strided_conv


def _direct(x, w, s, p):
    return jax.lax.conv_general_dilated(x, w, (s, s), ((p, p), (p, p)), dimension_numbers=("NHWC", "HWIO", "NHWC"))


@pytest.mark.parametrize(
    "h,k,s,p",
    [
        (4, 3, 2, 1),
        (5, 3, 2, 1),
        (3, 1, 2, 0),
        (2, 3, 2, 1),
        (3, 3, 3, 1),
        (8, 3, 2, 1),
        (7, 7, 2, 3),
        # stride 1 onto a tiny output (ResNet-50 layer 4 and CORnet-S IT at 64 px: 3x3 on 2 x 2)
        (2, 3, 1, 1),
        (1, 3, 1, 1),
        (4, 3, 1, 0),
        (2, 1, 1, 0),
        (4, 3, 1, 1),
        # 1 x 1 kernels onto larger outputs (ResNet-50's bottleneck and downsample convolutions)
        (9, 1, 1, 0),
        (9, 1, 2, 0),
        (6, 1, 1, 1),
    ],
)
@pytest.mark.slow
def test_matches_direct_strided_convolution(h, k, s, p):
    rng = np.random.default_rng(h * 100 + k * 10 + s)
    x = jnp.asarray(rng.standard_normal((2, h, h, 5)), jnp.float32)
    w = jnp.asarray(rng.standard_normal((k, k, 5, 4)), jnp.float32)
    out = strided_conv(x, w, s, p)
    n = conv_output_size(h, k, s, p)
    assert out.shape == (2, n, n, 4)
    np.testing.assert_allclose(np.asarray(out), np.asarray(_direct(x, w, s, p)), rtol=1e-5, atol=1e-5)
    g = jax.grad(lambda a, b: jnp.sum(jnp.sin(strided_conv(a, b, s, p))), argnums=(0, 1))(x, w)
    g_ref = jax.grad(lambda a, b: jnp.sum(jnp.sin(_direct(a, b, s, p))), argnums=(0, 1))(x, w)
    for a, b in zip(g, g_ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4)


def test_tiny_outputs_take_the_im2col_form_on_the_cpu():
    def compiled(h):
        x, w = jnp.ones((1, h, h, 3)), jnp.ones((3, 3, 3, 4))
        return jax.jit(lambda a, b: strided_conv(a, b, 1, 1)).lower(x, w).compile().as_text()

    if jax.default_backend() == "cpu":
        assert " convolution(" not in compiled(2)  # 2 x 2 output: im2col, a dot
    else:
        assert " convolution(" in compiled(2)
    assert " convolution(" in compiled(8)


def test_pointwise_kernels_take_the_matrix_product_on_the_cpu():
    def compiled(stride):
        x, w = jnp.ones((2, 16, 16, 8)), jnp.ones((1, 1, 8, 4))
        step = jax.jit(jax.grad(lambda a, b: jnp.sum(strided_conv(a, b, stride, 0) ** 2), argnums=(0, 1)))
        return step.lower(x, w).compile().as_text()

    for stride in (1, 2):  # the value and both gradients: dots, no convolution
        assert (" convolution(" not in compiled(stride)) == (jax.default_backend() == "cpu")


def test_threshold_covers_the_cornet_s_it_case():
    # CORnet-S IT at a 64 x 64 input: 4 x 4 -> 2 x 2 (3x3, stride 2, padding 1)
    assert conv_output_size(4, 3, 2, 1) ** 2 <= SUBSAMPLE_MAX_OUTPUT_PIXELS
    assert conv_output_size(8, 3, 2, 1) ** 2 > SUBSAMPLE_MAX_OUTPUT_PIXELS
