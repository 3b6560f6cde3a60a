"""scripts/quadrilaterals_curve.py: the Fig. 2B/2C summary of the runs at one step goes through the
experiment's own table (``make demo`` ends with it)."""

import importlib.util
from pathlib import Path

import numpy as np

from gensim_jax.experiments.quadrilaterals import PRETRAINED_NOTE, format_table
from gensim_jax.stimuli.quadrilaterals import SHAPE_NAMES

REPO = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("quadrilaterals_curve", REPO / "scripts" / "quadrilaterals_curve.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_summary_at_a_step_is_formatted_by_the_experiments_table():
    curve = _load()
    rng = np.random.default_rng(0)
    graded = rng.uniform(0.05, 0.6, (3, len(SHAPE_NAMES)))
    argmax = rng.uniform(0.0, 0.4, (3, len(SHAPE_NAMES)))
    arms = {"gensim": {800: [curve.point(g, a, 0.5, {}) for g, a in zip(graded, argmax)]}}
    assert curve.summary_step(arms) == 800
    text = format_table(curve.final_summary(arms, 800))
    row = next(line for line in text.splitlines() if line.startswith("| gensim | 3 |"))
    assert row.split(" | ")[2] == f"{graded.mean():.3f}"  # the graded table's mean error over runs and shapes
    assert PRETRAINED_NOTE in text  # the runs were trained from scratch
