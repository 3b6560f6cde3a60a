"""The one runner: a fork's one-file experiment end to end, against a bare jit loop, with one compile per arm."""

import itertools
import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from gensim_jax import experiments as registry
from gensim_jax.losses import ntxent_loss
from gensim_jax.models import get_model
from gensim_jax.training import NTXent, create_train_state, runner, train_step
from gensim_jax.training.experiment import HostShard
from gensim_jax.training.export import load_exported
from tests.training._events import read_events

TINY = str(Path(__file__).with_name("tiny_experiment.py"))


@pytest.fixture(scope="module")
def tiny():
    return registry.load(TINY)


@pytest.fixture(scope="module")
def ran(tiny, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tiny")
    config = tiny.get_config("tiny", num_runs=2)
    return workdir, config, runner.train_and_evaluate(tiny, config, workdir, progress=False)


@pytest.mark.slow
def test_runner_writes_every_run_and_the_results(ran, tiny):
    workdir, config, results = ran
    saved = json.loads((workdir / "results.json").read_text())
    assert saved["experiment"] == "tiny_experiment" and saved["num_steps"] == 20
    assert set(saved["evaluations"]) == {"gensim", "simclr"} and all(len(v) == 2 for v in saved["evaluations"].values())
    for arm in ("gensim", "simclr"):
        for r in range(2):
            run_dir = workdir / arm / f"run{r}"
            record = json.loads((run_dir / "config.json").read_text())
            assert record["seed"] == r and record["config"]["arm"] == arm
            lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
            assert [x["step"] for x in lines if "loss" in x] == list(range(1, 21))
            model, variables, meta = load_exported(run_dir / "export")
            assert meta["objective"] == arm and meta["seed"] == r
            # the exported encoder reproduces the evaluation recorded in results.json
            features, x = tiny.prepare(config)
            z = np.asarray(model.apply(variables, x)["projection"])
            assert saved["evaluations"][arm][r]["embedding_norm"] == pytest.approx(
                float(np.linalg.norm(z, axis=1).mean()), rel=1e-5
            )
            # TensorBoard: the same scalars as metrics.jsonl, the evaluation, the regression scatter (gensim)
            scalars, images = read_events(run_dir)
            assert scalars["loss"] == {x["step"]: np.float32(x["loss"]) for x in lines if "loss" in x}
            assert scalars["result/embedding_norm"] == {20: np.float32(saved["evaluations"][arm][r]["embedding_norm"])}
            assert ("result/similarity_scatter" in images) == (arm == "gensim")


@pytest.mark.slow
def test_runner_losses_equal_a_bare_jit_loop(ran, tiny):
    """Run 0 of ``gensim``: the runner's per-step losses are those of a hand-written loop over the same batches."""
    workdir, config, _ = ran
    arm = tiny.arm("gensim", config, tiny.prepare(config))
    state = create_train_state(
        arm.model,
        optax.sgd(config.optim.learning_rate, momentum=config.optim.momentum),
        jax.random.key(0),
        variables=arm.init_variables(0),
    )
    objective = arm.objective
    step = jax.jit(lambda s, b: train_step(s, b, objective))
    stream = iter(arm.batches(0, HostShard(global_batch=config.batch_size))(0))
    losses = []
    for _ in range(config.num_steps):
        state, m = step(state, next(stream))
        losses.append(float(m["loss"]))
    lines = [json.loads(x) for x in (workdir / "gensim" / "run0" / "metrics.jsonl").read_text().splitlines()]
    np.testing.assert_allclose([x["loss"] for x in lines if "loss" in x], losses, rtol=2e-5)


@pytest.mark.slow
def test_rerun_resumes_the_finished_runs_without_training(ran, tiny):
    workdir, config, results = ran
    again = runner.train_and_evaluate(tiny, config, workdir, progress=False)
    assert again["evaluations"] == results["evaluations"]
    assert again["training"]["gensim"][0]["losses"] == results["training"]["gensim"][0]["losses"]


@pytest.mark.slow
def test_one_compile_serves_every_seed_and_every_traced_temperature():
    mesh = runner.make_run_mesh(registry.load(TINY).get_config("tiny"))
    cache = runner.StepCache(mesh)
    model = get_model("mlp", in_features=6, hidden=8, embed_dim=4, projection_dims=(4, 3))
    tx = optax.sgd(0.1)
    rng = np.random.default_rng(0)
    batch = {"view1": rng.normal(size=(16, 6)).astype(np.float32), "view2": rng.normal(size=(16, 6)).astype(np.float32)}
    from gensim_jax import parallel

    for seed, temperature in ((0, 0.5), (1, 0.1), (2, 2.0)):
        state = parallel.place_state(create_train_state(model, tx, seed), mesh)
        variables = jax.device_get(state.variables)  # the step donates the state
        step = cache.get(state, NTXent(temperature=temperature))
        _, metrics = step(state, parallel.shard_batch(batch, mesh))
        z = model.apply(variables, np.concatenate([batch["view1"], batch["view2"]]))["projection"]
        want = ntxent_loss(z[:16], z[16:], temperature=temperature)
        assert float(metrics["loss"]) == pytest.approx(float(want), rel=1e-5)
    (jitted,) = cache._steps.values()
    assert jitted._cache_size() == 1


def test_scatter_pairs_are_one_program_equal_to_the_model_and_objective_applied_eagerly(tiny):
    """The pairs of a run's similarity scatter: the model and the objective in one jitted program, equal to
    numpy's cosine (``x.y / (max(|x|, eps) max(|y|, eps))``) and Euclidean distances of the eagerly applied
    model, and to the objective's eager target; ``uint8`` inputs are normalised as the step normalises them
    (``unit``: x / 255); an objective without pairs has none."""
    import dataclasses

    from gensim_jax.training.objectives import DistanceRegression

    config = tiny.get_config("tiny")
    data = tiny.prepare(config)
    arm = tiny.arm("gensim", config, data)
    variables = arm.init_variables(0)
    batch = next(iter(arm.batches(0, HostShard.of_this_process(config.batch_size))(0)))
    fn = runner._regression_pairs_fn(arm)
    pred, target = fn(variables, batch)
    assert fn.lower(variables, batch).compile() is not None  # one program (jax.jit), not op by op
    z = np.asarray(arm.model.apply(variables, batch["x"])["projection"], np.float64)
    z /= np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-8)  # a zero row: cosine 0
    np.testing.assert_allclose(pred, z @ z.T / arm.objective.temperature, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(target, arm.objective.target(batch), rtol=1e-6, atol=1e-6)

    # uint8 inputs and a distance (not scale-free, so a missing x / 255 shows)
    as_uint8 = {**batch, "x": np.clip(np.round(batch["x"] * 40 + 128), 0, 255).astype(np.uint8)}
    objective = DistanceRegression(input_key="x", feature_key="features", output="projection")
    unit = dataclasses.replace(arm, objective=objective, export={"preprocess": "unit"})
    pred, target = runner._regression_pairs_fn(unit)(variables, as_uint8)
    z = np.asarray(arm.model.apply(variables, as_uint8["x"].astype(np.float32) / 255)["projection"], np.float64)
    f = as_uint8["features"].astype(np.float64)
    for got, rows in ((pred, z), (target, f)):
        want = np.sqrt(((rows[:, None] - rows[None]) ** 2).sum(-1))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert runner._regression_pairs_fn(tiny.arm("simclr", config, data)) is None


def test_host_shards_of_any_process_count_make_the_one_process_batches():
    tiny = registry.load(TINY)
    config = tiny.get_config("tiny")
    data = tiny.prepare(config)
    batches = tiny.arm("gensim", config, data).batches
    whole = list(itertools.islice(batches(0, HostShard(global_batch=16))(3), 2))
    for count in (2, 4):
        parts = [list(itertools.islice(batches(0, HostShard(i, count, 16))(3), 2)) for i in range(count)]
        for step in range(2):
            for k in whole[step]:
                got = np.concatenate([parts[i][step][k] for i in range(count)])
                np.testing.assert_array_equal(got, whole[step][k])
    with pytest.raises(ValueError, match="multiple of the 3 processes"):
        HostShard(0, 3, 16)
    with pytest.raises(ValueError, match="index < count"):
        HostShard(2, 2, 16)


def test_checked_batches_name_the_entry_and_the_rows():
    tiny = registry.load(TINY)
    config = tiny.get_config("tiny")
    shard = HostShard(1, 2, 16)

    def factory(rows, drop=None):
        def stream(position):
            batch = {"x": np.zeros((rows, 6), np.float32), "features": np.zeros((rows, 5), np.float32)}
            batch.pop(drop, None)
            yield batch

        return stream

    spec = tiny.arm("gensim", config, None).batch_spec()
    ok = next(runner.checked_batches(spec, "tiny", factory(8), shard)(0))
    assert ok["x"].shape == (8, 6)
    with pytest.raises(ValueError, match=r"entry 'x' has \(16,\) rows; this process builds 8 rows"):
        next(runner.checked_batches(spec, "tiny", factory(16), shard)(0))
    with pytest.raises(ValueError, match=r"the batch has no \['x'\]"):
        next(runner.checked_batches(spec, "tiny", factory(8, drop="x"), shard)(0))


def test_mesh_and_batch_errors_name_the_fields():
    tiny = registry.load(TINY)
    with pytest.raises(ValueError, match="mesh_data=3"):
        runner.make_run_mesh(tiny.get_config("tiny", mesh_data=3))
    monkey = tiny.get_config("tiny", batch_size=16)
    assert runner.make_run_mesh(monkey).devices.size == jax.device_count()


def test_compute_dtype():
    cornet = get_model("cornet_z")
    assert runner.compute_dtype_model(cornet, "float32") is cornet
    assert runner.compute_dtype_model(cornet, "bfloat16").dtype == jnp.bfloat16
    assert runner.compute_dtype_model(get_model("mlp"), "bfloat16").dtype == jnp.bfloat16

    import flax.linen as nn

    class NoDtype(nn.Module):
        def __call__(self, x):
            return x

    with pytest.raises(ValueError, match="no compute-dtype field"):
        runner.compute_dtype_model(NoDtype(), "bfloat16")


@pytest.mark.slow
def test_an_arms_own_learning_rate_takes_effect_and_config_json_is_nested(tiny, tmp_path):
    """``objectives.simclr.learning_rate`` trains simclr at its rate while gensim keeps ``optim.learning_rate``
    (each arm's losses are those of a bare SGD loop at that rate, and not at the other); the run's
    config.json holds the nested sections and reads back as the same config."""
    config = tiny.get_config("tiny", num_steps=3, **{"objectives.simclr.learning_rate": 0.02})
    assert config.optim.learning_rate == 0.05 and config.objectives.gensim.learning_rate is None
    runner.train_and_evaluate(tiny, config, tmp_path, progress=False)
    data = tiny.prepare(config)

    def bare_losses(arm, lr):
        spec = tiny.arm(arm, config, data)
        state = create_train_state(
            spec.model, optax.sgd(lr, momentum=0.9), jax.random.key(0), variables=spec.init_variables(0)
        )
        objective = spec.objective
        stream = iter(spec.batches(0, HostShard(global_batch=config.batch_size))(0))
        out = []
        for _ in range(3):
            state, m = jax.jit(lambda s, b: train_step(s, b, objective))(state, next(stream))
            out.append(float(m["loss"]))
        return out

    for arm, lr, other in (("gensim", 0.05, 0.02), ("simclr", 0.02, 0.05)):
        run_dir = tmp_path / arm / "run0"
        lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
        lines = [x for x in lines if "loss" in x]
        assert [x["opt/lr"] for x in lines] == pytest.approx([lr] * 3)
        got = [x["loss"] for x in lines]
        np.testing.assert_allclose(got, bare_losses(arm, lr), rtol=2e-5)
        assert abs(got[-1] - bare_losses(arm, other)[-1]) > 1e-4 * abs(got[-1])  # the rate changes the run
        record = json.loads((run_dir / "config.json").read_text())["config"]
        assert record["objectives"]["simclr"]["learning_rate"] == 0.02 and record["optim"]["learning_rate"] == 0.05
    saved = json.loads((tmp_path / "config.json").read_text())["config"]
    assert tiny.config_from_dict({k: v for k, v in saved.items() if k != "experiment"}) == config


# -- what a run says before and while it trains: its size, the data preparation, an estimate ------------


def test_describe_size_multiplies_runs_arms_steps_and_the_batch():
    quads = registry.load("quadrilaterals")
    config = quads.get_config("paper")
    assert config.num_steps is None  # epochs over the rendered training images
    arms, steps = len(config.arms), math.ceil(config.epochs * config.data.num_train_images / config.batch_size)
    want = config.num_runs * arms * steps * config.batch_size
    assert runner.describe_size(quads, config) == (
        f"{config.num_runs} runs x {arms} arms x {steps:,} steps of {config.batch_size} examples ({want:,} examples)"
    )
    one = quads.get_config("cpu_small", num_runs=1, num_steps=2, arms=("gensim",))
    assert (
        runner.describe_size(quads, one)
        == f"1 run x 1 arm x 2 steps of {one.batch_size} examples ({2 * one.batch_size} examples)"
    )
    # an epoch of a dataset that is not loaded yet: the epochs are said instead of the steps
    digits = registry.load("spurious_digits")
    config = digits.get_config("paper")
    if config.num_steps is None:
        assert f"x {config.epochs} epochs in batches of {config.batch_size:,}" in runner.describe_size(digits, config)


def test_format_duration():
    got = [runner.format_duration(s) for s in (0.4, 1.2, 59, 61, 3599, 3600 + 5 * 60, 86400 * 2 + 3600 * 4 + 7)]
    assert got == ["under a second", "1 s", "59 s", "1 min", "60 min", "1 h 05 min", "2 d 4 h"]


def test_duration_estimate_times_steps_two_to_four_of_each_arms_first_run(monkeypatch):
    clock = iter([10.0, 13.0, 100.0, 100.6])  # perf_counter at step 2 and after step 4, for two arms
    monkeypatch.setattr(runner.time, "perf_counter", lambda: next(clock))
    said = []
    est = runner.DurationEstimate(said.append, runs=10, arms=("gensim", "supervised", "simclr"), steps=2235)
    calls = []

    def step(state, batch):
        calls.append(batch)
        return state + 1, {"loss": batch}

    step.lower = "the AOT handle"
    timed = est.wrap("gensim", step)
    assert timed is not step and timed.lower == "the AOT handle"
    state = jnp.zeros(())
    for i in range(6):
        state, metrics = timed(state, i)
        assert metrics == {"loss": i}
    assert calls == list(range(6)) and float(state) == 6.0  # the steps themselves are untouched
    assert est.rates == {"gensim": pytest.approx(1.0)}  # 3 s over steps 2, 3 and 4
    # until the other arms are timed they count at the mean rate: 10 runs x 2235 steps x 3 arms x 1 s
    assert est.total_seconds() == pytest.approx(10 * 2235 * 3 * 1.0)
    assert said == [
        "gensim: 1 s a step, so the 10 run(s) x 3 arm(s) x 2,235 steps take about 18 h 37 min here "
        "(compiles and evaluations not counted; supervised, simclr at the mean rate so far)"
    ]
    timed = est.wrap("supervised", step)
    for i in range(5):
        state, _ = timed(state, i)
    assert est.rates["supervised"] == pytest.approx(0.2)
    assert est.total_seconds() == pytest.approx(10 * 2235 * (1.0 + 0.2 + 0.6))
    assert est.wrap("gensim", step) is step  # the arm's later runs are not timed again
    assert runner.DurationEstimate(None, 1, ("a",), 100).wrap("a", step) is step  # nobody to tell: no sync
    assert runner.DurationEstimate(said.append, 1, ("a",), 2).wrap("a", step) is step  # too short to time


def test_status_line_counts_while_the_block_runs_on_a_terminal(capsys, monkeypatch):
    import threading

    from gensim_jax.training import progress

    monkeypatch.setattr(progress, "is_terminal", lambda stream=None: True)
    with progress.status("[x] preparing the data", True):
        assert any(t.name == "gensim_jax status" for t in threading.enumerate())
    assert "[x] preparing the data: 00:00" in capsys.readouterr().err
    assert not any(t.name == "gensim_jax status" for t in threading.enumerate())  # the ticking thread has ended
    with progress.status("[x] preparing the data", False):
        pass
    assert capsys.readouterr().err == ""
