"""Tests for gensim_jax/experiments/spurious_digits.py: config validation, the lambda arms, a tiny run + eval driver."""

import dataclasses
import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import stats

from gensim_jax.data import spurious_digits as data
from gensim_jax.evaluation.spurious_digits import initial_losses
from gensim_jax.experiments import spurious_digits as sd
from gensim_jax.training import CenterLoss, create_train_state, load_exported
from gensim_jax.training.runner import train_and_evaluate
from tests.experiments._reevaluate import assert_exports_reproduce_the_run

EXP = sd.EXPERIMENT


pytestmark = pytest.mark.slow  # end-to-end trainings


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"lambdas": (0.0, -1.0)}, "lambdas"),
        ({"lambdas": ()}, "lambdas"),
        ({"lambdas": (0.5, 0.5)}, "lambdas"),
        ({"num_runs": 0}, "num_runs"),
        ({"data.source": "mnist"}, "data.source"),
        ({"data.ood": "rotated"}, "data.ood"),
        ({"data.per_class": 0}, "data.per_class"),
        ({"data.overlap": 1.0}, "data.overlap"),
        ({"data.num_backgrounds": 10}, "data.num_backgrounds"),
        ({"batch_size": 5000}, "batch_size"),
        ({"epochs": 0.0}, "epochs"),
        ({"optim.learning_rate": 0.0}, "optim.learning_rate"),
        ({"eval.confidence": 1.5}, "eval.confidence"),
        ({"model.name": "resnet18"}, "model.name"),
        ({"objectives.center.sim_reduction": "MSE"}, "objectives.center.sim_reduction"),
        ({"objectives.center.ce_weight": -1.0}, "objectives.center.ce_weight"),
        ({"eval.centre_images": 5}, "eval.centre_images"),
        ({"bogus": 1}, "bogus"),
        ({"data.data": "tfds"}, "data.data"),
    ],
)
def test_get_config_names_the_bad_field(overrides, field):
    with pytest.raises(ValueError, match=re.escape(field)):
        EXP.get_config("cpu_small", **overrides)


def test_configs():
    paper = EXP.get_config("paper")
    assert paper.lambdas == (0.0, 0.25, 0.5, 0.75, 10.0, 100.0) and paper.num_runs == 5 and paper.epochs == 10
    assert paper.model.name == "lenet5" and paper.data.source == "tfds" and paper.optim.optimizer == "adam"
    assert (paper.optim.learning_rate, paper.batch_size) == (1e-3, 64)
    small = EXP.get_config("cpu_small", lambdas=[0, 10])
    assert small.lambdas == (0, 10) and small.data.source == "synthetic"
    assert EXP.arms(small) == ("lambda_0", "lambda_10")
    assert EXP.arms(paper) == ("lambda_0", "lambda_0.25", "lambda_0.5", "lambda_0.75", "lambda_10", "lambda_100")

    class Splits:  # the step count needs only the size of the training split
        splits = {"train": range(1000)}

    assert EXP.num_steps(small, Splits()) == 125  # ceil(4 epochs x 1000 / 32)
    with pytest.raises(ValueError, match="unknown config"):
        EXP.get_config("huge")
    with pytest.raises(ValueError, match="lambdas must be distinct"):  # both would be lambda_0.1
        EXP.get_config("cpu_small", lambdas=(0.1, 0.1000001))


def test_data_config_is_the_experiments_data_fields():
    config = EXP.get_config("cpu_small", **{"data.per_class": 3, "data.ood": "unseen"})
    dc = data.data_config(config)
    assert dc is config.data
    assert dc == data.data_config(dataclasses.asdict(config))  # from the object or from config.json
    assert (dc.per_class, dc.ood, dc.source, dc.num_train_images) == (3, "unseen", "synthetic", 1000)
    with pytest.raises(ValueError, match=r"data\.per_class"):
        data.check_data_config(dataclasses.replace(dc, per_class=0))
    with pytest.raises(ValueError, match=r"data\.data"):  # a recorded field the section does not have
        data.data_config({"data": {"data": "tfds"}})


def test_paper_config_without_prepared_tfds_says_how_to_prepare(tmp_path):
    config = EXP.get_config("paper", **{"data.data_dir": str(tmp_path)})
    with pytest.raises(FileNotFoundError, match="tfds build mnist cifar10") as err:
        data.load_arrays(config.data)
    assert str(tmp_path) in str(err.value) and "download" in str(err.value)


def test_arm_objectives_equal_center_loss_and_share_one_compilation():
    # a small classifier keeps this cheap; the objective only needs "logits" and "embedding"
    from gensim_jax.models import get_model

    model = get_model("mlp", in_features=6, num_classes=10)
    state = create_train_state(model, optax.adam(1e-3), 0)
    rng = np.random.default_rng(0)
    batch = {
        "image": jnp.asarray(rng.normal(size=(8, 6)), jnp.float32),
        "label": jnp.asarray(rng.integers(0, 10, 8), jnp.int32),
    }
    key = jax.random.key(0)
    traces = []

    @jax.jit
    def loss(obj, st, b):
        traces.append(1)
        return obj(st, b, key)[0]

    config = EXP.get_config("cpu_small", lambdas=(0.0, 0.75, 100.0))
    objectives = [EXP.arm(arm, config, None).objective for arm in EXP.arms(config)]
    # one tree structure: the runner's step cache serves the whole grid with one jitted step
    assert len({jax.tree.structure(o) for o in objectives}) == 1
    for lam, obj in zip(config.lambdas, objectives):
        ref = CenterLoss(lam=lam, num_classes=10)(state, batch, key)[0]
        np.testing.assert_allclose(loss(obj, state, batch), ref, rtol=2e-5)
    assert len(traces) == 1


def test_tiny_end_to_end_and_eval_driver(tmp_path, capsys):
    from gensim_jax.commands.eval import main as eval_main

    config = EXP.get_config(
        "cpu_small",
        lambdas=(0.0, 10.0),
        num_runs=2,
        num_steps=4,
        batch_size=8,
        log_every=2,
        **{
            "data.num_train_images": 40,
            "data.num_test_images": 20,
            "data.num_backgrounds": 30,
            "data.per_class": 2,
            "eval.evals_per_run": 2,
            "eval.batch_size": 16,
        },
    )
    results = train_and_evaluate(EXP, config, tmp_path, progress=False)
    for name in ("config.json", "results.json", "spurious_digits.png"):
        assert (tmp_path / name).is_file()
    assert json.loads((tmp_path / "results.json").read_text())["summary"] == results["summary"]
    assert set(results["per_run"]) == {"0", "10"}
    for lam, runs in results["per_run"].items():
        assert [r["seed"] for r in runs] == [0, 1]
        for r, run in enumerate(runs):
            run_dir = tmp_path / f"lambda_{lam}" / f"run{r}"
            assert (run_dir / "checkpoints").is_dir()
            _, _, meta = load_exported(run_dir / "export")
            assert meta["lam"] == float(lam) and meta["seed"] == r and meta["model"] == "lenet5"
            assert meta["preprocess"] == "unit" and meta["objective"] == f"lambda_{lam}"
            lines = [json.loads(s) for s in (run_dir / "metrics.jsonl").read_text().splitlines()]
            assert [m["step"] for m in lines if "loss" in m] == [1, 2, 4]  # the first step, log_every=2
            assert len(run["losses"]) == 3  # the logged steps 1, 2 and 4
            # evals_per_run=2 of 4 steps: the periodic evaluation at step 2 and the final one at step 4
            evals = [m for m in lines if "eval/ood_accuracy" in m]
            assert [m["step"] for m in evals] == [2, 4]
            assert (evals[-1]["eval/id_accuracy"], evals[-1]["eval/ood_accuracy"]) == (
                run["id_accuracy"],
                run["ood_accuracy"],
            )
            for k in ("id_accuracy", "ood_accuracy"):
                assert run[k] * 20 == pytest.approx(round(run[k] * 20))  # a count out of 20 test digits
    for row in results["summary"]:
        vals = [r["ood_accuracy"] for r in results["per_run"][f"{row['lambda']:g}"]]
        if np.std(vals) > 0:
            lo, hi = stats.t.interval(0.95, len(vals) - 1, loc=np.mean(vals), scale=stats.sem(vals))
            assert (row["ood_accuracy_low"], row["ood_accuracy_high"]) == pytest.approx((lo, hi))
    table = sd.format_table(results)
    assert "procedural stand-ins" in table and "| 10 | 2 |" in table

    assert_exports_reproduce_the_run(tmp_path, results, ["lambda_0", "lambda_10"], capsys)
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


def test_thesis_mean_config_objective_and_model():
    config = EXP.get_config("thesis_mean")
    center = config.objectives.center
    assert (center.sim_reduction, config.model.torch_init, config.eval.centre_eval, config.num_runs) == (
        "mean",
        True,
        True,
        5,
    )
    assert config.lambdas == sd.LAMBDAS and center.ce_weight == 1.0 and config.data.source == "synthetic"
    arm = EXP.arm("lambda_0.5", config, None)
    obj = arm.objective
    assert (obj.lam, obj.ce_weight, obj.sim_reduction) == (0.5, 1.0, "mean")
    model, name, kwargs = arm.model, arm.model_name, arm.model_kwargs
    assert model.torch_init and name == "lenet5" and kwargs == {"num_classes": 10, "torch_init": True}
    off = EXP.get_config("thesis_mean", lambdas=[1], **{"objectives.center.ce_weight": 0})
    assert EXP.arm("lambda_1", off, None).objective.ce_weight == 0.0 and EXP.arms(off) == ("lambda_1",)
    # the default stays Eq. 11 as written, the runner's default init and CE weight 1
    small = EXP.get_config("cpu_small")
    assert (small.objectives.center, small.model.torch_init, small.eval.centre_eval) == (
        sd.CenterArm("sum", 1.0),
        False,
        False,
    )
    assert EXP.arm("lambda_0", small, None).model_kwargs == {"num_classes": 10}


TINY = {
    "num_runs": 2,
    "data.num_train_images": 40,
    "data.num_test_images": 20,
    "data.num_backgrounds": 30,
    "data.per_class": 2,
    "batch_size": 8,
    "eval.batch_size": 16,
    "log_every": 2,
}


def test_initial_losses_both_forms():
    config = EXP.get_config("thesis_mean", **TINY)
    data_ = EXP.prepare(config)
    rows = initial_losses(sd.EXPERIMENT, config, data_, num_batches=2)
    assert [r["seed"] for r in rows] == [0, 1]
    for r in rows:
        # full batches of 8, 84-d embedding: the mean form is the sum over batch x width
        assert r["l_sim_mean"] == pytest.approx(r["l_sim_sum"] / (8 * 84), rel=1e-5)
        assert 0 < r["l_sim_mean"] < 1e-3 and r["ce"] == pytest.approx(np.log(10), abs=0.1)
    with pytest.raises(ValueError, match="num_batches"):
        initial_losses(sd.EXPERIMENT, config, data_, num_batches=0)


def test_cross_entropy_off_run_never_trains_the_classifier(tmp_path):
    """Thesis Fig. 5 (CE weight 0, lambda 1): the classifier gets no gradient, so it stays at its init."""
    config = EXP.get_config("thesis_mean", lambdas=[1], num_steps=4, **{"objectives.center.ce_weight": 0, **TINY})
    results = train_and_evaluate(EXP, config, tmp_path, progress=False)
    for r, run in enumerate(results["per_run"]["1"]):
        assert {"id_centre_accuracy", "ood_centre_accuracy"} <= set(run)
        _, trained, meta = load_exported(tmp_path / "lambda_1" / f"run{r}" / "export")
        assert meta["model_kwargs"]["torch_init"] is True
        initial = EXP.arm("lambda_1", config, None).init_variables(run["seed"])
        for leaf in ("kernel", "bias"):
            np.testing.assert_array_equal(trained["params"]["classifier"][leaf], initial["params"]["classifier"][leaf])
        assert not np.array_equal(trained["params"]["fc2"]["kernel"], initial["params"]["fc2"]["kernel"])
        lines = [json.loads(s) for s in (tmp_path / "lambda_1" / f"run{r}" / "metrics.jsonl").read_text().splitlines()]
        logged = [m for m in lines if "loss" in m]
        assert all(m["loss"] == pytest.approx(m["l_sim"]) for m in logged)  # loss = 0 * CE + 1 * L_sim
    row = results["summary"][0]
    assert "id_centre_accuracy_mean" in row and "nearest-centre" in sd.format_table(results)
    assert "L_sim mean, CE weight 0, PyTorch init" in sd.format_table(results)
