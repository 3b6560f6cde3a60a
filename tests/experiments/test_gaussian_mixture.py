"""The Gaussian-mixture experiment end to end, shortened: it must learn the two components."""

import json

import jax
import numpy as np
import pytest

from gensim_jax.commands.train import main
from gensim_jax.experiments import gaussian_mixture as exp
from gensim_jax.training.experiment import HostShard
from gensim_jax.training.runner import train_and_evaluate
from tests.experiments._reevaluate import assert_exports_reproduce_the_run

EXP = exp.EXPERIMENT


pytestmark = pytest.mark.slow  # end-to-end trainings


def test_short_run_separates_components_and_writes_outputs(tmp_path):
    config = EXP.get_config(
        "paper", epochs=40, **{"optim.learning_rate": 1e-3, "eval.num_pairs": 20_000, "eval.num_bins": 100}
    )
    results = train_and_evaluate(EXP, config, tmp_path, progress=False)
    r = results["report"]
    assert r["accuracy"] > 0.97
    assert r["spearman_rho"] < -0.9
    assert r["same_ci"][1] < r["different_ci"][0]
    # the paper's "different" pairs (independent parameters) mix in same-component pairs: their mean
    # distance lies between the same-component and the different-component means
    assert r["mean_same"] < r["mean_different"] < r["mean_different_component"]
    assert r["distance_ratio"] == pytest.approx(r["mean_different"] / r["mean_same"])
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["config"]["epochs"] == 40 and saved["config"]["seed"] == 0
    assert saved["num_steps"] == 40 * 39
    lines = [json.loads(s) for s in (tmp_path / "gensim" / "run0" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in lines if "loss" in m] == [1] + [
        39 * (e + 1) for e in range(40)
    ]  # the first step, one line per epoch
    assert (tmp_path / "gensim" / "run0" / "export" / "model.json").is_file()
    assert (tmp_path / "gaussian_mixture.png").stat().st_size > 10_000
    table = exp.format_table(results)
    assert "| test accuracy" in table and "4.84 / 1.64" in table and "different components" in table
    assert_exports_reproduce_the_run(tmp_path, results, ["gensim"])


def test_batches_visit_every_epochs_permutation_in_order_and_resume():
    config = EXP.get_config("paper", batch_size=32, epochs=3, **{"data.num_triplets": 100})
    trip = exp.training_triplets(config, seed=5)
    steps = EXP.num_steps(config, None)
    assert steps == 9  # 3 epochs x 100 // 32
    batches = list(exp.make_batches(trip, config, 5, steps, HostShard(global_batch=32))(0))
    assert len(batches) == steps
    keys = jax.random.split(exp.run_keys(5)[2], 3)
    for epoch in range(3):
        perm = np.asarray(jax.random.permutation(keys[epoch], 100))
        for k in range(3):
            np.testing.assert_array_equal(batches[3 * epoch + k]["anchor"], trip["anchor"][perm[32 * k : 32 * (k + 1)]])
    resumed = list(
        exp.make_batches(trip, config, 5, steps, HostShard(global_batch=32))(4)
    )  # from batch 4: epoch 1, batch 1
    for a, b in zip(resumed, batches[4:]):
        np.testing.assert_array_equal(a["negative"], b["negative"])
    assert len(resumed) == steps - 4


def test_cli_rejects_unknown_fields(capsys):
    with pytest.raises(SystemExit):
        main(["gaussian_mixture", "--set", "nonsense=1"])
    assert "KEY=VALUE" in capsys.readouterr().err


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"batch_size": 20_000}, "batch_size"),
        ({"objectives.gensim.loss_form": "cubic"}, "objectives.gensim.loss_form"),
        ({"optim.learning_rate": 0.0}, "optim.learning_rate"),
        ({"eval.num_pairs": 100}, "eval.num_pairs"),
        ({"model.hidden": 0}, "model.hidden"),
    ],
)
def test_bad_config_names_the_field(overrides, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        EXP.get_config("paper", **overrides)
