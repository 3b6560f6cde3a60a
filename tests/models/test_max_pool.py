"""models.layers.max_pool / window_max_pool: the value and the gradient of ``reduce_window`` max.

Independent computation: ``flax.linen.max_pool`` (``lax.reduce_window`` max, whose gradient XLA
computes with select-and-scatter) on the pooling shapes the encoders use (CORnet and the ResNet
stem 3x3/2 padding 1, LeNet 2x2/2) and others (stride 1, stride 3, a window smaller than the
stride), on inputs full of ties: small integers, and ReLU outputs (zeros). The tie rule (the
first maximal element in row-major window order keeps the derivative) is checked element by
element, with integer cotangents so that the sums are exact whatever their order.
"""

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gensim_jax.models.layers import conv_output_size, max_pool, window_max_pool

CASES = [  # (H, W, k, s, p)
    (9, 9, 3, 2, 1),  # CORnet / ResNet stem form, odd size
    (12, 12, 3, 2, 1),  # even size (CORnet-Z V2 at 48 px)
    (10, 7, 3, 2, 1),  # non-square
    (3, 3, 3, 2, 1),  # CORnet-Z IT at 48 px: 3 x 3 -> 2 x 2
    (8, 8, 2, 2, 0),  # LeNet: non-overlapping
    (9, 9, 2, 2, 0),  # non-overlapping, odd size (last row dropped)
    (7, 7, 3, 1, 1),  # stride 1
    (9, 9, 3, 3, 0),  # stride == window
    (9, 8, 2, 3, 0),  # window smaller than the stride
    (6, 6, 1, 1, 0),  # 1 x 1
]


def _reference(x, k, s, p):
    return nn.max_pool(x, (k, k), strides=(s, s), padding=((p, p), (p, p)))


def _inputs(h, w, seed, kind):
    rng = np.random.default_rng(seed)
    if kind == "integers":  # many ties inside every window
        x = rng.integers(0, 3, (2, h, w, 3)).astype(np.float32)
    else:  # ReLU output: zeros tie
        x = np.maximum(rng.standard_normal((2, h, w, 3)), 0).astype(np.float32)
    return jnp.asarray(x)


@pytest.mark.parametrize("h,w,k,s,p", CASES)
@pytest.mark.parametrize("kind", ["integers", "relu"])
def test_value_and_gradient_equal_reduce_window(h, w, k, s, p, kind):
    x = _inputs(h, w, h * 1000 + w * 100 + k * 10 + s, kind)
    y_ref = _reference(x, k, s, p)
    y = window_max_pool(x, k, s, p)
    assert y.shape == (2, conv_output_size(h, k, s, p), conv_output_size(w, k, s, p), 3)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(y_ref))
    rng = np.random.default_rng(7)
    # integer cotangents: every sum is exact, so equality checks where each window's derivative goes
    ct = jnp.asarray(rng.integers(1, 1000, y.shape).astype(np.float32))
    g_ref = jax.vjp(lambda a: _reference(a, k, s, p), x)[1](ct)[0]
    g = jax.vjp(lambda a: window_max_pool(a, k, s, p), x)[1](ct)[0]
    np.testing.assert_array_equal(np.asarray(g), np.asarray(g_ref))
    # float cotangents: the same up to the order of sums (in practice bitwise equal)
    ct = jnp.asarray(rng.standard_normal(y.shape).astype(np.float32))
    g_ref = jax.vjp(lambda a: _reference(a, k, s, p), x)[1](ct)[0]
    g = jax.vjp(lambda a: max_pool(a, k, s, p), x)[1](ct)[0]
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), rtol=1e-6, atol=1e-6)


def test_tie_rule_is_the_first_maximum_in_row_major_window_order():
    # one 3 x 3 window (k = 3, s = 3, no padding) per channel, with the maximum 5 at chosen places
    x = np.zeros((1, 3, 3, 3), np.float32)
    x[0, 0, 2, 0] = x[0, 1, 0, 0] = 5.0  # (0, 2) comes first in row-major order
    x[0, 2, 1, 1] = x[0, 2, 2, 1] = 5.0  # (2, 1) before (2, 2)
    x[..., 2] = 1.0  # all equal: the first element, (0, 0)
    g = jax.grad(lambda a: window_max_pool(a, 3, 3, 0).sum())(jnp.asarray(x))
    expected = np.zeros_like(x)
    expected[0, 0, 2, 0] = expected[0, 2, 1, 1] = expected[0, 0, 0, 2] = 1.0
    np.testing.assert_array_equal(np.asarray(g), expected)
    np.testing.assert_array_equal(
        np.asarray(jax.grad(lambda a: _reference(a, 3, 3, 0).sum())(jnp.asarray(x))), expected
    )


@pytest.mark.parametrize("fill", [-np.inf, np.nan])
def test_non_finite_inputs_match_select_and_scatter(fill):
    # all -inf (padding ties with the input) and NaN (its window's value is NaN; the derivative goes
    # where select-and-scatter sends it: the element after the NaN, as NaN >= x is false)
    x = np.zeros((1, 5, 5, 2), np.float32)
    x[0, 1, 2, 0] = x[0, 0, 0, 1] = x[0, 3, 3, 1] = fill
    if fill == -np.inf:
        x[..., 1] = fill
    x = jnp.asarray(x)
    np.testing.assert_array_equal(np.asarray(window_max_pool(x, 3, 2, 1)), np.asarray(_reference(x, 3, 2, 1)))
    g = jax.grad(lambda a: window_max_pool(a, 3, 2, 1).sum())(x)
    g_ref = jax.grad(lambda a: _reference(a, 3, 2, 1).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(g_ref))


class TestTransforms(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_jit_and_vmap(self):
        x = _inputs(12, 12, 3, "relu")
        xs = jnp.stack([x, 2.0 * x, jnp.flip(x, 1)])  # (3, 2, 12, 12, 3)
        grad = self.variant(jax.vmap(jax.grad(lambda a: jnp.sum(jnp.sin(max_pool(a, 3, 2, 1))))))
        grad_ref = jax.grad(lambda a: jnp.sum(jnp.sin(_reference(a, 3, 2, 1))))
        out = grad(xs)
        chex.assert_shape(out, xs.shape)
        for i in range(3):
            np.testing.assert_allclose(np.asarray(out[i]), np.asarray(grad_ref(xs[i])), rtol=1e-6, atol=1e-6)

    @chex.variants(with_jit=True, without_jit=True)
    def test_forward_mode_and_second_order(self):
        # no ties: reduce_window's own JVP (a pairwise reduce_window over (value, tangent)) breaks a
        # tie in an order XLA leaves open, unlike its VJP
        x = jnp.asarray(np.random.default_rng(4).standard_normal((2, 9, 9, 3)).astype(np.float32))
        t = jnp.asarray(np.random.default_rng(5).standard_normal(x.shape).astype(np.float32))
        jvp = self.variant(lambda a, b: jax.jvp(lambda z: window_max_pool(z, 3, 2, 1), (a,), (b,)))
        y, ty = jvp(x, t)
        y_ref, ty_ref = jax.jvp(lambda z: _reference(z, 3, 2, 1), (x,), (t,))
        np.testing.assert_array_equal(np.asarray(y), np.asarray(y_ref))
        np.testing.assert_array_equal(np.asarray(ty), np.asarray(ty_ref))
        # Hessian-vector product of a smooth function of the pool (piecewise linear in x)
        f = lambda z: jnp.sum(window_max_pool(z, 3, 2, 1) ** 2)  # noqa: E731
        f_ref = lambda z: jnp.sum(_reference(z, 3, 2, 1) ** 2)  # noqa: E731
        hvp = self.variant(lambda a, b: jax.jvp(jax.grad(f), (a,), (b,))[1])
        np.testing.assert_allclose(
            np.asarray(hvp(x, t)), np.asarray(jax.jvp(jax.grad(f_ref), (x,), (t,))[1]), rtol=1e-6, atol=1e-6
        )


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_16_bit_floats_pool_in_float32_and_round_the_gradient_once(dtype):
    """The value is the reference's bit for bit; the gradient is the float32 gradient of the same numbers
    rounded once (select-and-scatter rounds after every addition, so a few elements differ from it by
    rounding alone: within the reference's own rounding of up to four addends)."""
    x = _inputs(24, 24, 6, "relu").astype(dtype)
    y = max_pool(x)
    np.testing.assert_array_equal(np.asarray(y, np.float32), np.asarray(_reference(x, 3, 2, 1), np.float32))
    ct = jnp.asarray(np.random.default_rng(3).standard_normal(y.shape), dtype)
    g = jax.vjp(max_pool, x)[1](ct)[0]
    assert g.dtype == dtype
    g32 = jax.vjp(max_pool, x.astype(jnp.float32))[1](ct.astype(jnp.float32))[0]
    np.testing.assert_array_equal(np.asarray(g), np.asarray(g32.astype(dtype)))
    g_ref = np.asarray(jax.vjp(lambda a: _reference(a, 3, 2, 1), x)[1](ct)[0], np.float32)
    eps = float(jnp.finfo(dtype).eps)
    bound = 4 * eps * np.asarray(jax.vjp(max_pool, x.astype(jnp.float32))[1](jnp.abs(ct.astype(jnp.float32)))[0])
    assert np.all(np.abs(np.asarray(g, np.float32) - g_ref) <= bound)
    # integer cotangents: every sum exact in either form, so the two are equal
    ones = jnp.ones(y.shape, dtype)
    np.testing.assert_array_equal(
        np.asarray(jax.vjp(max_pool, x)[1](ones)[0], np.float32),
        np.asarray(jax.vjp(lambda a: _reference(a, 3, 2, 1), x)[1](ones)[0], np.float32),
    )


def test_cpu_gradient_has_no_scatter_and_other_platforms_keep_reduce_window():
    x = jnp.ones((2, 8, 8, 3))
    grad = jax.jit(jax.grad(lambda a: jnp.sum(max_pool(a, 3, 2, 1))))
    text = grad.lower(x).compile().as_text()
    if jax.default_backend() == "cpu":
        # op names (the metadata names this test's file and function)
        assert " scatter(" not in text and " select-and-scatter(" not in text and " reduce-window(" not in text
    # the program lowered for another platform keeps reduce_window (its gradient: select-and-scatter)
    tpu = jax.jit(jax.grad(lambda a: jnp.sum(max_pool(a, 3, 2, 1)))).trace(x).lower(lowering_platforms=("tpu",))
    assert "select_and_scatter" in tpu.as_text()


def test_no_output_is_a_clear_error():
    with pytest.raises(ValueError, match="no output"):
        window_max_pool(jnp.ones((1, 2, 2, 1)), 3, 1, 0)
