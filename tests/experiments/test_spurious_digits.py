"""Tests for train/spurious_digits.py: config validation, the grid objective, a tiny end-to-end run + eval driver."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import stats

from gensim_jax.training import CenterLoss, create_train_state, load_exported
from gensim_jax.experiments import spurious_digits as sd


@pytest.mark.parametrize("overrides, field", [
    (dict(lambdas=(0.0, -1.0)), "lambdas"),
    (dict(lambdas=()), "lambdas"),
    (dict(lambdas=(0.5, 0.5)), "lambdas"),
    (dict(num_runs=0), "num_runs"),
    (dict(data="mnist"), "data"),
    (dict(ood="rotated"), "ood"),
    (dict(per_class=0), "per_class"),
    (dict(overlap=1.0), "overlap"),
    (dict(num_backgrounds=10), "num_backgrounds"),
    (dict(batch_size=5000), "batch_size"),
    (dict(epochs=0.0), "epochs"),
    (dict(learning_rate=0.0), "learning_rate"),
    (dict(confidence=1.5), "confidence"),
    (dict(model="resnet18"), "model"),
    (dict(bogus=1), "bogus"),
])
def test_get_config_names_the_bad_field(overrides, field):
    with pytest.raises(ValueError, match=field):
        sd.get_config("cpu_small", **overrides)


def test_configs():
    paper = sd.get_config("paper")
    assert paper.lambdas == (0.0, 0.25, 0.5, 0.75, 10.0, 100.0) and paper.num_runs == 5 and paper.epochs == 10
    assert paper.model == "lenet5" and paper.data == "tfds"
    small = sd.get_config("cpu_small", lambdas=[0, 10])
    assert small.lambdas == (0, 10) and small.data == "synthetic"
    assert sd.num_steps(small, 1000) == 125
    with pytest.raises(ValueError, match="unknown config"):
        sd.get_config("huge")


def test_paper_config_without_prepared_tfds_says_how_to_prepare(tmp_path):
    config = sd.get_config("paper", data_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="tfds build mnist cifar10") as err:
        sd.load_arrays(config)
    assert str(tmp_path) in str(err.value) and "download" in str(err.value)


def test_grid_objective_equals_center_loss_and_shares_one_compilation():
    # a small classifier keeps this cheap; the objective only needs "logits" and "embedding"
    from gensim_jax.models import get_model

    model = get_model("mlp", in_features=6, num_classes=10)
    state = create_train_state(model, optax.adam(1e-3), 0)
    rng = np.random.default_rng(0)
    batch = {"image": jnp.asarray(rng.normal(size=(8, 6)), jnp.float32),
             "label": jnp.asarray(rng.integers(0, 10, 8), jnp.int32)}
    key = jax.random.key(0)
    traces = []

    @jax.jit
    def loss(obj, st, b):
        traces.append(1)
        return obj(st, b, key)[0]

    for lam in (0.0, 0.75, 100.0):
        ref = CenterLoss(lam=lam, num_classes=10)(state, batch, key)[0]
        got = loss(sd.GridCenterLoss(lam=lam, num_classes=10), state, batch)
        np.testing.assert_allclose(got, ref, rtol=2e-5)
    assert len(traces) == 1


def test_tiny_end_to_end_and_eval_driver(tmp_path, capsys):
    from gensim_jax.evaluation.cli import main as eval_main

    config = sd.get_config("cpu_small", lambdas=(0.0, 10.0), num_runs=2, num_train_images=40, num_test_images=20,
                           num_backgrounds=30, per_class=2, num_steps=3, batch_size=8, evals_per_run=1,
                           eval_batch_size=16)
    results = sd.train_and_evaluate(config, tmp_path, progress=False)
    for name in ("config.json", "results.json", "spurious_digits.png"):
        assert (tmp_path / name).is_file()
    assert json.loads((tmp_path / "results.json").read_text())["summary"] == results["summary"]
    assert set(results["per_run"]) == {"0", "10"}
    for lam, runs in results["per_run"].items():
        assert [r["seed"] for r in runs] == [0, 1]
        for r, run in enumerate(runs):
            run_dir = tmp_path / f"lambda_{lam}" / f"run{r}"
            assert (run_dir / "metrics.jsonl").is_file() and (run_dir / "checkpoints").is_dir()
            _, _, meta = load_exported(run_dir / "export")
            assert meta["lam"] == float(lam) and meta["seed"] == r and meta["model"] == "lenet5"
            assert len(run["losses"]) == 3 and len(run["curve"]) == 1
            for k in ("id_accuracy", "ood_accuracy"):
                assert run[k] * 20 == pytest.approx(round(run[k] * 20))  # a count out of 20 test digits
    for row in results["summary"]:
        vals = [r["ood_accuracy"] for r in results["per_run"][f"{row['lambda']:g}"]]
        if np.std(vals) > 0:
            lo, hi = stats.t.interval(0.95, len(vals) - 1, loc=np.mean(vals), scale=stats.sem(vals))
            assert (row["ood_accuracy_low"], row["ood_accuracy_high"]) == pytest.approx((lo, hi))
    table = sd.format_table(results)
    assert "procedural stand-ins" in table and "| 10 | 2 |" in table

    # `python -m eval spurious_digits` re-evaluates the exports and agrees with the training-time evaluation
    assert eval_main(["spurious_digits", "--workdir", str(tmp_path)]) == 0
    capsys.readouterr()
    evaluated = json.loads((tmp_path / "spurious_digits.json").read_text())
    assert (tmp_path / "spurious_digits.png").is_file()
    for lam, runs in results["per_run"].items():
        for a, b in zip(runs, evaluated["per_run"][lam]):
            assert (a["id_accuracy"], a["ood_accuracy"]) == (b["id_accuracy"], b["ood_accuracy"])
    with pytest.raises(SystemExit):
        eval_main(["spurious_digits", "--workdir", str(tmp_path / "nowhere")])
