"""Smoke test of bench/functions/mc_estimator.py at its quick size (no speed asserted)."""

import json
import math

import numpy as np
import pytest

from bench import report
from bench.functions import mc_estimator
from gensim_jax.kernels import gaussian_mixture as gm


@pytest.mark.slow
def test_quick_run_prints_a_valid_line():
    (line,) = mc_estimator.run(quick=True)
    json.dumps(line)
    for key in (
        "bench",
        "params",
        "ours_s",
        "reference",
        "reference_s",
        "ratio",
        "target",
        "met",
        "speedup",
        "ours_samples_pairs_per_s",
        "reference_samples_pairs_per_s",
        "jax_temp_bytes",
        "jax_temp_bytes_1e6_x_1000",
        "numpy_peak_bytes",
    ):
        assert key in line, key
    assert math.isclose(line["ratio"], line["ours_s"] / line["reference_s"], rel_tol=5e-3)
    assert math.isclose(
        line["speedup"], line["ours_samples_pairs_per_s"] / line["reference_samples_pairs_per_s"], rel_tol=0.02
    )
    assert line["max_z_vs_reference"] < 6  # the two estimators agree within their standard errors
    assert 0 < line["jax_temp_bytes_1e6_x_1000"] < 64 * 2**20
    assert report._module(line["bench"]) == "functions.mc_estimator"  # the report's rerun command names this module


def test_numpy_reference_matches_the_closed_form():
    mix = gm.make_mixture(
        mc_estimator.MIXTURE["weights"], mc_estimator.MIXTURE["means"], mc_estimator.MIXTURE["covariances"]
    )
    rng = np.random.default_rng(0)
    x1, x2 = rng.normal(size=(2, 5, 2))
    log_s, se = mc_estimator.numpy_loop(
        x1,
        x2,
        np.asarray(mc_estimator.MIXTURE["weights"]),
        np.asarray(mc_estimator.MIXTURE["means"]),
        np.asarray(mc_estimator.MIXTURE["covariances"]),
        4000,
    )
    exact = np.asarray(gm.log_similarity(x1, x2, mix), np.float64)
    assert np.all(np.abs(log_s - exact) < 5 * se + 1e-6)
