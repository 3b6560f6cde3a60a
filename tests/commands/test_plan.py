"""``gensim-jax plan EXPERIMENT``: the runner's own step of a declared experiment, compiled for a TPU topology."""

import json

import jax
import pytest

from gensim_jax import experiments as registry
from gensim_jax.commands.main import main
from gensim_jax.training import runner


@pytest.mark.slow
def test_plan_compiles_the_runners_step_of_an_experiment(capsys):
    assert main(["plan", "gaussian_mixture", "--topology", "v5e:2x2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["experiment"] == "gaussian_mixture" and report["num_devices"] == 4
    assert report["global_batch"] == 256 and report["per_device_batch"] == 64 and report["fits"] is True
    # the abstract state is the runner's: its parameter bytes are those of the 2-32-1 perceptron (129 float32)
    fn, (state, batch, objective) = runner.abstract_step_inputs(
        registry.load("gaussian_mixture"), registry.load("gaussian_mixture").get_config()
    )
    n = sum(x.size for x in jax.tree.leaves(state.params))
    assert n == 2 * 32 + 32 + 32 * 1 + 1
    assert set(batch) >= {"anchor", "positive", "negative"} and batch["anchor"].shape == (256, 2)


@pytest.mark.slow
def test_plan_errors_are_one_line(capsys):
    assert main(["plan", "gaussian_mixture", "--topology", "v5e:2x2", "--batch-size", "255"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "255" in err
    assert main(["plan", "gaussian_mixture", "--topology", "v9:2x2"]) == 2
    assert "unknown chip 'v9'" in capsys.readouterr().err
    assert (
        main(["plan", "quadrilaterals", "--config", "cpu_small", "--objective", "nope", "--topology", "v5e:2x2"]) == 2
    )
    assert "not an arm" in capsys.readouterr().err
    assert main(["plan", "quadrilaterals", "--set", "data.imag_size=3", "--topology", "v5e:2x2"]) == 2
    assert "unknown key 'data.imag_size'" in capsys.readouterr().err
