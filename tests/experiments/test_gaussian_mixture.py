"""The demo experiment end to end, shortened: it must learn the two components."""

import json

from gensim_jax.experiments import gaussian_mixture as exp
from gensim_jax.experiments.cli import main


def test_short_run_separates_components_and_writes_outputs(tmp_path):
    config = exp.get_config("paper", epochs=40, learning_rate=1e-3, num_pairs=20_000, num_bins=100)
    results = exp.train_and_evaluate(config, tmp_path, progress=False)
    r = results["report"]
    assert r["accuracy"] > 0.97
    assert r["spearman_rho"] < -0.9
    assert r["same_ci"][1] < r["different_ci"][0]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["config"]["epochs"] == 40 and saved["config"]["seed"] == 0
    assert (tmp_path / "gaussian_mixture.png").stat().st_size > 10_000
    assert "| test accuracy" in exp.format_table(results)


def test_cli_rejects_unknown_fields(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["gaussian_mixture", "--set", "nonsense=1"])
    assert "KEY=VALUE" in capsys.readouterr().err
