"""The Geoclidean experiment end to end, tiny: LeNet-5 at 32 x 32, 64 images, 3 steps per objective."""

import json

import jax
import numpy as np
import optax
import pytest

from gensim_jax.commands.train import main
from gensim_jax.data.geoclidean import GeoclideanSource
from gensim_jax.evaluation import geoclidean as ge
from gensim_jax.experiments import geoclidean as exp
from gensim_jax.kernels.trees import gram_log_table
from gensim_jax.preprocessing import normalize_uint8
from gensim_jax.stimuli.geoclidean.concepts import TEST_CONCEPTS, TRAIN_IDS, concept_parse_trees
from gensim_jax.training import create_train_state
from gensim_jax.training.experiment import HostShard
from gensim_jax.training.runner import train_and_evaluate
from gensim_jax.training.step import eval_step
from tests.experiments._reevaluate import assert_exports_reproduce_the_run


def tiny_config(**kw):
    base = {
        "model.name": "lenet5",
        "model.stage_sizes": None,
        "data.image_size": 32,
        "data.num_train_images": 64,
        "batch_size": 8,
        "num_steps": 3,
        "optim.learning_rate": 1e-3,
        "objectives.simclr.projection_dims": (16, 8),
        "eval.batch_size": 35,
        "log_every": 1,
    }
    return exp.EXPERIMENT.get_config("cpu_small", **{**base, **kw})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("geoclidean")
    results = train_and_evaluate(exp.EXPERIMENT, tiny_config(), workdir, progress=False)
    return workdir, results


@pytest.mark.slow
@pytest.mark.parametrize("objective", exp.OBJECTIVES)
def test_each_objective_trains_and_writes_metrics_and_config(run, objective):
    workdir, results = run
    run_dir = workdir / objective / "run0"
    lines = [json.loads(s) for s in (run_dir / "metrics.jsonl").read_text().splitlines()]
    losses = [m["loss"] for m in lines if "loss" in m]
    assert len(losses) == 3 and np.all(np.isfinite(losses))
    assert results["training"][objective][0]["losses"] == losses
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["seed"] == 0 and saved["config"]["arm"] == objective
    assert saved["config"]["data"]["image_size"] == 32
    from gensim_jax.training.export import load_exported

    model, variables, meta = load_exported(run_dir / "export")  # checks shapes against the rebuilt model
    assert meta["objective"] == objective and meta["model"] == "lenet5"
    row = results["summary"]["sampler"][objective]
    for m in ("acc_close", "acc_far", "auc_close", "auc_far"):
        assert 0.0 <= row[m] <= 1.0
    # the few-shot accuracy with a per-task best threshold is at least chance (all "in" or all "out")
    assert row["acc_close"] >= 0.5 and row["acc_far"] >= 0.5


@pytest.mark.slow
def test_results_table_plot_and_top_level_config(run):
    workdir, results = run
    saved = json.loads((workdir / "results.json").read_text())
    assert saved["config"]["num_steps"] == 3 and saved["seed"] == 0
    assert saved["heldout_concepts"] == list(TEST_CONCEPTS)
    assert json.loads((workdir / "config.json").read_text())["config"]["model"]["name"] == "lenet5"
    assert (workdir / "geoclidean.png").stat().st_size > 10_000
    table = exp.format_table(results)
    for name in ("pixels", "initial", *exp.OBJECTIVES):
        assert f"| {name} |" in table


@pytest.mark.slow
def test_gensim_target_in_the_step_is_the_tree_kernel_table_by_program_id():
    config = tiny_config()
    source = GeoclideanSource(64, seed=0, size=32)
    data = exp.Data(source=source, suites={})
    arm = exp.EXPERIMENT.arm("gensim", config, data)
    batch = next(arm.batches(0, HostShard(global_batch=config.batch_size))(0))
    pid = np.asarray(batch["program_id"])

    # each image of the batch is a training image whose stream index fixes its concept (i mod 30)
    flat = np.repeat(source.images[..., None], 3, -1).reshape(64, -1)
    for row, p in zip(batch["image"], pid):
        idx = np.flatnonzero(np.all(flat == row.reshape(-1), axis=1))
        assert len(idx) >= 1 and all(TRAIN_IDS[i % 30] == p for i in idx)

    # independent target: ST log kernel table, unit transform from the training block, explicit loops
    log_k = gram_log_table(concept_parse_trees(), kind="st", lam=1.0)
    train_vals = [log_k[a, b] for a in TRAIN_IDS for b in TRAIN_IDS]
    lo, hi = min(train_vals), max(train_vals)
    expected = np.array([[(log_k[a, b] - lo) / (hi - lo) for b in pid] for a in pid])
    objective = exp.make_objective("gensim", config)
    got = np.asarray(objective.target(jax.device_put(dict(batch))))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    assert expected.min() >= 0 and expected.max() == pytest.approx(1.0)

    # and the loss of the step is mean_{i != j} (cos(z_i, z_j) - T_ij)^2 with that target
    model = arm.model
    state = create_train_state(model, optax.adam(1e-3), jax.random.key(0), variables=arm.init_variables(0))
    x = normalize_uint8(batch["image"])  # the images travel as uint8; the step normalises them alike
    z = np.asarray(model.apply(state.variables, x)["embedding"], np.float64)
    zn = z / np.linalg.norm(z, axis=1, keepdims=True)
    err = (zn @ zn.T - expected) ** 2
    off = ~np.eye(len(pid), dtype=bool)
    metrics = eval_step(state, jax.device_put(dict(batch)), objective)
    assert float(metrics["loss"]) == pytest.approx(err[off].mean(), rel=1e-4)


def test_config_validation_and_cli_registration(capsys):
    with pytest.raises(ValueError, match="arms"):
        exp.EXPERIMENT.get_config("cpu_small", arms=["gensim", "nonsense"])
    with pytest.raises(ValueError, match=r"objectives\.gensim\.target_transform"):
        exp.EXPERIMENT.get_config("cpu_small", **{"objectives.gensim.target_transform": "log"})
    with pytest.raises(ValueError, match=r"data\.benchmark_dir '/nonexistent' is not a directory"):
        exp.EXPERIMENT.get_config("cpu_small", **{"data.benchmark_dir": "/nonexistent"})  # before any rendering
    assert exp.EXPERIMENT.num_steps(exp.EXPERIMENT.get_config("paper"), None) == int(np.ceil(35 * 100_000 / 128))
    with pytest.raises(SystemExit):
        main(["geoclidean", "--config", "cpu_small", "--set", "nonsense=1"])
    assert "KEY=VALUE" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # an experiment-specific field is a config field, not a flag
        main(["geoclidean", "--config", "cpu_small", "--set", "data.benchmark_dir=/nonexistent"])
    assert "data.benchmark_dir '/nonexistent' is not a directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["quadrilaterals", "--set", "data.benchmark_dir=/nonexistent"])
    assert "unknown key 'data.benchmark_dir'" in capsys.readouterr().err


@pytest.mark.slow
def test_official_benchmark_episodes_load_and_evaluate(shared_dir):
    config = tiny_config(**{"data.benchmark_dir": str(shared_dir / "reference" / "geoclidean")})
    episodes = ge.official_episodes(config.data.benchmark_dir, config.data.image_size)
    assert sorted(episodes) == sorted(TEST_CONCEPTS)
    for support, test, kind in episodes.values():
        assert support.shape == (5, 32, 32, 3) and test.shape == (15, 32, 32, 3)
        assert sorted(set(kind.tolist())) == ["close", "far", "in"]
    row = ge.evaluate_embedding(lambda x: np.asarray(x).reshape(len(x), -1), episodes, "per_concept")
    # independent: the per-concept best-threshold accuracy of raw pixels, by brute force over cuts
    accs = []
    for support, test, kind in episodes.values():
        s = np.abs(test.reshape(15, -1) - support.reshape(5, -1).mean(0)).mean(1)
        m = (kind == "in") | (kind == "close")
        y, sc = kind[m] == "in", s[m]
        accs.append(max(np.mean((sc <= t) == y) for t in np.concatenate([sc, [-np.inf]])))
    assert row["acc_close"] == pytest.approx(np.mean(accs))


def test_source_serves_the_training_stream_as_rgb():
    from gensim_jax.stimuli.geoclidean.dataset import example

    source = GeoclideanSource(12, seed=3, size=32)
    got = source.examples(np.arange(12))
    for i in range(12):
        ref = example(i, 3, concepts="train", size=32)
        assert got["program_id"][i] == ref["program_id"] == TRAIN_IDS[i % 30]
        for c in range(3):
            np.testing.assert_array_equal(got["image"][i, ..., c], ref["image"])


def _st_count_table(trees):
    """Independent ST kernel with lam = 1: the number of pairs of identical complete subtrees rooted at
    internal nodes (Moschitti 2006), from a count of each tree's subtrees by their bracket strings."""
    from collections import Counter

    def subtrees(t):
        out = Counter()

        def walk(n):
            if n.children:
                out[n.to_bracket()] += 1
                for c in n.children:
                    walk(c)

        walk(t)
        return out

    counts = [subtrees(t) for t in trees]
    return np.array([[sum(a[s] * b[s] for s in a.keys() & b.keys()) for b in counts] for a in counts], float)


@pytest.mark.parametrize(("normalize", "transform"), [(False, "raw"), (True, "raw"), (False, "unit"), (True, "unit")])
def test_tree_kernel_normalisation_and_target_map_against_a_subtree_count(normalize, transform):
    config = tiny_config(
        **{"objectives.gensim.tree_kernel_normalize": normalize, "objectives.gensim.target_transform": transform}
    )
    k = _st_count_table(concept_parse_trees())
    log_k = np.log(k / np.sqrt(np.outer(np.diag(k), np.diag(k)))) if normalize else np.log(k)
    if transform == "unit":
        block = log_k[np.ix_(TRAIN_IDS, TRAIN_IDS)]
        log_k = (log_k - block.min()) / (block.max() - block.min())
    got = np.asarray(exp.gensim_target(config).table)
    ids = np.asarray(TRAIN_IDS)
    np.testing.assert_allclose(got[np.ix_(ids, ids)], log_k[np.ix_(ids, ids)], rtol=1e-5, atol=1e-5)
    if not normalize and transform == "raw":
        assert got[np.ix_(ids, ids)].min() > 2.9  # log counts: every pair shares subtrees


def test_all_threshold_rules_key_the_results_by_suite_and_rule(tmp_path):
    config = tiny_config(
        **{"eval.threshold": "all", "data.benchmark_dir": str(tmp_path)}
    )  # a directory: validated up front
    assert exp.eval_rules(config) == ("per_concept", "global", "benchmark")
    assert exp.result_keys(config, ["sampler", "official"]) == [
        "sampler/per_concept",
        "sampler/global",
        "sampler/benchmark",
        "official/per_concept",
        "official/global",
        "official/benchmark",
    ]
    assert exp.result_keys(tiny_config(), ["sampler"]) == ["sampler"]
    with pytest.raises(ValueError, match=r"eval\.threshold"):
        tiny_config(**{"eval.threshold": "local"})
    # the evaluation of one suite under every rule: the rules' own fewshot_evaluate on one embedding
    rng = np.random.default_rng(0)
    episodes = {
        n: (rng.random((5, 8, 8, 3)), rng.random((15, 8, 8, 3)), np.array(["in"] * 5 + ["close"] * 5 + ["far"] * 5))
        for n in ("a", "b", "c")
    }
    data = exp.Data(source=None, suites={"sampler": episodes})
    flat = lambda x: np.asarray(x).reshape(len(x), -1)  # noqa: E731
    got = exp.EXPERIMENT._evaluate(flat, config, data)
    assert sorted(got) == ["sampler/benchmark", "sampler/global", "sampler/per_concept"]
    for rule in exp.eval_rules(config):
        assert got[f"sampler/{rule}"] == ge.evaluate_embedding(flat, episodes, rule)


@pytest.mark.slow
def test_reevaluated_exports_reproduce_the_runs_evaluation(run, capsys):
    workdir, results = run
    assert_exports_reproduce_the_run(workdir, results, results["config"]["arms"], capsys)
