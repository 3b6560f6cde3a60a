"""CPU_EIGEN_CONV_OPTIONS: accepted by this XLA, moves convolutions off YNNPACK, same gradients.

The independent computation is the default compilation of the same lowered program: with the
options, the compiled HLO has no YNNPACK fusion around the convolution, and the gradients agree
with the default compilation's to float32 rounding.  ``make_train_step`` forwards the options.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from gensim_jax.training.step import CPU_EIGEN_CONV_OPTIONS


def _conv_grad(x, w):
    def loss(x, w):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum(jax.nn.relu(y) ** 2)

    return jax.grad(loss, argnums=(0, 1))(x, w)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA:CPU options")
@pytest.mark.slow
def test_options_move_convolutions_to_eigen_with_the_same_gradients():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((4, 8, 8, 64)).astype(np.float32))
    w = jnp.asarray(rng.standard_normal((3, 3, 64, 64)).astype(np.float32) * 0.05)
    lowered = jax.jit(_conv_grad).lower(x, w)
    default, eigen = lowered.compile(), lowered.compile(dict(CPU_EIGEN_CONV_OPTIONS))
    conv_in_ynn = lambda txt: any(
        "__ynn_fusion" in ln and "conv_general_dilated" in ln  # noqa: E731
        for ln in txt.splitlines()
    )
    assert conv_in_ynn(default.as_text())  # this jaxlib's default: convolutions on YNNPACK
    assert not conv_in_ynn(eigen.as_text())
    for a, b in zip(default(x, w), eigen(x, w)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-4 * float(jnp.max(jnp.abs(a))))


@pytest.mark.slow
def test_make_train_step_forwards_compiler_options():
    from gensim_jax.models import get_model
    from gensim_jax.training import create_train_state, make_train_step
    from gensim_jax.training.objectives import CrossEntropy

    model = get_model("lenet5", num_classes=10)
    batch = {
        "image": jnp.asarray(np.random.default_rng(1).standard_normal((4, 32, 32, 3)), jnp.float32),
        "label": jnp.arange(4) % 10,
    }
    out = []
    for opts in (None, CPU_EIGEN_CONV_OPTIONS):
        state = create_train_state(model, optax.adam(1e-3), 0)
        state, metrics = make_train_step(CrossEntropy(), compiler_options=opts)(state, batch)
        out.append((float(metrics["loss"]), state.params))
    assert out[0][0] == pytest.approx(out[1][0], rel=1e-5)
    for a, b in zip(jax.tree.leaves(out[0][1]), jax.tree.leaves(out[1][1])):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-5)
    from gensim_jax import parallel

    mesh = parallel.make_mesh()  # the runner's path: the options reach the sharded jit too
    state = parallel.place_state(create_train_state(model, optax.adam(1e-3), 0), mesh)
    _, metrics = make_train_step(CrossEntropy(), mesh=mesh, state=state, compiler_options=CPU_EIGEN_CONV_OPTIONS)(
        state, parallel.shard_batch(batch, mesh)
    )
    assert float(metrics["loss"]) == pytest.approx(out[0][0], rel=1e-5)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA:CPU options")
def test_every_variant_is_an_option_set_this_xla_accepts():
    """Each variant of ``bench.step.xla_cpu_options`` compiles (an option this XLA does not know is refused
    at compile time), and gives the default compilation's gradients to float32 rounding."""
    from bench.step.xla_cpu_options import VARIANTS

    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.standard_normal((2, 6, 6, 8)).astype(np.float32))
    w = jnp.asarray(rng.standard_normal((3, 3, 8, 8)).astype(np.float32) * 0.1)
    lowered = jax.jit(_conv_grad).lower(x, w)
    reference = lowered.compile()(x, w)
    for name, options in VARIANTS.items():
        got = lowered.compile(dict(options) or None)(x, w)
        for a, b in zip(reference, got):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-4 * float(jnp.max(jnp.abs(a))))
        assert name in {"ynn_default", "eigen_conv", "dot_only"} or "xla_cpu_experimental_ynn_fusion_type" in options
