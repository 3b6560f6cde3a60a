"""gensim_jax.ranks against scipy.stats: average ranks with ties and infinities, Spearman's rho."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from gensim_jax import ranks


@pytest.mark.parametrize("n", [2, 3, 17, 500])
def test_spearman_r_and_average_ranks_equal_scipy_with_ties_and_infinities(n):
    rng = np.random.default_rng(n)
    for trial in range(12):
        a = rng.integers(0, 4, n).astype(float)  # many ties
        b = rng.normal(size=n) if trial % 2 else np.round(rng.normal(size=n), 1)
        if trial % 3 == 0:
            a[0], b[-1] = np.inf, -np.inf
        np.testing.assert_array_equal(ranks.average_ranks(a), sps.rankdata(a))
        np.testing.assert_array_equal(ranks.average_ranks(b), sps.rankdata(b))
        want = sps.spearmanr(a, b).statistic if np.ptp(ranks.average_ranks(a)) > 0 else math.nan
        got = ranks.spearman_r(a, b)
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12), (a, b)


def test_spearman_r_edge_cases():
    assert ranks.spearman_r([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    assert math.isnan(ranks.spearman_r([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))  # constant: undefined
    assert math.isnan(ranks.spearman_r([1.0, np.nan, 3.0], [1.0, 2.0, 3.0]))  # NaN propagates, as in scipy
    with pytest.raises(ValueError, match="same length"):
        ranks.spearman_r([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="NaN"):
        ranks.average_ranks([1.0, np.nan])
