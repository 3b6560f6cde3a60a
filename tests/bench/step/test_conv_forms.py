"""bench/step/conv_forms.py: each variant really changes how a convolution compiles, and the library is restored."""

import jax
import jax.numpy as jnp
import pytest

from bench.step import conv_forms
from gensim_jax.models import layers


def _has_convolution(k: int, size: int) -> bool:
    x, w = jnp.ones((2, size, size, 3)), jnp.ones((k, k, 3, 4))
    grads = jax.grad(lambda a, b: jnp.sum(layers.strided_conv(a, b, 1, k // 2) ** 2), argnums=(0, 1))
    text = jax.jit(grads).lower(x, w).compile().as_text()  # value and both gradients
    return " convolution(" in text


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the im2col forms are XLA:CPU's")
def test_variants_change_the_compiled_form_and_restore_the_library():
    shipped, threshold = layers.strided_conv, layers.IM2COL_MAX_OUTPUT_PIXELS
    with conv_forms._form("shipped"):
        assert not _has_convolution(1, 8) and _has_convolution(3, 8)
    with conv_forms._form("conv1x1"):
        assert _has_convolution(1, 8) and not _has_convolution(3, 2)  # tiny outputs keep im2col
    with conv_forms._form("im2col<=64"):
        assert not _has_convolution(3, 8)  # an 8 x 8 output is now im2col
    assert layers.strided_conv is shipped and layers.IM2COL_MAX_OUTPUT_PIXELS == threshold
    with pytest.raises(ValueError, match="variant must be"), conv_forms._form("nope"):
        pass
