"""The ImageNet-hierarchy experiment: Eq. 4 target, tfds mock-data batches, a tiny end-to-end run."""

import json
import math
import re

import jax
import numpy as np
import pytest

from gensim_jax.data import hierarchy as hierarchy_data
from gensim_jax.data.hierarchy import HierarchySource
from gensim_jax.evaluation.embed import embed_images
from gensim_jax.experiments import imagenet_hierarchy as exp
from gensim_jax.kernels.hierarchy import imagenet1k_hierarchy
from gensim_jax.preprocessing import normalize_uint8
from gensim_jax.stimuli.hierarchy import balanced_tree, hierarchy_images
from gensim_jax.training import load_exported
from gensim_jax.training.experiment import HostShard
from gensim_jax.training.runner import train_and_evaluate
from tests._lazy import LazyModule
from tests.experiments._reevaluate import assert_exports_reproduce_the_run

imagenet = LazyModule("gensim_jax.data.imagenet")  # TensorFlow, imported by the first test that needs it


def tiny_config(**kw):
    base = {
        "model.name": "lenet5",
        "model.stage_sizes": None,
        "data.image_size": 32,
        "data.branching": (2, 2),
        "data.train_per_leaf": 4,
        "batch_size": 8,
        "num_steps": 2,
        "objectives.simclr.projection_dims": (16, 8),
        "eval.per_leaf": 3,
        "eval.batch_size": 12,
        "eval.pixel_size": 8,
        "log_every": 1,
    }
    return exp.EXPERIMENT.get_config("cpu_small", **{**base, **kw})


# ------------------------------------------------------------------------------------------------
# Eq. 4 by hand: walk the parent list, count children, sum the products of 1/p along the shared path
# ------------------------------------------------------------------------------------------------


def _root_path(parents, node):
    path = [int(node)]
    while parents[path[-1]] >= 0:
        path.append(int(parents[path[-1]]))
    return path[::-1]


def _eq4(parents, a, b):
    """s(a, b) = (1/K) sum_{k=1..K} prod_{j<=k} 1/p_j, p_j = 1 / (children of the j-th node's parent)."""
    children = {}
    for p in parents:
        if p >= 0:
            children[int(p)] = children.get(int(p), 0) + 1
    pa, pb = _root_path(parents, a), _root_path(parents, b)
    k = 0
    while k + 1 < min(len(pa), len(pb)) and pa[k + 1] == pb[k + 1]:
        k += 1
    if k == 0:
        return 1.0
    total, prod = 0.0, 1.0
    for j in range(1, k + 1):
        prod *= children[pa[j - 1]]
        total += prod
    return total / k


def test_gensim_target_on_the_synthetic_tree_is_eq4_unit_transformed():
    config = exp.EXPERIMENT.get_config("cpu_small")
    tree = balanced_tree((2, 3, 3))
    parents = tree.parents.tolist()
    leaves = tree.leaves.tolist()
    # 2-3-3 tree: K = 0, 1, 2, 3 give s = 1, 2, (2 + 6) / 2, (2 + 6 + 18) / 3
    assert _eq4(parents, leaves[0], leaves[0]) == pytest.approx(26 / 3)
    hi = math.log(max(_eq4(parents, c, c) for c in leaves))
    labels = np.array([0, 1, 3, 9, 17, 0, 8])
    got = np.asarray(exp.make_objective("gensim", config).target({"label": jax.numpy.asarray(labels)}))
    expected = [[math.log(_eq4(parents, leaves[a], leaves[b])) / hi for b in labels] for a in labels]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    # the paper's two literal targets: log s (Sec. 3.3, "raw") and s (Appendix N, "exp")
    for transform, f in (("raw", math.log), ("exp", lambda v: v)):
        cfg = exp.EXPERIMENT.get_config("cpu_small", **{"objectives.gensim.target_transform": transform})
        got = np.asarray(exp.make_objective("gensim", cfg).target({"label": jax.numpy.asarray(labels)}))
        expected = [[f(_eq4(parents, leaves[a], leaves[b])) for b in labels] for a in labels]
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_gensim_target_on_imagenet_is_eq4_of_the_wordnet_tree():
    config = exp.EXPERIMENT.get_config("paper")
    h = imagenet1k_hierarchy()
    parents = h.tree.parents.tolist()
    log_max = max(math.log(_eq4(parents, c, c)) for c in h.class_nodes.tolist())
    labels = np.array([0, 1, 151, 207, 281, 285, 404, 999])  # tench, goldfish, dogs, cats, airliner, ...
    target = exp.make_objective("gensim", config).target({"label": jax.numpy.asarray(labels)})
    expected = [[math.log(_eq4(parents, a, b)) / log_max for b in labels] for a in labels]
    np.testing.assert_allclose(np.asarray(target), expected, rtol=1e-5, atol=1e-6)
    raw = exp.EXPERIMENT.get_config("paper", **{"objectives.gensim.target_transform": "raw"})
    np.testing.assert_allclose(
        np.asarray(exp.make_objective("gensim", raw).target({"label": labels[:3]})),
        [[math.log(_eq4(parents, a, b)) for b in labels[:3]] for a in labels[:3]],
        rtol=1e-5,
    )


def test_synthetic_source_is_the_stimuli_set_of_the_config_tree():
    # the generator itself is tested in tests/stimuli/test_hierarchy.py
    config = exp.EXPERIMENT.get_config("cpu_small")
    tree, nodes = hierarchy_data.class_tree(config.data)
    np.testing.assert_array_equal(tree.parents, balanced_tree((2, 3, 3)).parents)
    np.testing.assert_array_equal(nodes, tree.leaves)
    src = HierarchySource(
        tree, nodes, 2, 32, attribute_seed=config.seed, image_seed=1, noise=config.data.synthetic_noise
    )
    images, labels = hierarchy_images(
        tree, nodes, 2, 32, attribute_seed=config.seed, image_seed=1, noise=config.data.synthetic_noise
    )
    np.testing.assert_array_equal(src.images, images)
    np.testing.assert_array_equal(src.label, labels)


def test_next_other_class_against_a_scan():
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.integers(0, 3, rng.integers(1, 9))
        got = imagenet.next_other_class(y)
        for i in range(len(y)):
            later = [j % len(y) for j in range(i + 1, i + len(y)) if y[j % len(y)] != y[i]]
            assert got[i] == (later[0] if later else -1)


# ------------------------------------------------------------------------------------------------
# Configs
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [
        ("arms", ("gensim", "supervised")),
        ("arms", ()),
        ("objectives.gensim.target_transform", "log"),
        ("data.dataset", "cifar10"),
        ("num_runs", 0),
        ("data.image_size", 16),
        ("batch_size", 1),
        ("batch_size", 10_000),
        ("data.branching", ()),
        ("data.branching", (2, 0)),
        ("eval.per_leaf", 2),
        ("eval.folds", 1),
        ("eval.pixel_size", 64),
        ("objectives.simclr.grayscale_p", 1.5),
        ("data.train_per_leaf", 1),
        ("num_steps", -1),
        ("objectives.class_triplet.learning_rate", -1.0),
    ],
)
def test_bad_config_raises_naming_the_field(field, value):
    with pytest.raises(ValueError, match=re.escape(field)):
        exp.EXPERIMENT.get_config("cpu_small", **{field: value})


def test_config_names_and_paper_values():
    with pytest.raises(ValueError, match="unknown config"):
        exp.EXPERIMENT.get_config("large")
    with pytest.raises(ValueError, match="no_such_field"):
        exp.EXPERIMENT.get_config("cpu_small", no_such_field=1)
    with pytest.raises(ValueError, match=r"'eval\.fold'.*did you mean eval\.folds"):
        exp.EXPERIMENT.get_config("cpu_small", **{"eval.fold": 2})
    paper = exp.EXPERIMENT.get_config("paper")
    p = (paper.model.name, paper.data.image_size, paper.batch_size, paper.optim.learning_rate, paper.epochs)
    assert (*p, paper.num_runs) == (
        "resnet50",
        224,
        256,
        1e-3,
        65.0,
        5,
    )
    assert exp.EXPERIMENT.num_steps(paper, None) == math.ceil(65 * 1_281_167 / 256)
    assert exp.EXPERIMENT.get_config("cpu_small", **{"data.branching": [2, 2]}).data.branching == (2, 2)


def test_paper_config_without_imagenet_fails_with_preparation_steps(tmp_path):
    config = exp.EXPERIMENT.get_config("paper", **{"data.data_dir": str(tmp_path)})
    with pytest.raises(FileNotFoundError, match="prepare_imagenet"):
        train_and_evaluate(exp.EXPERIMENT, config, tmp_path / "work", progress=False)
    # the runner writes workdir/config.json before the experiment's data are prepared; nothing else
    assert [p.name for p in (tmp_path / "work").iterdir()] == ["config.json"]
    assert issubclass(hierarchy_data.ImageNetNotPrepared, ValueError)  # the CLI prints it as one line


# ------------------------------------------------------------------------------------------------
# The paper data path on tfds mock data
# ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_imagenet_batches_on_tfds_mock_data():
    tfds = pytest.importorskip("tensorflow_datasets")
    config = exp.EXPERIMENT.get_config(
        "paper",
        batch_size=2,
        **{"data.image_size": 32, "data.shuffle_buffer": 4, "eval.num_images": 6, "eval.batch_size": 2},
    )
    with tfds.testing.mock_data(num_examples=4):
        shard = HostShard(global_batch=2)
        none = exp.Data(None, None, None)  # ImageNet batches read the records, not a prepared source
        g, s, t = (
            next(exp.EXPERIMENT.arm(a, config, none).batches(0, shard)(0))
            for a in ("gensim", "simclr", "class_triplet")
        )
        images, labels = exp.heldout_images(config)
    assert g["image"].shape == (2, 32, 32, 3) and g["label"].shape == (2,) and g["mask"].all()
    target = np.asarray(exp.make_objective("gensim", config).target(g))
    assert target.shape == (2, 2) and np.all((target >= 0) & (target <= 1))
    assert s["view1"].shape == s["view2"].shape == (2, 32, 32, 3)
    assert not np.allclose(s["view1"], s["view2"])
    for k in ("anchor", "positive", "negative"):
        assert t[k].shape == (2, 32, 32, 3)
    lab = t["label"]
    np.testing.assert_array_equal(lab[:, 0], lab[:, 1])
    assert np.all(lab[t["mask"], 2] != lab[t["mask"], 0]) and t["mask"].any()
    assert images.shape == (4, 32, 32, 3) and labels.shape == (4,) and images.dtype == np.float16  # the mock split


# ------------------------------------------------------------------------------------------------
# A tiny end-to-end run
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("imagenet_hierarchy")
    results = train_and_evaluate(exp.EXPERIMENT, tiny_config(), workdir, progress=False)
    return workdir, results


@pytest.mark.slow
@pytest.mark.parametrize("objective", exp.OBJECTIVES)
def test_each_objective_trains_exports_and_records_its_seed(run, objective):
    workdir, results = run
    run_dir = workdir / objective / "run0"
    lines = [json.loads(s) for s in (run_dir / "metrics.jsonl").read_text().splitlines()]
    losses = [m["loss"] for m in lines if "loss" in m]
    assert len(losses) == 2 and np.all(np.isfinite(losses))
    assert results["training"][objective][0]["losses"] == losses
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["seed"] == 0 and saved["config"]["arm"] == objective
    model, variables, meta = load_exported(run_dir / "export")
    assert meta["model"] == "lenet5" and meta["image_size"] == 32 and meta["preprocess"] == "imagenet"
    assert meta["objective"] == objective and meta["seed"] == 0
    # the exported encoder reproduces the embedding the evaluation decoded: re-decode and compare
    images, labels = exp.heldout_images(tiny_config())
    emb = embed_images(model, variables, normalize_uint8(images), batch_size=12)
    again = exp.evaluate_embedding(emb, labels, tiny_config())
    assert again == results["per_run"][objective][0]


@pytest.mark.slow
def test_results_levels_chance_and_scores_are_consistent(run):
    workdir, results = run
    saved = json.loads((workdir / "results.json").read_text())
    assert saved == json.loads(json.dumps(results))
    assert (
        saved["seed"] == 0 and json.loads((workdir / "config.json").read_text())["config"]["model"]["name"] == "lenet5"
    )
    assert (workdir / "imagenet_hierarchy.png").stat().st_size > 10_000
    assert set(saved["summary"]) == {"pixels", "initial", *exp.OBJECTIVES}

    # independent per-level chance from the held-out labels and the tree (2 x 2: levels 1 and 2)
    tree = balanced_tree((2, 2))
    _, labels = exp.heldout_images(tiny_config())
    assert saved["eval_label_counts"] == np.bincount(labels).tolist() == [3, 3, 3, 3]
    paths = [_root_path(tree.parents, tree.leaves[c]) for c in labels]
    for name, s in saved["summary"].items():
        assert s["levels"] == [1, 2]
        for i, level in enumerate(s["levels"]):
            anc = [p[level] for p in paths]
            counts = np.unique(anc, return_counts=True)[1]
            assert s["num_labels"][i] == len(counts)
            assert s["chance_uniform"][i] == pytest.approx(1 / len(counts))
            assert s["chance_majority"][i] == pytest.approx(counts.max() / counts.sum())
        run0 = saved["per_run"][name][0]
        acc = [max(lv["accuracy"], 0.5 / len(labels)) for lv in run0["levels"]]
        for lv in run0["levels"]:
            assert 0 <= lv["accuracy"] <= 1 and lv["accuracy"] == pytest.approx(np.mean(lv["fold_accuracies"]))
        assert run0["score_uniform"] == pytest.approx(
            sum(math.log(a / lv["chance_uniform"]) for a, lv in zip(acc, run0["levels"]))
        )
        assert run0["score_majority"] == pytest.approx(
            sum(math.log(a / lv["chance_majority"]) for a, lv in zip(acc, run0["levels"]))
        )
        assert s["accuracy"] == [lv["accuracy"] for lv in run0["levels"]] and s["runs"] == 1
    table = exp.format_table(results)
    for name in ("pixels", "initial", *exp.OBJECTIVES):
        assert f"| {name} | 1 |" in table


def test_pixel_embedding_is_the_area_average_of_the_normalised_image():
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (3, 6, 6, 3), dtype=np.uint8)
    got = exp.pixel_embedding(images, 2)
    x = (images / 255.0 - np.array([0.485, 0.456, 0.406])) / np.array([0.229, 0.224, 0.225])  # ImageNet statistics
    expected = np.stack(
        [
            [
                [x[n, 3 * i : 3 * i + 3, 3 * j : 3 * j + 3, c].mean() for c in range(3)]
                for i in range(2)
                for j in range(2)
            ]
            for n in range(3)
        ]
    ).reshape(3, -1)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(exp.pixel_embedding(images, 6), x.reshape(3, -1), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_imagenet_batches_read_this_process_rows_as_uint8():
    # process 1 of 2 decodes only its own rows (1 of the global 2) of its shard of the records, as uint8
    tfds = pytest.importorskip("tensorflow_datasets")
    config = exp.EXPERIMENT.get_config("paper", batch_size=2, **{"data.image_size": 32, "data.shuffle_buffer": 4})
    with tfds.testing.mock_data(num_examples=4):
        g = next(exp.EXPERIMENT.arm("gensim", config, exp.Data(None, None, None)).batches(0, HostShard(1, 2, 2))(0))
    assert g["image"].shape == (1, 32, 32, 3) and g["image"].dtype == np.uint8 and g["label"].shape == (1,)


def test_initial_baseline_is_the_untrained_encoder_at_every_run_seed():
    config = tiny_config(num_runs=2, seed=3, arms=("gensim",))
    data = exp.EXPERIMENT.prepare(config)
    got = exp.EXPERIMENT.baselines(config, data)
    assert len(got["pixels"]) == 1 and len(got["initial"]) == 2
    arm = exp.EXPERIMENT.arm("gensim", config, data)
    model = arm.model
    for r, seed in enumerate((3, 4)):
        variables = arm.init_variables(seed)
        emb = embed_images(model, variables, normalize_uint8(data.images), batch_size=12)
        assert got["initial"][r] == exp.evaluate_embedding(emb, data.labels, config)
    assert got["initial"][0]["levels"] != got["initial"][1]["levels"]  # two initialisations, two embeddings


@pytest.mark.slow
def test_reevaluated_exports_reproduce_the_runs_evaluation(run, capsys):
    workdir, results = run
    assert_exports_reproduce_the_run(workdir, results, results["config"]["arms"], capsys)
