"""The one statistics module against the formulas written out (Welch-Satterthwaite, paired differences)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from gensim_jax.evaluation import statistics as st


def test_welch_test_is_the_written_out_statistic_and_dof():
    a, b = np.array([0.61, 0.72, 0.66, 0.70]), np.array([0.55, 0.58, 0.49])
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    t = (a.mean() - b.mean()) / math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    p = 2 * sps.t.sf(abs(t), dof)
    got = st.welch_test(a, b)
    assert got == pytest.approx({"t": t, "dof": dof, "p": p}, rel=1e-10)


def test_paired_test_is_the_one_sample_test_of_the_differences():
    a, b = np.array([0.9, 0.8, 0.85, 0.95]), np.array([0.7, 0.75, 0.8, 0.7])
    d = a - b
    t = d.mean() / (d.std(ddof=1) / math.sqrt(d.size))
    got = st.paired_test(a, b)
    assert got == pytest.approx({"t": t, "dof": 3.0, "p": 2 * sps.t.sf(abs(t), 3)}, rel=1e-10)
    with pytest.raises(ValueError, match="one length"):
        st.paired_test([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="at least 2 runs"):
        st.welch_test([1.0], [1.0, 2.0])


def test_mean_std_and_t_interval():
    assert st.mean_std([2.0]) == (2.0, 0.0)
    m, s = st.mean_std([1.0, 2.0, 6.0])
    assert m == 3.0 and s == pytest.approx(math.sqrt(((1 - 3) ** 2 + (2 - 3) ** 2 + (6 - 3) ** 2) / 2))
    mean, lo, hi = st.t_interval([1.0, 2.0, 6.0], 0.9)
    assert hi - mean == pytest.approx(sps.t.ppf(0.95, 2) * s / math.sqrt(3)) and mean - lo == pytest.approx(hi - mean)
    with pytest.raises(ValueError, match="non-empty"):
        st.mean_std([])


def test_mean_sem_by_hand():
    v = [0.2, 0.5, 0.9]
    m = sum(v) / 3
    sem = math.sqrt(sum((x - m) ** 2 for x in v) / 2) / math.sqrt(3)
    got = st.mean_sem(v)
    assert float(got[0]) == pytest.approx(m) and float(got[1]) == pytest.approx(sem)
    assert st.mean_sem([[1.0, 2.0]])[1].tolist() == [0.0, 0.0]  # one run: no spread
    with pytest.raises(ValueError, match="at least one"):
        st.mean_sem([])


def test_spearman_brown_and_pearson_rows_by_hand():
    assert float(st.spearman_brown(0.6)) == pytest.approx(2 * 0.6 / 1.6)
    assert float(st.spearman_brown(0.6, factor=3)) == pytest.approx(1.8 / 2.2)
    np.testing.assert_allclose(st.spearman_brown([0.0, 1.0]), [0.0, 1.0])
    a = np.array([[1.0, 2.0, 4.0, 3.0], [0.0, 1.0, 0.0, 1.0]])
    b = np.array([[2.0, 1.0, 5.0, 4.0], [1.0, 1.0, 1.0, 1.0]])
    got = st.pearson_rows(a, b)
    assert got[0] == pytest.approx(sps.pearsonr(a[0], b[0]).statistic)
    assert np.isnan(got[1])  # a constant row: undefined, not 0
    assert st.percentile_interval([None, 1.0, 2.0, 3.0, np.nan], 0.5) == [1.5, 2.5]
    assert st.intervals_overlap([0, 1], [1, 2]) and not st.intervals_overlap([0, 1], [1.01, 2])


def test_split_half_reliability_is_the_mean_over_all_halvings_spearman_brown_corrected():
    """Six participants, four conditions: the 10 ways to halve them enumerated by hand; random splits average to
    their mean r, and the estimate is its Spearman-Brown correction."""
    import itertools

    trials = np.array([[10, 12, 9, 11], [8, 10, 10, 10], [12, 12, 12, 12], [9, 9, 11, 10], [10, 10, 10, 10],
                       [11, 8, 12, 9]], float)  # fmt: skip
    errors = np.array([[1, 5, 2, 8], [2, 4, 3, 7], [0, 6, 1, 9], [3, 2, 4, 6], [1, 3, 2, 8], [2, 5, 1, 5]], float)
    rs = []
    for half in itertools.combinations(range(6), 3):
        if 0 not in half:  # each halving once (A and B swapped give the same r)
            continue
        rest = [i for i in range(6) if i not in half]
        pa = errors[list(half)].sum(0) / trials[list(half)].sum(0)
        pb = errors[rest].sum(0) / trials[rest].sum(0)
        rs.append(np.corrcoef(pa, pb)[0, 1])
    assert len(rs) == 10
    r = np.mean(rs)
    got = st.split_half_reliability(errors, trials, splits=4000, resamples=0, seed=3)
    assert got["split_half_r"] == pytest.approx(r, abs=0.01)
    assert got["reliability"] == pytest.approx(2 * got["split_half_r"] / (1 + got["split_half_r"]))
    assert got["interval"] is None and got["participants"] == 6


def test_split_half_ceiling_recovers_a_known_reliability():
    """Synthetic participants with binomial errors around known rates: the reliability of the pooled rates is
    var(true) / (var(true) + mean binomial variance of a pooled rate), which the estimate and its interval find."""
    rng = np.random.default_rng(0)
    k, per_group, n = 40, (30, 10), 6  # conditions; participants in two groups; trials per condition
    true = rng.uniform(0.1, 0.6, k)
    groups = np.repeat(["a", "b"], per_group)
    trials = np.full((len(groups), k), n)
    errors = rng.binomial(trials, true)
    noise = np.mean(true * (1 - true)) / (len(groups) * n)  # variance of a pooled rate
    want = np.var(true, ddof=1) / (np.var(true, ddof=1) + noise)
    got = st.split_half_reliability(errors, trials, groups, splits=200, resamples=300, seed=1)
    assert got["reliability"] == pytest.approx(want, abs=0.05), (got["reliability"], want)
    lo, hi = got["interval"]
    assert lo <= got["reliability"] <= hi and lo - 0.02 <= want <= hi + 0.02
    assert 0.01 < hi - lo < 0.3
    # less data, lower reliability: a third of the trials
    few = st.split_half_reliability(rng.binomial(2, np.tile(true, (40, 1))), np.full((40, k), 2), groups,
                                    splits=200, resamples=0)  # fmt: skip
    assert few["reliability"] < got["reliability"]


def test_between_group_consistency_against_a_loop():
    rng = np.random.default_rng(2)
    trials = rng.integers(5, 15, (9, 5)).astype(float)
    errors = np.floor(trials * rng.uniform(0, 1, (9, 5)))
    groups = np.array(["x", "x", "x", "y", "y", "z", "z", "z", "z"])
    got = st.between_group_consistency(errors, trials, groups, resamples=50, seed=0)
    want = {}
    for g in ("x", "y", "z"):
        own, rest = groups == g, groups != g
        want[g] = np.corrcoef(errors[own].sum(0) / trials[own].sum(0), errors[rest].sum(0) / trials[rest].sum(0))[0, 1]
        assert got["groups"][g]["r"] == pytest.approx(want[g])
    assert got["mean"] == pytest.approx(np.mean(list(want.values())))
    lo, hi = got["interval"]
    assert lo <= got["mean"] <= hi
    with pytest.raises(ValueError, match="at least two groups"):
        st.between_group_consistency(errors, trials, ["x"] * 9)
    with pytest.raises(ValueError, match="errors <= trials"):
        st.split_half_reliability(trials + 1, trials)
