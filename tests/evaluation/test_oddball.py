"""Oddball protocol vs explicit loops and known answers on synthetic trials."""

import numpy as np
import pytest
from scipy import stats

from gensim_jax.evaluation import oddball as ob
from gensim_jax.evaluation.sable_meyer import SHAPES


def _trials(rng, per_shape, far: bool):
    t = per_shape * len(SHAPES)
    e = rng.standard_normal((t, 6, 8)) * 0.1
    dev = rng.integers(0, 6, t)
    if far:
        e[np.arange(t), dev] += 10.0
    shapes = [s for s in SHAPES for _ in range(per_shape)]
    return e, dev, shapes


def test_choices_match_loop():
    rng = np.random.default_rng(0)
    e = rng.standard_normal((50, 6, 5))
    want = []
    for trial in e:
        m = sum(trial) / 6
        d = [np.sqrt(sum((x - y) ** 2 for x, y in zip(item, m))) for item in trial]
        want.append(int(np.argmax(d)))
    np.testing.assert_array_equal(ob.oddball_choices(e), want)


def test_far_deviant_gives_zero_error_and_random_gives_five_sixths():
    rng = np.random.default_rng(1)
    e, dev, shapes = _trials(rng, 20, far=True)
    r = ob.error_rates_by_shape(e, dev, shapes)
    np.testing.assert_array_equal(r["error_rate"], np.zeros(11))
    np.testing.assert_array_equal(r["trials"], np.full(11, 20))
    e, dev, shapes = _trials(rng, 400, far=False)
    r = ob.error_rates_by_shape(e, dev, shapes)
    overall = r["errors"].sum() / r["trials"].sum()
    assert abs(overall - 5 / 6) < 3 * np.sqrt(5 / 36 / len(dev))


def test_error_rates_count_by_shape():
    rng = np.random.default_rng(2)
    e, dev, shapes = _trials(rng, 7, far=False)
    r = ob.error_rates_by_shape(e, dev, shapes)
    ch = ob.oddball_choices(e)
    for i, s in enumerate(SHAPES):
        idx = [t for t in range(len(shapes)) if shapes[t] == s]
        assert r["error_rate"][i] == pytest.approx(np.mean([ch[t] != dev[t] for t in idx]))


def _spearman_no_ties(a, b):
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    n = len(a)
    return 1 - 6 * np.sum((ra - rb) ** 2) / (n * (n * n - 1))


def test_regularity_correlation():
    rate = np.linspace(0.1, 0.6, 11) + np.array([0, 0.3, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    rho, p, dof = ob.regularity_correlation(rate)
    assert dof == 9
    assert rho == pytest.approx(_spearman_no_ties(rate, np.arange(11)))
    assert ob.regularity_correlation(np.linspace(0.1, 0.6, 11))[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="error_rate"):
        ob.regularity_correlation(np.ones(10))


def test_compare_across_runs_t18():
    rng = np.random.default_rng(3)
    human = np.linspace(0.05, 0.5, 11)
    baboon = rng.uniform(0.3, 0.6, 11)
    runs = human + 0.05 * rng.standard_normal((10, 11))
    res = ob.compare_across_runs(runs, human, baboon)
    assert res.dof == 18
    rh = [np.corrcoef(r, human)[0, 1] for r in runs]
    rb = [np.corrcoef(r, baboon)[0, 1] for r in runs]
    # Student t with pooled variance, written out.
    sp = np.sqrt((np.var(rh, ddof=1) + np.var(rb, ddof=1)) / 2)
    t = (np.mean(rh) - np.mean(rb)) / (sp * np.sqrt(2 / 10))
    np.testing.assert_allclose(res.r_human, rh, rtol=1e-10)
    assert res.t == pytest.approx(t, rel=1e-9)
    assert res.p == pytest.approx(2 * stats.t.sf(abs(t), 18), rel=1e-7)
    assert res.t > 0


def test_subject_correlations_skip_constant():
    model = np.linspace(0, 1, 11)
    subjects = {
        "a": {"population": "x", "error_rate": model**2},
        "b": {"population": "y", "error_rate": np.full(11, 0.5)},
    }
    out = ob.subject_correlations(model, subjects)
    assert set(out) == {"a"}
    assert out["a"]["r"] == pytest.approx(np.corrcoef(model, model**2)[0, 1])


def test_similarity_judgements(tmp_path):
    rng = np.random.default_rng(4)
    ids = [f"s{i}" for i in range(8)]
    emb = {k: rng.standard_normal(4) for k in ids}
    rows = ["stimulus_a,stimulus_b,rating,participant"]
    truth = {}
    for i in range(8):
        for j in range(i + 1, 8):
            a, b = ids[i], ids[j]
            cos = emb[a] @ emb[b] / np.linalg.norm(emb[a]) / np.linalg.norm(emb[b])
            r1, r2 = 3 + 3 * cos + 0.2, 3 + 3 * cos - 0.2
            rows += [f"{a},{b},{r1},p1", f"{b},{a},{r2},p2"]  # order within a pair is irrelevant
            truth[(a, b)] = 3 + 3 * cos
    path = tmp_path / "judgements.csv"
    path.write_text("\n".join(rows) + "\n")
    j = ob.read_similarity_judgements(path)
    assert set(j) == set(truth)
    for k in truth:
        assert j[k] == pytest.approx(truth[k])
    rho, p, n = ob.similarity_judgement_correlation(j, emb)
    assert n == 28 and rho == pytest.approx(1.0)
    with pytest.raises(ValueError, match="lack"):
        ob.similarity_judgement_correlation(j, {k: emb[k] for k in ids[:4]})


def test_bad_inputs():
    with pytest.raises(ValueError, match="embeddings"):
        ob.oddball_choices(np.zeros((4, 6)))
    with pytest.raises(ValueError, match="deviant"):
        ob.error_rates_by_shape(np.zeros((2, 6, 3)), np.array([0, 6]), ["square", "square"])
    with pytest.raises(ValueError, match="shapes"):
        ob.error_rates_by_shape(np.zeros((2, 6, 3)), np.array([0, 1]), ["square", "circle"])


def test_oddball_summary_matches_direct_statistics(tmp_path):
    from scipy import stats as st

    from gensim_jax.evaluation.oddball import CHANCE_ERROR_RATE, oddball_summary
    from gensim_jax.evaluation.sable_meyer import packaged_error_rates

    rng = np.random.default_rng(3)
    runs = rng.random((4, 11))
    flat = np.zeros(11)
    s = oddball_summary({"a": runs, "flat": flat})
    table = packaged_error_rates()
    pops = ["french_adults_1", "french_adults_2", "1st_graders", "preschoolers", "himbas"]
    human = sum(table[p]["errors"] for p in pops) / sum(table[p]["trials"] for p in pops)
    np.testing.assert_allclose(s["human_error_rate"], human)
    a = s["models"]["a"]
    np.testing.assert_allclose(a["error_rate_mean"], runs.mean(0))
    np.testing.assert_allclose(a["error_rate_sem"], runs.std(0, ddof=1) / 2.0)
    assert a["regularity"]["rho"] == pytest.approx(st.spearmanr(runs.mean(0), np.arange(11)).statistic)
    rh = [st.pearsonr(x, human).statistic for x in runs]
    rb = [st.pearsonr(x, table["baboons"]["error_rate"]).statistic for x in runs]
    np.testing.assert_allclose(a["r_human"], rh)
    assert a["r_baboon_mean"] == pytest.approx(np.mean(rb))
    t = st.ttest_ind(rh, rb)
    assert a["comparison"]["t"] == pytest.approx(t.statistic) and a["comparison"]["dof"] == 6
    # a model that never errs: every correlation undefined, reported as None, not NaN
    f = s["models"]["flat"]
    assert f["regularity"] is None and f["r_human"] == [None] and f["r_human_mean"] is None
    assert f["comparison"] is None and s["chance_error_rate"] == CHANCE_ERROR_RATE
    with pytest.raises(ValueError, match="must have shape"):
        oddball_summary({"bad": np.zeros((2, 10))})
    out = ob.plot_oddball(s, tmp_path / "fig.png")
    from PIL import Image

    with Image.open(out) as im:
        assert im.size[0] > 500 and im.size[1] > 200


# ---- graded read-out -----------------------------------------------------------------------


def _graded_fixture(seed=0, t=220):
    rng = np.random.default_rng(seed)
    e = rng.normal(size=(t, 6, 4))
    dev = rng.integers(0, 6, size=t)
    e[np.arange(t), dev] += rng.uniform(0, 3, size=(t, 1))  # deviants of varying strength
    shapes = [SHAPES[i % 11] for i in range(t)]
    return e, dev, shapes


def test_outlier_scores_are_distances_over_their_global_sd():
    from gensim_jax.evaluation.oddball import outlier_scores

    e, _, _ = _graded_fixture()
    d = np.array([[np.sqrt(((x - trial.mean(0)) ** 2).sum()) for x in trial] for trial in e])
    np.testing.assert_allclose(outlier_scores(e), d / d.std(), rtol=1e-12)
    assert np.all(outlier_scores(np.ones((3, 6, 2))) == 0)


def test_graded_error_rates_limits_and_direct_softmax():
    from gensim_jax.evaluation.oddball import error_rates_by_shape, graded_error_rates, outlier_scores

    e, dev, shapes = _graded_fixture()
    s = outlier_scores(e)
    np.testing.assert_allclose(
        graded_error_rates(s, dev, shapes, 0.0), error_rates_by_shape(e, dev, shapes)["error_rate"]
    )
    np.testing.assert_allclose(graded_error_rates(s, dev, shapes, 1e6), 5 / 6, atol=1e-5)
    tau = 0.37
    p = np.exp(s / tau) / np.exp(s / tau).sum(1, keepdims=True)
    err = 1 - p[np.arange(len(dev)), dev]
    want = [err[[x == k for x in shapes]].mean() for k in SHAPES]
    np.testing.assert_allclose(graded_error_rates(s, dev, shapes, tau), want, rtol=1e-12)
    with pytest.raises(ValueError, match="temperature"):
        graded_error_rates(s, dev, shapes, -1.0)
    with pytest.raises(ValueError, match="deviant"):
        graded_error_rates(s, dev[:-1], shapes, 1.0)


def test_fit_temperature_hits_the_target_mean_error():
    from gensim_jax.evaluation.oddball import fit_temperature, graded_readout, outlier_scores

    e, dev, shapes = _graded_fixture()
    s = outlier_scores(e)
    argmax_error = np.mean(np.argmax(s, 1) != dev)
    for target in (argmax_error + 0.01, 0.5, 0.8):
        tau = fit_temperature(s, dev, target)
        p = np.exp(s / tau) / np.exp(s / tau).sum(1, keepdims=True)
        assert np.mean(1 - p[np.arange(len(dev)), dev]) == pytest.approx(target, abs=1e-8)
    # the argmax rule already errs more than the target: temperature 0, graded = argmax
    assert fit_temperature(s, dev, argmax_error - 0.01) == 0.0
    g = graded_readout(e, dev, shapes, argmax_error - 0.01)
    assert not g.level_matched
    np.testing.assert_array_equal(g.graded_error_rate, g.argmax_error_rate)
    with pytest.raises(ValueError, match="target_error"):
        fit_temperature(s, dev, 0.9)


def test_population_correlations_against_scipy():
    from gensim_jax.evaluation.oddball import population_correlations
    from gensim_jax.evaluation.sable_meyer import packaged_error_rates

    table = packaged_error_rates()
    runs = np.random.default_rng(1).uniform(0, 0.8, size=(3, 11))
    out = population_correlations(runs, table)
    assert set(out) == set(table)
    b = table["baboons"]["error_rate"]
    for pop, entry in out.items():
        ref = table[pop]["error_rate"]
        rs = [stats.pearsonr(x, ref).statistic for x in runs]
        np.testing.assert_allclose(entry["r"], rs)
        assert entry["r_mean"] == pytest.approx(np.mean(rs))
        assert entry["r_with_baboons"] == pytest.approx(stats.pearsonr(ref, b).statistic)
        if pop == "baboons":
            assert entry["comparison"] is None
        else:
            rb = [stats.pearsonr(x, b).statistic for x in runs]
            assert entry["comparison"]["t"] == pytest.approx(stats.ttest_ind(rs, rb).statistic)
    # the pooled humans' and the French adults' own correlation with the baboons (issue 13: 0.27, 0.48)
    assert out["french_adults_1"]["r_with_baboons"] == pytest.approx(0.27, abs=0.01)
    assert out["french_adults_2"]["r_with_baboons"] == pytest.approx(0.48, abs=0.01)


def test_lowest_error_is_the_minimum_over_temperatures_and_fit_temperature_gives_up_below_it():
    from gensim_jax.evaluation.oddball import fit_temperature, lowest_error, outlier_scores

    e, dev, _ = _graded_fixture()
    s = outlier_scores(e)
    low, tau = lowest_error(s, dev)

    def mean_error(t):  # the softmax observer by hand; t = 0 is the argmax rule
        if t == 0:
            return np.mean(np.argmax(s, 1) != dev)
        z = np.exp(s / t - (s / t).max(1, keepdims=True))
        p = z / z.sum(1, keepdims=True)
        return np.mean(1 - p[np.arange(len(dev)), dev])

    brute = min(mean_error(t) for t in [0.0, *np.geomspace(1e-3, 1e3, 2001)])
    assert low == pytest.approx(brute, abs=2e-3) and mean_error(tau) == pytest.approx(low)
    assert low <= mean_error(0.0)
    if low > 0.01:
        assert fit_temperature(s, dev, low - 0.005) == 0.0  # below what it can reach: the argmax rule


@pytest.mark.slow
def test_human_ceilings_against_the_per_population_table():
    """The between-group r of every human group is its rate vector against the other four groups pooled, computed
    from the per-population table (a different asset); the split-half reliabilities are near 1 for the large groups,
    below for the small ones, and each interval holds its estimate."""
    from gensim_jax.evaluation.oddball import human_ceilings
    from gensim_jax.evaluation.sable_meyer import HUMAN_POPULATIONS, packaged_error_rates, pooled_error_rates

    c = human_ceilings(resamples=100, seed=0)
    table = packaged_error_rates()
    rs = []
    for p in HUMAN_POPULATIONS:
        rest = pooled_error_rates(table, [q for q in HUMAN_POPULATIONS if q != p])
        r = np.corrcoef(table[p]["error_rate"], rest)[0, 1]
        rs.append(r)
        assert c["r_population"][p]["between_group"]["r"] == pytest.approx(r)
    assert c["r_human"]["between_group"]["r"] == pytest.approx(np.mean(rs))
    assert c["r_baboon"]["between_group"] is None
    for e in [c["r_human"], c["r_baboon"], *c["r_population"].values()]:
        sh = e["split_half"]
        assert 0.85 < sh["reliability"] < 1.0
        assert sh["reliability"] == pytest.approx(2 * sh["split_half_r"] / (1 + sh["split_half_r"]))
        lo, hi = sh["interval"]
        assert lo <= sh["reliability"] <= hi
    assert c["r_human"]["split_half"]["participants"] == 935
    assert c["r_population"]["himbas"]["split_half"]["reliability"] < c["r_human"]["split_half"]["reliability"]
