"""The generic train step: descent, BatchNorm statistics, gradient accumulation, determinism."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from gensim_jax import losses
from gensim_jax.models import get_model
from gensim_jax.training import (
    BetaBernoulliTarget,
    CenterLoss,
    CrossEntropy,
    GenSimRegression,
    NTXent,
    TripletObjective,
    create_train_state,
    eval_step,
    make_train_step,
    split_microbatches,
    step_key,
    train_step,
)
from tests.training._tiny import tiny_batch, tiny_model, tiny_state


def tree_close(a, b, **kw):
    jax.tree.map(lambda x, y: np.testing.assert_allclose(np.asarray(x), np.asarray(y), **kw), a, b)


@pytest.mark.parametrize(
    "obj",
    [
        GenSimRegression(target=BetaBernoulliTarget(), input_key="x"),
        CrossEntropy(input_key="x"),
    ],
    ids=lambda o: type(o).__name__,
)
@pytest.mark.slow
def test_steps_decrease_the_loss_on_a_fixed_batch(obj):
    state = tiny_state(batchnorm=True, lr=0.02)
    batch = tiny_batch(np.random.default_rng(0), 16)
    step = make_train_step(obj)
    first = None
    for _ in range(15):
        state, m = step(state, batch)
        first = float(m["loss"]) if first is None else first
    final = float(jax.jit(eval_step)(state, batch, obj)["loss"])
    assert int(state.step) == 15
    assert final < 0.8 * first, (first, final)


@pytest.mark.slow
def test_lenet_center_loss_steps_on_32x32_images():
    """Thesis 003 set-up in miniature: LeNet-5 on 32x32x3 images, CE + lambda * class-centre loss."""
    model = get_model("lenet5", num_classes=3)
    state = create_train_state(model, optax.adam(3e-3), np.int64(0))
    rng = np.random.default_rng(0)
    batch = {"image": rng.random((6, 32, 32, 3), dtype=np.float32), "label": np.array([0, 1, 2, 0, 1, 2])}
    obj = CenterLoss(lam=0.25)
    out = model.apply(state.variables, batch["image"])
    ref = losses.center_objective(out["logits"], batch["label"], out["embedding"], lam=0.25)
    step = make_train_step(obj)
    state, m = step(state, batch)
    np.testing.assert_allclose(float(m["loss"]), float(ref), rtol=1e-5)
    for _ in range(7):
        state, m = step(state, batch)
    assert float(m["loss"]) < float(ref) and 0.0 <= float(m["accuracy"]) <= 1.0


@pytest.mark.slow
def test_step_gradient_and_batchnorm_update_match_an_independent_computation():
    """One SGD step: params - lr * grad of the library loss on one concatenated train-mode forward."""
    model = tiny_model(batchnorm=True)
    state = create_train_state(model, optax.sgd(0.1), 0)
    batch = tiny_batch(np.random.default_rng(1), 8)

    def ref_loss(params):
        x = jnp.concatenate([batch["view1"], batch["view2"]])
        out, mut = model.apply(
            {"params": params, "batch_stats": state.batch_stats}, x, train=True, mutable=["batch_stats"]
        )
        return losses.ntxent_loss(out["projection"][:8], out["projection"][8:], temperature=0.5), mut

    (loss, mut), g = jax.jit(jax.value_and_grad(ref_loss, has_aux=True))(state.params)
    new, metrics = jax.jit(train_step)(state, batch, NTXent())
    np.testing.assert_allclose(float(metrics["loss"]), float(loss), rtol=1e-6)
    tree_close(new.params, jax.tree.map(lambda p, d: p - 0.1 * d, state.params, g), rtol=1e-5, atol=1e-7)
    tree_close(new.batch_stats, mut["batch_stats"], rtol=1e-6)
    # the statistics moved (train mode), and eval mode leaves them alone
    bs_old = state.batch_stats["projector"]["bn_0"]
    bs_new = new.batch_stats["projector"]["bn_0"]
    assert not np.allclose(bs_old["mean"], bs_new["mean"]) and not np.allclose(bs_old["var"], bs_new["var"])
    h = model.apply(state.variables, jnp.concatenate([batch["view1"], batch["view2"]]), method="embed")
    pre_bn = np.asarray(h) @ np.asarray(state.params["projector"]["dense_0"]["kernel"])
    np.testing.assert_allclose(bs_new["mean"], 0.9 * bs_old["mean"] + 0.1 * pre_bn.mean(0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "obj,k",
    [(TripletObjective(form="softplus"), 4), (CrossEntropy(input_key="x"), 2)],
    ids=["triplet-4", "crossentropy-2"],
)
@pytest.mark.slow
def test_accumulating_k_microbatches_equals_one_big_batch(obj, k):
    # SGD with momentum: Adam would turn round-off in (exactly) cancelling gradients into +-lr steps
    state = create_train_state(tiny_model(), optax.sgd(0.1, momentum=0.9), 0)
    batch = tiny_batch(np.random.default_rng(2), 16)
    big, m_big = jax.jit(train_step, static_argnums=(2, 3))(state, batch, obj, 1)
    acc, m_acc = jax.jit(train_step, static_argnums=(2, 3))(state, batch, obj, k)
    np.testing.assert_allclose(float(m_acc["loss"]), float(m_big["loss"]), rtol=1e-5)
    tree_close(acc.params, big.params, rtol=1e-5, atol=1e-6)
    tree_close(acc.opt_state, big.opt_state, rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_accumulation_of_an_all_pairs_loss_averages_microbatch_losses():
    """All-pairs losses do not decompose: accumulation = mean of per-micro-batch all-pairs losses."""
    obj = GenSimRegression(target=BetaBernoulliTarget(), input_key="x")
    state = tiny_state()
    batch = tiny_batch(np.random.default_rng(4), 12)
    _, m = jax.jit(train_step, static_argnums=(2, 3))(state, batch, obj, 3)
    micro = split_microbatches(batch, 3)
    ev = jax.jit(eval_step)
    per = [float(ev(state, jax.tree.map(lambda v: v[i], micro), obj)["loss"]) for i in range(3)]
    np.testing.assert_allclose(float(m["loss"]), np.mean(per), rtol=1e-5)
    big = float(ev(state, batch, obj)["loss"])
    assert abs(big - np.mean(per)) > 1e-4  # genuinely different from the whole-batch loss


def test_split_microbatches_strides_and_validates():
    b = {"a": np.arange(6), "b": np.arange(12).reshape(6, 2)}
    m = split_microbatches(b, 3)
    np.testing.assert_array_equal(m["a"], [[0, 3], [1, 4], [2, 5]])
    np.testing.assert_array_equal(m["b"][1], [[2, 3], [8, 9]])
    with pytest.raises(ValueError, match="divisible"):
        split_microbatches(b, 4)
    with pytest.raises(ValueError, match="same leading"):
        split_microbatches({"a": np.zeros(4), "b": np.zeros(6)}, 2)


@pytest.mark.slow
def test_step_key_depends_on_step_only():
    s = tiny_state(seed=3)
    k1 = jax.random.key_data(step_key(s))
    k2 = jax.random.key_data(step_key(s.replace(step=s.step + 1)))
    assert not np.array_equal(k1, k2)
    np.testing.assert_array_equal(k1, jax.random.key_data(step_key(tiny_state(seed=3))))


def test_non_objective_is_rejected():
    with pytest.raises(TypeError, match="Objective"):
        make_train_step(lambda *a: 0.0)


def _conv_in_ynnpack(compiled_text: str) -> bool:
    return any("__ynn_fusion" in ln and "conv_general_dilated" in ln for ln in compiled_text.splitlines())


@pytest.mark.slow
@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the default options are XLA:CPU's")
def test_cpu_steps_compile_with_the_eigen_convolution_options_by_default():
    """``make_train_step`` (and the runner's ``jit_train_step``) compile a CPU step with
    ``CPU_EIGEN_CONV_OPTIONS`` unless told otherwise: the convolutions leave YNNPACK, as under the
    explicit options; ``compiler_options=None`` keeps XLA's defaults (YNNPACK convolutions)."""
    from gensim_jax import parallel
    from gensim_jax.training.step import CPU_EIGEN_CONV_OPTIONS, default_compiler_options, jit_train_step

    model = get_model("cornet_z", num_classes=5)
    state = create_train_state(model, optax.adam(1e-3), 0, example_input=jnp.zeros((1, 24, 24, 3)))
    batch = {"image": jnp.ones((2, 24, 24, 3)), "label": jnp.arange(2)}

    def text(**kw):
        return make_train_step(CrossEntropy(), **kw).lower(state, batch).compile().as_text()

    assert _conv_in_ynnpack(text(compiler_options=None))
    assert not _conv_in_ynnpack(text())
    assert not _conv_in_ynnpack(text(compiler_options=CPU_EIGEN_CONV_OPTIONS))
    mesh = parallel.make_mesh()
    assert default_compiler_options() == default_compiler_options(mesh) == CPU_EIGEN_CONV_OPTIONS
    with pytest.raises(ValueError, match="compiler_options"):
        jit_train_step(compiler_options="fast")
