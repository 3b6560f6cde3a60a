"""Where the time of one quadrilaterals training step goes (CORnet-Z from scratch, batch 32, CPU).

Prints one JSON line per measurement (seconds, min and median of ``--repeats`` timed calls after
one warm-up/compile call, each call waited for with ``block_until_ready``):

``step``
    the runner's jitted step (:func:`gensim_jax.training.make_train_step`, Adam, state donated) for
    the GenSim objective (``DistanceRegression`` on the 22 features) and the supervised one
    (11-way ``CrossEntropy``), at each ``--sizes``, XLA's default CPU options and
    :data:`~gensim_jax.training.step.CPU_EIGEN_CONV_OPTIONS` (the runner's default on a CPU since 2026-11-28).
``layer``
    the four CORnet-Z areas one by one at the first size: convolution (+ bias + ReLU) forward, its
    VJP (both gradients), 3 x 3 / 2 max pooling forward and its VJP; plus the GenSim loss
    (B x B distances of the 512-d embeddings and the 22-d features) forward + gradient, and the
    forward pass of the whole encoder.
``host``
    rendering the training images (``training_source``, per image), one host batch of the
    experiment's pipeline (``make_batches``: tf.data, uint8 -> normalised float32), and one
    evaluation (the arm's ``evaluate``: embedding the 440 x 6 test images and both read-outs).
``vmap``
    the seeds of an arm as one program: ``K`` independent GenSim steps (params, Adam state and batch
    stacked on a leading axis) under one ``jax.vmap``-ed ``jax.jit``, against ``K`` calls of the
    unbatched step; ``gain = K * single / vmapped``.

Usage: python -m bench.step.quadrilaterals [--sizes 64 48 32] [--repeats 7] [--vmap-k 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from gensim_jax.config import with_overrides
from gensim_jax.data.quadrilaterals import training_source
from gensim_jax.evaluation import oddball as oe
from gensim_jax.experiments import quadrilaterals as q
from gensim_jax.losses import distance_regression_loss
from gensim_jax.models import get_model
from gensim_jax.models.layers import max_pool
from gensim_jax.training import create_train_state, make_train_step
from gensim_jax.training.experiment import HostShard
from gensim_jax.training.objectives import CrossEntropy, DistanceRegression
from gensim_jax.training.step import CPU_EIGEN_CONV_OPTIONS

BATCH = 32
NUM_FEATURES = 22


def _timed(fn, repeats: int) -> dict:
    jax.block_until_ready(fn())  # compile / warm-up
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        ts.append(time.perf_counter() - t0)
    return {"min_s": min(ts), "median_s": statistics.median(ts)}


def _emit(kind: str, **fields) -> dict:
    line = {"bench": "quadrilaterals_step", "kind": kind, **fields}
    print(json.dumps(line), flush=True)
    return line


def _batch(size: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "image": jnp.asarray(rng.standard_normal((BATCH, size, size, 3)), jnp.float32),
        "features": jnp.asarray(rng.integers(0, 2, (BATCH, NUM_FEATURES)), jnp.float32),
        "label": jnp.asarray(rng.integers(0, 11, BATCH), jnp.int32),
        "mask": jnp.ones((BATCH,), jnp.float32),
    }


def bench_steps(sizes, repeats: int) -> None:
    objectives = {
        "gensim": (None, DistanceRegression(exclude_diagonal=False)),
        "supervised": (11, CrossEntropy()),
    }
    for size in sizes:
        batch = _batch(size)
        for arm, (num_classes, objective) in objectives.items():
            for options_name, options in (("default", None), ("eigen_conv", CPU_EIGEN_CONV_OPTIONS)):
                model = get_model("cornet_z", num_classes=num_classes)
                holder = {
                    "state": create_train_state(
                        model, optax.adam(1e-3), 0, example_input=jnp.zeros((1, size, size, 3), jnp.float32)
                    )
                }
                step = make_train_step(objective, compiler_options=options)

                def call(step=step, holder=holder, batch=batch):
                    holder["state"], metrics = step(holder["state"], batch)
                    return holder["state"].params, metrics

                _emit("step", arm=arm, size=size, batch=BATCH, xla_options=options_name, **_timed(call, repeats))


def bench_layers(size: int, repeats: int) -> None:
    rng = np.random.default_rng(1)
    shapes = []  # (name, in_hw, cin, cout, kernel, stride)
    hw, cin = size, 3
    for name, cout, k, s in (("V1", 64, 7, 2), ("V2", 128, 3, 1), ("V4", 256, 3, 1), ("IT", 512, 3, 1)):
        shapes.append((name, hw, cin, cout, k, s))
        hw = (hw + 2 * (k // 2) - k) // s + 1  # conv
        hw = (hw + 2 - 3) // 2 + 1  # pool 3/2 pad 1
        cin = cout
    for name, in_hw, cin, cout, k, s in shapes:
        x = jnp.asarray(rng.standard_normal((BATCH, in_hw, in_hw, cin)), jnp.float32)
        w = jnp.asarray(rng.standard_normal((k, k, cin, cout)) * 0.05, jnp.float32)
        b = jnp.zeros((cout,), jnp.float32)

        def conv(x, w, b, k=k, s=s):
            y = jax.lax.conv_general_dilated(
                x, w, (s, s), [(k // 2, k // 2)] * 2, dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
            return jax.nn.relu(y + b)

        y = jax.jit(conv)(x, w, b)
        conv_f = jax.jit(conv)
        conv_vjp = jax.jit(lambda x, w, b, g: jax.vjp(conv, x, w, b)[1](g))
        pool_f = jax.jit(lambda y: max_pool(y, 3, 2, 1))
        pool_vjp = jax.jit(lambda y, g: jax.vjp(lambda t: max_pool(t, 3, 2, 1), y)[1](g))
        gy = jnp.ones_like(y)
        gp = jnp.ones_like(pool_f(y))
        common = {"area": name, "size": size, "in_hw": in_hw, "out_hw": int(y.shape[1]), "cin": cin, "cout": cout}
        _emit("layer", part="conv_forward", **common, **_timed(lambda: conv_f(x, w, b), repeats))
        _emit("layer", part="conv_vjp", **common, **_timed(lambda: conv_vjp(x, w, b, gy), repeats))
        _emit("layer", part="pool_forward", **common, **_timed(lambda: pool_f(y), repeats))
        _emit("layer", part="pool_vjp", **common, **_timed(lambda: pool_vjp(y, gp), repeats))
    z = jnp.asarray(rng.standard_normal((BATCH, 512)), jnp.float32)
    f = jnp.asarray(rng.integers(0, 2, (BATCH, NUM_FEATURES)), jnp.float32)
    loss_grad = jax.jit(jax.value_and_grad(lambda z: distance_regression_loss(z, f, exclude_diagonal=False)))
    _emit("layer", part="gensim_loss_value_and_grad", size=size, **_timed(lambda: loss_grad(z), repeats))
    model = get_model("cornet_z", num_classes=None)
    x = jnp.asarray(rng.standard_normal((BATCH, size, size, 3)), jnp.float32)
    variables = model.init(jax.random.key(0), x[:1])
    fwd = jax.jit(lambda v, x: model.apply(v, x)["embedding"])
    _emit("layer", part="encoder_forward", size=size, **_timed(lambda: fwd(variables, x), repeats))


def bench_host(size: int) -> None:
    config = with_overrides(q.CONFIGS["deviants"], {"data.image_size": size, "num_runs": 1})
    t0 = time.perf_counter()
    source = training_source(config.data, 0)
    render_s = time.perf_counter() - t0
    _emit(
        "host",
        part="render_training_images",
        size=size,
        images=config.data.num_train_images,
        seconds=render_s,
        per_image_s=render_s / config.data.num_train_images,
    )
    t0 = time.perf_counter()
    trials = q.test_trials(config)
    _emit(
        "host",
        part="render_test_trials",
        size=size,
        images=int(trials[0].shape[0] * 6),
        seconds=time.perf_counter() - t0,
    )
    for arm in ("gensim", "supervised"):
        it = q.EXPERIMENT.arm(arm, config, q.Data(source, ())).batches(0, HostShard(global_batch=config.batch_size))(0)
        next(it)  # pipeline start-up
        n = 50
        t0 = time.perf_counter()
        for _ in range(n):
            next(it)
        _emit("host", part="pipeline_batch", arm=arm, size=size, per_batch_s=(time.perf_counter() - t0) / n)
    model = get_model("cornet_z", num_classes=None)
    variables = model.init(jax.random.key(0), jnp.zeros((1, size, size, 3), jnp.float32))
    data = q.Data(source, trials)
    evaluate = q.EXPERIMENT.arm("gensim", config, data).evaluate
    evaluate(model, variables, 0)  # compile
    ts, te, tr = [], [], []
    embed = q.embedding_fn(config, model, variables)
    for _ in range(3):
        t0 = time.perf_counter()
        evaluate(model, variables, 0)
        ts.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        e = oe.trial_embeddings(embed, trials)
        te.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        oe.readout(e, trials)
        tr.append(time.perf_counter() - t0)
    _emit("host", part="evaluation_embedding", size=size, min_s=min(te), median_s=statistics.median(te))
    _emit("host", part="evaluation_readouts", size=size, min_s=min(tr), median_s=statistics.median(tr))
    _emit(
        "host",
        part="evaluation",
        size=size,
        trials=int(trials[0].shape[0]),
        min_s=min(ts),
        median_s=statistics.median(ts),
    )


def bench_vmap(size: int, k: int, repeats: int) -> None:
    model = get_model("cornet_z", num_classes=None)
    tx = optax.adam(1e-3)

    def loss(params, batch):
        z = model.apply({"params": params}, batch["image"])["embedding"]
        return distance_regression_loss(z, batch["features"], exclude_diagonal=False)

    def step(params, opt_state, batch):
        value, grads = jax.value_and_grad(loss)(params, batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    example = jnp.zeros((1, size, size, 3), jnp.float32)
    params = [model.init(jax.random.key(s), example)["params"] for s in range(k)]
    opts = [tx.init(p) for p in params]
    batches = [_batch(size, seed=s) for s in range(k)]
    for options_name, options in (("default", None), ("eigen_conv", CPU_EIGEN_CONV_OPTIONS)):
        kw = {} if options is None else {"compiler_options": dict(options)}
        single = jax.jit(step, **kw)
        batched = jax.jit(jax.vmap(step), **kw)
        stack = lambda xs: jax.tree.map(lambda *a: jnp.stack(a), *xs)  # noqa: E731
        sp, so, sb = stack(params), stack(opts), stack(batches)
        t_single = _timed(lambda: [single(params[i], opts[i], batches[i]) for i in range(k)], repeats)
        t_vmap = _timed(lambda: batched(sp, so, sb), repeats)
        _emit(
            "vmap",
            size=size,
            k=k,
            xla_options=options_name,
            sequential_min_s=t_single["min_s"],
            sequential_median_s=t_single["median_s"],
            vmapped_min_s=t_vmap["min_s"],
            vmapped_median_s=t_vmap["median_s"],
            gain_min=t_single["min_s"] / t_vmap["min_s"],
        )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 48, 32])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--vmap-k", type=int, default=3)
    p.add_argument("--parts", nargs="+", default=["step", "layer", "host", "vmap"])
    a = p.parse_args(argv)
    if "step" in a.parts:
        bench_steps(a.sizes, a.repeats)
    if "layer" in a.parts:
        for size in a.sizes:
            bench_layers(size, a.repeats)
    if "host" in a.parts:
        bench_host(a.sizes[0])
    if "vmap" in a.parts:
        for size in a.sizes:
            bench_vmap(size, a.vmap_k, a.repeats)


if __name__ == "__main__":
    main()
