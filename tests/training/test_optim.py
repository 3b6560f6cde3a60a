"""Optimizers and schedules from config fields, each against its update written out in numpy."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from gensim_jax.config import with_overrides
from gensim_jax.training.experiment import TrainConfig, check_train_config
from gensim_jax.training.optim import OptimConfig, current_learning_rate, make_optimizer, make_schedule


def _run(config, grads, steps_total=10):
    tx = make_optimizer(config, steps_total)
    p = {"w": jnp.asarray([1.0, -2.0, 0.5])}
    state = tx.init(p)
    out = []
    for g in grads:
        u, state = tx.update({"w": jnp.asarray(g)}, state, p)
        p = optax.apply_updates(p, u)
        out.append(np.asarray(p["w"]))
    return out, state


GRADS = [
    np.array([0.3, -0.1, 2.0], np.float32),
    np.array([-0.5, 0.2, 0.1], np.float32),
    np.array([0.05, 0.4, -1.0], np.float32),
]


def test_sgd_with_momentum_and_weight_decay_matches_the_written_out_update():
    cfg = OptimConfig(optimizer="sgd", learning_rate=0.1, momentum=0.9, weight_decay=0.01)
    got, _ = _run(cfg, GRADS)
    p, v = np.array([1.0, -2.0, 0.5]), np.zeros(3)
    for g, want in zip(GRADS, got):
        v = 0.9 * v + (g + 0.01 * p)
        p = p - 0.1 * v
        np.testing.assert_allclose(want, p, rtol=1e-5)


def test_adamw_matches_the_written_out_update():
    cfg = OptimConfig(optimizer="adamw", learning_rate=0.01, weight_decay=0.1)
    got, _ = _run(cfg, GRADS)
    p, m, v = np.array([1.0, -2.0, 0.5]), np.zeros(3), np.zeros(3)
    for t, (g, want) in enumerate(zip(GRADS, got), start=1):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        mh, vh = m / (1 - 0.9**t), v / (1 - 0.999**t)
        p = p - 0.01 * (mh / (np.sqrt(vh) + 1e-8) + 0.1 * p)
        np.testing.assert_allclose(want, p, rtol=1e-5)


@pytest.mark.slow
def test_adam_and_lars_are_the_named_optax_transformations():
    for name, ref in (("adam", optax.adam(0.01)), ("lars", optax.lars(0.01, weight_decay=0.0, momentum=0.9))):
        got, _ = _run(OptimConfig(optimizer=name, learning_rate=0.01), GRADS)
        p = {"w": jnp.asarray([1.0, -2.0, 0.5])}
        s = ref.init(p)
        for g, want in zip(GRADS, got):
            u, s = ref.update({"w": jnp.asarray(g)}, s, p)
            p = optax.apply_updates(p, u)
            np.testing.assert_allclose(want, np.asarray(p["w"]), rtol=1e-6, err_msg=name)


def test_gradient_clipping_bounds_the_global_norm():
    cfg = OptimConfig(optimizer="sgd", learning_rate=1.0, momentum=0.0, grad_clip_norm=0.5)
    (p1,), _ = _run(cfg, [np.array([3.0, 4.0, 0.0], np.float32)])
    np.testing.assert_allclose(p1 - np.array([1.0, -2.0, 0.5]), [-0.3, -0.4, 0.0], rtol=1e-6)


def test_warmup_cosine_schedule_and_the_learning_rate_in_the_state():
    s = make_schedule("warmup_cosine", 2.0, 12, warmup_steps=4, min_learning_rate=0.2)
    t = np.arange(13)
    want = np.where(t < 4, 2.0 * t / 4, 0.2 + (2.0 - 0.2) * (1 + np.cos(np.pi * (t - 4) / 8)) / 2)
    np.testing.assert_allclose([float(s(i)) for i in t], want, rtol=1e-6, atol=1e-7)
    cfg = OptimConfig(
        optimizer="sgd",
        momentum=0.0,
        learning_rate=2.0,
        schedule="warmup_cosine",
        warmup_steps=4,
        min_learning_rate=0.2,
    )
    _, state = _run(cfg, GRADS, steps_total=12)
    assert float(current_learning_rate(state)) == pytest.approx(want[len(GRADS) - 1])


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("optim.optimizer", "adagrad", "optim.optimizer must be one of"),
        ("optim.schedule", "linear", "optim.schedule must be one of"),
        ("optim.momentum", 1.0, "optim.momentum"),
        ("optim.weight_decay", -1.0, "optim.weight_decay"),
        ("optim.grad_clip_norm", 0.0, "optim.grad_clip_norm"),
        ("optim.learning_rate", 0.0, "optim.learning_rate must be positive"),
        ("dtype", "float16", "dtype must be one of"),
        ("log_every", 0, "log_every"),
        ("mesh_fsdp", 0, "mesh_data"),
    ],
)
def test_bad_fields_name_themselves(field, value, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        check_train_config(with_overrides(TrainConfig(), {field: value}))


def test_a_train_config_and_its_optim_section_build_the_same_optimizer():
    cfg = OptimConfig(optimizer="sgd", learning_rate=0.1, momentum=0.5)
    a, _ = _run(cfg, GRADS)
    b, _ = _run(TrainConfig(optim=cfg), GRADS)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_warmup_longer_than_the_run_is_refused():
    with pytest.raises(ValueError, match="warmup_steps=10"):
        make_optimizer(OptimConfig(schedule="warmup_cosine", warmup_steps=10), 5)
    assert jax.tree.leaves(make_optimizer(TrainConfig(), 5).init({"w": jnp.zeros(2)}))  # builds
