"""Smoke test of bench/step/max_pool.py: the quick case's line has the suite's format and equal gradients.

No timing is asserted.  The independent check: the benchmark compares ``window_max_pool``'s gradient
with ``flax.linen.max_pool``'s (select-and-scatter) bitwise before it times them.
"""

import math

from bench import report
from bench.step import max_pool


def test_quick_line():
    (line,) = max_pool.run(quick=True)
    assert line["bench"] == "max_pool_vjp" and line["gradients_equal"] is True
    assert line["ours_s"] > 0 and line["reference_s"] > 0
    assert math.isclose(line["ratio"], line["ours_s"] / line["reference_s"], rel_tol=5e-3)
    assert report._module(line["bench"]) == "step.max_pool"
