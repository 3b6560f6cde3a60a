"""Smoke test of bench/step/training_step.py: one tiny step comparison, and the pairing of the models.

No timing is asserted.  The independent checks: the PyTorch reference and the Flax model of each
benchmarked case have the same number of parameters (counted separately in each framework), both
frameworks' first losses are finite cross entropies near ``log(1000)`` for random logits, and the
result line has the suite's format.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests._optional import importorskip

torch = importorskip("torch", "torch")  # the benchmark reference is a PyTorch program

from bench.step import training_step  # noqa: E402
from tests.reference.torch_models import n_params  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("name", training_step.MODELS)
@pytest.mark.parametrize("quick", [False, True])
def test_reference_and_ours_have_the_same_parameter_count(name, quick):
    model = training_step._flax_model(name, quick)
    shapes = jax.eval_shape(model.init, jax.random.key(0), jnp.zeros((1, 64, 64, 3)))
    ours = sum(int(np.prod(p.shape)) for p in jax.tree.leaves(shapes["params"]))
    assert ours == n_params(training_step._torch_model(name, quick))


@pytest.mark.slow
def test_quick_case_line():
    line = training_step.case("resnet50", 32, batch=2, repeats=1, quick=True, torch_threads=(1,))
    for key in (
        "bench",
        "params",
        "ours_s",
        "reference",
        "reference_s",
        "ratio",
        "target",
        "met",
        "compile_s",
        "images_per_s",
        "reference_images_per_s",
        "reference_first_s",
    ):
        assert key in line, key
    assert line["bench"] == "train_step_resnet50" and line["params"]["batch"] == 2
    assert line["ours_s"] > 0 and line["reference_s"] > 0
    assert math.isclose(line["ratio"], line["ours_s"] / line["reference_s"], rel_tol=5e-3)
    assert math.isclose(line["images_per_s"], 2 / line["ours_s"], rel_tol=1e-2)
    assert line["all_finite"]
    for key in ("first_loss_ours", "first_loss_reference"):
        assert abs(line[key] - math.log(1000)) < 3.0, (key, line[key])
