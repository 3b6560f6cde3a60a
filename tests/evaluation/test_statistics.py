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
